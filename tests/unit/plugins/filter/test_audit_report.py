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
    'rows': [{'context': 'login', 'item': 'nofile', 'actual': '1024:4096'}],
    'job_fit': {'fits': [], 'short': ['login']},
}


def test_an_audited_host_keeps_its_findings_and_names_its_rows():
    reports = ar.audit_host_reports([AUDITED], ['node-1'])
    report = reports['node-1']
    assert report['audited'] is True
    assert report['rows'] == [{'context': 'login', 'item': 'nofile', 'actual': '1024:4096',
                               'host': 'node-1'}]
    for key in ('contexts', 'errors', 'ceilings', 'gaps', 'pam_invalid', 'job_fit'):
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
                      'pam_invalid': [], 'systemd_pending': [], 'unwritable': [], 'rows': [],
                      'job_fit': {}, 'errors': [{'context': 'host', 'msg': reason}]}
    assert ar.not_audited_reason(result) == reason


def test_hosts_keep_their_order_and_a_mismatch_is_refused():
    reports = ar.audit_host_reports([AUDITED, {'failed': True, 'msg': 'x'}], ['b', 'a'])
    assert list(reports) == ['b', 'a']
    with pytest.raises(AnsibleFilterError, match='1 results for 2 hosts'):
        ar.audit_host_reports([AUDITED], ['a', 'b'])
    with pytest.raises(AnsibleFilterError, match='a has no limits_audit result'):
        ar.audit_host_reports([None], ['a'])
