# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container runtimes as they run: how many containers, dockerd's live-restore, and whether
a restart of containerd or CRI-O would disturb pods (one helper each: the restart policy of the
contexts and of the modules that restart a runtime). Read-only; used by the planners
(docker_plan, podman_plan), the reports (info), the contexts and the runtime modules."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands


def container_count(host, runtime):
    """How many containers ``runtime`` (docker, podman) runs; None when it cannot say."""
    binary = host.get_bin_path(runtime)
    if not binary:
        return None
    rc, out, _err = host.run_command([binary, 'ps', '-q'], environ_update=commands.c_env())
    if rc != 0:
        return None
    return len([line for line in out.splitlines() if line.strip()])


def running_containers(host, live_restore_file=False):
    """{count, live_restore} from one ``docker info`` (running and paused containers, as
    ``docker ps`` lists them; live-restore as the running dockerd has it), falling back to
    ``live_restore_file`` (what daemon.json says) for live_restore and to None for the count
    when dockerd does not answer.

    ``host``: the AnsibleModule (run_command, get_bin_path)."""
    count = live_restore = None
    docker = host.get_bin_path('docker')
    if docker:
        rc, out, _err = host.run_command(
            [docker, 'info', '--format', DOCKER_INFO_FORMAT], environ_update=commands.c_env())
        count, live_restore = parse_docker_info(out) if rc == 0 else (None, None)
    if live_restore is None:
        live_restore = bool(live_restore_file)
    return {'count': count, 'live_restore': live_restore}


#: running, paused, live-restore: one docker CLI call (each call costs the node a Go process)
DOCKER_INFO_FORMAT = '{{.ContainersRunning}} {{.ContainersPaused}} {{json .LiveRestoreEnabled}}'


def parse_docker_info(text):
    """(count, live_restore) from DOCKER_INFO_FORMAT's output; None for what it lacks."""
    fields = text.split()
    count = live_restore = None
    if len(fields) == 3:
        if fields[0].isdigit() and fields[1].isdigit():
            count = int(fields[0]) + int(fields[1])
        if fields[2] in ('true', 'false'):
            live_restore = fields[2] == 'true'
    return count, live_restore


def containerd_pods_busy(host):
    """Why a restart of containerd now would disturb pods, or None: pod sandboxes and
    containers of the k8s.io namespace exist (or they cannot be listed: then it counts as busy)."""
    rc, out, err = host.run_command(['ctr', '-n', 'k8s.io', 'containers', 'ls', '-q'],
                                    environ_update=commands.c_env())
    if rc != 0:
        return 'the pods could not be listed (ctr: %s)' % (err or out).strip()
    count = len(out.split())
    return ('%d pod container(s) and sandbox(es) exist' % count) if count else None


def crio_pods_busy(host):
    """Why a restart of CRI-O now would disturb pods, or None: pod sandboxes exist (``crictl
    pods -q``), or they cannot be listed (then it counts as busy)."""
    crictl = host.get_bin_path('crictl')
    if crictl is None:
        return 'the pods could not be listed (crictl: not installed)'
    rc, out, err = host.run_command([crictl, 'pods', '-q'], environ_update=commands.c_env())
    if rc != 0:
        return 'the pods could not be listed (crictl: %s)' % (err or out).strip()
    count = len(out.split())
    return ('%d pod sandbox(es) exist' % count) if count else None
