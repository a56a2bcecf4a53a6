# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""limits_profile's ``pids`` in systemd's files: ``DefaultTasksMax=`` in the system manager's
drop-in (services without a TasksMax= of their own) and in the user managers' (user services:
on cgroup v2 a user manager is delegated the pids controller and gives each of its services
its own DefaultTasksMax, 15% of the kernel's limit when no file sets it), ``TasksMax=`` in the
units' drop-ins, and
a ``user-.slice`` drop-in (every user's slice: login sessions and user services). A plain value
is a minimum (docs/limit-model.md): nothing is written where the node already gives at least
that, and what is written is never below a value it replaces. systemd 252 applies all three on
``daemon-reload`` to running units (checked on the Debian 12 node); the system manager's
drop-in is re-executed as the systemd_system context does anyway. Writes nothing: each
function edits a planned text or returns a changes.Change. Private to the collection."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as sdpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import tasks_max
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd.systemd_conf import (
    HEADER, ConfFile, ConfError, read_conf)

USER_SLICE = 'user-.slice'
UNLIMITED = pids_model.UNLIMITED
_USER_UID_SLICE = re.compile(r'^user-\d+\.slice$')


def slice_dropin(name=sdpaths.DROPIN_NAME):
    return '/etc/systemd/system/%s.d/%s' % (USER_SLICE, name)


def _resolve(value, kernel_max):
    """A TasksMax resolved on the node; None (no TasksMax=) is no limit."""
    return UNLIMITED if value is None else value.resolve(kernel_max)


def _set(text, path, section, key, value):
    """``text`` (None: a new file) with ``key=value`` in ``section``; changes.Failure naming the
    file where systemd would ignore it."""
    try:
        conf = ConfFile.parse(text if text is not None else HEADER + '[%s]\n' % section, path)
        conf.set(section, key, value)
    except ConfError as exc:
        raise changes.Failure(str(exc))
    return conf.render()


def _later(found_files, ours, section, key, root=''):
    """[(file:line, TasksMax)] of the files read after ``ours`` that set ``key``."""
    later = []
    for path in found_files:
        if os.path.basename(path) <= os.path.basename(ours) or path == ours:
            continue
        conf = read_conf(path, root)
        for statement in (conf.assignments(section, key) if conf else ()):
            try:
                later.append(('%s:%d' % (path, statement.line),
                              pids_model.from_systemd(statement.value)))
            except pids_model.LimitError:
                continue
    return later


def _conflicts(later, wanted, kernel_max, key):
    return [dict(item='pids', path=where.rsplit(':', 1)[0], line=int(where.rsplit(':', 1)[1]),
                 value='%s=%s' % (key, value.systemd() if value else ''),
                 reason='%s: %s=%s is read after the drop-in and keeps pids below %s'
                        % (where, key, value.systemd() if value else '', pids_model.human(wanted)))
            for where, value in later
            if pids_model.below(_resolve(value, kernel_max), wanted)]


def add_default(change, value, kernel_max, live=None, root='', scope=sdpaths.SYSTEM):
    """The ``scope`` manager's drop-in ``change`` (system.conf.d or user.conf.d) with
    DefaultTasksMax= when the node gives new services less than ``value`` (``live``: the
    running manager's DefaultTasksMax as a TasksMax, used where no file sets it; else systemd's
    built-in 15%)."""
    if change.new is None and change.current is not None:
        return change
    wanted = value.resolve(kernel_max)
    found = tasks_max.default_tasks_max(scope, root)
    now = found.value if found.where else (live or pids_model.TasksMax(
        permyriad=pids_model.SYSTEMD_DEFAULT_PERMYRIAD))
    info = dict(key='DefaultTasksMax', wanted=pids_model.human(wanted),
                before=now.systemd(), source=found.where)
    if pids_model.below(_resolve(now, kernel_max), wanted):
        new = _set(change.new, change.path, sdpaths.MANAGER_SECTION, 'DefaultTasksMax',
                   value.systemd())
        info['written'] = value.systemd()
        _update(change, new, 'reexec_required')
        later = _later(found.files, change.path, sdpaths.MANAGER_SECTION, 'DefaultTasksMax',
                       root)
        change.result.setdefault('conflicts', []).extend(
            _conflicts(later, wanted, kernel_max, 'DefaultTasksMax'))
    change.result['pids'] = info
    return change


def add_unit(change, unit, value, kernel_max, manager_default=None, root=''):
    """A unit's drop-in ``change`` with TasksMax= when the unit gives less than ``value``
    (its own TasksMax=, else ``manager_default``: the manager's DefaultTasksMax)."""
    if change.new is None and change.current is not None:
        return change
    wanted = value.resolve(kernel_max)
    found = tasks_max.unit_tasks_max(unit, root)
    now = found.value if found.where else manager_default
    info = dict(key='TasksMax', wanted=pids_model.human(wanted),
                before=now.systemd() if now else None, source=found.where)
    if now is None or pids_model.below(_resolve(now, kernel_max), wanted):
        new = _set(change.new, change.path, tasks_max.SECTIONS.get(unit.rsplit('.', 1)[-1],
                                                                   'Service'),
                   'TasksMax', value.systemd())
        info['written'] = value.systemd()
        _update(change, new, 'daemon_reload_required')
    change.result['pids'] = info
    return change


def _update(change, new, flag):
    if new != change.new:
        change.new = new
        change.changed = change.new != change.current
        change.result[flag] = change.result.get(flag) or change.changed


def user_slices(root=''):
    """The user-UID.slice names with drop-in directories of their own on the node."""
    names = set()
    for directory in sdpaths.UNIT_DIRS:
        for path in glob.glob(root + directory + '/user-*.slice.d'):
            name = os.path.basename(path)[:-2]
            if _USER_UID_SLICE.match(name):
                names.add(name)
    return sorted(names)


def plan_user_slice(value, kernel_max, dropin=sdpaths.DROPIN_NAME, root=''):
    """The Change of the ``user-.slice`` drop-in. Written when the template or a user's slice
    with drop-ins of its own gives less than ``value``; its TasksMax= is then the highest of
    ``value`` and what those slices have now (no user's slice is lowered)."""
    path = slice_dropin(dropin)
    try:
        with open(root + path) as handle:
            current = handle.read()
    except (IOError, OSError):
        current = None
    wanted = value.resolve(kernel_max)
    slices = [USER_SLICE] + user_slices(root)
    now = {}
    for name in slices:
        found = tasks_max.unit_tasks_max(name, root)
        now[name] = (found, found.value if found.where else None)
    below = [name for name in slices
             if pids_model.below(_resolve(now[name][1], kernel_max), wanted)]
    result = dict(path=path, daemon_reload_required=False, restart_required=[], conflicts=[],
                  pids=dict(key='TasksMax', wanted=pids_model.human(wanted), slices=dict(
                      (name, dict(value=now[name][1].systemd() if now[name][1] else 'infinity',
                                  source=now[name][0].where)) for name in slices)))
    if not below:
        return changes.Change(path, result, current, current)
    # the highest of the profile and every slice's value now (ours left out): written as that
    # value's own text (33% stays 33%)
    best = value
    for name in slices:
        mine = [w for w in ([now[name][0].where] if now[name][0].where else [])
                if w.startswith(path + ':')]
        other = None if mine else now[name][1]
        if mine:
            other = _without(name, path, root)
        if other is None or pids_model.below(_resolve(best, kernel_max),
                                             _resolve(other, kernel_max)):
            best = other if other is not None else pids_model.INFINITY
    new = _set(current, path, 'Slice', 'TasksMax', best.systemd())
    result['pids']['written'] = best.systemd()
    result['pids']['below'] = below
    change = changes.Change(path, result, current, new)
    result['daemon_reload_required'] = change.changed
    for name in slices:
        later = _later(now[name][0].files, path, 'Slice', 'TasksMax', root)
        result['conflicts'].extend(c for c in _conflicts(later, wanted, kernel_max, 'TasksMax')
                                   if c not in result['conflicts'])
    return change


def _without(unit, ours, root=''):
    """The TasksMax= of ``unit`` with the drop-in ``ours`` left out (None: none)."""
    value = None
    for path in tasks_max.unit_files(unit, root):
        if path == ours:
            continue
        conf = read_conf(path, root)
        for statement in (conf.assignments('Slice', 'TasksMax') if conf else ()):
            try:
                value = pids_model.from_systemd(statement.value)
            except pids_model.LimitError:
                continue
    return value
