# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CRI-O (Kubernetes pods on CRI-O): ``[crio.runtime] default_ulimits`` in a crio.conf.d drop-in
of the collection's own (crio_conf, crio_plan), read by CRI-O at start, so crio.service
restarts under the restart policy (the units context's checked restart). CRI-O reads crio.conf,
then every file under crio.conf.d in lexical order; the plan reads them all and refuses a later
file that sets the list. Configured as ``crio``; no probe of its own (a pod needs a kubelet or
a CRI client). CRI-O is not in Debian 12: never run against a real CRI-O."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths as rtpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option

UNIT = 'crio.service'


def own_limits(host):
    """{'pid', 'limits': {item: Limit}} of crio.service's running main process (what its pods
    inherit for an item default_ulimits does not set), or {} when it does not run (or no
    ``host`` is given to ask systemd)."""
    if host is None:
        return {}
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live
    pid = systemd_live.main_pid(
        lambda args: host.run_command(args, environ_update=commands.c_env()), UNIT)
    limits = host_limits.proc_limits(str(pid)) if pid is not None else {}
    return {'pid': pid, 'limits': limits} if limits else {}


PATH = Option('crio_dropin', 'path', default=rtpaths.CRIO_DROPIN, description=(
    "The crio.conf.d drop-in for CRI-O's C(default_ulimits) (the C(crio) context), as "
    'M(gpufleet.tuning.crio_ulimits) writes it. C(/etc/crio/crio.conf) and every file under '
    "C(/etc/crio/crio.conf.d) are read in CRI-O's order first. A file CRI-O would not start "
    'with, or a later file that sets C(default_ulimits), is refused (unless O(force)), '
    'naming C(file:line), before anything is written. A change restarts C(crio.service) '
    'under O(restart_policy).',))


class Crio(Context):
    name = 'crio'
    files = (rtpaths.CRIO_MAIN, rtpaths.CRIO_DROPIN_DIR + '/*')
    path = PATH
    target = rtpaths.CRIO_DROPIN
    restart_rank = 1
    fallback = "crio.service's own limits (inherited when no file sets default_ulimits)"

    def detect(self, root=''):
        return (os.path.isfile(root + rtpaths.CRIO_MAIN)
                or os.path.isdir(root + rtpaths.CRIO_DROPIN_DIR))

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_plan
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan

        def plan():
            return crio_plan.plan_crio(runtime_plan.RuntimeRequest(
                self.limits(self.name, request, host, ceiling), request.paths[self.path_option],
                force=request.force, purge=True,
                field='profile'), ceiling=ceiling)
        return [(self.name, plan)]

    def undo_plans(self, request, host):
        """Its crio.conf.d drop-in removed: crio.service restarts under the policy."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
        return [(self.name, lambda: undo_files.remove_owned(
            request.paths[self.path_option], 'drop-in'))]

    def current(self, label, request, host):
        """The ``default_ulimits`` CRI-O uses (the last file that sets the list, file:line:col);
        for an item it does not set, crio.service's own limits, which its pods inherit (its
        main process's /proc/PID/limits, read once a call; unknown when CRI-O does not run)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
        try:
            found = crio_conf.effective(crio_conf.config_files(crio_conf.MAIN,
                                                               crio_conf.DROPIN_DIR))
        except (errors.Error, IOError, OSError, ValueError):
            return {}   # the plan names the file it cannot read
        place, limits = found[-1] if found else (None, {})
        current = dict((name, (limit, place)) for name, limit in limits.items()
                       if name in request.limits)
        running = request.read('crio_limits', lambda: own_limits(host))
        for name, limit in (running.get('limits') or {}).items():
            if name in request.limits and name not in current:
                current[name] = (limit, "crio.service's own limits (pid %s)" % running['pid'])
        return current

    def limits(self, label, request, host, ceiling):
        """The profile kept at what pods get now (Context.limits), and every entry of the list
        CRI-O uses now for an item outside the profile, when another file sets that list: the
        drop-in's list replaces it (the last file wins), so an item only that file sets would
        otherwise be lost."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
        limits = Context.limits(self, label, request, host, ceiling)
        try:
            found = crio_conf.effective(crio_conf.config_files(crio_conf.MAIN,
                                                               crio_conf.DROPIN_DIR))
        except (errors.Error, IOError, OSError, ValueError):
            return limits   # the plan names the file it cannot read
        if found and not found[-1][0].startswith(request.paths[self.path_option] + ':'):
            for name, limit in found[-1][1].items():
                limits.setdefault(name, limit)
        return limits

    def act(self, change, actions, state, host):
        # CRI-O reads default_ulimits at start: the units context restarts it (checked)
        state['crio'] = True
        if change.changed and UNIT not in actions['units']:
            actions['units'].append(UNIT)

    def owed(self, actions, state, host, policy):
        # when_idle: pod sandboxes, as crio_ulimits asks (runtime_live.crio_pods_busy); CRI-O's
        # containers run outside crio.service's cgroup, so the unit's cgroup cannot tell
        if not state.get('crio') or UNIT not in actions['units'] or policy != 'when_idle':
            return []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            runtime_live)
        why = runtime_live.crio_pods_busy(host)
        return [(UNIT, ('%s: running pods keep their limits, new pods get the profile after '
                        'CRI-O restarts' % why) if why else None)]


CONTEXT = Crio()
