# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report (playbooks/audit_limits.yml's ``limits-audit.json``) for CI and compliance
tools: JUnit XML and SARIF 2.1.0, rendered from the report's rows as they are (the gap, its
source, its advice and the file:line they name: no second judgement here), and the message
``audit_fail_on_gap`` fails the run with.

JUnit: one ``testsuite`` per host, one ``testcase`` per context x item (classname
``gpufleet.HOST.CONTEXT``, name the item): a gap is a ``failure`` (type ``gap``), a context the
probe does not cover or could not start now (``not_running``, ``busy``, pids ``not_covered``,
a pending row) is ``skipped``, a probe that failed is an ``error``, and a host that could not be
audited is one ``error`` test case named ``audit``.

SARIF: one result per gap (level ``error``; ``warning`` for a gap of a row that was predicted
from the files or is pending, no new process having shown it), one rule per context x item
(``gpufleet/CONTEXT/ITEM``). A path on a node is a relative URI against the base ``NODEROOT``
(the root of the node's file system, ``file:///``; the host is in the result's
``logicalLocations`` and ``properties.host``), its line ``region.startLine``; a gap whose row
names no file is located at the report itself (base ``REPORTS``, ``limits-audit.json``).

Controller-side only (the filters of plugins/filter/audit_report.py), plain Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re
import xml.etree.ElementTree as ET

SARIF_SCHEMA = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json'
TOOL = 'gpufleet.tuning'
INFORMATION_URI = 'https://github.com/gpufleet/tuning'
HELP_URI = 'https://github.com/gpufleet/tuning/blob/main/docs/audit.md'
#: the base of a path on a node, and of the report itself
NODE_ROOT, REPORTS = 'NODEROOT', 'REPORTS'
REPORT_FILE = 'limits-audit.json'
#: the partialFingerprints key (bump its version when what it hashes changes)
FINGERPRINT = 'gpufleetGap/v1'
#: probe error kinds that are not failures: the context does not run, or is busy now
SKIPPED_KINDS = ('not_running', 'busy')
#: rows no new process showed: a gap there is a warning
UNPROBED_HOW = ('predicted', 'pending')

# an absolute path and its line ('/etc/x.conf:3'), or an absolute path alone
_FILE = r'/[^\s:;,()\'"`]+'
_PATH_LINE = re.compile(r'(%s):(\d+)' % _FILE)
_PATH = re.compile(r'(?:^|[\s(\'"`])(%s)' % _FILE)
# the sources' forms (contexts/ssh.py, run/audit.py source_of): the PAM stack line that runs
# pam_limits, before the limits lines it applies ('pam_limits (/etc/pam.d/sshd:40): ...'); one
# file's soft and hard lines ('FILE:3 (soft), :4 (hard)'); each side's ('soft: F:2; hard: G:5')
_CARRIER = re.compile(r'pam_limits \(%s:\d+\): ' % _FILE)
_BOTH_SIDES = re.compile(r'(%s):(\d+) \(soft\), :(\d+) \(hard\)' % _FILE)
_SIDE = re.compile(r'\b(soft|hard): (%s):(\d+)' % _FILE)
# characters XML 1.0 cannot hold, even escaped
_NOT_XML = re.compile(u'[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def line_in(text, gap):
    """(path, line) of the line ``text`` names for the short side (``gap``: 'soft', 'hard' or
    'soft+hard'; the soft side's line unless only hard is short), or None. The PAM stack line
    that runs pam_limits is skipped: the limits line after it sets the value."""
    text = _CARRIER.sub('', text)
    side = 'hard' if gap == 'hard' else 'soft'
    match = _BOTH_SIDES.search(text)
    if match:
        return match.group(1), int(match.group(3) if side == 'hard' else match.group(2))
    sides = dict((m.group(1), (m.group(2), int(m.group(3)))) for m in _SIDE.finditer(text))
    if sides:
        return sides.get(side) or sides.get('hard' if side == 'soft' else 'soft')
    match = _PATH_LINE.search(text)
    return (match.group(1), int(match.group(2))) if match else None


def location(row):
    """(path, line) the row names: the ``file:line`` of its advice (the line that, acted on,
    closes the gap), else of its source (the line that sets the value) - of the short side where
    the text names a line per side, past the PAM stack line that runs pam_limits - else the
    first path of either with line None; (None, None) where the row names no file."""
    texts = [str(row.get('advice') or ''), str(row.get('source') or '')]
    for text in texts:
        found = line_in(text, str(row.get('gap') or ''))
        if found:
            return found
    for text in texts:
        text = _CARRIER.sub('', text)
        match = _PATH.search(text)
        if match:
            return match.group(1), None
    return None, None


def where(row):
    """``file:line`` (or the file alone, or '') of :func:`location`."""
    path, line = location(row)
    return '' if path is None else path if line is None else '%s:%d' % (path, line)


def sentence(host, row):
    """One sentence per gap, the same in JUnit and SARIF: host, context, item, what a new
    process gets against the profile, the short side, where the value comes from and the advice
    (as the audit wrote them)."""
    text = ('%s %s %s: %s (soft:hard) is below the profile\'s %s (%s short); source: %s' % (
        host, row.get('context'), row.get('item'), row.get('actual'), row.get('expected'),
        row.get('gap'), row.get('source') or 'unknown'))
    if row.get('advice'):
        text += '; advice: %s' % row['advice']
    return text + '.'


def _xml(value):
    """``value`` as text XML 1.0 can hold (control characters as \\xNN; ElementTree escapes
    &, <, > and quotes)."""
    return _NOT_XML.sub(lambda m: '\\x%02x' % ord(m.group(0)) if ord(m.group(0)) < 256
                        else '\\u%04x' % ord(m.group(0)), str(value))


def _indent(element, level=0):
    """Pretty-print ``element`` in place (ElementTree.indent is Python 3.9+)."""
    pad = '\n' + '  ' * (level + 1)
    if len(element):
        if not (element.text or '').strip():
            element.text = pad
        for child in element:
            _indent(child, level + 1)
            if not (child.tail or '').strip():
                child.tail = pad
        element[-1].tail = '\n' + '  ' * level


def _items(report, profile):
    """The items of a host's test cases: its rows' items in their order, then the profile's."""
    found = []
    for name in [r.get('item') for r in report.get('rows') or []] + list(profile or {}):
        if name and str(name) not in found:
            found.append(str(name))
    return found


def _contexts(report):
    found = []
    for name in [r.get('context') for r in report.get('rows') or []] + [
            e.get('context') for e in report.get('errors') or []] + list(
            (report.get('pids') or {}).get('not_covered') or []):
        if name and str(name) not in found:
            found.append(str(name))
    return found


def host_cases(host, report, profile):
    """[(classname, name, outcome, message, detail)] of one host; outcome is '' (passed),
    'failure', 'skipped', 'error' (a probe that failed) or 'not_audited' (the host)."""
    report = report or {}
    if not report.get('audited', True):
        message = '; '.join(str(e.get('msg', '')) for e in report.get('errors') or []) \
            or 'not audited'
        return [('gpufleet.%s' % host, 'audit', 'not_audited', message, message)]
    rows = dict(((str(r.get('context')), str(r.get('item'))), r) for r in report.get('rows') or [])
    errors = report.get('errors') or []
    not_covered = (report.get('pids') or {}).get('not_covered') or []
    cases = []
    for context in _contexts(report):
        for item in _items(report, profile):
            classname = 'gpufleet.%s.%s' % (host, context)
            row = rows.get((context, item))
            if row is not None:
                cases.append(_row_case(host, classname, row))
                continue
            error = next((e for e in errors if str(e.get('context')) == context
                          and e.get('item') in (None, item)), None)
            if error is not None:
                kind = error.get('kind')
                outcome = 'skipped' if kind in SKIPPED_KINDS else 'error'
                message = '%s not probed%s: %s' % (context, ' (%s)' % kind if kind else '',
                                                   error.get('msg', ''))
                cases.append((classname, item, outcome, message, message))
            elif item == 'pids' and context in not_covered:
                message = '%s: the pids probe does not cover this context' % context
                cases.append((classname, item, 'skipped', message, message))
    return cases


def _row_case(host, classname, row):
    item = str(row.get('item'))
    if row.get('gap'):
        message = sentence(host, row)
        detail = '\n'.join('%s: %s' % (key, value) for key, value in (
            ('gap', row.get('gap')), ('actual', row.get('actual')),
            ('expected', row.get('expected')), ('cause', row.get('source') or ''),
            ('advice', row.get('advice') or ''), ('file:line', where(row) or 'none named'),
            ('how', row.get('how') or '')))
        return (classname, item, 'failure', message, detail)
    if row.get('how') == 'pending':
        message = '%s %s not probed now: %s' % (row.get('context'), item, row.get('actual'))
        return (classname, item, 'skipped', message, message)
    return (classname, item, '', '', '')


def junit_xml(report):
    """The audit report (``{generated, profile, hosts: {host: report}}``) as JUnit XML text."""
    report = report or {}
    hosts = report.get('hosts') or {}
    stamp = str(report.get('generated') or '').rstrip('Z')
    root = ET.Element('testsuites', name='gpufleet.tuning limits audit')
    totals = dict(tests=0, failures=0, errors=0, skipped=0)
    for host in hosts:
        cases = host_cases(host, hosts[host], report.get('profile'))
        counts = dict(tests=len(cases),
                      failures=sum(1 for c in cases if c[2] == 'failure'),
                      errors=sum(1 for c in cases if c[2] in ('error', 'not_audited')),
                      skipped=sum(1 for c in cases if c[2] == 'skipped'))
        attrs = dict(name=_xml(host), hostname=_xml(host), time='0',
                     **dict((k, str(v)) for k, v in counts.items()))
        if stamp:
            attrs['timestamp'] = stamp
        suite = ET.SubElement(root, 'testsuite', attrs)
        for classname, name, outcome, message, detail in cases:
            case = ET.SubElement(suite, 'testcase', classname=_xml(classname), name=_xml(name),
                                 time='0')
            if outcome:
                tag = 'error' if outcome == 'not_audited' else outcome
                child = ET.SubElement(case, tag, message=_xml(message))
                if tag != 'skipped':
                    child.set('type', dict(failure='gap', error='probe_error').get(outcome,
                                                                                   outcome))
                    child.text = _xml(detail)
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        if key != 'skipped':    # junit-10.xsd has no skipped on testsuites
            root.set(key, str(value))
    _indent(root)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(root, encoding='unicode') + '\n')


def rule_id(context, item):
    return 'gpufleet/%s/%s' % (context, item)


def _rule(context, item):
    return {
        'id': rule_id(context, item),
        'name': 'LimitBelowProfile',
        'shortDescription': {'text': '%s of a new process in %s is below the profile'
                                     % (item, context)},
        'fullDescription': {'text': 'A new process started in the %s context gets a %s limit '
                                    '(soft:hard) below the limits profile.' % (context, item)},
        'help': {'text': 'The result names where the value comes from (the file:line that '
                         'sets it, or what it is inherited from) and, where the evidence points '
                         'at it, what closes the gap: run limits_profile with the profile, or '
                         'raise or remove the line named. See docs/audit.md.'},
        'helpUri': HELP_URI,
        'defaultConfiguration': {'level': 'error'},
        'properties': {'context': context, 'item': item, 'tags': ['limits', context, item]},
    }


def _physical(path, line):
    if path is None:
        return {'artifactLocation': {'uri': REPORT_FILE, 'uriBaseId': REPORTS}}
    found = {'artifactLocation': {'uri': path.lstrip('/'), 'uriBaseId': NODE_ROOT}}
    if line is not None:
        found['region'] = {'startLine': max(int(line), 1)}
    return found


def fingerprint(host, row):
    """Stable across runs while the same gap stays: host, context, item and the file named."""
    path, _line = location(row)
    key = '\0'.join([str(host), str(row.get('context')), str(row.get('item')), path or ''])
    return hashlib.sha256(key.encode('utf-8')).hexdigest()


def sarif_log(report, version):
    """The audit report as a SARIF 2.1.0 log (a dict): ``version``, the collection's."""
    report = report or {}
    hosts = report.get('hosts') or {}
    rules, index, results = [], {}, []
    for host in hosts:
        for row in (hosts[host] or {}).get('rows') or []:
            key = (str(row.get('context')), str(row.get('item')))
            if key not in index:
                index[key] = len(rules)
                rules.append(_rule(*key))
            if not row.get('gap'):
                continue
            path, line = location(row)
            results.append({
                'ruleId': rule_id(*key),
                'ruleIndex': index[key],
                'level': 'warning' if row.get('how') in UNPROBED_HOW else 'error',
                'message': {'text': sentence(host, row)},
                'locations': [{
                    'physicalLocation': _physical(path, line),
                    'logicalLocations': [
                        {'name': str(host), 'kind': 'resource',
                         'fullyQualifiedName': str(host)},
                        {'name': key[0], 'kind': 'namespace',
                         'fullyQualifiedName': '%s/%s' % (host, key[0])}],
                }],
                'partialFingerprints': {FINGERPRINT: fingerprint(host, row)},
                'properties': {'host': str(host), 'context': key[0], 'item': key[1],
                               'actual': row.get('actual'), 'expected': row.get('expected'),
                               'gap': row.get('gap'), 'source': row.get('source'),
                               'advice': row.get('advice') or '', 'how': row.get('how') or '',
                               'located': path is not None},
            })
    run = {
        'tool': {'driver': {'name': TOOL, 'version': str(version),
                            'informationUri': INFORMATION_URI, 'rules': rules}},
        'originalUriBaseIds': {
            NODE_ROOT: {'uri': 'file:///',
                        'description': {'text': 'The root of the audited node\'s file system; '
                                                'the node is the result\'s properties.host.'}},
            REPORTS: {'description': {'text': 'The directory of this report '
                                              '(audit_reports_dir).'}}},
        'automationDetails': {'id': 'gpufleet.tuning/limits-audit/'},
        'results': results,
        'properties': {'generated': report.get('generated'),
                       'hosts': len(hosts),
                       'profile': report.get('profile') or {}},
    }
    return {'$schema': SARIF_SCHEMA, 'version': '2.1.0', 'runs': [run]}


def gap_failure(hosts):
    """audit_fail_on_gap's message: the hosts with a gap, each with its contexts and items
    (``login: nofile, nproc; ssh: nofile``); '' without a gap."""
    parts = []
    for host, report in (hosts or {}).items():
        found = {}
        for row in (report or {}).get('rows') or []:
            if row.get('gap'):
                found.setdefault(str(row.get('context')), []).append(str(row.get('item')))
        if found:
            parts.append('%s (%s)' % (host, '; '.join('%s: %s' % (c, ', '.join(i))
                                                      for c, i in found.items())))
    if not parts:
        return ''
    return ('audit_fail_on_gap: %d host%s below the profile: %s'
            % (len(parts), '' if len(parts) == 1 else 's', ', '.join(parts)))
