# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One limits profile for every context, planned through the single-format planners.

``plan_profile`` runs every planner (PAM, systemd system/user/units, Docker, Podman) before
anything is written, so one refused value anywhere leaves every file as it was.
``apply_all`` then writes the changed files and puts the earlier ones back if a later write
fails. Used by the limits_profile module.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils import docker_daemon_json as dj
from ansible_collections.gpufleet.tuning.plugins.module_utils import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils import pam_limits_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_conf as sdconf
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_plan

CONTEXTS = ['pam', 'systemd_system', 'systemd_user', 'docker', 'containerd', 'podman']
PATH_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']


def unit_exists(unit, root=''):
    return any(os.path.exists(root + os.path.join(d, unit)) for d in sdconf.UNIT_DIRS)


def detect_contexts(root=''):
    """The contexts present on the node, from files only (no service manager queries)."""
    systemd = os.path.isdir(root + '/run/systemd/system')
    found = []
    if os.path.isdir(root + '/etc/security'):
        found.append('pam')
    if systemd:
        found.append('systemd_system')
        if unit_exists('user@.service', root):
            found.append('systemd_user')
    if unit_exists('docker.service', root):
        found.append('docker')
    if unit_exists('containerd.service', root):
        found.append('containerd')
    if any(os.path.exists(root + os.path.join(d, 'podman')) for d in PATH_DIRS):
        found.append('podman')
    return found


def unit_list(units, contexts):
    """limits_units plus containerd.service for the containerd context, with .service added."""
    names = list(units or []) + (['containerd.service'] if 'containerd' in contexts else [])
    result = []
    for name in names:
        name = name if '.' in name else name + '.service'
        if name not in result:
            result.append(name)
    return result


def pam_entries(profile, domains):
    """The profile as pam_limits entries: one per domain and item."""
    entries = []
    for domain in domains:
        for item, value in profile.items():
            entry = dict(domain=domain, item=item, value=None, soft=None, hard=None)
            if isinstance(value, dict):
                entry.update(value)     # keys checked by model.parse_profile before this
            else:
                entry['value'] = value
            entries.append(entry)
    return entries


def process_start(pid):
    """Wall-clock start time of a process (seconds), or None."""
    try:
        with open('/proc/%s/stat' % pid) as handle:
            fields = handle.read().rsplit(')', 1)[1].split()
        with open('/proc/uptime') as handle:
            uptime = float(handle.read().split()[0])
    except (IOError, OSError, IndexError, ValueError):
        return None
    ticks = os.sysconf('SC_CLK_TCK')
    return time.time() - uptime + int(fields[19]) / float(ticks)


def dockerd_pid(host, pidfile='/run/docker.pid'):
    """The running dockerd's PID: its pid file when it names a live dockerd, else systemd's."""
    try:
        with open(pidfile) as handle:
            pid = handle.read().strip()
        with open('/proc/%s/comm' % pid) as handle:
            if pid.isdigit() and handle.read().strip() == 'dockerd':
                return pid
    except (IOError, OSError):
        pass
    rc, out, _err = host.run_command(['systemctl', 'show', '-p', 'MainPID', '--value',
                                      'docker.service'], environ_update=runtime_plan.C_ENV)
    pid = out.strip() if rc == 0 else ''
    return pid if pid.isdigit() and pid != '0' else None


def docker_pending(host, path):
    """True when daemon.json changed after the running dockerd started (a restart still owed)."""
    pid = dockerd_pid(host)
    if pid is None:
        return False
    started = process_start(pid)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return False
    return started is not None and mtime > started + 0.1


def plan_profile(params, host):
    """[(context, Change)] for every context; raises changes.Failure naming the context."""
    profile = params['profile']
    if not profile:
        raise changes.Failure('profile: at least one item is required')
    try:
        model.parse_profile(profile, 'profile')
    except model.LimitError as exc:
        raise changes.Failure(str(exc))
    for name, value in profile.items():
        # one message naming the item, not one per context and domain
        if isinstance(value, dict) and value.get('value') is None and \
                (value.get('soft') is None) != (value.get('hard') is None):
            raise changes.Failure('profile.%s: give both soft and hard (or one value for both)'
                                  % name)
    contexts = params['contexts'] or detect_contexts()
    ceiling = host_limits.Ceiling()
    common = dict(on_conflict=params['on_conflict'], force=params['force'])
    plans = []
    if 'pam' in contexts:
        plans.append(('pam', pam_limits_plan.plan_change, dict(
            common, limits=pam_entries(profile, params['domains']), path=params['pam_path'],
            state='present', exclusive=False, mode='0644', limits_conf=conf.LIMITS_CONF,
            limits_dir=conf.LIMITS_DIR), (ceiling,)))
    for context, scope in (('systemd_system', 'system'), ('systemd_user', 'user')):
        if context in contexts:
            plans.append((context, systemd_plan.plan_change, dict(
                common, scope=scope, unit=None, limits=profile, state='present',
                dropin=params['dropin']), (host.run_command, ceiling)))
    for unit in unit_list(params['units'], contexts):
        plans.append(('unit:' + unit, systemd_plan.plan_change, dict(
            common, scope=None, unit=unit, limits=profile, state='present',
            dropin=params['dropin']), (host.run_command, ceiling)))
    if 'docker' in contexts:
        # running containers are asked for only when a restart is due (actions)
        plans.append(('docker', runtime_plan.plan_docker, dict(
            ulimits=profile, shm_size=params['docker_shm_size'], purge=False,
            path=params['docker_daemon_json'], unit='docker.service', probe_containers=False,
            force=params['force']), (host, ceiling)))
    if 'podman' in contexts:
        plans.append(('podman', runtime_plan.plan_podman, dict(
            ulimits=profile, shm_size=None, purge=False, path=params['podman_dropin'],
            force=params['force']), (host, ceiling)))

    planned = []
    for context, planner, options, extra in plans:
        try:
            change = planner(options, *extra)
        except changes.Failure as exc:
            raise changes.Failure('%s: %s' % (context, exc.msg), context=context,
                                  **exc.result)
        planned.append((context, change))
    for context, change in planned:
        if change.changed:
            problem = change.writable()
            if problem:
                raise changes.Failure('%s: %s' % (context, problem), context=context)
    return contexts, planned


def apply_all(planned, backup):
    """Write every changed file; on a failed write put the files written so far back."""
    done = []
    for context, change in planned:
        if not change.changed:
            continue
        try:
            change.apply(backup)
        except changes.Failure as exc:
            restored = []
            for _context, earlier in reversed(done):
                try:
                    earlier.undo()
                    restored.append(earlier.path)
                except (IOError, OSError) as undo_exc:
                    restored.append('%s (NOT restored: %s)' % (earlier.path, undo_exc))
            raise changes.Failure('%s: %s; nothing else was written%s' % (
                context, exc.msg,
                (', restored: ' + ', '.join(restored)) if restored else ''), context=context)
        done.append((context, change))
    return done


def file_record(context, change):
    record = dict(context=context, path=change.path, changed=change.changed,
                  created=change.current is None and change.new is not None)
    if change.result.get('backup_file'):
        record['backup_file'] = change.result['backup_file']
    return record


# Units whose restart stops or disturbs the workloads they run: their restarts go through the
# restart policy (``when_idle`` by default), as do the user managers (user@UID.service).
WORKLOAD_UNITS = ('docker.service', 'containerd.service', 'crio.service', 'slurmd.service')
RESTART_POLICIES = ('when_idle', 'always', 'never')


CGROUP_ROOTS = ('/sys/fs/cgroup', '/sys/fs/cgroup/unified', '/sys/fs/cgroup/systemd')


def cgroup_dir(pid):
    """The directory of a process's systemd cgroup (unified v2, or the hybrid layout's
    ``unified`` or ``name=systemd`` hierarchy), or None."""
    paths = []
    try:
        with open('/proc/%s/cgroup' % pid) as handle:
            for line in handle:
                fields = line.rstrip('\n').split(':', 2)
                if len(fields) == 3 and (fields[0] == '0' or fields[1] == 'name=systemd'):
                    paths.append(fields[2])
    except (IOError, OSError):
        return None
    for path in paths:
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


def unit_main_pid(host, unit):
    rc, out, _err = host.run_command(['systemctl', 'show', '-p', 'MainPID', '--value', unit],
                                     environ_update=runtime_plan.C_ENV)
    pid = out.strip() if rc == 0 else ''
    return int(pid) if pid.isdigit() and pid != '0' else None


def unit_busy(host, unit):
    """Why restarting ``unit`` now would disturb a workload, or '' when it is idle."""
    pid = unit_main_pid(host, unit)
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


def docker_busy(running):
    if running.get('count') and not running.get('live_restore'):
        return '%d running container(s) would be stopped (live-restore is off)' % running['count']
    if running.get('count') is None:
        return 'the running containers could not be counted'
    return ''


def actions(planned, host, policy='when_idle'):
    """What must be reloaded or restarted, from the plans and the live system.

    ``deferred`` lists the restarts ``policy`` does not allow now (a workload unit or a user
    manager that is busy under ``when_idle``; every one of them under ``never``): the caller
    restarts the others and reports these as pending."""
    result = dict(reexec=False, user_managers=[], daemon_reload=False, units=[], docker=False,
                  docker_pending=False, deferred=[], policy=policy)
    session_changed = False
    docker_change = None
    for context, change in planned:
        res = change.result
        if context in ('pam', 'systemd_system', 'systemd_user') and change.changed:
            session_changed = True
        if context == 'systemd_system':
            result['reexec'] = bool(res.get('reexec_required'))
        elif context == 'systemd_user':
            result['user_managers'] = list(res.get('restart_required') or [])
        elif context.startswith('unit:'):
            result['daemon_reload'] = result['daemon_reload'] or bool(
                res.get('daemon_reload_required'))
            result['units'].extend(u for u in res.get('restart_required') or []
                                   if u not in result['units'])
        elif context == 'docker':
            docker_change = change
            result['docker_pending'] = not change.changed and docker_pending(host, change.path)
            result['docker'] = change.changed or result['docker_pending']
    if 'docker.service' in result['units']:
        # dockerd restarts once, through the docker restart and its policy
        result['units'].remove('docker.service')
        result['docker'] = True
    if session_changed:
        # user@UID.service runs a PAM session under the system manager's defaults: a change to
        # either (or to user.conf) reaches user services only through a restart
        result['user_managers'] = sorted(set(result['user_managers'])
                                         | set(running_user_managers(host)))
    if result['docker']:
        if docker_change is not None:
            runtime_plan.probe_containers(docker_change, host, policy)
            running = docker_change.result['running_containers']
        else:
            running = runtime_plan.running_containers(host, {})
        result['running_containers'] = running
        owed = [('docker.service', docker_busy(running) if policy == 'when_idle' else '')]
    else:
        owed = []
    owed += [(u, '') for u in result['units'] if u in WORKLOAD_UNITS]
    owed += [(u, '') for u in result['user_managers']]
    for unit, why in owed:
        if policy == 'always':
            continue
        if policy == 'never':
            result['deferred'].append(dict(unit=unit, reason='restart policy never'))
            continue
        why = why or (unit_busy(host, unit) if unit != 'docker.service' else '')
        if why:
            result['deferred'].append(dict(unit=unit, reason=why))
    return result


def running_user_managers(host):
    if not sdconf.systemd_running():
        return []

    def run(args):
        return host.run_command(args, environ_update=sdconf.live_env())
    return [unit for unit, _uid in sdconf.running_user_managers(run)]


DEFAULTS = dict(pam_path='/etc/security/limits.d/90-gpufleet-tuning.conf',
                docker_daemon_json=dj.DAEMON_JSON, podman_dropin=cc.DROPIN)
