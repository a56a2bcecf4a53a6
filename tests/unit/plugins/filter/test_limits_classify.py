"""The limits_classify filter: the answer from a limits_audit result (its findings, the kernel
rows with no minimum as ceilings) and the node's evidence; bad input named."""
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.filter import limits_classify as lc

TEXTS = os.path.join(os.path.dirname(__file__), '..', 'module_utils', 'failure_texts')
SITE = '/etc/security/limits.d/10-site.conf'
AUDIT = {
    'rows': [
        {'context': 'login', 'item': 'nofile', 'actual': '1024:524288', 'expected': '65536',
         'gap': 'soft', 'places': {'soft': {'path': SITE, 'line': 4}},
         'advice': 'raise soft nofile to 65536 at %s:4' % SITE},
        {'context': 'login', 'item': 'pids', 'kind': 'pids', 'actual': '300',
         'places': {'value': {'path': '/etc/systemd/system/user-1001.slice.d/50-site.conf',
                              'line': 2}}},
        {'context': 'service', 'item': 'nofile', 'actual': '524288:524288',
         'places': {'soft': {'path': '/etc/systemd/system.conf.d/90-gpufleet.conf',
                             'line': 2}}},
        {'context': 'service', 'item': 'pids', 'kind': 'pids', 'actual': 'max'},
    ],
    'kernel': [{'name': 'vm.max_map_count', 'live': 262144, 'configured': 262144,
                'source': '/etc/sysctl.d/60-site.conf:1'},
               {'name': 'fs.file-max', 'live': 9223372036854775807, 'configured': 1048576,
                'source': '/etc/sysctl.d/60-site.conf:2'}],
}


def traceback(name):
    with open(os.path.join(TEXTS, name)) as handle:
        return handle.read()


def test_the_answer_reads_the_audit_s_findings_of_the_job_s_context():
    found = lc.limits_classify(traceback('ancdata.txt'), 'login', AUDIT)
    assert (found['ceiling'], found['value'], found['place']) == ('nofile', '1024',
                                                                  SITE + ':4')
    assert found['fix'][0] == 'raise soft nofile to 65536 at %s:4' % SITE
    assert found['summary'] == ('nofile = 1024 at %s:4 in login: RuntimeError: received 0 '
                                'items of ancdata' % SITE)
    found = lc.limits_classify(traceback('ancdata.txt').splitlines(), 'service', AUDIT)
    assert found['place'] == '/etc/systemd/system.conf.d/90-gpufleet.conf:2'


def test_pids_and_kernel_ceilings_with_their_places():
    found = lc.limits_classify(traceback('thread_pids_max.txt'), 'login', AUDIT,
                               {'threads': 299})
    assert (found['ceiling'], found['value']) == ('pids.max', '300')
    assert found['place'] == '/etc/systemd/system/user-1001.slice.d/50-site.conf:2'
    # a service's pids.max is max: ruled out, so its RLIMIT_NPROC is what is left
    found = lc.limits_classify(traceback('thread_pids_max.txt'), 'service', AUDIT)
    assert found['ceiling'] == 'nproc' and found['ruled_out'] == {
        'pids.max': 'pids.max is max here'}
    found = lc.limits_classify('OSError: [Errno 12] Cannot allocate memory', 'login', AUDIT,
                               {'peaks': {'maps': 262144}})
    assert (found['ceiling'], found['place']) == ('vm.max_map_count',
                                                  '/etc/sysctl.d/60-site.conf:1')
    # a line that is not what the kernel has (configured, not applied) is not the place
    found = lc.limits_classify('OSError: [Errno 23] Too many open files in system', 'login',
                               AUDIT)
    assert found['place'] == '/proc/sys/fs/file-max'


@pytest.mark.parametrize('call, message', [
    (lambda: lc.limits_classify('x', 'laptop'), "limits_classify: context 'laptop' is not"),
    (lambda: lc.limits_classify('x', 'login', None, []),
     'limits_classify: evidence must be a mapping'),
    (lambda: lc.limits_classify('x', 'login', None, {'open_files': 3}),
     'limits_classify: evidence: unknown key(s) open_files'),
    (lambda: lc.limits_classify('x', 'login', None, {'ceilings': {'fds': 3}}),
     'limits_classify: evidence.ceilings: unknown ceiling(s) fds'),
])
def test_bad_input_names_what_is_wrong(call, message):
    with pytest.raises(AnsibleFilterError) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)


def test_the_playbook_s_readings_of_slurm_and_the_node():
    shown = ('JobId=12 JobName=train job UserId=trainer(1001) JobState=OUT_OF_MEMORY '
             'Reason=OutOfMemory ExitCode=0:125 Command=/home/trainer/run it.sh '
             'StdErr=/home/trainer/train 12.err StdOut=/home/trainer/train.out')
    fields = lc.classify_slurm_fields(shown)
    assert fields['JobState'] == 'OUT_OF_MEMORY'
    assert fields['Command'] == '/home/trainer/run it.sh'
    assert fields['StdErr'] == '/home/trainer/train 12.err'
    assert [lc.slurm_node.exit_status(v) for v in ('0:9', '1:0', '137', 137, '')] == [
        137, 1, 137, 137, None]
    node = ('shm_size 2048 4096\nremove_ipc true\nlinger no\nremove_ipc_at\n--- kernel log\n'
            'Memory cgroup out of memory: Killed process 4242 (python)\n')
    assert lc.classify_node_evidence(node, 'login') == {
        'shm_size': 8 << 20, 'remove_ipc': 'yes', 'linger': False,
        'ceilings': {'removeipc': {'value': 'yes', 'source': "systemd-logind's default (no "
                                   "RemoveIPC= in logind.conf or logind.conf.d)"}},
        'kernel_log': 'Memory cgroup out of memory: Killed process 4242 (python)'}
    site = node.replace('remove_ipc_at\n', 'remove_ipc_at /etc/systemd/logind.conf.d/x.conf:3\n')
    found = lc.limits_classify('self._semlock = _multiprocessing.SemLock._rebuild(*state)\n'
                               'FileNotFoundError: [Errno 2] No such file or directory',
                               'service', [], lc.classify_node_evidence(site, 'service'))
    assert (found['ceiling'], found['value'], found['place']) == (
        'removeipc', 'yes', '/etc/systemd/logind.conf.d/x.conf:3')
    # a container has its own /dev/shm: the node's is no evidence of it
    assert 'shm_size' not in lc.classify_node_evidence(node, 'docker')
    # Slurm's state and the kernel log of the job's pid make a worker's Killed a memory kill
    found = lc.limits_classify('RuntimeError: DataLoader worker (pid 4242) exited '
                               'unexpectedly', 'slurm_job', [],
                               dict(lc.classify_node_evidence(node, 'slurm_job'),
                                    exit_status='0:9'))
    assert found['ceiling'] == 'memory'
    assert found['evidence'][-1].startswith('the kernel log: Memory cgroup out of memory')
    other = node.replace('4242', '777')
    found = lc.limits_classify('RuntimeError: DataLoader worker (pid 4242) exited '
                               'unexpectedly', 'slurm_job', [],
                               lc.classify_node_evidence(other, 'slurm_job'))
    assert found['verdict'] == 'unknown'


def test_a_slurm_job_without_accounting_is_read_from_scontrol():
    """classify_failure.yml -e classify_slurm_job on the real node (molecule/slurm, no
    accounting): sacct prints nothing ("Slurm accounting storage is disabled"), so the job's
    user, state and exit code are scontrol's; the audit was of root and the answer had no exit
    status before."""
    shown = ('JobId=5 JobName=wrap UserId=trainer(1001) GroupId=trainer(1001) MCS_label=N/A '
             'JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=1:0 '
             'AllocNode:Sid=node:2888 TRES=cpu=1,mem=1M,node=1,billing=1 Command=(null) '
             'WorkDir=/tmp StdErr=/tmp/w-5.err StdIn=/dev/null StdOut=/tmp/w-5.out Power= ')
    assert lc.classify_slurm_job(shown, '') == dict(
        user='trainer', job_state='FAILED', exit_status=1, output='/tmp/w-5.err')
    # the state the epilog sees (slurm_node.job_end, one rule): a COMPLETING job's Reason
    assert lc.classify_slurm_job(shown.replace('JobState=FAILED', 'JobState=COMPLETING'))[
        'job_state'] == 'NonZeroExitCode'
    # sacct's where it answered (accounting keeps the job after slurmctld forgot it)
    assert lc.classify_slurm_job('', 'OUT_OF_MEMORY|0:125|alice\n') == dict(
        user='alice', job_state='OUT_OF_MEMORY', exit_status='0:125', output='')
    assert lc.classify_slurm_job(shown, 'CANCELLED by 1001|0:15|trainer')['job_state'] == (
        'CANCELLED by 1001')
    # only stdout named (sbatch -o): scontrol's StdErr is the same file
    assert lc.classify_slurm_job('UserId=bob(7) StdOut=/o/x.out')['output'] == '/o/x.out'
    assert lc.classify_slurm_job('') == dict(user='', job_state='', exit_status='', output='')
