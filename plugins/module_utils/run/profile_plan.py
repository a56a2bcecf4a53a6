# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One limits profile for every context, planned through the single-format planners.

``plan_profile`` runs every planner (PAM, systemd system/user/units, Docker, Podman) before
anything is written, so one refused value anywhere leaves every file as it was.
The restart engine (systemd/restarts.py: write_all) then writes the changed files and puts the
earlier ones back if a later write fails. Used by the limits_profile module.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_set
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request

CONTEXTS = registry.CONFIGURED
DEFAULTS = registry.PATH_DEFAULTS


def detect_contexts(root=''):
    """The contexts present on the node, from files only (no service manager queries)."""
    return registry.detect(root)


def parse_request(params):
    """limits_profile's parameters -> a contexts Request; the profile is parsed here, once.
    Raises changes.Failure naming what the user wrote (``profile.nofile: ...``)."""
    if not params['profile']:
        raise changes.Failure('profile: at least one item is required')
    # pids is the cgroup pids.max, no rlimit: its own plans (run/pids_set.py)
    profile, pids_value = pids_set.split(params['profile'])
    try:
        limits = model.parse_profile(profile, 'profile')
        shm_size = params['docker_shm_size']
        if shm_size is not None:
            shm_size = model.parse_shm_size(shm_size, 'docker_shm_size')
        podman_shm_size = params.get('podman_shm_size')
        if podman_shm_size is not None:
            podman_shm_size = model.parse_shm_size(podman_shm_size, 'podman_shm_size')
    except model.LimitError as exc:
        raise changes.Failure(str(exc))
    for name, value in profile.items():
        # one message naming the item, not one per context and domain
        if isinstance(value, dict) and value.get('value') is None and \
                (value.get('soft') is None) != (value.get('hard') is None):
            raise changes.Failure('profile.%s: give both soft and hard (or one value for both)'
                                  % name)
    request = Request(profile, limits, params['contexts'] or detect_contexts(),
                      domains=params['domains'], units=params['units'], force=params['force'],
                      on_conflict=params['on_conflict'], dropin=params['dropin'],
                      docker_shm_size=shm_size, podman_shm_size=podman_shm_size,
                      paths=dict((option, params[option]) for option in DEFAULTS),
                      slurm_conf_edit=params.get('slurm_conf_edit', True),
                      containerd_create_spec=params.get('containerd_create_spec', False),
                      named=model.profile_sides(profile))
    request.pids = pids_value
    return request


def plan_profile(params, host):
    """(contexts, [(context, Change)]) for every context; raises changes.Failure naming the
    context. Every context of the registry that is asked for plans its files."""
    request = parse_request(params)
    check_sessions(request, host)
    ceiling = host_limits.Ceiling()
    kernel = first_kernel(check_kernel(params), request, ceiling)
    plans = []
    pids = pids_set.Pids(request.pids, host, lambda args, **kwargs: request.run(
        host, args, **kwargs)) if request.pids is not None else None
    for context in registry.REGISTRY:
        if (context.name is None or context.name in request.contexts) and (
                request.limits or pids_set.carries(context)):
            plans.extend(context.plans(request, host, ceiling))
    if pids is not None:
        plans.extend(pids.plans(request))
        pids.only = not request.limits

    planned = []
    for label, plan in plans:
        try:
            change = plan()
            if pids is not None:
                change = pids.post(label, change)
        except changes.Failure as exc:
            raise changes.Failure('%s: %s' % (label, exc.msg), context=label, kind=exc.kind,
                                  **exc.result)
        kept = request.kept.get(label) or []
        if kept:
            # every side kept, raised or lowered, each with its message; only a lowered side
            # is a warning (profile_run.report_actions), the kept ones a count in the role's
            # report (reports/outcome.py)
            change.result['limits_kept'] = [dict(record.as_dict(), message=record.message())
                                            for record in kept]
        planned.append((label, change))
    for label, change in planned:
        if change.changed:
            problem = change.writable()
            if problem:
                raise changes.Failure('%s: %s' % (label, problem), context=label)
    if kernel is not None:
        planned.insert(0, (KERNEL, kernel))
    return request.contexts, planned


#: the label of the kernel drop-in in ``planned`` (no context of the registry: it owes no
#: restart, first_kernel)
KERNEL = 'kernel'


def first_kernel(kernel, request, ceiling):
    """The kernel drop-in to write first (sysctl_plan.nr_open_first), or None: where the
    profile's hard nofile needs the ``fs.nr_open`` of ``sysctl``, the guards of every context
    are checked against that value (``ceiling``), which the call writes before any other file."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan
    nofile = request.limits.get('nofile')
    first = sysctl_plan.nr_open_first(kernel, nofile.hard if nofile is not None else None)
    if first is not None:
        ceiling.nr_open = first.result['apply'][sysctl_plan.NR_OPEN]
    return first


def check_kernel(params):
    """The guards of the kernel ceilings the limits role writes after this call (``sysctl``,
    ``job_sysctl``: sysctl_ceilings' own planning, nothing written): a refusal there (a later
    sysctl.d line that overrides a ceiling, such as a site's 99-*.conf; a bad name or value)
    fails this call before any file of the profile is written. Found on the VM lane (issue 43):
    the role wrote PAM and systemd, then sysctl_ceilings refused. The plan (a Change of the
    kernel drop-in, nothing written), or None without ``sysctl``."""
    if not (params.get('sysctl') or params.get('job_sysctl')) or params.get('state') == 'absent':
        return None
    from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan
    try:
        return sysctl_plan.plan_change(dict(
            sysctl=params.get('sysctl') or {}, job_sysctl=params.get('job_sysctl') or {},
            path=sysctl_plan.PATH, state='present', apply=True,
            on_conflict=params['on_conflict'], backup=False, mode='0644'))
    except changes.Failure as exc:
        raise changes.Failure('kernel: %s' % exc.msg, context=KERNEL, kind=exc.kind,
                              **exc.result)


def check_sessions(request, host):
    """Refuse, before anything is planned, written or restarted, on a node where every session
    that runs pam_limits already fails (a dangling ``limits.d/*.conf`` link): a login context,
    or a user manager restarted through its PAM session, would stay down, and the probes
    cannot log in. Contexts that open no session (a container runtime alone) go on."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam

    if not any(registry.named(name).session for name in request.contexts):
        return
    broken = pam.session_errors(request, host)
    if broken:
        raise changes.Failure('pam: %s (nothing written, nothing restarted)'
                              % '; '.join(str(exc) for exc in broken), context=pam.CONTEXT.name,
                              kind=errors.HOST, session_errors=[
                                  dict(path=exc.path, msg=str(exc)) for exc in broken])


def file_record(context, change):
    record = dict(context=context, path=change.path, changed=change.changed,
                  created=change.current is None and change.new is not None)
    if change.result.get('backup_file'):
        record['backup_file'] = change.result['backup_file']
    return record


RESTART_POLICIES = opts.RESTART_POLICIES


def actions(planned, host, policy='when_idle'):
    """What must be reloaded or restarted, from the plans and the live system: each context
    of the registry folds its changes in (``act``), then says which restarts it owes.

    ``deferred`` lists the restarts ``policy`` does not allow now (a workload unit or a user
    manager that is busy under ``when_idle``; every one of them under ``never``), each with the
    probed context it leaves pending: the caller restarts the others and reports these."""
    result = dict(reexec=False, user_managers=[], daemon_reload=False, units=[], docker=False,
                  docker_pending=False, deferred=[], policy=policy)
    state = {}
    session_changed = False
    for label, change in planned:
        if label == KERNEL:
            continue
        context = registry.owner(label)
        # a session context's Limit*= lines (not a pids setting beside them: pids.max is no
        # rlimit a user manager inherits) reach user services through a restart
        if context.session and change.result.get('rlimits_changed', change.changed):
            session_changed = True
        context.act(change, result, state, host)
    for context in registry.REGISTRY:
        context.settle(result, state, host)
    if session_changed:
        # user@UID.service runs a PAM session under the system manager's defaults: a change to
        # either (or to user.conf) reaches user services only through a restart
        result['user_managers'] = sorted(set(result['user_managers'])
                                         | set(running_user_managers(host)))
    owed = []
    for context in sorted(registry.REGISTRY, key=lambda c: c.restart_rank):
        owed += context.owed(result, state, host, policy)
    seen = set()
    for unit, why in owed:
        # a unit owed by two contexts (containerd.service: the pods' reason, then the unit's)
        # is decided once, by the first (lower restart_rank)
        if policy == 'always' or unit in seen:
            continue
        seen.add(unit)
        if policy == 'never':
            why = 'restart policy never'
        else:
            why = sdlive.unit_busy(host, unit) if why is None else why
        if why:
            result['deferred'].append(dict(unit=unit, reason=why,
                                           context=registry.restart_context(unit)))
    return result


def running_user_managers(host):
    if not sdlive.systemd_running():
        return []

    def run(args):
        return host.run_command(args, environ_update=commands.live_env())
    return [unit for unit, _uid in sdlive.running_user_managers(run)]
