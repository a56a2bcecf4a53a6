"""audit_limits.yml's per-host reports, built on the controller from the registered
limits_audit results: an audited host keeps its findings with its rows named, a host that was
unreachable or whose audit failed is in the report with audited false and why."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.filter import audit_report as ar

AUDITED = {
    'changed': False,
    'contexts': {'login': {'limits': {'nofile': {'soft': 1024, 'hard': 4096}}}},
    'errors': [{'context': 'docker', 'msg': 'dockerd does not answer', 'kind': 'host'}],
    'ceilings': {'nofile': 20000},
    'gaps': [{'context': 'login', 'item': 'nofile', 'side': 'soft'}],
    'pam_invalid': [{'path': '/etc/security/limits.conf', 'line': 3, 'text': '* soft nofle 1'}],
    'systemd_pending': [],
    'unwritable': [],
    'kernel': [{'name': 'vm.max_map_count', 'live': 65530, 'state': 'ok'}],
    'rows': [{'context': 'login', 'item': 'nofile', 'actual': '1024:4096'}],
    'job_fit': {'fits': [], 'short': ['login']},
    'core': {'pattern': 'core', 'kind': 'relative', 'warning': ''},
}


def test_an_audited_host_keeps_its_findings_and_names_its_rows():
    reports = ar.audit_host_reports([AUDITED], ['node-1'])
    report = reports['node-1']
    assert report['audited'] is True
    assert report['rows'] == [{'context': 'login', 'item': 'nofile', 'actual': '1024:4096',
                               'host': 'node-1'}]
    for key in ('contexts', 'errors', 'ceilings', 'gaps', 'pam_invalid', 'job_fit', 'core'):
        assert report[key] == AUDITED[key], key
    # the registered result is not changed (it stays in hostvars)
    assert 'host' not in AUDITED['rows'][0]


def test_a_result_without_a_job_has_an_empty_job_fit():
    result = dict(AUDITED)
    del result['job_fit']
    assert ar.audit_host_reports([result], ['n'])['n']['job_fit'] == {}


@pytest.mark.parametrize('result, reason', [
    ({'unreachable': True, 'msg': 'Failed to connect to the host via ssh: timed out\n'},
     'unreachable: Failed to connect to the host via ssh: timed out'),
    ({'failed': True, 'msg': 'audit_job.num_workers: must be at least 1'},
     'audit failed: audit_job.num_workers: must be at least 1'),
    ({'failed': True}, 'audit failed: no message'),
])
def test_a_host_that_was_not_audited_says_why(result, reason):
    report = ar.audit_host_reports([result], ['node-2'])['node-2']
    assert report == {'audited': False, 'contexts': {}, 'ceilings': {}, 'gaps': [],
                      'pam_invalid': [], 'systemd_pending': [], 'unwritable': [], 'kernel': [],
                      'rows': [], 'core': {}, 'job_fit': {}, 'pids': {}, 'problems': [], 'findings': [],
                      'errors': [{'context': 'host', 'msg': reason}]}
    assert ar.not_audited_reason(result) == reason


def test_hosts_keep_their_order_and_a_mismatch_is_refused():
    reports = ar.audit_host_reports([AUDITED, {'failed': True, 'msg': 'x'}], ['b', 'a'])
    assert list(reports) == ['b', 'a']
    with pytest.raises(AnsibleFilterError, match='1 results for 2 hosts'):
        ar.audit_host_reports([AUDITED], ['a', 'b'])
    with pytest.raises(AnsibleFilterError, match='a has no limits_audit result'):
        ar.audit_host_reports([None], ['a'])


# issue 31 item 20: the probe proofs live on the controller, one file per host.
PROOF = {'key': 'abc', 'output': 'Limit ...\n', 'proved_at': 1000.5}


def test_proof_files_keep_each_audited_hosts_proofs():
    import json
    results = [dict(AUDITED, proofs={'docker': PROOF}), dict(AUDITED, proofs={}),
               {'unreachable': True, 'msg': 'down'}, {'failed': True, 'msg': 'bad'},
               dict(AUDITED, proofs={'docker': dict(PROOF, proved_at='x')})]
    hosts = ['a', 'b', 'c', 'd', 'e']
    files = ar.audit_proof_files(results, hosts)
    assert sorted(files) == ['a.json', 'b.json', 'e.json']      # c and d keep their files
    assert json.loads(files['a.json']) == {'docker': PROOF}
    assert json.loads(files['b.json']) == {} and json.loads(files['e.json']) == {}
    assert ar.audit_proofs(files['a.json']) == {'docker': PROOF}
    assert ar.audit_proof_files([dict(AUDITED, proofs={})], ['x/y']) == {}
    with pytest.raises(AnsibleFilterError):
        ar.audit_proof_files([AUDITED], ['a', 'b'])


@pytest.mark.parametrize('text', [None, '', '{not json', '[]', '{"docker": 3}',
                                  '{"docker": {"key": "k", "output": "o"}}',
                                  '{"docker": {"key": "k", "output": "o", "proved_at": true}}'])
def test_a_missing_or_bad_proofs_file_gives_no_proof(text):
    assert ar.audit_proofs(text) == {}
