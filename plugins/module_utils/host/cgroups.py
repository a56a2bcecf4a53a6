# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cgroup pids controller as a process sees it: its cgroup (``/proc/PID/cgroup``) and the
``pids.max`` of that cgroup and of every ancestor, on cgroup v1 (the ``pids`` hierarchy,
``/sys/fs/cgroup/pids/PATH/pids.max``) and v2 (``/sys/fs/cgroup/PATH/pids.max``). The limit a
process gets is the smallest of them: the cgroup that holds it decides.

``CHAIN_SCRIPT`` is run by a new process of a context (a login shell, a service, a container):
it prints its own chain, read from inside, so that a container's cgroup namespace is the one
that counts. :func:`chain_of_pid` reads the same from the host for a running process.
Private to the collection."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os
import shlex

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model

CGROUP_ROOT = '/sys/fs/cgroup'

#: POSIX sh: ``cgroup PATH`` then ``pids.max PATH VALUE`` for the cgroup and each ancestor that
#: has the file (a v1 ``pids`` line first, else the v2 ``0::`` line), then ``pids.current``
CHAIN_SCRIPT = (
    "b=%(root)s/pids; p=$(sed -n 's/^[0-9]*:pids:\\(.*\\)$/\\1/p' /proc/self/cgroup); "
    "if [ -z \"$p\" ]; then b=%(root)s; p=$(sed -n 's/^0::\\(.*\\)$/\\1/p' /proc/self/cgroup); fi; "
    "echo \"cgroup $p\"; "
    "[ -r \"$b${p%%/}/pids.current\" ] && echo \"pids.current $(cat \"$b${p%%/}/pids.current\")\"; "
    "while :; do q=${p%%/}; [ -r \"$b$q/pids.max\" ] && echo \"pids.max ${q:-/} $(cat \"$b$q/pids.max\")\"; "
    "[ -z \"$q\" ] && break; p=${q%%/*}; done"
) % dict(root=CGROUP_ROOT)


#: CHAIN_SCRIPT as one shell command without ``$``, ``%`` or quotes, which systemd-run (and
#: systemd's ExecStart=) would expand as variables and specifiers
CHAIN_COMMAND = 'echo %s | base64 -d | sh' % base64.b64encode(
    CHAIN_SCRIPT.encode('ascii')).decode('ascii')


class Chain(object):
    """A process's cgroup and the pids.max of it and its ancestors, leaf first."""

    def __init__(self, cgroup, limits, current=None):
        self.cgroup = cgroup            # the process's cgroup path ('' unknown)
        self.limits = list(limits)      # [(path, int or UNLIMITED)], leaf first
        self.current = current          # pids.current of the process's cgroup, or None

    @property
    def effective(self):
        """The pids.max that governs a new task of the process (the smallest), or None when
        no cgroup of the chain has the file (no pids controller)."""
        return pids_model.minimum(value for _path, value in self.limits)

    @property
    def decides(self):
        """The cgroup whose pids.max is the effective one (the lowest in the tree of those
        with the smallest value), or None."""
        value = self.effective
        for path, limit in self.limits:
            if limit == value:
                return path
        return None

    def as_dict(self):
        return dict(cgroup=self.cgroup, current=self.current,
                    effective=pids_model.human(self.effective), decides=self.decides,
                    chain=[dict(cgroup=path, max=pids_model.human(value))
                           for path, value in self.limits])


def chain_command(command):
    """A probe command with the chain command in place of ``cat /proc/self/limits`` (a login
    shell's ``-c``, a service's or container's command, the command a submit shell's ``srun``
    runs), or None when the probe is no such command."""
    if command and command[-1] == probes.CAT:
        return list(command[:-1]) + [CHAIN_COMMAND]
    if list(command[-2:]) == ['cat', '/proc/self/limits']:
        return list(command[:-2]) + ['sh', '-c', CHAIN_COMMAND]
    if command and ' srun ' in command[-1] and command[-1].endswith(' ' + probes.CAT):
        return list(command[:-1]) + [command[-1][:-len(probes.CAT)] + 'sh -c %s' % (
            shlex.quote(CHAIN_COMMAND))]
    return None


def parse_chain(text, where='pids probe'):
    """CHAIN_SCRIPT's output -> Chain; LimitError naming ``where`` for a line it cannot read."""
    cgroup, limits, current = None, [], None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == 'cgroup':
            cgroup = words[1] if len(words) > 1 else ''
        elif words[0] == 'pids.current' and len(words) == 2 and words[1].isdigit():
            current = int(words[1])
        elif words[0] == 'pids.max' and len(words) == 3:
            limits.append((words[1], pids_model.parse_pids_max(words[2], where)))
    if cgroup is None:
        raise pids_model.LimitError('%s: printed no cgroup (is /proc/self/cgroup readable?)'
                                    % where)
    return Chain(cgroup, limits, current)


def cgroup_of(text):
    """The pids cgroup path from a /proc/PID/cgroup text: the v1 ``pids`` line, else the v2
    ``0::`` line, else None."""
    unified = None
    for line in text.splitlines():
        parts = line.split(':', 2)
        if len(parts) != 3:
            continue
        if 'pids' in parts[1].split(','):
            return parts[2]
        if parts[0] == '0' and parts[1] == '':
            unified = parts[2]
    return unified


def _read(path):
    with open(path) as handle:
        return handle.read()


def chain_of(cgroup, root=CGROUP_ROOT, v1=None):
    """Chain of cgroup path ``cgroup`` read under ``root`` (the host's view). ``v1``: the pids
    hierarchy is root/pids (None: when that directory exists)."""
    if v1 is None:
        v1 = os.path.isdir(os.path.join(root, 'pids'))
    base = os.path.join(root, 'pids') if v1 else root
    limits, path = [], cgroup.rstrip('/')
    current = None
    try:
        current = int(_read(base + path + '/pids.current'))
    except (IOError, OSError, ValueError):
        pass
    while True:
        try:
            text = _read(base + path + '/pids.max')
        except (IOError, OSError):
            text = None
        if text is not None:
            where = base + path + '/pids.max'
            limits.append((path or '/', pids_model.parse_pids_max(text, where)))
        if not path:
            break
        path = path.rsplit('/', 1)[0]
    return Chain(cgroup, limits, current)


def chain_of_pid(pid, root=CGROUP_ROOT, proc='/proc'):
    """Chain of running process ``pid``, read from the host; None when it is gone."""
    try:
        cgroup = cgroup_of(_read('%s/%s/cgroup' % (proc, pid)))
    except (IOError, OSError):
        return None
    if cgroup is None:
        return Chain('', [])
    return chain_of(cgroup, root)


def kernel_tasks_max(proc='/proc', root=CGROUP_ROOT):
    """systemd's system_tasks_max() on this node (model/pids.py), or None."""
    values = []
    for name in ('sys/kernel/threads-max', 'sys/kernel/pid_max'):
        try:
            values.append(int(_read('%s/%s' % (proc, name)).strip()))
        except (IOError, OSError, ValueError):
            values.append(None)
    return pids_model.system_tasks_max(values[0], values[1])
