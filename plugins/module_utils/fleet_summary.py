# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary that leads the audit report (playbooks/audit_limits.yml).

At 1,000 hosts a per-host table is unreadable; the summary says, for each context and item that
any host is short of, how many hosts are short, grouped by what they have (the actual soft:hard
value and the side that is short) and why (the source of the value), with the host names folded
into ranges (``gpu-[001-040,042]``). Hosts that could not be audited and contexts that could not
be probed are grouped by their reason the same way. Generic over contexts and items: whatever
the audit module reports is summarised, in the order of how many hosts it affects.

Input: the report's ``hosts`` mapping, ``{host: {audited, rows, errors}}`` where ``rows`` are
limits_audit's rows (context, item, actual, expected, gap, source) and ``errors`` its errors
(context, msg). Controller-side only (a filter plugin), plain Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_NUMBERED = re.compile(r'^(.*?)(\d+)(\D*)$')


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


def build(hosts, limit=12):
    """The summary of an audit report's ``hosts`` mapping (see the module docstring):
    {hosts, audited, short_hosts, items: [{context, item, short, of, groups: [{actual, gap,
    source, count, hosts}]}], unaudited: [{why, count, hosts}], unprobed: [{context, why,
    count, hosts}], reused: [{context, count, hosts, oldest}]}, items and groups sorted by how
    many hosts they hold; ``reused``: the contexts whose rows came from an earlier probe
    (limits_audit's probe_max_age), with the oldest proof's time."""
    hosts = hosts or {}
    items, probed, unaudited, unprobed, reused = {}, {}, {}, {}, {}
    short_hosts = set()
    for host, report in hosts.items():
        report = report or {}
        if not report.get('audited', True):
            for error in report.get('errors') or [{'msg': 'not audited'}]:
                unaudited.setdefault(error.get('msg', 'not audited'), []).append(host)
            continue
        for error in report.get('errors') or []:
            key = (str(error.get('context', '?')), str(error.get('msg', '')))
            unprobed.setdefault(key, []).append(host)
        for row in report.get('rows') or []:
            key = (str(row.get('context')), str(row.get('item')))
            probed.setdefault(key, set()).add(host)
            if row.get('how') == 'reused':
                reused.setdefault(str(row.get('context')), {})[host] = str(row.get('proved_at'))
            if not row.get('gap'):
                continue
            short_hosts.add(host)
            why = (str(row.get('actual')), str(row.get('gap')), str(row.get('source')),
                   str(row.get('expected')))
            items.setdefault(key, {}).setdefault(why, []).append(host)
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
        audited=len(hosts) - len(set(h for names in unaudited.values() for h in names)),
        short_hosts=len(short_hosts),
        items=out_items,
        unaudited=sorted((dict(why=why, count=len(names), hosts=fold_hosts(names, limit))
                          for why, names in unaudited.items()),
                         key=lambda g: (-g['count'], g['why'])),
        unprobed=sorted((dict(context=context, why=why, count=len(names),
                              hosts=fold_hosts(names, limit))
                         for (context, why), names in unprobed.items()),
                        key=lambda g: (-g['count'], g['context'], g['why'])),
        reused=[dict(context=context, count=len(made), oldest=min(made.values()),
                     hosts=fold_hosts(sorted(made), limit))
                for context, made in sorted(reused.items())])


def lines(summary, markdown=False):
    """The summary as report lines: plain text for the terminal, or Markdown."""
    out = []
    head = '%d hosts, %d audited, %d short of the profile somewhere' % (
        summary['hosts'], summary['audited'], summary['short_hosts'])
    if markdown:
        out += ['## Fleet summary', '', head + '.', '']
    else:
        out += ['FLEET SUMMARY: ' + head]
    for group in summary.get('reused') or []:
        text = ('%s: reused on %d hosts a probe made since %s (nothing that decides a new '
                'container\'s limits changed since; audit_probe_max_age=0 starts new ones): %s'
                % (group['context'], group['count'], group['oldest'], group['hosts']))
        out += ['- ' + text, ''] if markdown else [text]
    if not summary['items'] and not summary['unaudited'] and not summary['unprobed']:
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
        text = '%d hosts not audited (%s): %s' % (group['count'], group['why'], group['hosts'])
        out.append('- ' + text if markdown else text)
    for group in summary['unprobed']:
        text = '%s not probed on %d hosts (%s): %s' % (group['context'], group['count'],
                                                       group['why'], group['hosts'])
        out.append('- ' + text if markdown else text)
    return out
