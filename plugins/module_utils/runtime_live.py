# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container runtimes as they run: how many containers, and dockerd's live-restore.
Read-only; used by the planners (docker_plan, podman_plan), the reports (info) and the docker
context."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils import commands


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
    """{count, live_restore} from the docker CLI, falling back to ``live_restore_file`` (what
    daemon.json says) for live_restore.

    ``host``: the AnsibleModule (run_command, get_bin_path)."""
    count = container_count(host, 'docker')
    live_restore = None
    docker = host.get_bin_path('docker')
    if docker:
        rc, out, _err = host.run_command(
            [docker, 'info', '--format', '{{json .LiveRestoreEnabled}}'],
            environ_update=commands.c_env())
        if rc == 0 and out.strip() in ('true', 'false'):
            live_restore = out.strip() == 'true'
    if live_restore is None:
        live_restore = bool(live_restore_file)
    return {'count': count, 'live_restore': live_restore}
