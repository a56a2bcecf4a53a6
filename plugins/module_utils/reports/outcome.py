# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limits role's outcome of one run, decided here and nowhere else (the role only passes
data to the ``limits_outcome`` filter and acts on what it returns): which contexts wait for a
restart the policy deferred, which findings of the verification are failures and which are
pending, busy or not verified, whether the run failed and rolls back, the report the play
shows and the failure message.

``profile``: limits_profile's result (``actions.deferred``, ``units``, ``files``,
``contexts``, ``running_containers``); ``after``: the verification's probe result
(effective_limits' or limits_restart's ``verified``: ``gaps``, ``errors``, ``regressions``,
``contexts``), or None where the run did not verify. Private to the collection; plain Python.

The findings, the gap sources and the probe results' tables are imported where a verification
is read (``_reports()``): the role templates the outcome of every run's profile call in a
worker forked per host, and an unchanged node's call verified nothing (issue 42: those
modules were most of what such a worker compiled).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

UNIT_PREFIX = 'unit:'


def _reports():
    """(findings, gap_sources, probe_results), imported on the first verification read."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import gap_sources
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
    return findings, gap_sources, probe_results


def _unique(values):
    found = []
    for value in values:
        if value not in found:
            found.append(value)
    return found


def pending(profile):
    """The contexts whose restart the policy deferred: the deferred records' contexts, and
    ``unit:NAME`` for a deferred unit the run also probes as a unit (slurmd.service of
    slurm_job)."""
    deferred = (profile.get('actions') or {}).get('deferred') or []
    units = profile.get('units') or []
    return _unique([d.get('context') for d in deferred]
                   + [UNIT_PREFIX + d['unit'] for d in deferred if d.get('unit') in units])


def node_changed(profile):
    """Whether the run changed the node, the profile task's ``changed`` and what the report's
    first part says: a file written (would be, in check mode), or a restart done or owed now
    (one an earlier run owed: ``actions.owed_now``). A failed verification is no change: it
    fails the run (``failed_unchanged``), it does not make the task changed."""
    return bool(profile.get('changed') or (profile.get('actions') or {}).get('owed_now'))


def _restarts(profile):
    """The restarts of a run that wrote no file: the steps the profile call did
    (``restarted.steps``), else those the handlers' restart call does (the units owed)."""
    done = (profile.get('restarted') or {}).get('steps') or []
    if done:
        return done
    actions = profile.get('actions') or {}
    deferred = [d.get('unit') for d in actions.get('deferred') or []]
    owed = ((actions.get('units') or []) + (actions.get('user_managers') or [])
            + (['docker.service'] if actions.get('docker') else []))
    return ((['systemctl daemon-reexec'] if actions.get('reexec') else [])
            + (['systemctl daemon-reload'] if actions.get('daemon_reload') else [])
            + ['restart %s' % unit for unit in owed if unit not in deferred])


def tune_findings(after, profile, waiting):
    """The verification's findings (reports/findings.py), one per probed context and item:
    a gap of a context whose restart the policy deferred (``waiting``) is pending, else a gap,
    with the tune's evidence (gap_sources.evidence: the records limits_profile returned) as
    its cause and place; a probe error is not covered (its service does not run), unverified
    (busy), pending (its restart deferred) or a probe error."""
    expected = after.get('expected') or {}
    short = dict(((g['context'], g['item']), g) for g in after.get('gaps') or [])
    pairs = [(context, item) for context in after.get('contexts') or {} for item in expected]
    pairs += [pair for pair in short if pair not in pairs]
    if not pairs and not after.get('errors'):
        return []
    findings, gap_sources, probe_results = _reports()
    found = []
    for context, item in pairs:
        limits = ((after.get('contexts') or {}).get(context) or {}).get('limits') or {}
        gap = short.get((context, item))
        row = dict(context=context, item=item,
                   actual=(limits.get(item) or {}).get('human') or (
                       probe_results.human_limit(item, gap['actual']) if gap else '(none)'),
                   expected=(expected.get(item) or {}).get('human') or (
                       probe_results.human_limit(item, gap['expected']) if gap else None),
                   gap='+'.join(gap.get('sides') or []) if gap else '', how='probed')
        if gap:
            said = gap_sources.evidence(context, item, profile)
            row.update(source=said['source'], places=dict(
                (side, said['place']) for side in gap.get('sides') or [] if said['place']))
            if context in waiting:
                row['owed'] = 'the restart the policy deferred'
        found.append(findings.from_row(row, findings.row_status(row)))
    for error in after.get('errors') or []:
        found.append(findings.finding(str(error.get('context')), error.get('item') or
                                      findings.ALL, 'rlimit', findings.error_status(error, waiting),
                                      cause=str(error.get('msg') or '')))
    return found


def outcome(profile, after=None, rollback='never', check_mode=False, restart_policy='when_idle',
            user=''):
    """{changed, failed_unchanged, pending, failed, pending_gaps, errors, unverified, busy,
    pending_errors, failed_contexts, verify_failed, rollback_now, written, report, failure,
    findings}: see the module's docstring. What fails is the findings' tune cell
    (findings.OUTLETS['tune']): a gap or a probe error fails, one whose restart the policy
    deferred is pending, a context that does not run or is busy is not verified."""
    profile = profile or {}
    waiting = pending(profile)
    verified = after is not None
    after = after or {}
    regressions = after.get('regressions') or []
    verdicts = tune_findings(after, profile, waiting)
    findings = _reports()[0] if verdicts else None
    cell = dict(((f['context'], f['item']), findings.action('tune', f)) for f in verdicts
                if f['item'] != findings.ALL)

    def of_error(error):
        return findings.action('tune', dict(status=findings.error_status(error, waiting)))
    gaps = after.get('gaps') or []
    errors = after.get('errors') or []
    found = dict(
        pending=waiting,
        failed=[g for g in gaps if cell.get((g['context'], g['item'])) == 'fail'],
        pending_gaps=[g for g in gaps if cell.get((g['context'], g['item'])) == 'pending'],
        errors=[e for e in errors if of_error(e) == 'fail'],
        pending_errors=[e for e in errors if of_error(e) == 'pending'],
        unverified=[e for e in errors if e.get('kind') == 'not_running'],
        busy=[e for e in errors if e.get('kind') == 'busy'],
        written=[f['path'] for f in profile.get('files') or [] if f.get('changed')],
        findings=verdicts)
    failing = bool(verdicts) and bool(findings.failing('tune', verdicts))
    found['changed'] = node_changed(profile)
    # an unchanged node whose probe (the profile call's own, after known gaps) finds a gap
    # outside what waits for a restart: the role fails it, with the report, instead of
    # reporting the task changed (issue 31 item 10, issue 39 item 6)
    found['failed_unchanged'] = verified and not found['changed'] and bool(found['failed'])
    found['failed_contexts'] = _unique([g['context'] for g in found['failed']]
                                       + [e['context'] for e in found['errors']])
    found['verify_failed'] = verified and bool(regressions or failing)
    found['rollback_now'] = verified and ((rollback == 'regression' and bool(regressions))
                                          or (rollback == 'failure' and failing))
    found['report'] = report(profile, found, after, verified, check_mode, restart_policy)
    found['failure'] = failure(profile, found, after, rollback, user) \
        if found['verify_failed'] else ''
    return found


def _changed_part(profile, check_mode, restart_policy):
    deferred = (profile.get('actions') or {}).get('deferred') or []
    files = [f['path'] for f in profile.get('files') or [] if f.get('changed')]
    changed = ', '.join(files)
    if not files and node_changed(profile):
        # the task is changed by a restart alone: the report says which, not "nothing"
        restarted = ', '.join(_restarts(profile))
        changed = 'no file; ' + restarted if restarted else 'no file'
    return ('Contexts: %s; units: %s; %s: %s; restarts deferred by limits_docker_restart=%s: %s'
            % (', '.join(profile.get('contexts') or []),
               ', '.join(profile.get('units') or []) or 'none',
               'would change' if check_mode else 'changed', changed or 'nothing',
               restart_policy,
               ', '.join('%s (%s)' % (d.get('unit'), d.get('reason')) for d in deferred)
               or 'none'))


def _pending_part(profile, found, verified, restart_policy):
    deferred = (profile.get('actions') or {}).get('deferred') or []
    running = profile.get('running_containers') or {}
    gaps = found['pending_gaps'] if verified else []
    text = ('Pending: %s (limits_docker_restart=%s, running containers: %s, live-restore: %s). '
            'Deferred: %s new processes there get the old limits until the restart: %s.'
            % (', '.join(found['pending']), restart_policy, running.get('count', '?'),
               running.get('live_restore', '?'),
               ' '.join('%s: %s;' % (d.get('unit'), d.get('reason')) for d in deferred),
               ', '.join(_unique(g['item'] for g in gaps)) or 'no gap measured'))
    for error in (found['pending_errors'] if verified else []):
        text += ' Probe %s (pending): %s.' % (error.get('context'), error.get('msg'))
    return text


def kept_part(profile):
    """The sides kept above the profile, as one count (each is in limits_profile's
    ``limits_kept``, none is a warning), or '' when none is."""
    kept = [k for k in profile.get('limits_kept') or [] if k.get('action') == 'kept']
    if not kept:
        return ''
    return ('Kept above the profile (the node already has more; name the side in the profile '
            'to lower it): %d %s, listed in limits_kept.'
            % (len(kept), 'side' if len(kept) == 1 else 'sides'))


def report(profile, found, after, verified, check_mode=False, restart_policy='when_idle'):
    """What the play shows after a change (the handlers) or a verification of an unchanged
    node: the contexts and the files changed, the sides kept above the profile (a count), what
    waits for a restart, what could not be probed now, what does not run, and the contexts
    verified in new processes."""
    parts = [_changed_part(profile, check_mode, restart_policy) + '.']
    if kept_part(profile):
        parts.append(kept_part(profile))
    if found['pending']:
        parts.append(_pending_part(profile, found, verified, restart_policy))
    if verified and found['busy']:
        parts.append('Pending, the probe could not start now: '
                     + '; '.join(e.get('msg', '') for e in found['busy']))
    if verified and found['unverified']:
        parts.append('Not verified: ' + '; '.join(e.get('msg', '') for e in found['unverified']))
    if verified and not found['verify_failed']:
        contexts = sorted(c for c in (after.get('contexts') or []) if c not in found['pending'])
        parts.append('Verified in new processes: %s.' % (', '.join(contexts) or 'none'))
    return ' '.join(parts)


def _pair(limit):
    return '%s:%s' % ((limit or {}).get('soft'), (limit or {}).get('hard'))


def failure_table(gaps, profile, pending=()):
    """The verification's ``gaps`` as the table context x item -> expected / actual / below /
    source (each row's cause: the tune's findings, gap_sources.evidence), '' without gaps;
    ``pending``: the contexts whose restart the policy deferred (marked so). The
    limits_failure_table filter's too."""
    if not gaps:
        return ''
    findings, gap_sources, probe_results = _reports()
    causes = {}
    for gap in gaps:
        said = gap_sources.evidence(gap['context'], gap['item'], profile or {})
        where = findings.where(said['place'])
        causes[(gap['context'], gap['item'])] = said['source'] if not where or where in \
            said['source'] else '%s (at %s)' % (said['source'], where)
    return probe_results.gap_table(gaps, list(pending), causes)


def failure(profile, found, after, rollback='never', user=''):
    """The failure message of a failed verification: login sessions that get less than before
    (the silent pam_limits fallback), the contexts that miss the profile with each row's
    cause (gap_sources), what is pending and why, the probe errors, and the rollback."""
    parts = []
    regressions = after.get('regressions') or []
    if regressions:
        parts.append(
            'Login sessions of %s get less than before the change and less than the profile\n'
            "(the silent pam_limits fallback: one limit a session cannot set drops all of them; "
            "the journal says 'Could not set limit'):\n%s"
            % (user, ' '.join('%s %s: before %s, now %s, expected %s;'
                              % (r.get('context'), r.get('item'), _pair(r.get('before')),
                                 _pair(r.get('after')), _pair(r.get('expected')))
                              for r in regressions)))
    if found['failed_contexts']:
        gaps = after.get('gaps') or []
        table = failure_table(gaps, profile, found['pending'])
        waiting = _unique(e['context'] for e in found['pending_gaps'] + found['pending_errors'])
        notes = []
        if waiting:
            notes.append('Pending a restart by policy, not failures: ' + ', '.join(waiting))
        if found['busy']:
            notes.append('Pending, the probe could not start now (not failures): '
                         + '; '.join(e.get('msg', '') for e in found['busy']))
        lines = ['The profile is not in effect in %s for %s (context x item -> expected / '
                 'actual, soft:hard, source):' % (', '.join(found['failed_contexts']), user),
                 table, ' '.join(notes),
                 ' '.join('Probe %s failed: %s.' % (e.get('context'), e.get('msg'))
                          for e in found['errors'])]
        parts.append('\n'.join(line for line in lines if line))
    if found['rollback_now']:
        parts.append('Rolled back: the files this run changed were restored from their backups '
                     'or removed: ' + ', '.join(found['written']))
    else:
        parts.append('Nothing was rolled back (limits_rollback=%s).' % rollback)
    return '\n'.join(parts)
