# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a probe found, compared with what was asked: a probe's /proc/PID/limits text parsed,
the sides below a profile, regressions, and the readable forms of limits in results and
failure tables; ProbeError (a probe that gave no limits). Below the contexts, so that their
records and the modules above them share it (run/effective.py runs the probes). Private to
the collection; plain Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model


def parse_probe(text, where):
    """A probe's output -> {item: Limit}; LimitError when it is not a /proc/PID/limits text."""
    limits = model.parse_proc_limits(text or '')
    if not limits:
        raise model.LimitError('%s: the probe printed no limits (%r)'
                               % (where, (text or '').strip()[:200]))
    return limits


def side_gap(expected, actual):
    """True when ``actual`` is below ``expected`` (None expected: nothing asked)."""
    if expected is None:
        return False
    if actual is None:
        return True
    return model.compare(actual, expected) < 0


def regressions(before, after, expected):
    """Items where ``after`` is below both ``before`` and the profile, in one context's
    {item: Limit}: what a silent pam_limits fallback (every limit back to its default) looks
    like. A profile that lowers a limit on purpose is not a regression."""
    result = []
    for item in sorted(expected):
        was, now, want = before.get(item), after.get(item), expected[item]
        if not was or not now:
            continue
        sides = [side for side in ('soft', 'hard')
                 if side_gap(getattr(was, side), getattr(now, side))
                 and side_gap(getattr(want, side), getattr(now, side))]
        if sides:
            result.append(dict(item=item, before=was.as_dict(), after=now.as_dict(),
                               expected=want.as_dict(), sides=sides))
    return result


def human_limit(item, limit):
    """'soft:hard' in readable units, '(none)' for a missing limit."""
    if not limit:
        return '(none)'
    if isinstance(limit, dict):
        limit = model.Limit(limit.get('soft'), limit.get('hard'))
    return model.format_limit(item, limit)


def public_limits(limits):
    """{item: Limit} -> {item: {soft, hard, human}} for module results."""
    return dict((item, dict(soft=lim.soft, hard=lim.hard, human=human_limit(item, lim)))
                for item, lim in limits.items())


def from_public(limits):
    """The inverse of public_limits (also accepts {soft, hard} without human)."""
    return dict((item, model.Limit(entry.get('soft'), entry.get('hard')))
                for item, entry in (limits or {}).items())


def gap_table(gap_list, pending=None, sources=None):
    """A plain-text table context x item -> expected / actual, for failure messages; with
    ``sources`` ({(context, item): text}, the limits role's gap_sources) a last column
    ``source`` gives each row's cause."""
    rows = [('context', 'item', 'expected', 'actual', 'below')
            + (('source',) if sources is not None else ())]
    for gap in gap_list:
        rows.append((gap['context'], gap['item'], human_limit(gap['item'], gap['expected']),
                     human_limit(gap['item'], gap['actual']),
                     '+'.join(gap.get('sides', [])) + (' (pending restart)' if pending and
                                                       gap['context'] in pending else ''))
                    + ((sources.get((gap['context'], gap['item'])) or '?',)
                       if sources is not None else ()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
                     for row in rows)


class ProbeFailure(changes.Failure):
    """A probe request that cannot be run (bad arguments): ``msg`` and the result so far."""


class ProbeError(errors.Error):
    """A probe that did not give limits: ``kind`` is ``not_running`` when the context's
    service does not run (nothing to verify there), ``busy`` when it could not start the probe
    now (pending; ``detail`` adds keys to the reported error: node, reason, waited_s,
    configured), ``host`` when a command failed."""

    kind = errors.HOST
    detail = None
