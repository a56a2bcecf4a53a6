# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary that leads the audit report (playbooks/audit_limits.yml).

At 1,000 hosts a per-host table is unreadable; the summary says, for each context and item that
any host is short of, how many hosts are short, grouped by what they have (the actual soft:hard
value and the side that is short) and why (the source of the value), with the host names folded
into ranges (``gpu-[001-040,042]``). Hosts that could not be audited are grouped by the kind of
failure (:func:`classify`: ssh connection refused, timed out, host key, ...; from the message
with its variable parts, temporary paths, PIDs, addresses and host names, normalised away), one
line per kind with the hosts and one short example message; contexts that could not be probed
are grouped by their normalised reason the same way. Generic over contexts and items: whatever
the audit module reports is summarised, in the order of how many hosts it affects.
:func:`table_lines` is the per-host table for the terminal: the gaps only by default, with
their count, the full table being in the reports.

Input: the report's ``hosts`` mapping, ``{host: {audited, rows, errors}}`` where ``rows`` are
limits_audit's rows (context, item, actual, expected, gap, source) and ``errors`` its errors
(context, msg). Controller-side only (a filter plugin), plain Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings

_NUMBERED = re.compile(r'^(.*?)(\d+)(\D*)$')

#: how long an example message may be in the summary
EXAMPLE_CHARS = 160

# The variable parts of a failure message, in the order they are replaced (normalise()).
_VARIABLE = [
    (re.compile(r'ansible-tmp-[\w.-]+'), 'ansible-tmp-N'),
    (re.compile(r'(?:~|\$HOME|/[\w.@+-]+)*/\.ansible/tmp\b[\w./-]*'), 'TMP'),
    (re.compile(r'/(?:tmp|var/tmp|dev/shm|run/user/\d+)/[\w./@+-]*'), 'TMP'),
    (re.compile(r'\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b'), 'IP'),
    (re.compile(r'\b(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}\b', re.I), 'IP'),
    (re.compile(r'\b[0-9a-f]{12,64}\b', re.I), 'ID'),
    (re.compile(r'\b[\w-]+@[\w.-]+'), 'USER@HOST'),
    (re.compile(r'\b\d+(?:\.\d+)*\b'), 'N'),
]

# status -> [(kind, patterns)]: the first kind of a status with one of its patterns ('|'
# between them) in the message (lower case) names its group; specific causes come before the
# generic ones that wrap them (a stopped container is reported as a temporary directory that
# could not be made).
KINDS = {
    'unreachable': [
        ('ssh connection refused', 'connection refused'),
        ('ssh host key', 'host key verification failed|host identification has|host key for'
                         '|no matching host key'),
        ('ssh auth', 'permission denied (|authentication failed|too many authentication failures'
                     '|invalid/incorrect password|permission denied, please try again'),
        ('name resolution', 'could not resolve hostname|name or service not known'
                            '|temporary failure in name resolution|nodename nor servname'),
        ('no route to host', 'no route to host|network is unreachable|host is down'),
        ('container not running', 'is not running|no such container|container not found'),
        ('ssh timed out', 'timed out|timeout'),
        ('connection closed', 'connection closed|connection reset|kex_exchange_identification'
                              '|broken pipe'),
        ('remote temp directory', 'failed to create temporary directory'),
    ],
    'failed': [
        ('become (sudo)', 'missing sudo password|a password is required|incorrect sudo password'
                          '|sudo: |become'),
        ('python missing', 'python: not found|python3: not found|interpreter discovery'
                           '|no python interpreter|python: command not found'
                           '|python3: command not found|you probably need to set the interpreter'
                           '|/usr/bin/python: no such file'),
        ('module failure', 'module failure|traceback (most recent call last)|module_stderr'),
        ('timed out', 'timed out|timeout'),
        ('bad input', 'audit failed: job.|audit failed: profile.|audit failed: probe_max_age'
                      '|audit failed: user: '),
    ],
}


def normalise(message):
    """``message`` with its variable parts (temporary paths, addresses, IDs, user@host, PIDs
    and other numbers) replaced by placeholders and blanks collapsed: what groups hosts that
    failed the same way. ``hosts``: names replaced by HOST first (normalise_for())."""
    text = ' '.join(str(message).split())
    for pattern, placeholder in _VARIABLE:
        text = pattern.sub(placeholder, text)
    return text


def normalise_for(message, host):
    """normalise() after the host's own name (and its short name) is replaced by HOST."""
    text = str(message)
    for name in sorted(set([host, host.split('.')[0]]), key=len, reverse=True):
        if len(name) > 1:
            text = re.sub(r'(?<![\w.-])%s(?![\w-])' % re.escape(name), 'HOST', text)
    return normalise(text)


def classify(message):
    """(status, kind) of a not-audited host's message (audit_report.not_audited_reason:
    'unreachable: MSG' or 'audit failed: MSG'): the status from its prefix, the kind from
    KINDS, else 'other' (grouped by the normalised message)."""
    text = ' '.join(str(message).split())
    lowered = text.lower()
    status = 'unreachable' if lowered.startswith('unreachable') else 'failed'
    for kind, patterns in KINDS[status]:
        if any(pattern in lowered for pattern in patterns.split('|')):
            return status, kind
    return status, 'other'


# Ansible's text around a command that could not make its temporary directory: the command
# (with the temporary path) and the advice are left out of an example, the cause kept.
_TMP_DIR_FAILURE = re.compile(r'(Failed to create temporary directory)\..*?exited with result '
                              r'(\d+)(?:, std(?:out|err) output: ?)?')


def example(message, limit=EXAMPLE_CHARS):
    """A message on one line, cut to ``limit`` characters ('...' where cut); of a temporary
    directory that could not be made, the cause without the command and the advice."""
    text = ' '.join(str(message).split())
    text = _TMP_DIR_FAILURE.sub(lambda m: '%s (exited %s): ' % m.groups(), text).rstrip(': ')
    return text if len(text) <= limit else text[:limit - 3].rstrip() + '...'


def _natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)]


def fold_hosts(names, limit=12):
    """Host names folded into ranges: ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-07', 'db'] ->
    'db, gpu-[01-03,07]'. Names are grouped by their text around the last number (zero-padded
    numbers keep their width); at most ``limit`` names or ranges are shown, then
    '(+N more hosts)'."""
    groups, plain = {}, []
    for name in sorted(set(names), key=_natural):
        match = _NUMBERED.match(name)
        if not match:
            plain.append(name)
            continue
        head, digits, tail = match.groups()
        group = groups.setdefault((head, tail), dict(numbers=[], width=0))
        group['numbers'].append(int(digits))
        if digits.startswith('0') and len(digits) > 1:
            group['width'] = max(group['width'], len(digits))
    # (sort key, head, tail, width, [(first, last), ...]) per name group; plain names alone
    pieces = [(_natural(name), name, '', 0, None) for name in plain]
    for (head, tail), group in groups.items():
        numbers = sorted(set(group['numbers']))
        spans, first, prev = [], numbers[0], numbers[0]
        for number in numbers[1:]:
            if number != prev + 1:
                spans.append((first, prev))
                first = number
            prev = number
        spans.append((first, prev))
        pieces.append((_natural(head + tail), head, tail, group['width'], spans))
    pieces.sort(key=lambda piece: piece[0])
    shown, budget, hidden = [], limit, 0
    for dummy, head, tail, width, spans in pieces:
        if spans is None:
            if budget > 0:
                shown.append(head)
                budget -= 1
            else:
                hidden += 1
            continue
        kept, budget = spans[:max(budget, 0)], budget - len(spans)
        hidden += sum(b - a + 1 for a, b in spans[len(kept):])
        if not kept:
            continue
        text = ','.join('%0*d' % (width, a) if a == b else '%0*d-%0*d' % (width, a, width, b)
                        for a, b in kept)
        if len(kept) == 1 and kept[0][0] == kept[0][1] and len(spans) == 1:
            shown.append('%s%s%s' % (head, text, tail))
        else:
            shown.append('%s[%s%s]%s' % (head, text, ',...' if len(kept) < len(spans) else '',
                                         tail))
    return ', '.join(shown) + (' (+%d more hosts)' % hidden if hidden else '')


def _first(found):
    """The (host, message) of the first host by name (the group's example)."""
    return min(found, key=lambda pair: _natural(pair[0]))


def _unaudited_group(status, kind, found, limit):
    """One kind of not-audited hosts: status, kind, why ('STATUS: KIND'), count, hosts
    (folded) and example (the first host's message, one line, cut to EXAMPLE_CHARS)."""
    return dict(status=status, kind=kind, why='%s: %s' % (status, kind), count=len(found),
                hosts=fold_hosts([host for host, _m in found], limit),
                example=example(_first(found)[1]))


def build(hosts, limit=12):
    """The summary of an audit report's ``hosts`` mapping (see the module docstring):
    {hosts, audited, short_hosts, items: [{context, item, short, of, groups: [{actual, gap,
    source, count, hosts}]}], unaudited: [{status, kind, why, count, hosts, example}],
    unprobed: [{context, why, count, hosts}], reused: [{context, count, hosts, oldest}]}, items
    and groups sorted by how
    many hosts they hold; ``reused``: the contexts whose rows came from an earlier probe
    (limits_audit's probe_max_age), with the oldest proof's time."""
    hosts = hosts or {}
    items, probed, unaudited, unprobed, reused, broken = {}, {}, {}, {}, {}, {}
    short_hosts = set()
    for host, report in hosts.items():
        report = report or {}
        if not report.get('audited', True):
            for error in (report.get('errors') or [{'msg': 'not audited'}])[:1]:
                message = str(error.get('msg', 'not audited'))
                status, kind = classify(message)
                key = (status, kind, normalise_for(message, host) if kind == 'other' else '')
                unaudited.setdefault(key, []).append((host, message))
            continue
        # the findings, as findings.OUTLETS['fleet_summary'] says: short, broken (no session
        # opens: the host is broken), unprobed (the probe failed or could not start now)
        for entry in findings.of(report):
            cell = findings.action('fleet_summary', entry)
            context, item = str(entry['context']), str(entry['item'])
            message = str(entry.get('cause') or entry['status'])
            if cell == 'broken':
                # one cause stops several contexts (a broken PAM stack: login, ssh and the
                # user manager): one group per cause, naming them all
                found = broken.setdefault(normalise_for(message, host), ([], []))
                if context not in found[0]:
                    found[0].append(context)
                if host not in [h for h, _m in found[1]]:
                    found[1].append((host, message))
                continue
            if cell == 'unprobed':
                found = unprobed.setdefault((context, normalise_for(message, host)), [])
                if host not in [h for h, _m in found]:
                    found.append((host, message))
                continue
            probed.setdefault((context, item), set()).add(host)
            if entry.get('how') == 'reused':
                reused.setdefault(context, {})[host] = str(entry.get('proved_at'))
            if cell != 'short':
                continue
            short_hosts.add(host)
            why = (str(entry.get('actual')), '+'.join(entry.get('short') or []) or
                   entry['status'], str(entry.get('cause') or ''), str(entry.get('expected')))
            items.setdefault((context, item), {}).setdefault(why, []).append(host)
    out_items = []
    for (context, item), whys in items.items():
        groups = [dict(actual=actual, gap=gap, source=source, expected=expected,
                       count=len(names), hosts=fold_hosts(names, limit))
                  for (actual, gap, source, expected), names in whys.items()]
        groups.sort(key=lambda g: (-g['count'], g['actual'], g['source']))
        short = len(set(name for names in whys.values() for name in names))
        out_items.append(dict(context=context, item=item, short=short,
                              of=len(probed.get((context, item), ())), groups=groups))
    out_items.sort(key=lambda i: (-i['short'], i['context'], i['item']))
    return dict(
        hosts=len(hosts),
        audited=len(hosts) - len(set(h for found in unaudited.values() for h, _m in found)),
        short_hosts=len(short_hosts),
        broken_hosts=len(set(h for _c, found in broken.values() for h, _m in found)),
        broken=sorted((dict(context=', '.join(contexts), why=_first(found)[1],
                            count=len(found), hosts=fold_hosts([h for h, _m in found], limit))
                       for contexts, found in broken.values()),
                      key=lambda g: (-g['count'], g['context'], g['why'])),
        items=out_items,
        unaudited=sorted((_unaudited_group(status, kind, found, limit)
                          for (status, kind, _n), found in unaudited.items()),
                         key=lambda g: (-g['count'], g['why'], g['example'])),
        unprobed=sorted((dict(context=context, why=_first(found)[1], count=len(found),
                              hosts=fold_hosts([h for h, _m in found], limit))
                         for (context, _n), found in unprobed.items()),
                        key=lambda g: (-g['count'], g['context'], g['why'])),
        reused=[dict(context=context, count=len(made), oldest=min(made.values()),
                     hosts=fold_hosts(sorted(made), limit))
                for context, made in sorted(reused.items())])


def lines(summary, markdown=False):
    """The summary as report lines: plain text for the terminal, or Markdown."""
    out = []
    head = '%d hosts, %d audited, %d short of the profile somewhere' % (
        summary['hosts'], summary['audited'], summary['short_hosts'])
    if summary.get('broken_hosts'):
        head += ', %d broken' % summary['broken_hosts']
    if markdown:
        out += ['## Fleet summary', '', head + '.', '']
    else:
        out += ['FLEET SUMMARY: ' + head]
    for group in summary.get('reused') or []:
        text = ('%s: reused on %d hosts a probe made since %s (nothing that decides a new '
                'container\'s limits changed since; audit_probe_max_age=0 starts new ones): %s'
                % (group['context'], group['count'], group['oldest'], group['hosts']))
        out += ['- ' + text, ''] if markdown else [text]
    for group in summary.get('broken') or []:
        text = '%s problem on %d hosts (broken): %s: %s' % (
            group['context'], group['count'], example(group['why']), group['hosts'])
        out += ['- ' + text, ''] if markdown else [text]
    if not summary['items'] and not summary['unaudited'] and not summary['unprobed'] \
            and not summary.get('broken'):
        out.append('every audited host meets the profile in every probed context')
        return out
    if summary['items'] and markdown:
        out += ['| context | item | short | have (soft:hard) | short side | why (source) '
                '| hosts |', '| --- | --- | ---: | --- | --- | --- | --- |']
    for entry in summary['items']:
        if not markdown:
            out.append('%s %s: %d of %d hosts short' % (
                entry['context'], entry['item'], entry['short'], entry['of']))
        for group in entry['groups']:
            if markdown:
                out.append('| %s | %s | %d/%d | %s (want %s) | %s | %s | %s |' % (
                    entry['context'], entry['item'], group['count'], entry['of'],
                    group['actual'], group['expected'], group['gap'],
                    group['source'].replace('|', '\\|'), group['hosts']))
            else:
                out.append('  %5d  have %s (want %s, %s short) from %s: %s' % (
                    group['count'], group['actual'], group['expected'], group['gap'],
                    group['source'], group['hosts']))
    if markdown and summary['items']:
        out.append('')
    for group in summary['unaudited']:
        text = '%d hosts not audited (%s): %s; e.g. "%s"' % (
            group['count'], group['why'], group['hosts'], group.get('example', ''))
        out.append('- ' + text if markdown else text)
    for group in summary['unprobed']:
        text = '%s not probed on %d hosts (%s): %s' % (group['context'], group['count'],
                                                       example(group['why']), group['hosts'])
        out.append('- ' + text if markdown else text)
    return out


#: the terminal table's columns and their widths (the last one unbounded)
TABLE_COLUMNS = (('host', 20), ('context', 26), ('item', 8), ('status', 11), ('actual', 24),
                 ('expected', 24), ('short', 9), ('cause', 0))
#: what audit_show may be
SHOW = ('gaps', 'all')


def _table_line(values, markdown=False):
    if markdown:
        return '| %s |' % ' | '.join(str(v).replace('|', '\\|') for v in values)
    return ' '.join(('%-*s' % (width, value)) if width else str(value)
                    for (_name, width), value in zip(TABLE_COLUMNS, values)).rstrip()


def _cells(entry):
    """A finding's table cells: its status as findings.OUTLETS['markdown'] says."""
    cells = dict(entry, status=findings.action('markdown', entry),
                 short='+'.join(entry.get('short') or []),
                 actual=entry.get('actual') if entry.get('actual') is not None else '',
                 expected=entry.get('expected') if entry.get('expected') is not None else '',
                 cause=entry.get('cause') or '')
    return [cells.get(name, '') for name, _width in TABLE_COLUMNS]


def table_lines(found, show='gaps', full='', markdown=False):
    """The per-host table (playbooks/audit_limits.yml): the terminal's (audit_show) is a line
    that counts the findings that fail in the table (findings.FAILING['markdown']: a gap, a
    setting not applied yet, a context where no session opens), then, with ``show`` 'gaps'
    (the default), the header and those only, or with 'all' every finding (host x context x
    item), each with its status; ``full``: where the full table is (the Markdown report),
    named in the count line. ``markdown``: the report's table, every finding, no count line.
    ``found``: the hosts' findings, each with its ``host``."""
    if show not in SHOW:
        raise ValueError('audit_show: %r is not one of %s' % (show, ', '.join(SHOW)))
    found = list(found or [])
    names = [name for name, _width in TABLE_COLUMNS]
    if markdown:
        return [_table_line(names, True), _table_line(['---'] * len(names), True)] + [
            _table_line(_cells(entry), True) for entry in found]
    failing = findings.failing('markdown', found)
    count = '%d of %d findings (host x context x item) fail' % (len(failing), len(found))
    where = '; the full table is in %s' % full if full else ''
    if show == 'gaps':
        out = [count + where + ' (audit_show=all prints it here)']
        shown = failing
    else:
        out = [count + '; every finding:']
        shown = found
    if shown:
        out.append(_table_line(names))
        out += [_table_line(_cells(entry)) for entry in shown]
    return out
