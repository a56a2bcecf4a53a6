# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker containers: dockerd's ``default-ulimits`` in daemon.json apply to every new
container. Configured and probed as ``docker`` (``docker run`` of an image); a change needs
dockerd restarted, which the restart policy defers while containers run without
live-restore."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import dockerd_config
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option, RoleVar, container_image

DAEMON_JSON = dj.DAEMON_JSON
INHERITED = 'inherited from containerd'    # the source of an item daemon.json does not set
UNIT = 'docker.service'


def process_start(pid):
    """Wall-clock start time of a process (seconds), or None."""
    ticks = host_limits.start_ticks(pid)
    try:
        with open('/proc/uptime') as handle:
            uptime = float(handle.read().split()[0])
    except (IOError, OSError, IndexError, ValueError):
        return None
    if ticks is None:
        return None
    return time.time() - uptime + ticks / float(os.sysconf('SC_CLK_TCK'))


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
    pid = sdlive.main_pid(
        lambda args: host.run_command(args, environ_update=commands.c_env()), UNIT)
    return None if pid is None else str(pid)


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


def docker_busy(running):
    if running.get('count') and not running.get('live_restore'):
        return '%d running container(s) would be stopped (live-restore is off)' % running['count']
    if running.get('count') is None:
        return 'the running containers could not be counted'
    return ''


def model_limit(entry):
    """A {soft, hard} result entry as a Limit."""
    return model.Limit(entry['soft'], entry['hard'])


PATH = Option('docker_daemon_json', 'path', description=(
    "Docker's daemon configuration file; left out, the one dockerd reads (docker.service's "
    'C(--config-file), else C(/etc/docker/daemon.json)). A path a C(--config-file) flag '
    "contradicts is refused naming the flag's C(file:line).",))
SHM_SIZE = Option(
    'docker_shm_size', 'str', description=(
        "Docker's C(default-shm-size) for new containers (C(8G)); unset leaves it alone.",),
    role=RoleVar('limits_docker_shm_size', default='', description=(
        "Docker's C(default-shm-size) (for example C(8G)); empty leaves it alone.",)))
IMAGE = container_image('docker', 'Docker')


class Docker(Context):
    name = 'docker'
    probe = 'docker'
    own_ipc = True
    task_limit = 'pids.max'
    kinds = ('rlimit', 'pids')
    pids_container = True
    path = PATH
    image = IMAGE
    options = (SHM_SIZE,)
    files = (DAEMON_JSON,)
    target = DAEMON_JSON
    restart_rank = 0
    fallback = 'inherited from containerd'

    def detect(self, root=''):
        # the snap's dockerd too: the audit reads its file, the tune refuses it with guidance
        return sdpaths.unit_exists(UNIT, root) or sdpaths.unit_exists(dockerd_config.SNAP_UNIT,
                                                                      root)

    def target_path(self, root=''):
        return dockerd_config.config_file(UNIT, root)['path']

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import docker_plan
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan

        def plan():
            # running containers are asked for only when a restart is due (owed)
            return docker_plan.plan_docker(runtime_plan.RuntimeRequest(
                self.limits(self.name, request, host, ceiling), request.paths[self.path_option],
                shm_size=request.docker_shm_size, unit=UNIT, force=request.force,
                field='profile'), host, ceiling, probe=False)
        return [(self.name, plan)]

    def undo_plans(self, request, host):
        """daemon.json's default-ulimits and default-shm-size as in its oldest backup, else
        removed; dockerd restarts under the policy."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files

        def plan():
            try:
                path = dockerd_config.target(request.paths[self.path_option], UNIT)[0]
            except dockerd_config.ConfigFileError as exc:
                from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
                raise changes.Failure(str(exc), dict(path=None), kind=exc.kind)
            return undo_files.daemon_json(path, UNIT)
        return [(self.name, plan)]

    def current(self, label, request, host):
        """daemon.json's ``default-ulimits`` (file:line:column), or, for an item it does not
        set, containerd's own limits, which a new container inherits."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import FileError
        found = {}
        try:
            path = dockerd_config.target(request.paths[self.path_option], UNIT)[0]
            raw, data = dj.read(path)
            text = text_codec.decode_bytes(raw) or ''
            for name, limit in dj.read_ulimits(data, text, path).items():
                if name in request.limits:
                    found[name] = (limit, dj.where(text, (dj.ULIMITS_KEY, name), path))
        except (dj.DaemonJsonError, FileError, ValueError):
            return {}   # the plan names what is wrong with the file
        # read once a call, shared with containerd_cri (own_limits)
        inherited = request.read('containerd_limits', info.containerd_limits)
        for name, entry in (inherited.get('limits') or {}).items():
            if name in request.limits and name not in found:
                found[name] = (model_limit(entry), '%s (pid %s)' % (INHERITED,
                                                                    inherited['pid']))
        return found

    def act(self, change, actions, state, host):
        state['docker_change'] = change
        actions['docker_pending'] = not change.changed and docker_pending(host, change.path)
        actions['docker'] = change.changed or actions['docker_pending']

    def settle(self, actions, state, host):
        if UNIT in actions['units']:
            # dockerd restarts once, through the docker restart and its policy
            actions['units'].remove(UNIT)
            actions['docker'] = True

    def owed(self, actions, state, host, policy):
        if not actions['docker']:
            return []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import docker_plan
        change = state.get('docker_change')
        if change is not None:
            docker_plan.probe_containers(change, host, policy)
            running = change.result['running_containers']
        else:
            running = runtime_live.running_containers(host)
        actions['running_containers'] = running
        return [(UNIT, docker_busy(running) if policy == 'when_idle' else '')]

    def restart_context(self, unit):
        return self.probe if unit == UNIT else None

    def pids_source(self, root=''):
        """dockerd sets no pids.max of its own: the container's cgroup has what the run asks."""
        return ("the container's own cgroup: docker run --pids-limit (dockerd has no "
                'daemon-wide default pids limit; none is set unless the run asks)'), ''

    def pids_advice(self, owner, decides=''):
        if owner not in ('ours', 'theirs'):
            return 'start the container with --pids-limit (dockerd has no default to set)'
        return None

    def probe_command(self, user, uid, params):
        return probes.container_command('docker', params[self.image_option],
                                        params['run_options'])

    def run_probe(self, prober, user, uid, command):
        """A new container's limits. With ``prober.max_age`` (limits_audit's probe_max_age),
        a proof the controller passed (``prober.proofs``, limits_audit's probe_proofs) is
        reused when it was made under the key computed now and within the age
        (module_utils/host/proofs.py); with ``prober.prove`` the proof of the result (the reused
        one, or a new one when nothing changed while the container ran) goes to
        ``prober.made`` for the controller to keep. Nothing is written on the node."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import _nonroot
        if not (prober.max_age or prober.prove):
            _nonroot.probe(prober, self.probe, command)
            return prober.proc(command, self.probe)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import proofs
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        daemon_json = dockerd_config.config_file(UNIT)['path']
        key = proofs.docker_key(command, daemon_json)
        earlier = prober.proofs.get(self.probe)
        kept = proofs.reusable(earlier, key, prober.max_age)
        if kept is not None:
            output, at = kept
            try:
                limits = probe_results.parse_probe(output, self.probe)
            except probe_results.model.LimitError:
                limits = None
            if limits:
                prober.reused[self.probe] = at
                if prober.prove:
                    prober.made[self.probe] = proofs.proof(key, output, lambda: at)
                return limits
        output = prober.run(command)
        # a new container was started (no proof reused): its non-root twin too
        _nonroot.probe(prober, self.probe, command)
        try:
            limits = probe_results.parse_probe(output, self.probe)
        except probe_results.model.LimitError as exc:
            raise probe_results.ProbeError(str(exc))
        if prober.prove and key and proofs.docker_key(command, daemon_json) == key:
            prober.made[self.probe] = proofs.proof(key, output)
        return limits

    def report(self, auditor):
        if self.name not in auditor.present:
            return None, []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        report = info.docker_report(auditor.host, running=False)
        clashes = [c['msg'] for c in report['flag_conflicts']]
        # a clash is one of the audit's problems (problems()), not a warning as well
        return report, ['daemon.json: %s' % p for p in report['problems'] if p not in clashes]

    def problems(self, report):
        """The flags of docker.service that clash with the daemon.json dockerd reads
        (dj.clashes, the tune's check): dockerd would refuse, or has refused, to start."""
        return [dict(source=c['source'], msg=c['msg'], state=c['state'])
                for c in (report or {}).get('flag_conflicts') or []]

    def not_applied(self, report, host):
        """dockerd started before daemon.json last changed: every item waits for its restart."""
        if report is None or not docker_pending(host, DAEMON_JSON):
            return {}
        return dict(((self.probe, item), 'restarting docker.service (dockerd started before '
                     'daemon.json last changed)') for item in model.ITEMS)

    def audit_probe(self, report, auditor):
        return report is not None and bool(auditor.params.get(self.image_option))

    def configured(self, report):
        """daemon.json's ``default-ulimits``, and the ``--default-ulimit`` flags docker.service
        passes to dockerd (file:line of its ExecStart): a flag decides a new container's value
        as the key does (both at once stop dockerd: problems())."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
            container_limits as ctl)
        found = dict((report or {}).get('config', {}).get('default_ulimits') or {})
        for flag in (report or {}).get('unit_flags') or []:
            if flag.get('key') != dj.ULIMITS_KEY:
                continue
            try:
                item, limit = model.from_ulimit_string(flag.get('value'), flag.get('flag'))
            except model.LimitError:
                continue    # dockerd refuses the flag itself: the daemon does not run
            # the last flag for a name wins (dockerd's NamedUlimitOpt)
            found[item.name] = ctl.limits_result({item.name: limit},
                                                 {item.name: flag['source']})[item.name]
        return found


CONTEXT = Docker()
