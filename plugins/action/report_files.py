# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.tuning.report_files: write report files on the controller in the controller's own
process (the documentation is in plugins/modules/report_files.py). The audit playbook wrote its
directory and two reports with ansible.builtin.file and copy: three module runs (a new Python
process each, four with copy's stat) on the controller after every audit; this is none."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file

ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    files=dict(type='dict', required=True),
    mode=dict(type='raw', default='0644'),
)


def file_mode(value):
    """'0644', 420 or '644' -> 0o644; AnsibleActionFail naming ``mode`` otherwise."""
    try:
        mode = int(value, 8) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise AnsibleActionFail('mode: %r is not an octal file mode such as 0644' % (value,))
    if not 0 <= mode <= 0o7777:
        raise AnsibleActionFail('mode: %r is not an octal file mode such as 0644' % (value,))
    return mode


def plan(directory, files):
    """[(path, new bytes, old bytes or None)] in file name order; AnsibleActionFail for a file
    name that is not a plain name or content that is not text."""
    planned = []
    for name in sorted(files):
        if not name or os.path.basename(name) != name or name in ('.', '..'):
            raise AnsibleActionFail('files: %r is not a file name (no directory part)' % (name,))
        content = files[name]
        if not isinstance(content, str):
            raise AnsibleActionFail('files.%s: the content must be text, not %s'
                                    % (name, type(content).__name__))
        path = os.path.join(directory, name)
        try:
            old = safe_file.read_bytes(path)
        except safe_file.FileError as exc:
            raise AnsibleActionFail(exc.msg)
        planned.append((path, to_bytes(content, errors='surrogate_or_strict'), old))
    return planned


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        directory = os.path.abspath(os.path.expanduser(args['dir']))
        mode = file_mode(args['mode'])
        planned = plan(directory, args['files'])
        changed = [(path, new, old) for path, new, old in planned if new != old]
        result.update(changed=bool(changed), dir=directory,
                      paths=[path for path, _new, _old in planned],
                      changed_paths=[path for path, _new, _old in changed])
        if self._task.diff and changed:
            result['diff'] = [dict(before_header=path, after_header=path,
                                   before=to_text(old or b'', errors='surrogate_or_replace'),
                                   after=to_text(new, errors='surrogate_or_replace'))
                              for path, new, old in changed]
        if self._task.check_mode:
            return result
        for path, new, _old in changed:
            try:
                safe_file.write_atomic(path, new, mode=mode, dir_mode=0o755)
            except safe_file.FileError as exc:
                raise AnsibleActionFail(exc.msg, result=result)
        return result
