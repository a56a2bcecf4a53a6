# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One finding per context and item, one verdict (issue 40): the audit's evaluation, which every
outlet renders and none judges again.

A finding is a plain dict (JSON as the module returns it):

* ``context``, ``item``, ``kind`` (:data:`KINDS`: an rlimit, the cgroup's pids, a kernel
  ceiling (sysctl), where cores go (core), the job's /dev/shm (shm));
* ``status`` (:data:`STATUSES`);
* ``expected``, ``actual`` (as the audit prints them), ``short`` (the sides below: ``soft``,
  ``hard``, or ``value`` for a single-valued item);
* ``places`` {side: {path, line}}: what decides each side, from the evidence records (a
  setting's value and its place: the contexts' ``configured``), and ``place``, the one of the
  first short side (else of the cause): the line SARIF locates a result at and a drain names;
* ``cause`` (text) and ``advice`` ({action, path, line} or None): what, acted on, changes the
  value; ``how`` (probed, reused, predicted, pending); ``msg`` where a probe's error says it
  (:func:`message` gives every finding's sentence).

What each outlet does with each status is :data:`OUTLETS` (docs/audit.md prints it, a test fails
when an outlet or a status has no entry). Plain Python 3.8, no Ansible import: the module (the
audit) and the controller's filters both load it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

OK, GAP, PENDING, UNVERIFIED = 'ok', 'gap', 'pending', 'unverified'
NOT_COVERED, PROBE_ERROR, NODE_BROKEN = 'not_covered', 'probe_error', 'node_broken'
#: every status, in the order reports list them
STATUSES = (OK, GAP, PENDING, UNVERIFIED, NOT_COVERED, PROBE_ERROR, NODE_BROKEN)
#: what each status means (docs/audit.md)
MEANING = {
    OK: 'a new process gets at least the profile',
    GAP: 'a new process gets less than the profile (probed, or predicted from the files)',
    PENDING: 'a file sets enough, but what applies it (a restart, a re-exec, sysctl) has not run',
    UNVERIFIED: 'the probe could not start now (a busy node): the files say what is configured',
    NOT_COVERED: 'the context does not run here, or the probe cannot reach the item',
    PROBE_ERROR: 'the probe failed: nothing is known of the value',
    NODE_BROKEN: 'the context cannot start at all (no login session opens)',
}
KINDS = ('rlimit', 'pids', 'sysctl', 'core', 'shm')
#: the item of a finding about a whole context where the profile's items are not known (a
#: result that names none)
ALL = '(all)'
#: a kernel row whose file sets another value than the kernel has (reports/kernel_ceilings.py)
NOT_APPLIED = 'configured_not_applied'
#: the context name of the node-wide findings (kernel ceilings, where cores go)
KERNEL = 'kernel'

#: a node's state per status (in STATUSES order), the row of both node-state outlets
NODE_CELLS = ('ok', 'short', 'short', 'unknown', 'ok', 'unknown', 'broken')

#: outlet -> status -> what the outlet does, one row per outlet, the cells in STATUSES order
#: (ok, gap, pending, unverified, not_covered, probe_error, node_broken).
#: Each outlet's own vocabulary (the JUnit element, the SARIF level, the NPD/NFD state, the
#: drain) so that an outlet renders a cell and decides nothing; :data:`FAILING` says which of
#: its actions count as a failure.
OUTLETS = dict((outlet, dict(zip(STATUSES, cells))) for outlet, cells in (
    ('journal', ('none', 'warning', 'warning', 'none', 'none', 'none', 'err')),
    ('tune', ('pass', 'fail', 'pending', 'not_verified', 'not_verified', 'fail', 'fail')),
    ('junit', ('passed', 'failure', 'failure', 'skipped', 'skipped', 'error', 'error')),
    ('sarif', ('none', 'error', 'warning', 'none', 'none', 'none', 'error')),
    ('gate', ('pass', 'fail', 'fail', 'pass', 'pass', 'pass', 'fail')),
    ('markdown', ('ok', 'gap', 'pending', 'unverified', 'not covered', 'probe error', 'broken')),
    ('metrics', ('compliant', 'not_compliant', 'not_compliant', 'no_sample', 'no_sample', 'probe_error', 'not_compliant')),
    # the node state NPD and NFD show (one state: node_state.Verdict renders both)
    ('npd', NODE_CELLS),
    ('nfd', NODE_CELLS),
    ('slurm_health', ('none', 'drain', 'drain', 'none', 'none', 'warn', 'drain')),
    ('fleet_summary', ('ok', 'short', 'short', 'unprobed', 'ok', 'unprobed', 'broken')),
    ('job_fit', ('by_demand', 'by_demand', 'by_demand', 'unknown', 'unknown', 'unknown', 'short'))))
#: outlet -> the actions that are a failure there (a failing test case, a result, a failed
#: run, a metric at 0, a NonOK condition, a label false, a drain, a short host, a job that
#: does not fit)
FAILING = {
    'journal': ('warning', 'err'),
    'tune': ('fail',),
    'junit': ('failure', 'error'), 'sarif': ('error', 'warning'), 'gate': ('fail',),
    'markdown': ('gap', 'pending', 'broken'), 'metrics': ('not_compliant',),
    'npd': ('short', 'broken'), 'nfd': ('short', 'broken'), 'slurm_health': ('drain',),
    'fleet_summary': ('short', 'broken'), 'job_fit': ('short',),
}
#: what each outlet is (docs/audit.md)
OUTLET_TEXT = {
    'journal': 'drift watch journal line (priority; a probe that failed has its own line)',
    'tune': 'the tune (limits role) fails and rolls back',
    'junit': 'JUnit test case (limits-audit.junit.xml)',
    'sarif': 'SARIF result level (limits-audit.sarif)',
    'gate': 'audit_fail_on_gap fails the run',
    'markdown': 'status in the Markdown and terminal tables',
    'metrics': 'gpufleet_limits_compliant (drift watch textfile)',
    'npd': 'node-problem-detector condition (node state)',
    'nfd': 'NFD label gpufleet.io/limits-ok(.CONTEXT)',
    'slurm_health': 'Slurm health check and prolog',
    'fleet_summary': 'fleet summary (short, broken, unprobed hosts)',
    'job_fit': 'job fit (a context the job cannot start in)',
}
#: a node-wide state from its findings: the worst first (npd, nfd)
NODE_ORDER = ('broken', 'short', 'unknown', 'ok')


def action(outlet, finding):
    """What ``outlet`` does with ``finding`` (a cell of :data:`OUTLETS`)."""
    return OUTLETS[outlet][finding['status']]


def fails(outlet, finding):
    """Whether ``finding`` is a failure in ``outlet``."""
    return action(outlet, finding) in FAILING[outlet]


def failing(outlet, found):
    """The findings of ``found`` that fail in ``outlet``, in their order."""
    return [f for f in found or [] if fails(outlet, f)]


def node_state(outlet, found):
    """The node's state in ``outlet`` (npd, nfd): the worst of its findings' actions."""
    actions = set(action(outlet, f) for f in found or [])
    return next((state for state in NODE_ORDER if state in actions), 'ok')


def context_states(outlet, found):
    """{context: state} in ``outlet`` (npd, nfd), the worst of each context's findings."""
    by_context = {}
    for finding in found or []:
        by_context.setdefault(finding['context'], []).append(finding)
    return dict((context, node_state(outlet, items)) for context, items in by_context.items())


# --- places -------------------------------------------------------------------------------

_PLACE = re.compile(r'(/[^\s:;,()\'"`]+)(?::(\d+))?')
_CARRIER = re.compile(r'^pam_limits \([^)]*\): ')


def place(path, line=None):
    """A place: {path, line} (line an int or None); None without a path."""
    if not path:
        return None
    return dict(path=str(path), line=int(line) if line is not None else None)


def place_in(evidence):
    """The place an evidence text starts with: the contexts' source texts name their file (and
    line) first, then say more (``FILE:3 (clamped to hard)``, ``FILE:7 propagates ...``); a
    PAM stack line that runs pam_limits (``pam_limits (/etc/pam.d/sshd:40): ``) is the carrier,
    not the setting, and is passed over. None where the text starts with no path."""
    text = _CARRIER.sub('', str(evidence or '').strip())
    match = _PLACE.match(text)
    return place(match.group(1), match.group(2)) if match else None


def places_of(record):
    """{side: place} of an evidence record (a context's ``configured`` entry for one item):
    ``soft_place``/``hard_place`` where the record has them, else its ``soft_source`` and
    ``hard_source`` texts, else its ``source`` and ``line`` for both sides."""
    record = record or {}
    found = {}
    for side in ('soft', 'hard'):
        given = record.get('%s_place' % side)
        if given:
            found[side] = place(given.get('path'), given.get('line'))
        elif record.get('%s_source' % side):
            found[side] = place_in(record['%s_source' % side])
        elif record.get('source') and str(record['source']).startswith('/'):
            found[side] = place(record['source'], record.get('line')) if record.get(
                'line') is not None else place_in(record['source'])
        elif record.get('source'):
            found[side] = place_in(record['source'])
    return dict((side, where) for side, where in found.items() if where)


def first_place(places, short):
    """The place of the first short side (soft before hard), else of any side."""
    for side in list(short or ()) + ['soft', 'hard', 'value']:
        if (places or {}).get(side):
            return places[side]
    return None


def where(found):
    """``path:line`` (or ``path``, or '') of a place."""
    if not found:
        return ''
    return found['path'] if found.get('line') is None else '%s:%d' % (found['path'],
                                                                      found['line'])


# --- findings -----------------------------------------------------------------------------

def finding(context, item, kind, status, **fields):
    """One finding (see the module docstring); ``fields``: expected, actual, short, places,
    place, cause, advice, how, msg."""
    found = dict(context=context, item=item, kind=kind, status=status, expected=None,
                 actual=None, short=[], places={}, place=None, cause='', advice=None,
                 how='probed')
    found.update(fields)
    if found['place'] is None:
        found['place'] = first_place(found['places'], found['short'])
    return found


def message(found):
    """The finding's sentence: its own ``msg`` where the evaluation gave one (a probe's
    error), else :func:`sentence` (kept out of the result: every report has it to hand)."""
    return found.get('msg') or sentence(found)


def sentence(found):
    """One sentence: context, item, status, values, the cause and the advice."""
    head = '%s %s: ' % (found['context'], found['item'])
    if found['status'] in (OK, GAP, PENDING, UNVERIFIED) and found.get('actual') is not None:
        text = head + '%s, the profile wants %s' % (found['actual'], found['expected'])
        if found['short']:
            text += ' (%s short)' % '+'.join(found['short'])
    else:
        text = head + MEANING[found['status']]
    if found.get('cause'):
        text += '; %s' % found['cause']
    if found.get('advice'):
        text += '; advice: %s' % found['advice']['action']
    return text


def advice(action_text, at=None):
    """An advice: the action and where ({action, path, line}); None without an action."""
    if not action_text:
        return None
    return dict(action=action_text, path=(at or {}).get('path'), line=(at or {}).get('line'))


def from_row(row, status):
    """The finding of an audit row (run/audit.py rows(): rlimits; pids rows have ``kind``)."""
    kind = row.get('kind') or ('pids' if row.get('item') == 'pids' else 'rlimit')
    gap = str(row.get('gap') or '')
    short = ['value'] if gap == 'max' else [s for s in gap.split('+') if s]
    places = row.get('places') or {}
    if not places and kind == 'pids' and place_in(row.get('source')):
        # a pids row names its setting first in its source (``FILE:2 (TasksMax=40 of ...)``)
        places = {'value': place_in(row['source'])}
    extra = dict(proved_at=row['proved_at']) if row.get('proved_at') else {}
    return finding(
        row['context'], row['item'], kind, status, expected=row.get('expected'),
        actual=row.get('actual'), short=short, places=places,
        place=row.get('place') or first_place(places, short), cause=row.get('source') or '',
        advice=row.get('advice_at') or advice(row.get('advice') or row.get('owed'),
                                              first_place(places, short)),
        how=row.get('how') or 'probed', **extra)


def row_status(row):
    """The status of an audit row: unverified where the probe could not start (how pending),
    pending where a file sets enough and what applies it has not run (``owed``), gap, ok."""
    if row.get('how') == 'pending':
        return UNVERIFIED
    if row.get('gap'):
        return PENDING if row.get('owed') else GAP
    return OK


def kernel_findings(rows):
    """The findings of the audit's kernel rows that have a minimum (the profile's or the
    job's): gap below it, pending where a file sets enough but the kernel has another value
    and /proc/sys is writable (systemd-sysctl applies it), probe error when unreadable."""
    found = []
    for row in rows or []:
        if row.get('minimum') is None:
            continue
        at = place_in(row.get('source'))
        places = {'value': at} if at else {}
        if row.get('live') is None:
            status = PROBE_ERROR
        elif not row.get('gap'):
            status = OK
        elif (row.get('state') == NOT_APPLIED and not row.get('read_only')
              and row.get('configured') is not None and row['configured'] >= row['minimum']):
            status = PENDING
        else:
            status = GAP
        found.append(finding(
            KERNEL, row['name'], 'sysctl', status, expected='%s' % row['minimum'],
            actual='%s' % row.get('live'), short=['value'] if row.get('gap') else [],
            places=places, cause=row.get('reason') or '',
            advice=advice(kernel_advice(row, status), at)))
    return found


def kernel_advice(row, status):
    """What raises a kernel ceiling below its minimum (only with a gap)."""
    if status == PENDING:
        return 'run sysctl --system (or systemd-sysctl) as root to apply %s' % row['source']
    if status != GAP:
        return ''
    if row.get('read_only'):
        return ('raise %s on the host that owns this kernel (/proc/sys is read-only here)'
                % row['name'])
    return ('set %s to at least %d with the limits role (limits_sysctl: the sysctl_ceilings '
            'module writes a sysctl.d file and applies it)' % (row['name'], row['minimum']))


def core_findings(core):
    """The finding of where cores go against the profile's core limit (the audit's ``core``
    section; none when the profile has no core)."""
    if not core or core.get('core_limit') is None:
        return []
    status = GAP if core.get('warning') else OK
    # the advice is core_dumps' own, the one its warning gives
    return [finding(KERNEL, 'core_pattern', 'core', status, expected='cores capped',
                    actual=str(core.get('pattern')), short=['value'] if status == GAP else [],
                    cause=core.get('warning') or '',
                    advice=advice(core.get('advice') if status == GAP else ''))]


def error_status(error, waiting=()):
    """The status of a probe that gave no values (an ``errors`` entry): not covered where the
    context does not run, unverified where it could not start now (busy), pending where the
    context waits for a restart the policy deferred (``waiting``: the tune's), else a probe
    error. The one rule for the audit and the tune."""
    kind = error.get('kind')
    if kind == 'not_running':
        return NOT_COVERED
    if kind == 'busy':
        return UNVERIFIED
    return PENDING if error.get('context') in waiting else PROBE_ERROR


def error_findings(errors, items, covered):
    """The findings of the probes that gave no row: one per error item (``item`` of the
    error, else every profile item the context has no row for): not covered where the context
    does not run (kind not_running), probe error otherwise. ``covered``: {(context, item)}
    that have a row already."""
    found = []
    for error in errors or []:
        if error.get('kind') == 'busy':
            continue
        context = str(error.get('context'))
        names = [error['item']] if error.get('item') else (list(items) or [ALL])
        status = error_status(error)
        for item in names:
            if (context, item) in covered:
                continue
            covered.add((context, item))
            found.append(finding(context, item, 'pids' if item == 'pids' else 'rlimit',
                                 status, cause=str(error.get('msg') or ''),
                                 msg='%s %s: %s' % (context, item, error.get('msg') or
                                                    MEANING[status])))
    return found


def broken(found, problems, items):
    """``found`` with every finding of a context a problem stops (a limits file every session
    fails on: the problem's ``stops``, else its ``context``) made node broken, and one finding
    per profile item for such a context that has none; the problem's file is the place."""
    by_context = {}
    for problem in problems or []:
        for context in problem.get('stops') or [problem.get('context')]:
            by_context.setdefault(str(context), problem)
    out = []
    seen = set()
    for entry in found:
        problem = by_context.get(entry['context'])
        if problem is not None:
            entry = dict(entry, status=NODE_BROKEN, cause=str(problem.get('msg') or ''),
                         place=place_in(problem.get('source')) or entry.get('place'),
                         advice=advice(problem.get('advice') or '',
                                       place_in(problem.get('source'))))
            entry.pop('msg', None)
        seen.add((entry['context'], entry['item']))
        out.append(entry)
    for context, problem in by_context.items():
        for item in list(items) or [ALL]:
            if (context, item) not in seen:
                at = place_in(problem.get('source'))
                out.append(finding(
                    context, item, 'pids' if item == 'pids' else 'rlimit', NODE_BROKEN,
                    cause=str(problem.get('msg') or ''), place=at,
                    advice=advice(problem.get('advice') or '', at)))
    return out


def evaluate(result, items):
    """The findings of an audit result (run/audit.py audit(): ``rows`` (rlimits and pids),
    ``errors``, ``problems``, ``kernel``, ``core``) for the profile's ``items`` (pids among
    them when the profile has it): rows first in their order, then the probes that gave no
    row, the kernel ceilings and where cores go."""
    found = [from_row(row, row_status(row)) for row in result.get('rows') or []]
    covered = set((f['context'], f['item']) for f in found)
    found += error_findings(result.get('errors'), items, covered)
    for context in (result.get('pids') or {}).get('not_covered') or []:
        if (context, 'pids') not in covered:
            found.append(finding(context, 'pids', 'pids', NOT_COVERED,
                                 cause='the pids probe does not reach this context'))
    found = broken(found, result.get('problems'), items)
    found += kernel_findings(result.get('kernel'))
    found += core_findings(result.get('core'))
    return found


def of(result):
    """The findings of an audit result: its ``findings`` (limits_audit returns them), else
    :func:`evaluate` of it (a result kept by an earlier version of the collection), for the
    profile's items it names (``expected``, ``pids``) and those its rows have."""
    result = result or {}
    if result.get('findings') is not None:
        return result['findings']
    items = list(result.get('expected') or {})
    for row in result.get('rows') or []:
        if row.get('item') not in items:
            items.append(row.get('item'))
    if result.get('pids') and 'pids' not in items:
        items.append('pids')
    return evaluate(result, items)
