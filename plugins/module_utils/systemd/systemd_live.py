# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the running systemd says: ``systemctl show`` of the managers and units, the running
user managers, a unit's main process and its limits. ``run`` is module.run_command or
subprocess; commands run in the C locale (commands.LIVE_ENV). Only systemctl's documented
commands are used: one ``systemctl show`` with every property a manager or unit is asked for,
one ``systemctl list-units`` for the running user managers. Never the managers' private
sockets (``/run/systemd/private``): systemd(1) documents them as private to systemd."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as paths


# --- what the running systemd says -------------------------------------------------------

def show_properties(items, prefix):
    """``-p`` arguments for ``systemctl show`` covering ``items``."""
    props = []
    for name in items:
        key = model.systemd_key(model.ITEMS[name], prefix)
        props.extend([key, key + 'Soft'])
    return props


def parse_show(text):
    """``systemctl show`` output -> {property: value}."""
    result = {}
    for line in (text or '').splitlines():
        if '=' in line:
            key, value = line.split('=', 1)
            result[key] = value
    return result


def live_limits(props, prefix, items=None):
    """{item: Limit} from parsed ``systemctl show`` properties (hard = X, soft = XSoft)."""
    result = {}
    for name in (items or model.RLIMIT_ITEMS):
        key = model.systemd_key(model.ITEMS[name], prefix)
        if key in props and key + 'Soft' in props:
            try:
                result[name] = model.Limit(model.from_systemd_show(name, props[key + 'Soft']),
                                           model.from_systemd_show(name, props[key]))
            except ValueError:
                continue
    return result


def limits_dict(limits):
    return dict((name, limit.as_dict()) for name, limit in sorted(limits.items()))


# --- reading the running systemd (``run`` is module.run_command or subprocess) ------------------

def systemd_running(root=''):
    """sd_booted(): systemd is PID 1."""
    return os.path.isdir(root + '/run/systemd/system')


#: the manager's default pids limit, read in the same ``systemctl show`` as its rlimits
TASKS_MAX_PROPERTY = 'DefaultTasksMax'


def manager_show(run, scope=paths.SYSTEM, user=None, uid=None):
    """({property: value}, error) of the running system manager or ``user``'s user manager:
    one ``systemctl show`` (``systemctl --user show`` run as the user) of every rlimit item
    and DefaultTasksMax. Every reader asks with the same command, so a caller whose ``run``
    keeps read-only answers for the call (Request.run) runs it once."""
    if scope == paths.USER and (not user or uid is None):
        return None, 'no user given'
    properties = show_properties(model.RLIMIT_ITEMS, paths.MANAGER_PREFIX) + [
        TASKS_MAX_PROPERTY]
    args = ['systemctl']
    if scope == paths.USER:
        args.append('--user')
    args += ['show', '--property=' + ','.join(properties)]
    if scope == paths.USER:
        args = commands.as_user(user, uid, args)
    rc, out, err = run(args)
    if rc != 0:
        return None, (err or out or 'systemctl failed with %s' % rc).strip()
    return parse_show(out), None


def manager_live(run, scope=paths.SYSTEM, user=None, uid=None):
    """({item: Limit}, error) of the running system manager or ``user``'s user manager
    (:func:`manager_show`)."""
    props, error = manager_show(run, scope, user, uid)
    if error:
        return None, error
    return live_limits(props, paths.MANAGER_PREFIX), None


USER_MANAGERS = re.compile(r'^user@(\d+)\.service$')


def running_user_managers(run):
    """[(unit, uid)] of running ``user@UID.service`` units: one ``systemctl list-units``."""
    rc, out, _err = run(['systemctl', 'list-units', '--type=service', '--state=running',
                         '--plain', '--no-legend', '--no-pager', 'user@*.service'])
    if rc != 0:
        return []
    names = [line.split()[0] for line in out.splitlines() if line.split()]
    result = []
    for name in names:
        match = USER_MANAGERS.match(name)
        if match:
            result.append((name, int(match.group(1))))
    return result


def running_instances(run, template):
    """The active instances of a template unit (``train@.service`` -> ``train@1.service``,
    ...): one ``systemctl list-units``."""
    prefix, suffix = template.rsplit('@', 1)
    rc, out, _err = run(['systemctl', 'list-units', '--type=' + suffix.lstrip('.'),
                         '--state=active', '--plain', '--no-legend', '--no-pager',
                         '%s@*%s' % (prefix, suffix)])
    if rc != 0:
        return []
    return sorted(line.split()[0] for line in out.splitlines() if line.split())


def main_pid_command(unit):
    """The documented command that says a unit's main process id (0: none)."""
    return ['systemctl', 'show', '-p', 'MainPID', '--value', unit]


def main_pid(run, unit):
    """``unit``'s main process id, or None when it has none (not running) or systemctl cannot
    say. ``run(args)`` -> (rc, out, err). The one reader of this fact."""
    rc, out, _err = run(main_pid_command(unit))
    pid = out.strip() if rc == 0 else ''
    return int(pid) if pid.isdigit() and pid != '0' else None


UNIT_STATE_PROPS = ('LoadState', 'ActiveState', 'SubState', 'MainPID', 'NeedDaemonReload',
                    'FragmentPath', 'DropInPaths')


def unit_live(run, unit, root=''):
    """What systemd has loaded for ``unit`` and what its main process runs with."""
    unit = paths.normalize_unit(unit)
    props = list(UNIT_STATE_PROPS) + show_properties(model.RLIMIT_ITEMS, paths.UNIT_PREFIX)
    rc, out, err = run(['systemctl', 'show', '--property=' + ','.join(props), unit])
    if rc != 0:
        return {'error': (err or out or 'systemctl failed with %s' % rc).strip()}
    values = parse_show(out)
    state = {
        'load_state': values.get('LoadState'),
        'active_state': values.get('ActiveState'),
        'sub_state': values.get('SubState'),
        'need_daemon_reload': values.get('NeedDaemonReload') == 'yes',
        'fragment_path': values.get('FragmentPath') or None,
        'dropin_paths': (values.get('DropInPaths') or '').split(),
        'limits': live_limits(values, paths.UNIT_PREFIX),
        'main_pid': None,
        'process': None,
    }
    try:
        pid = int(values.get('MainPID') or 0)
    except ValueError:
        pid = 0
    if pid > 0:
        state['main_pid'] = pid
        state['process'] = _proc_limits(pid, root)
    return state


def _proc_limits(pid, root=''):
    return host_limits.proc_limits(pid, root) or None


def is_active(state):
    return bool(state) and state.get('active_state') in ('active', 'activating', 'reloading')


def differing(expected, actual):
    """Item names whose Limit in ``expected`` differs from ``actual`` (a missing one differs)."""
    actual = actual or {}
    return sorted(name for name, limit in expected.items() if actual.get(name) != limit)


def stale_in_process(expected, process):
    """Item names of ``differing`` that a restart would change in a running process: a soft
    limit the program raised itself, above the expected soft and within the expected hard it
    runs with, is left out (setrlimit lets any process do that; Slurm's daemons raise their
    soft nofile to the hard one at start, rlimits_use_max_nofile, so a restart gives the same
    again). Found on the VM lane (issue 43): every rerun restarted slurmd."""
    process = process or {}
    return [name for name in differing(expected, process)
            if not _raised_itself(expected[name], process.get(name))]


def _raised_itself(want, have):
    # (the kernel never lets a soft limit above the hard one)
    return (have is not None and have.hard == want.hard and have.soft is not None
            and want.soft is not None and model.exceeds(have.soft, want.soft))


# --- whether a restart would disturb a workload -------------------------------------------

CGROUP_ROOTS = ('/sys/fs/cgroup', '/sys/fs/cgroup/unified', '/sys/fs/cgroup/systemd')


def cgroup_dir(pid):
    """The directory of a process's systemd cgroup (unified v2, or the hybrid layout's
    ``unified`` or ``name=systemd`` hierarchy), or None."""
    found = []
    try:
        with open('/proc/%s/cgroup' % pid) as handle:
            for line in handle:
                fields = line.rstrip('\n').split(':', 2)
                if len(fields) == 3 and (fields[0] == '0' or fields[1] == 'name=systemd'):
                    found.append(fields[2])
    except (IOError, OSError):
        return None
    for path in found:
        for root in CGROUP_ROOTS:
            candidate = root + path
            if os.path.isfile(os.path.join(candidate, 'cgroup.procs')):
                return candidate
    return None


def cgroup_pids(path):
    """Every process in the cgroup tree at ``path``."""
    found = []
    for directory, _dirs, files in os.walk(path):
        if 'cgroup.procs' not in files:
            continue
        try:
            with open(os.path.join(directory, 'cgroup.procs')) as handle:
                found.extend(int(p) for p in handle.read().split())
        except (IOError, OSError, ValueError):
            continue
    return found


def unit_busy(host, unit):
    """Why restarting ``unit`` now would disturb a workload, or '' when it is idle: processes
    besides its main one in its cgroup (a user manager: processes of its user services). The
    one helper for this fact (the restart policy of limits_profile and of the restart engine,
    systemd/restarts.py)."""
    pid = main_pid(lambda args: host.run_command(args, environ_update=commands.c_env()), unit)
    if pid is None:
        return ''
    directory = cgroup_dir(pid)
    if directory is None:
        return ''
    if unit.startswith('user@'):
        # the manager itself runs in init.scope; the user's services in app.slice
        base = os.path.dirname(directory) if directory.endswith('/init.scope') else directory
        running = cgroup_pids(os.path.join(base, 'app.slice'))
        return ('%d process(es) of running user services would be stopped' % len(running)
                if running else '')
    others = [p for p in cgroup_pids(directory) if p != pid]
    return ('%d process(es) besides the main one run in its cgroup (workloads)' % len(others)
            if others else '')
