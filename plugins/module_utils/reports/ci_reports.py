# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report (playbooks/audit_limits.yml's ``limits-audit.json``) for CI and compliance
tools: JUnit XML and SARIF 2.1.0, rendered from each host's findings (reports/findings.py:
status, values, cause, advice and the place each names; no second judgement and no text read
here), and the message ``audit_fail_on_gap`` fails the run with. What each does with each status
is findings.OUTLETS (``junit``, ``sarif``, ``gate``), printed in docs/audit.md.

JUnit: one ``testsuite`` per host, one ``testcase`` per finding (classname
``gpufleet.HOST.CONTEXT``, name the item): a gap or a setting not applied yet is a ``failure``,
a probe that failed or a context where no session opens an ``error`` (the ``type`` is the
status), a context not covered or not probed now is ``skipped``, and a host that could not be
audited is one ``error`` test case named ``audit``.

SARIF: one result per finding at level ``error`` (a gap, a context where no session opens) or
``warning`` (a setting not applied yet), one rule per context x item (``gpufleet/CONTEXT/ITEM``).
A path on a node is a relative URI against the base ``NODEROOT`` (the root of the node's file
system, ``file:///``; the host is in the result's ``logicalLocations`` and ``properties.host``),
its line ``region.startLine``: where the advice acts, else the place that decides the short side;
a finding that names no file is located at the report itself (base ``REPORTS``,
``limits-audit.json``).

Controller-side only (the filters of plugins/filter/audit_report.py), plain Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings

SARIF_SCHEMA = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json'
TOOL = 'gpufleet.tuning'
INFORMATION_URI = 'https://github.com/gpufleet/tuning'
HELP_URI = 'https://github.com/gpufleet/tuning/blob/main/docs/audit.md'
#: the base of a path on a node, and of the report itself
NODE_ROOT, REPORTS = 'NODEROOT', 'REPORTS'
REPORT_FILE = 'limits-audit.json'
#: the partialFingerprints key (bump its version when what it hashes changes)
FINGERPRINT = 'gpufleetGap/v1'

# characters XML 1.0 cannot hold, even escaped
_NOT_XML = re.compile(u'[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def location(entry):
    """(path, line) a finding is located at: where its advice acts (the line that, acted on,
    closes the gap), else its place (what decides the short side); (None, None) where it names
    no file. Both come with the finding: nothing is read out of its text."""
    advice = entry.get('advice') or {}
    if advice.get('path'):
        return advice['path'], advice.get('line')
    found = entry.get('place') or {}
    return found.get('path'), found.get('line')


def where(entry):
    """``file:line`` (or the file alone, or '') of :func:`location`."""
    return findings.where(findings.place(*location(entry)))


def sentence(host, entry):
    """One sentence per finding, the same in JUnit and SARIF: the host and the finding's own
    sentence (context, item, values, short side, cause and advice as the audit wrote them)."""
    return '%s %s.' % (host, findings.message(entry))


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


def host_cases(host, report, profile=None):
    """[(classname, name, outcome, message, detail, type)] of one host, one per finding:
    outcome as findings.OUTLETS['junit'] says ('' for passed), or 'not_audited' (the host);
    type: the finding's status. ``profile``
    is not read (the findings carry the profile's items); kept for the filter's signature."""
    report = report or {}
    if not report.get('audited', True):
        message = '; '.join(str(e.get('msg', '')) for e in report.get('errors') or []) \
            or 'not audited'
        return [('gpufleet.%s' % host, 'audit', 'not_audited', message, message,
                 'not_audited')]
    cases = []
    for entry in findings.of(report):
        classname = 'gpufleet.%s.%s' % (host, entry['context'])
        outcome = findings.action('junit', entry)
        if outcome == 'passed':
            cases.append((classname, entry['item'], '', '', '', entry['status']))
            continue
        message = sentence(host, entry)
        detail = '\n'.join('%s: %s' % (key, value) for key, value in (
            ('status', entry['status']), ('short', '+'.join(entry.get('short') or [])),
            ('actual', entry.get('actual')), ('expected', entry.get('expected')),
            ('cause', entry.get('cause') or ''),
            ('advice', (entry.get('advice') or {}).get('action') or ''),
            ('file:line', where(entry) or 'none named'), ('how', entry.get('how') or '')))
        cases.append((classname, entry['item'], outcome, message, detail, entry['status']))
    return cases


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
        for classname, name, outcome, message, detail, kind in cases:
            case = ET.SubElement(suite, 'testcase', classname=_xml(classname), name=_xml(name),
                                 time='0')
            if outcome:
                tag = 'error' if outcome == 'not_audited' else outcome
                child = ET.SubElement(case, tag, message=_xml(message))
                if tag != 'skipped':
                    child.set('type', kind)
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


def fingerprint(host, entry):
    """Stable across runs while the same finding stays: host, context, item and the file
    named."""
    path, _line = location(entry)
    key = '\0'.join([str(host), str(entry.get('context')), str(entry.get('item')), path or ''])
    return hashlib.sha256(key.encode('utf-8')).hexdigest()


def sarif_log(report, version):
    """The audit report as a SARIF 2.1.0 log (a dict): ``version``, the collection's. One
    result per finding whose findings.OUTLETS['sarif'] cell is a level (error, warning)."""
    report = report or {}
    hosts = report.get('hosts') or {}
    rules, index, results = [], {}, []
    for host in hosts:
        for entry in findings.of(hosts[host] or {}) if (hosts[host] or {}).get(
                'audited', True) else []:
            key = (str(entry['context']), str(entry['item']))
            if key not in index:
                index[key] = len(rules)
                rules.append(_rule(*key))
            level = findings.action('sarif', entry)
            if level == 'none':
                continue
            path, line = location(entry)
            results.append({
                'ruleId': rule_id(*key),
                'ruleIndex': index[key],
                'level': level,
                'message': {'text': sentence(host, entry)},
                'locations': [{
                    'physicalLocation': _physical(path, line),
                    'logicalLocations': [
                        {'name': str(host), 'kind': 'resource',
                         'fullyQualifiedName': str(host)},
                        {'name': key[0], 'kind': 'namespace',
                         'fullyQualifiedName': '%s/%s' % (host, key[0])}],
                }],
                'partialFingerprints': {FINGERPRINT: fingerprint(host, entry)},
                'properties': {'host': str(host), 'context': key[0], 'item': key[1],
                               'status': entry['status'], 'kind': entry['kind'],
                               'actual': entry.get('actual'),
                               'expected': entry.get('expected'),
                               'gap': '+'.join(entry.get('short') or []),
                               'source': entry.get('cause') or '',
                               'advice': (entry.get('advice') or {}).get('action') or '',
                               'how': entry.get('how') or '', 'located': path is not None},
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
    """audit_fail_on_gap's message: the hosts with a finding that fails the gate
    (findings.OUTLETS['gate']), each with its contexts and items (``login: nofile, nproc;
    ssh: nofile``); '' without one."""
    parts = []
    for host, report in (hosts or {}).items():
        found = {}
        for entry in findings.failing('gate', findings.of(report or {})):
            found.setdefault(str(entry['context']), []).append(
                str(entry['item']) + ('' if entry['status'] == findings.GAP
                                      else ' (%s)' % entry['status']))
        if found:
            parts.append('%s (%s)' % (host, '; '.join('%s: %s' % (c, ', '.join(i))
                                                      for c, i in found.items())))
    if not parts:
        return ''
    return ('audit_fail_on_gap: %d host%s below the profile: %s'
            % (len(parts), '' if len(parts) == 1 else 's', ', '.join(parts)))
