"""The limits_classify and limits_ceilings filters: a verdict with its summary, and one
context's ceilings with their sources from a limits_audit result."""
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.filter import limits_classify as lc

TEXTS = os.path.join(os.path.dirname(__file__), '..', 'module_utils', 'failure_texts')
AUDIT = {
    'rows': [
        {'context': 'login', 'item': 'nofile', 'actual': '1024:524288',
         'source': '/etc/security/limits.d/10-site.conf:4'},
        {'context': 'login', 'item': 'nproc', 'actual': 'unlimited:unlimited',
         'source': 'no limits line (inherited from the login service)'},
        {'context': 'service', 'item': 'nofile', 'actual': '524288:524288',
         'source': '/etc/systemd/system.conf.d/90-gpufleet.conf:2'},
    ],
    'contexts': {'login': {'limits': {'nofile': {'soft': 1024, 'hard': 524288}}}},
}


def test_ceilings_of_one_context_with_their_sources():
    found = lc.limits_ceilings(AUDIT, 'login', {'vm.max_map_count': 65530}, 64 * 1024 ** 2,
                               {'pids.max': {'value': 4096, 'source': 'podPidsLimit'}})
    assert found == {
        'nofile': {'value': '1024', 'source': '/etc/security/limits.d/10-site.conf:4'},
        'nproc': {'value': 'unlimited',
                  'source': 'no limits line (inherited from the login service)'},
        'vm.max_map_count': {'value': 65530, 'source': '/proc/sys/vm/max_map_count'},
        'shm': {'value': 64 * 1024 ** 2, 'source': 'the /dev/shm mount (statfs)'},
        'pids.max': {'value': 4096, 'source': 'podPidsLimit'}}
    assert lc.limits_ceilings(AUDIT, 'service')['nofile']['value'] == '524288'


def test_pids_and_kernel_rows_of_the_audit_are_ceilings_too():
    """An audit with pids in its profile has a pids row per context, and every audit has
    kernel rows: the classifier gets the cgroup's pids.max and the live sysctls from them,
    each with the line that sets it (or /proc/sys where no line sets the live value)."""
    audit = dict(AUDIT, rows=AUDIT['rows'] + [
        {'context': 'login', 'item': 'pids', 'actual': '300',
         'source': '/etc/systemd/system/user-1001.slice.d/50-site.conf:2'},
        {'context': 'service', 'item': 'pids', 'actual': 'max', 'source': 'infinity'}],
        kernel=[{'name': 'vm.max_map_count', 'live': 262144, 'configured': 262144,
                 'source': '/etc/sysctl.d/60-site.conf:1'},
                {'name': 'fs.file-max', 'live': 9223372036854775807, 'configured': 1048576,
                 'source': '/etc/sysctl.d/60-site.conf:2'},
                {'name': 'kernel.pid_max', 'live': 4194304, 'configured': None, 'source': None}])
    login = lc.limits_ceilings(audit, 'login')
    assert login['pids.max'] == {'value': 300,
                                 'source': '/etc/systemd/system/user-1001.slice.d/50-site.conf:2'}
    assert login['vm.max_map_count'] == {'value': 262144,
                                         'source': '/etc/sysctl.d/60-site.conf:1'}
    # a line that is not what the kernel has (configured, not applied) is not the source
    assert login['fs.file-max'] == {'value': 9223372036854775807,
                                    'source': '/proc/sys/fs/file-max'}
    assert 'kernel.pid_max' not in login               # no classifier ceiling
    assert 'pids.max' not in lc.limits_ceilings(audit, 'service')     # max: no ceiling
    # values given apart win over the audit's
    assert lc.limits_ceilings(audit, 'login', {'vm.max_map_count': 65530})[
        'vm.max_map_count']['value'] == 65530


def test_a_traceback_against_the_audited_ceilings():
    with open(os.path.join(TEXTS, 'ancdata.txt')) as handle:
        traceback = handle.read()
    verdict = lc.limits_classify(traceback, {}, lc.limits_ceilings(AUDIT, 'login'))
    assert verdict['ceiling'] == 'nofile' and verdict['value'] == 1024
    assert verdict['summary'] == ('nofile (value 1024, source '
                                  '/etc/security/limits.d/10-site.conf:4): '
                                  'RuntimeError: received 0 items of ancdata')
    # the same traceback in the service context: a soft 524288 it did not reach is still the
    # ceiling the text names (the error is the evidence), with that context's source
    verdict = lc.limits_classify(traceback.splitlines(), None,
                                 lc.limits_ceilings(AUDIT, 'service'))
    assert verdict['source'] == '/etc/systemd/system.conf.d/90-gpufleet.conf:2'


@pytest.mark.parametrize('call, message', [
    (lambda: lc.limits_classify('x', [], {}), 'limits_classify: peaks must be a mapping'),
    (lambda: lc.limits_classify('x', {}, {'open_files': 3}),
     'limits_classify: unknown ceiling(s) open_files'),
    (lambda: lc.limits_ceilings(AUDIT, 'login', {'kernel.pid_max': 1}),
     'limits_ceilings: kernel: kernel.pid_max is not one of'),
])
def test_bad_input_names_what_is_wrong(call, message):
    with pytest.raises(AnsibleFilterError) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)
