# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd's precedence over its configuration files: which assignment wins for each limit and
where it comes from, for a manager (system.conf, user.conf and their drop-ins) or a unit.
Private to the collection; the files themselves are read by systemd_conf.

Precedence (``systemd-system.conf(5)``, ``systemd.unit(5)``): the main file (or unit file) is read
first, then ``*.conf`` drop-ins from /etc, /run, /usr/local/lib and /usr/lib, sorted by file name
across the directories; a file in a directory earlier in that list masks the same name in a later
one (a link to /dev/null masks it with nothing). The last valid assignment wins; an assignment
systemd cannot parse (garbage, soft above hard) is ignored and the earlier value stays.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as paths
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd.systemd_conf import ConfFile, read_conf


class Setting(object):
    """The value systemd uses for one item and where it comes from."""

    __slots__ = ('item', 'limit', 'path', 'line', 'text')

    def __init__(self, item, limit, path, line, text):
        self.item = item
        self.limit = limit
        self.path = path
        self.line = line
        self.text = text

    def as_dict(self):
        return {'soft': self.limit.soft, 'hard': self.limit.hard, 'source': self.path,
                'line': self.line, 'value': self.text}


class Resolution(object):
    """What systemd makes of a set of files for one section and key prefix."""

    def __init__(self):
        self.settings = {}      # item name -> Setting (the winner)
        self.history = {}       # item name -> [Setting] every valid assignment, in order
        self.invalid = []       # {path, line, key, value, problem}
        self.files = []         # host paths read, in order
        self.skipped = []       # host paths systemd does not read because an earlier one failed

    def configured(self):
        """{item: {soft, hard, source, line, value}}: the systemd_limits_info report."""
        return dict((name, s.as_dict()) for name, s in sorted(self.settings.items()))


def resolve(files, section, prefix, root='', overlay=None, abort_chain=True):
    """Resolve ``prefix`` + item keys in ``section`` over ``files`` (host paths, in reading order).

    ``overlay`` maps host paths to text used instead of the file's content (a planned edit).
    ``abort_chain``: an invalid section header stops the remaining files too (manager
    configuration does that; unit drop-ins are read independently).
    """
    overlay = overlay or {}
    result = Resolution()
    stopped = False
    for path in files:
        if stopped:
            result.skipped.append(path)
            continue
        if path in overlay:
            text = overlay[path]
            conf = None if text is None else ConfFile.parse(text, path)
        else:
            conf = read_conf(path, root)
        if conf is None:
            continue
        result.files.append(path)
        for statement in conf.statements:
            if statement.kind == 'bad-section':
                result.invalid.append({'path': path, 'line': statement.line, 'key': None,
                                       'value': statement.text,
                                       'problem': 'invalid section header: systemd ignores the '
                                                  'rest of this file%s'
                                                  % (' and every later file' if abort_chain
                                                     else '')})
                stopped = abort_chain
                break
            if statement.kind != 'assignment' or statement.section != section:
                continue
            if not statement.key.startswith(prefix):
                continue
            item = model.item_from_systemd_key(statement.key)
            if item is None or model.systemd_key(item, prefix) != statement.key:
                continue
            try:
                limit = model.from_systemd_config(item, statement.value,
                                                  '%s:%d' % (path, statement.line))
            except model.LimitError as exc:
                result.invalid.append({'path': path, 'line': statement.line,
                                       'key': statement.key, 'value': statement.value,
                                       'problem': '%s; systemd ignores it' % exc})
                continue
            setting = Setting(item.name, limit, path, statement.line,
                              '%s=%s' % (statement.key, statement.value))
            result.settings[item.name] = setting
            result.history.setdefault(item.name, []).append(setting)
    return result


def resolve_manager(scope, root='', overlay=None, extra=None):
    """Resolution of DefaultLimit*= for the system or user manager.

    ``extra``: a host path that should be read even if it does not exist yet (the drop-in a
    plan is about to create), placed where systemd would sort it.
    """
    main, dropins = paths.manager_files(scope, root)
    dropins = _with_extra(dropins, extra, overlay)
    return resolve([main] + dropins, paths.MANAGER_SECTION, paths.MANAGER_PREFIX, root, overlay)


def resolve_unit(unit, root='', overlay=None, extra=None):
    unit = paths.normalize_unit(unit)
    fragment, dropins = paths.unit_files(unit, root)
    dropins = _with_extra(dropins, extra, overlay)
    files = ([fragment] if fragment else []) + dropins
    return resolve(files, paths.unit_section(unit), paths.UNIT_PREFIX, root, overlay,
                   abort_chain=False)


def _with_extra(dropins, extra, overlay):
    if not extra or extra in dropins:
        return dropins
    if overlay is not None and overlay.get(extra) is None:
        return dropins
    name = os.path.basename(extra)
    if any(os.path.basename(p) == name for p in dropins):
        # A same-named file elsewhere: /etc (where ours lives) masks it.
        dropins = [p for p in dropins if os.path.basename(p) != name]
    return sorted(dropins + [extra], key=os.path.basename)
