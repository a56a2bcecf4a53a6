# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which file sets ``TasksMax=`` of a unit or slice and ``DefaultTasksMax=`` of a manager, with
file:line, in systemd's precedence (the unit file, then the ``*.conf`` drop-ins of the unit,
its prefixes (``user-.slice.d``) and its type, sorted by name, /etc masking /usr; the last
valid assignment wins, an empty one resets). The values are read as systemd reads them
(model/pids.py). Private to the collection."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as paths
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd.systemd_conf import read_conf

#: the [Section] of TasksMax= by unit type (the types with a cgroup)
SECTIONS = {'service': 'Service', 'slice': 'Slice', 'scope': 'Scope', 'socket': 'Socket',
            'mount': 'Mount', 'swap': 'Swap'}
#: logind.conf (and drop-ins): UserTasksMax= of systemd before 240, which logind wrote into
#: each user-UID.slice; ignored with a warning from 240 on (the user-.slice drop-in instead)
LOGIND_FILES = ('/etc/systemd/logind.conf',)


class Found(object):
    """The winning assignment: ``value`` (a pids_model.TasksMax, or None: no file sets it or
    the last one reset it), ``where`` (file:line or None), ``invalid`` ([file:line: problem])."""

    def __init__(self):
        self.value = None
        self.where = None
        self.text = None
        self.invalid = []
        self.files = []

    def as_dict(self, kernel_max=None):
        return dict(value=self.value.systemd() if self.value is not None else None,
                    resolved=pids_model.human(self.value.resolve(kernel_max))
                    if self.value is not None else None,
                    source=self.where, invalid=list(self.invalid), files=list(self.files))


def _resolve(files, section, key, root=''):
    found = Found()
    for path in files:
        conf = read_conf(path, root)
        if conf is None:
            continue
        found.files.append(path)
        for statement in conf.assignments(section, key):
            where = '%s:%d' % (path, statement.line)
            try:
                value = pids_model.from_systemd(statement.value, where)
            except pids_model.LimitError as exc:
                found.invalid.append(str(exc))
                continue
            found.value = value
            found.where = where if value is not None else None
            found.text = '%s=%s' % (key, statement.value)
    return found


def unit_files(unit, root=''):
    """[unit file] + its drop-ins, host paths (slices and scopes too, unlike
    systemd_paths.unit_files, which takes only the units Limit*= applies to)."""
    fragment = None
    for directory in paths.UNIT_DIRS:
        path = '%s/%s' % (directory, unit)
        if os.path.isfile(root + path):
            fragment = path
            break
    dirs = ['%s/%s.d' % (directory, name) for directory in paths.UNIT_DIRS
            for name in paths.unit_names(unit)]
    return ([fragment] if fragment else []) + paths.list_dropins(dirs, root)


def unit_tasks_max(unit, root=''):
    """Found: the TasksMax= of ``unit`` (``user-1001.slice``, ``docker.service``)."""
    kind = unit.rsplit('.', 1)[-1]
    return _resolve(unit_files(unit, root), SECTIONS.get(kind, 'Service'), 'TasksMax', root)


def default_tasks_max(scope=paths.SYSTEM, root=''):
    """Found: DefaultTasksMax= of the ``scope`` manager (system.conf, user.conf, drop-ins)."""
    main, dropins = paths.manager_files(scope, root)
    return _resolve([main] + dropins, paths.MANAGER_SECTION, 'DefaultTasksMax', root)


def logind_user_tasks_max(root=''):
    """Found: logind's UserTasksMax= (systemd before 240)."""
    dirs = ['%s/logind.conf.d' % d for d in paths.MANAGER_DIRS]
    return _resolve(list(LOGIND_FILES) + paths.list_dropins(dirs, root), 'Login',
                    'UserTasksMax', root)


def unit_of_cgroup(cgroup):
    """The systemd unit a cgroup path belongs to (its last ``.slice``/``.scope``/``.service``
    component): ``/docker/ID/user.slice/user-1001.slice`` -> ``user-1001.slice``; None for a
    cgroup no unit owns (``/docker/ID``, the root)."""
    for part in reversed([p for p in (cgroup or '').split('/') if p]):
        if part.rsplit('.', 1)[-1] in SECTIONS:
            return part
    return None
