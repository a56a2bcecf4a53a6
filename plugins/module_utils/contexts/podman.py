# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Podman containers: ``default_ulimits`` in containers.conf (and its drop-ins) apply to every
new container; no daemon, so nothing restarts. Configured and probed as ``podman``."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths as rtpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option, RoleVar, container_image

DROPIN = rtpaths.CONTAINERS_DROPIN


PATH = Option('podman_dropin', 'path', default=DROPIN, description=(
    'The containers.conf drop-in for Podman.',))
SHM_SIZE = Option(
    'podman_shm_size', 'str', description=(
        "Podman's C(shm_size) in the C(podman) context's containers.conf drop-in, the "
        "C(/dev/shm) of new Podman containers (C(8G), base 1024; Podman's default is 64 MB); "
        'unset leaves it alone. An unparsable size fails naming this option before anything '
        'is written.',),
    role=RoleVar('limits_podman_shm_size', default='', description=(
        "Podman's C(shm_size) in the containers.conf drop-in of the C(podman) context (for "
        "example C(8G)); empty leaves it alone (Podman's default is 64 MB).",)))
IMAGE = container_image('podman', 'Podman')
# What a rootful container gets for an item default_ulimits does not set: podman's
# pkg/specgen/generate addRlimits (v4, Linux) sets RLIMIT_NOFILE and RLIMIT_NPROC to
# define.RLimitDefaultValue (1048576) unless given, capped at podman's own limits when rootless
# or without CAP_SYS_RESOURCE (measured: podman 4.3.1 in a node without it, 20000:20000 and
# 96367:96367, its own).
ROOTFUL_DEFAULTS = {'nofile': 1048576, 'nproc': 1048576}


class Podman(Context):
    name = 'podman'
    kinds = ('rlimit', 'pids')
    pids_dropin = True
    pids_container = True
    probe = 'podman'
    own_ipc = True
    task_limit = 'pids.max'
    files = rtpaths.CONTAINERS_MAIN_FILES + (rtpaths.CONTAINERS_DROPIN_DIR + '/*.conf',)
    path = PATH
    image = IMAGE
    options = (SHM_SIZE,)
    target = DROPIN
    fallback = "Podman's built-in default"

    def detect(self, root=''):
        return commands.find_binary('podman', root) is not None

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import podman_plan
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan

        def plan():
            return podman_plan.plan_podman(runtime_plan.RuntimeRequest(
                self.limits(self.name, request, host, ceiling), request.paths[self.path_option],
                shm_size=request.podman_shm_size, force=request.force, purge=True,
                field='profile'), host, ceiling)
        return [(self.name, plan)]

    def undo_plans(self, request, host):
        """Its containers.conf drop-in removed (no daemon: nothing restarts)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
        return [(self.name, lambda: undo_files.remove_owned(
            request.paths[self.path_option], 'drop-in'))]

    def current(self, label, request, host):
        """containers.conf's ``default_ulimits`` as Podman reads them (file:line:col); for an
        item no file sets, what a rootful container gets without it: nofile and nproc
        1048576:1048576 (Podman's own default, ROOTFUL_DEFAULTS; capped at the podman
        process's own limits without CAP_SYS_RESOURCE), any other item the podman
        process's own limits, which the runtime passes on (this process's, read once a call,
        stand in for them)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
            limits_model as model)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containers_conf)
        found = containers_conf.effective()['default_ulimits']
        current = dict((name, entry) for name, entry in found.items() if name in request.limits)
        caller = request.read('podman_caller', lambda: host_limits.proc_limits('self'))
        can_raise = request.read('podman_can_raise', lambda: host_limits.has_cap(
            host_limits.CAP_SYS_RESOURCE))
        for name in request.limits:
            if name in current:
                continue
            if name in ROOTFUL_DEFAULTS:
                default = model.Limit(ROOTFUL_DEFAULTS[name], ROOTFUL_DEFAULTS[name])
                own = (caller or {}).get(name)
                if not can_raise and own is not None:
                    # without CAP_SYS_RESOURCE Podman caps its default at its own limits
                    default = model.Limit(*[
                        getattr(own, side) if model.exceeds(getattr(default, side),
                                                            getattr(own, side))
                        else getattr(default, side) for side in ('soft', 'hard')])
                current[name] = (default, "Podman's default for a rootful container (no "
                                 'default_ulimits entry%s)' % (
                                     '' if can_raise else ', capped at its own limits'))
            elif name in (caller or {}):
                current[name] = (caller[name], "the podman process's own limits (no "
                                 'default_ulimits entry; this process\'s)')
        return current

    def limits(self, label, request, host, ceiling):
        """The profile kept at what containers get now (Context.limits), and every
        ``default_ulimits`` entry another file gives for an item outside the profile: the
        drop-in's list replaces the earlier files' (unless {append=true}), so an item only
        they set would otherwise be lost."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containers_conf)
        limits = Context.limits(self, label, request, host, ceiling)
        own = request.paths[self.path_option] + ':'
        for name, (limit, place) in containers_conf.effective()['default_ulimits'].items():
            if not str(place).startswith(own):
                limits.setdefault(name, limit)
        return limits

    def pids_source(self, root=''):
        """The last containers.conf ``pids_limit``, else Podman's own default (ours to set)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf
        value, where = containers_conf.pids_limit(root)
        if where:
            return '%s (pids_limit = %s)' % (where, value), self.file_owner(where)
        return ("the container's own cgroup: Podman's built-in pids_limit (%d: "
                '/usr/share/containers/containers.conf of Podman 4.3.1 says so), no '
                'containers.conf sets pids_limit' % containers_conf.PODMAN_PIDS_DEFAULT), 'ours'

    def pids_advice(self, owner, decides=''):
        if owner == 'ours':
            return 'run limits_profile with pids in the profile and contexts: [podman]'
        return None

    def pids_post(self, pids, label, change):
        """``pids_limit`` in Podman's containers.conf drop-in (podman_plan.add_pids_limit)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import podman_plan
        return podman_plan.add_pids_limit(change, pids.value, pids.kernel_max)

    def probe_command(self, user, uid, params):
        return probes.container_command('podman', params[self.image_option],
                                        params['run_options'])

    def run_probe(self, prober, user, uid, command):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import _nonroot
        _nonroot.probe(prober, self.probe, command)
        return prober.proc(command, self.probe)

    def report(self, auditor):
        if self.name not in auditor.present:
            return None, []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        report = info.podman_report(auditor.host)
        return report, list(report['notes'])

    def audit_probe(self, report, auditor):
        return report is not None and bool(auditor.params.get(self.image_option))

    def configured(self, report):
        return (report or {}).get('config', {}).get('default_ulimits') or {}


CONTEXT = Podman()
