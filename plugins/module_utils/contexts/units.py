# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Units: one context per unit (``unit:NAME``) that gets the profile as ``Limit*=`` in a
drop-in: limits_profile's ``units`` and the units other contexts name (containerd). Probed as
``unit:NAME`` (the running unit's main process); a change needs ``daemon-reload`` and a
restart, which the restart policy may defer for units that run workloads."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context

PREFIX = sdpaths.UNIT_CONTEXT_PREFIX
# Units whose restart stops or disturbs the workloads they run: their restarts go through the
# restart policy (``when_idle`` by default), as do the user managers (user@UID.service).
WORKLOAD_UNITS = ('docker.service', 'containerd.service', 'crio.service', 'slurmd.service')


def unit_list(units, contexts, registry):
    """``units`` then the units the configured ``contexts`` name (containerd.service for
    containerd), with .service added, each once; ``registry``: the contexts' records."""
    named = [unit for context in registry if context.name in contexts
             for unit in context.units]
    result = []
    for name in list(units or []) + named:
        name = sdpaths.unit_name(name)
        if name not in result:
            result.append(name)
    return result


class Units(Context):
    kinds = ('rlimit', 'pids')
    pids_dropin = True
    files = ('/etc/systemd/system/UNIT.d/*.conf', 'the unit file')
    restart_rank = 1
    fallback = 'the unit or manager default'

    def owns(self, label):
        return label.startswith(PREFIX)

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan
        found = []
        for unit in unit_list(request.units, request.contexts, self.registry):
            def plan(unit=unit):
                limits = self.limits(PREFIX + unit, request, host, ceiling)
                return systemd_plan.plan_change(systemd_plan.SystemdRequest(
                    limits, unit=unit, dropin=request.dropin,
                    on_conflict=request.on_conflict, force=request.force, field='profile',
                    prune=True),
                    host.run_command, ceiling)
            found.append((PREFIX + unit, plan))
        return found

    def undo_plans(self, request, host):
        """The drop-ins of ``units`` and of the units the contexts name removed, and, with
        every context asked for, of every unit that has the collection's: a daemon-reload,
        and each running unit's restart under the policy."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
        every = set(c.name for c in self.registry if c.name) <= set(request.contexts)
        found = undo_files.unit_dropins(
            request.dropin, unit_list(request.units, request.contexts, self.registry), every)
        return [(PREFIX + unit, lambda unit=unit, path=path: undo_files.remove_dropin(
            path, host, None, unit)) for unit, path in sorted(found.items())]

    def current(self, label, request, host):
        """Each side the higher of the unit's own ``Limit*=`` (file:line) and what systemd has
        loaded for it (``systemctl show``: its Limit*= as last loaded, else the manager's
        defaults): a lower file waiting for a daemon-reload does not hide what the unit's next
        start gets now (systemd_system.higher_of)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
            systemd_precedence)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts.systemd_system \
            import configured_now, higher_of
        unit = label[len(PREFIX):]
        names = list(request.limits)
        if sdpaths.is_template(sdpaths.unit_name(unit)):
            return {}
        try:
            found = configured_now(systemd_precedence.resolve_unit(unit), names)
        except (systemd_conf.ConfError, limits_model.LimitError, IOError, OSError):
            return {}  # the plan reports what is wrong with the unit's files
        if not systemd_live.systemd_running():
            return found
        state = systemd_live.unit_live(
            lambda args: host.run_command(args, environ_update=commands.live_env()), unit)
        loaded = state.get('limits') or {}
        return higher_of(found, dict(
            (n, (loaded[n], 'what systemd has loaded for %s (systemctl show)' % unit))
            for n in names if n in loaded))

    def act(self, change, actions, state, host):
        res = change.result
        if change.changed:
            for instance in res.get('instances') or []:
                actions['deferred'].append(dict(
                    unit=instance, context=PREFIX + instance,
                    reason='an instance of %s: it keeps its limits until it restarts (its job '
                           'is not stopped for them: restart it when the job ends)'
                           % res['path'].split('/')[-2][:-2]))
        actions['daemon_reload'] = actions['daemon_reload'] or bool(
            res.get('daemon_reload_required'))
        actions['units'].extend(u for u in res.get('restart_required') or []
                                if u not in actions['units'])

    def pids_chain(self, prober, probe, user, uid, params):
        """The running unit's main process, read from the host."""
        unit = probe[len(PREFIX):]
        pid = prober.run(['systemctl', 'show', '-p', 'MainPID', '--value', unit]).strip()
        return self.pid_chain(pid, unit)

    def pids_post(self, pids, label, change):
        """``TasksMax=`` in the unit's drop-in (above the manager's DefaultTasksMax)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import pids_plan
        return pids_plan.add_unit(change, label[len(PREFIX):], pids.value, pids.kernel_max,
                                  pids.manager_default())

    def owed(self, actions, state, host, policy):
        return [(u, None) for u in actions['units'] if u in WORKLOAD_UNITS]


CONTEXT = Units()
