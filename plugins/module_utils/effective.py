# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Effective limits: the probes that show what a new process gets in each context where a
workload can start, and the comparison with a profile. Plain Python (no Ansible import).

A probe is a command whose output is a /proc/PID/limits text; the module runs them, this file
builds them, parses their output and compares. Values are in kernel units (limits_model).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model

# Contexts in report order. ``unit:NAME`` contexts (a running unit's main process) come after.
CONTEXTS = ['login', 'service', 'user_manager', 'docker', 'podman']
PROBE_UNIT = 'gpufleet-effective-probe'
CAT = 'cat /proc/self/limits'


def login_command(user):
    """A login session of ``user`` through PAM (runuser's ``-l`` stack runs pam_limits)."""
    return ['runuser', '-l', user, '-c', CAT]


def service_command(user):
    """A transient system service running as ``user`` (systemd's defaults, no PAM)."""
    return ['systemd-run', '--wait', '--pipe', '--quiet', '--collect', '-p', 'User=%s' % user,
            'cat', '/proc/self/limits']


def as_user(user, uid, command):
    """``command`` run as ``user`` with the user manager's bus (XDG_RUNTIME_DIR)."""
    return ['runuser', '-u', user, '--', 'env', 'XDG_RUNTIME_DIR=/run/user/%d' % uid] + command


def user_probe_commands(user, uid, unit):
    """(start, main pid, stop) commands of a transient service of ``user``'s user manager.

    ``systemd-run --user --wait --pipe`` needs a user D-Bus, which many nodes lack; a plain
    transient service is started and its /proc/MAINPID/limits read instead.
    """
    return (as_user(user, uid, ['systemd-run', '--user', '--quiet', '--collect',
                                '--unit=%s' % unit, 'sleep', '120']),
            as_user(user, uid, ['systemctl', '--user', 'show', '-p', 'MainPID', '--value', unit]),
            as_user(user, uid, ['systemctl', '--user', 'stop', unit]))


def container_command(runtime, image, run_options=None):
    """A new container of ``runtime`` (docker or podman) from ``image``."""
    return ([runtime, 'run', '--rm', '--network=none'] + list(run_options or [])
            + [image, 'cat', '/proc/self/limits'])


def unit_context(unit):
    return 'unit:%s' % normalize_unit(unit)


def normalize_unit(unit):
    return unit if '.' in unit else unit + '.service'


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


def gaps(expected, observed):
    """Where a context gives less than the profile.

    ``expected``: {item: Limit} (parse_profile; a side may be None); ``observed``:
    {context: {item: Limit}} for the contexts that were probed. Returns a list of
    {context, item, expected, actual, sides} (limits as {soft, hard} dicts, ``sides`` the
    names of the sides below target) in context then item order.
    """
    result = []
    for context in ordered(observed):
        limits = observed[context]
        for item in sorted(expected):
            want = expected[item]
            got = limits.get(item)
            sides = [side for side in ('soft', 'hard')
                     if side_gap(getattr(want, side), getattr(got, side) if got else None)]
            if sides:
                result.append(dict(context=context, item=item, expected=want.as_dict(),
                                   actual=got.as_dict() if got else None, sides=sides))
    return result


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


def ordered(contexts):
    """Context names in report order: the known ones first, then units by name."""
    known = [c for c in CONTEXTS if c in contexts]
    return known + sorted(c for c in contexts if c not in CONTEXTS)


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


def gap_table(gap_list, pending=None):
    """A plain-text table context x item -> expected / actual, for failure messages."""
    rows = [('context', 'item', 'expected', 'actual', 'below')]
    for gap in gap_list:
        rows.append((gap['context'], gap['item'], human_limit(gap['item'], gap['expected']),
                     human_limit(gap['item'], gap['actual']),
                     '+'.join(gap.get('sides', [])) + (' (pending restart)' if pending and
                                                       gap['context'] in pending else '')))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return '\n'.join('  '.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
                     for row in rows)
