# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""limits_profile ``state=absent``: take back what the collection wrote on a node.

Each context of the registry plans its own undo (``Context.undo_plans``, from the planners of
undo/undo_files.py), writing nothing. The changes then take the
same path as a write: ``restarts.write_all`` (atomic, mode kept, put back on a failure),
``profile_plan.actions`` (the restarts owed, under the restart policy) and
``profile_run.restart``. Every Change's result carries ``undo``: {action, detail, backup}.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files


# --- the module's state=absent -------------------------------------------------------------

def plan_undo(request, host):
    """[(label, Change)] of every context asked for (request.contexts); raises
    changes.Failure naming the context, before anything is written."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_set
    planned = []
    plans = []
    for context in registry.REGISTRY:
        if context.name is None or context.name in request.contexts:
            plans.extend(context.undo_plans(request, host))
    plans.extend(pids_set.undo_plans(request))      # the user-.slice drop-in (pids)
    for label, plan in plans:
        try:
            found = plan()
        except changes.Failure as exc:
            raise changes.Failure('%s: %s' % (label, exc.msg), context=label,
                                  kind=exc.kind, **exc.result)
        if found is not None:
            planned.append((label, found))
    for label, found in planned:
        problem = found.changed and found.writable()
        if problem:
            raise changes.Failure('%s: %s' % (label, problem), context=label)
    return planned


def undone(planned):
    """The result's ``undone``: each file changed (or that would be), what is done to it,
    and each one left as it is (``not_undone``)."""
    return [dict(found.result['undo'], context=label, path=found.path)
            for label, found in planned
            if found.changed or found.result['undo']['action'] == undo_files.NOT_UNDONE]


def absent(module, params, result):
    """limits_profile with ``state=absent``: plan every context's undo (nothing written on a
    refusal), write, report what is owed, restart under the policy (``restart``); exits."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_run as run
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    request = Request({}, {}, params['contexts'] or registry.CONFIGURED,
                      domains=params['domains'], units=params['units'], dropin=params['dropin'],
                      paths=dict((option, params[option]) for option in pp.DEFAULTS))
    try:
        if params['restart']:
            # a user manager restarted into a PAM session that fails stays down
            pp.check_sessions(request, module)
        planned = plan_undo(request, module)
    except changes.Failure as exc:
        module.fail_json(msg=exc.msg, **dict(result, **exc.result))
    result['contexts'] = [c.name for c in registry.REGISTRY if c.name and any(
        c.owns(label) for label, _found in planned)]
    result['units'] = [label.split(':', 1)[1] for label, _found in planned
                       if label.startswith(registry.UNIT_PREFIX)]
    changed = [found for _label, found in planned if found.changed]
    result['changed'] = bool(changed)
    if changed and module._diff:
        result['diff'] = [found.diff() for found in changed]
    written = run.write(module, params, result, planned, changed)
    result['files'] = [dict(pp.file_record(label, found),
                            removed=found.new is None and found.current is not None)
                       for label, found in planned]
    result['undone'] = undone(planned)
    result['known_gaps'] = []
    run.report_actions(module, params, result, planned)
    if params['restart']:
        run.restart(module, dict(params, verify=None), result, None, written)
    # after the restarts (a failed one exits above, with the files put back from the backups)
    if not module.check_mode:
        result['backups'] = undo_files.tidy_backups(written)
    module.exit_json(**result)
