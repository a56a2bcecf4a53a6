# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System services: the system manager's ``DefaultLimit*=`` (system.conf and its drop-ins)
apply to every service without its own ``Limit*=``. Configured as ``systemd_system``, probed
as ``service`` (a transient ``systemd-run`` service); a change needs ``daemon-reexec``."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option


def plan_manager(record, scope, request, host, ceiling):
    """[(label, plan)] of a manager's drop-in (system or user scope), for the context
    ``record`` (a Context)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan
    context = record.name

    def plan():
        limits = record.limits(context, request, host, ceiling)
        return systemd_plan.plan_change(systemd_plan.SystemdRequest(
            limits, scope=scope, dropin=request.dropin, on_conflict=request.on_conflict,
            force=request.force, field='profile', prune=True),
            lambda args, **kwargs: request.run(host, args, **kwargs), ceiling)
    return [(context, plan)]


def configured_now(resolution, names):
    """{item: (Limit, 'file:line')} of the ``names`` a systemd resolution sets."""
    found = {}
    for name in names:
        setting = resolution.settings.get(name)
        if setting is not None:
            found[name] = (setting.limit, '%s:%s' % (setting.path, setting.line))
    return found


def manager_now(request, host, names):
    """{item: (Limit, source)} of the running system manager's defaults (what a new service,
    sshd's sessions and a user manager start with), for ``names``; {} when it cannot be read.
    One ``systemctl show`` a call at most (Request.read), whoever asks first."""
    if not names:
        return {}
    limits, source = request.read('manager_now', lambda: _manager_defaults(request, host))
    return dict((name, (limits[name], source)) for name in names if name in (limits or {}))


def _manager_defaults(request, host):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
    if not sdlive.systemd_running():
        return host_limits.proc_limits('1'), 'PID 1 (/proc/1/limits)'
    limits, _error = sdlive.manager_live(
        lambda args: request.run(host, args, environ_update=commands.live_env()))
    return limits, "the running system manager's default (systemctl show)"


def higher_of(configured, running):
    """{item: (Limit, source)}: each side the higher of what the files set (``configured``,
    applied at the next reexec or daemon-reload) and what the manager runs with now
    (``running``), with the source of each side: a lower file waiting to be applied must not
    hide a higher running value, nor the running value a higher file's (model.keep keeps
    both)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
    found = dict(configured)
    for name, (limit, source) in running.items():
        if name not in found:
            found[name] = (limit, source)
            continue
        have, have_source = found[name]
        if have == limit:
            continue
        sides, sources = [], {}
        for side in ('soft', 'hard'):
            mine, theirs = getattr(have, side), getattr(limit, side)
            take_running = theirs is not None and (mine is None or model.exceeds(theirs, mine))
            sides.append(theirs if take_running else mine)
            chosen = source if take_running else have_source
            sources[side] = chosen.get(side) if isinstance(chosen, dict) else chosen
        found[name] = (model.Limit(*sides), sources)
    return found


def manager_current(scope, request, host):
    """What the ``scope`` manager's services get now. System: each side the higher of the
    value its files set and the running manager's default (systemctl show: a lower file not
    yet re-executed does not hide it, higher_of). User: the value user.conf sets, or, where
    none does, the running system manager's (a user manager runs with those)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_precedence
    names = list(request.limits)
    found = configured_now(systemd_precedence.resolve_manager(scope), names)
    if scope == sdpaths.SYSTEM:
        return higher_of(found, manager_now(request, host, names))
    found.update(manager_now(request, host, [n for n in names if n not in found]))
    return found


DROPIN = Option('dropin', 'str', default=sdpaths.DROPIN_NAME, description=(
    'File name of the systemd drop-ins (the managers\' C(system.conf.d) and C(user.conf.d), '
    'and the units\').',))


class Manager(Context):
    """A systemd manager's defaults (``scope``: system or user): its drop-in is planned,
    undone and read the same way for both managers."""

    scope = None
    #: a manager's services and user services run in cgroups with a TasksMax
    kinds = ('rlimit', 'pids')

    def plans(self, request, host, ceiling):
        return plan_manager(self, self.scope, request, host, ceiling)

    def undo_plans(self, request, host):
        """Its drop-in removed: the system manager is re-executed, the running user managers
        restart under the policy."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
        return [(self.name, lambda: undo_files.remove_dropin(
            sdpaths.dropin_path(self.scope, None, request.dropin), host, self.scope))]

    def current(self, label, request, host):
        return manager_current(self.scope, request, host)


class SystemdSystem(Manager):
    name = 'systemd_system'
    scope = sdpaths.SYSTEM
    probe = 'service'
    task_limit = 'pids.max'
    pids_dropin = True
    options = (DROPIN,)
    files = ('/etc/systemd/system.conf', '/etc/systemd/system.conf.d/*.conf')
    target = sdpaths.dropin_path(sdpaths.SYSTEM, None, sdpaths.DROPIN_NAME)
    session = True
    fallback = "systemd's built-in default"

    def detect(self, root=''):
        return sdlive.systemd_running(root)

    def act(self, change, actions, state, host):
        actions['reexec'] = bool(change.result.get('reexec_required'))

    def pids_post(self, pids, label, change):
        """``DefaultTasksMax=`` in the system manager's drop-in (new services)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import pids_plan
        return pids_plan.add_default(change, pids.value, pids.kernel_max, pids.live_default())

    def probe_command(self, user, uid, params):
        return probes.service_command(user)

    def report(self, auditor):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        return info.systemd_report(auditor.run, sdpaths.SYSTEM, None, auditor.units)

    def audit_probe(self, report, auditor):
        return True

    def configured(self, report):
        return (report or {}).get('manager', {}).get('configured') or {}

    def not_applied(self, report, host):
        """systemd's own word: the manager, or a unit it runs, reports other values than its
        files (systemctl show); a unit's under its probed name (``unit:NAME``)."""
        found = {}
        for entry in (report or {}).get('pending') or []:
            context = (self.probe if entry['target'] == 'manager'
                       else sdpaths.UNIT_CONTEXT_PREFIX + sdpaths.unit_name(entry['target']))
            found.setdefault((context, entry['item']), entry['action'])
        return found


CONTEXT = SystemdSystem()
