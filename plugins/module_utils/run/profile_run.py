# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What limits_profile does after planning, apart from the writes: the login baseline, the
``verify`` options checked before the first write, the owed restarts and the probes after them
(with the files put back when a restart fails outright), and the gaps the node's own files
already show. Private to the collection; ``module`` is the AnsibleModule."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pwd
import shlex

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import core_dumps
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import restarts


def login_baseline(module, user):
    """{login: {command, limits}} of a login session of ``user`` now."""
    # imported here: only a run that changes something takes a baseline
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

    command = registry.PAM.probe_command(user, None, {})
    rc, out, err = module.run_command(command, environ_update=commands.c_env())
    entry = dict(command=' '.join(shlex.quote(c) for c in command), limits={})
    if rc == 0:
        try:
            entry['limits'] = effective.public_limits(effective.parse_probe(
                out, registry.PAM.probe))
        except model.LimitError as exc:
            changes.warn(module, 'baseline: %s' % exc)
    else:
        changes.warn(module, 'baseline: %s exited %d: %s' % (command[0], rc, (err or out).strip()[:200]))
    return {registry.PAM.probe: entry}


# Set by this module in ``verify`` (effective_limits' options): what it wrote decides them.
VERIFY_SET = ('contexts', 'units', 'expect', 'baseline')


def verify_request(module, params, result):
    """effective_limits' options for ``verify`` (with ``restart``), checked now, before
    anything is written: the probes of the contexts planned (those whose image option is
    unset left out), the units, the profile; the baseline is added once taken."""
    if not params['restart'] or params['verify'] is None:
        return None
    # imported here: only a call that verifies pays for the probes' code
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

    asked = dict(params['verify'])
    for key in VERIFY_SET:
        if key in asked:
            module.fail_json(msg='verify.%s: set by limits_profile from what it writes; leave it '
                             'out (nothing was written)' % key, **result)
    try:
        # the images by name or in probe_options (effective.with_probe_options)
        images = effective.with_probe_options(asked)
    except effective.ProbeFailure as exc:
        module.fail_json(msg='verify.%s (nothing was written)' % exc.msg, **result)
    asked.update(
        contexts=[p['probe'] for p in result['probes'] if not p['image'] or images.get(p['image'])],
        units=result['probe_units'], expect=params['profile'], baseline=None)
    try:
        return effective.validated(asked, 'verify')
    except effective.ProbeFailure as exc:
        module.fail_json(msg='%s (nothing was written)' % exc.msg, **result)


def restart(module, params, result, verify, written=()):
    """``restart``: the restarts ``actions`` owes and the policy allows, then the probes
    (``verify``), into ``restarted``; only when a file changed or a restart is owed, through
    the restart engine (systemd/restarts.py). A restart that fails (outright, or a unit not
    active ``settle`` seconds later) puts back the files this call wrote (``written``) and
    does again what it had restarted, with them, before the task fails with both outcomes
    (``restarted.put_back``)."""
    actions = result['actions']
    # a node that owes nothing but that its files already show below the profile (a line
    # that overrides it, warned) is probed too: an unchanged node with a gap is not green
    due = result['changed'] or restarts.owed(actions) or bool(result['known_gaps'])
    if due and verify is None:
        # nothing was written: checked now, before the first restart
        verify = verify_request(module, params, result)
    planned = restarts.steps(restarts.allowed(actions)) if due else []
    done = result['restarted'] = dict(steps=[restarts.describe(step) for step in planned],
                                      done=[], failed_unit={}, docker_version=None)
    if planned and module._diff:
        result.setdefault('diff', []).append(dict(
            before='', after=''.join('%s\n' % step for step in done['steps']),
            after_header='restarts'))
    # a restart is a change of the node even where no file changed (one an earlier run owed)
    result['changed'] = result['changed'] or bool(planned)
    if not due or module.check_mode:
        return
    probe, probe_failure = None, ()
    if verify is not None:
        from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

        verify['baseline'] = result.get('baseline')
        probe, probe_failure = effective.probe, effective.ProbeFailure
    engine = restarts.Engine(restarts.Restarter(module, settle=params['settle'],
                                                docker_wait=params['docker_wait']))
    try:
        engine.run(planned, done, list(written), verify, probe)
    except restarts.RestartFailure as exc:
        module.fail_json(msg='restart: %s' % exc.msg, **result)
    except probe_failure as exc:
        done['verified'] = exc.result
        module.fail_json(msg='verify: %s' % exc.msg, **result)


def check_baseline_user(module, params, result):
    """The limits role verifies as ``baseline_user`` after the change: a misspelt name is
    refused now, before any file is written or anything restarted."""
    if not params['baseline_user']:
        return
    try:
        pwd.getpwnam(params['baseline_user'])
    except KeyError:
        module.fail_json(msg='baseline_user: %s does not exist on this host (the limits '
                         'role passes limits_verify_user); nothing was written'
                         % params['baseline_user'], **result)


def check_overrides(module, params, result, planned):
    """The pam change (or None), with ``overrides`` in the result; fails before anything is
    written when users stay below the profile and ``on_override`` is fail."""
    pam = dict(planned).get(registry.PAM.name)
    if pam is not None:
        result['overrides'] = override_records(pam.result)
        below = [r['reason'] for r in result['overrides'] if r['kind'] == 'narrower']
        if below and params['on_override'] == 'fail':
            module.fail_json(msg='pam: users stay below the profile because of lines in other '
                             'files: %s (nothing written; change those lines, or set '
                             'on_override=warn; limits role: limits_on_override: warn)'
                             % '; '.join(below), **result)
    return pam


def write(module, params, result, planned, changed):
    """Write the changed files (not in check mode); the Changes written, or fail_json with
    the earlier ones put back."""
    if not changed or module.check_mode:
        return []
    try:
        return restarts.write_all(planned, params['backup'])
    except changes.Failure as exc:
        module.fail_json(msg=exc.msg, **dict(result, **exc.result))


def report_actions(module, params, result, planned):
    """``actions`` (what the planned changes owe, under the restart policy), the warnings and
    ``per_context`` of every planned change, and Docker's ``running_containers``."""
    for message in override_warnings(result, planned):
        changes.warn(module, message)
    for entry in result.get('probes') or []:
        # a probed context that takes its limits elsewhere (ssh: sshd's stack without
        # pam_limits): where from, and the fix or the restart that applies them
        if entry.get('cause'):
            changes.warn(module, '%s: %s' % (entry['probe'], entry['cause']))
    result['actions'] = pp.actions(planned, module, params['restart_policy'])
    # what is owed now, the restarts the policy defers left out: a busy node whose only owed
    # restart waits is unchanged (changed=0), and reported pending, not changed, on every run
    result['actions']['owed_now'] = restarts.owed(restarts.allowed(result['actions']))
    for record in result['actions'].get('deferred') or []:
        # said on every run while it waits, changed or not: the role's report runs only when
        # something changed, and an unchanged busy node ends the role early
        changes.warn(module, 'pending: %s: the restart of %s waits (restart_policy %s: %s); new '
                     'processes there keep the earlier limits until it is done'
                     % (record.get('context') or record['unit'], record['unit'],
                        params['restart_policy'], record['reason']))
    for context, change in planned:
        for message in change.warnings:
            changes.warn(module, '%s: %s' % (context, message))
        change.result['changed'] = change.changed
        result['per_context'][context] = change.result
        if change.result.get('running_containers') is not None:
            result['running_containers'] = change.result.get('running_containers')
    if 'running_containers' in result['actions']:
        result['running_containers'] = result['actions'].pop('running_containers')
    core = core_dumps.profile_warning(params.get('profile'))
    if core:
        changes.warn(module, 'core: %s' % core)
    for message in kept_warnings(result):
        changes.warn(module, message)


def override_warnings(result, planned):
    """The warnings of the pam plan's ``overrides``: a narrower line (a user below the profile
    because of a line we know about) on every run, changed or not, never reported as a silent
    ok; an earlier line the managed file now overrides (``replaced``) needs no decision: said
    on the run that writes the file, not on every rerun (issue 39.3). Both stay in
    ``overrides``."""
    pam_changed = any(change.changed for context, change in planned
                      if context == registry.PAM.name)
    return ['pam: %s' % record['reason'] for record in result.get('overrides') or []
            if record['kind'] == 'narrower' or pam_changed]


def kept_warnings(result):
    """Of ``limits_kept``, what needs a decision: a side lowered because the profile names it
    (said on the run that lowers it; the rerun finds it written). A side kept above the profile
    or a hard side raised is no warning: limits_kept lists them, the role's report counts them,
    and a converged node's rerun says nothing about them (issue 39.3)."""
    return ['%s: %s' % (record['context'], record['message'])
            for record in result.get('limits_kept') or [] if record['action'] == 'lowered']


def known_gaps(result, planned):
    """What the node's files already keep below the profile, each with its file:line: the
    PAM lines that give users less (on_override=warn) and the later files that override a
    systemd drop-in (on_conflict=warn), a user@.service cap among them."""
    found = [r['reason'] for r in result.get('overrides') or [] if r['kind'] == 'narrower']
    # a context the written files do not reach (ssh without pam_limits in sshd's stack)
    found.extend('%s: %s' % (p['probe'], p['cause']) for p in result.get('probes') or []
                 if p.get('gap'))
    for context, change in planned:
        found.extend('%s: %s' % (context, c['reason']) for c in change.result.get('conflicts') or []
                     if c.get('reason'))
    return found


def override_records(pam_result):
    """The pam plan's overrides and replaced lines, once each: path, line, kind, reason."""
    seen, records = set(), []
    for record in (pam_result.get('overrides') or []) + (pam_result.get('replaced') or []):
        if record['reason'] not in seen:
            seen.add(record['reason'])
            records.append(dict(path=record.get('path'), line=record.get('line'),
                                kind=record.get('kind', 'narrower'), reason=record['reason']))
    return records
