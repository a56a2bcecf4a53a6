"""Why did my job die (model/classify.py, issue 41): the answer on real failure texts
(failure_texts/README.md says how each was made), with the audit's findings for the job's
context and the node's evidence: the ceiling, the value the job had, the file:line that set
it, the fix, and evidence beating text. The corpus of public reports is
test_failure_corpus.py's."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify as cl
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings as fd

HERE = os.path.join(os.path.dirname(__file__), 'failure_texts')
LIMITS_D = '/etc/security/limits.d/90-gpufleet-tuning.conf'


def answer(error, context='unknown', findings=None, evidence=None):
    """The classifier where the context's record says the job ran (its own /dev/shm, its
    task limit; unknown: a line of the text that shows it)."""
    return cl.answer(error, registry.job_context(context, error), findings, evidence)


def text(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def rlimit(context, item, actual, status='ok', line=3, advice=None):
    """A finding as limits_audit returns it (reports/findings.py)."""
    places = {'soft': fd.place(LIMITS_D, line), 'hard': fd.place(LIMITS_D, line)}
    return fd.finding(context, item, 'pids' if item == 'pids' else 'rlimit', status,
                      expected='65536', actual=actual, places=places,
                      short=['soft'] if status == 'gap' else [],
                      advice=fd.advice(advice, places['soft']) if advice else None)


FINDINGS = [
    rlimit('login', 'nofile', '1024:524288', 'gap', advice='raise soft nofile at %s:3'
           % LIMITS_D),
    rlimit('login', 'nproc', '8:8', line=5),
    rlimit('service', 'nofile', '65536:65536'),
    rlimit('docker', 'pids', '24'),
    fd.finding('kernel', 'vm.max_map_count', 'sysctl', 'ok', expected='65530', actual='65530',
               places={'value': fd.place('/etc/sysctl.d/99-site.conf', 2)}),
]


@pytest.mark.parametrize('name, context, ceiling, line', [
    ('emfile_python.txt', 'login', 'nofile', "OSError: [Errno 24] Too many open files"),
    ('shm_open_emfile.txt', 'login', 'nofile', 'in read-write mode: Too many open files (24)'),
    ('ancdata.txt', 'login', 'nofile', 'RuntimeError: received 0 items of ancdata'),
    ('shm_full.txt', 'docker', 'shm', 'No space left on device (28)'),
    ('bus_error.txt', 'docker', 'shm', 'Unexpected bus error encountered in worker'),
    ('enfile_strerror.txt', 'login', 'fs.file-max', 'Too many open files in system'),
    ('inotify_instances_tail.txt', 'login', 'fs.inotify.max_user_instances',
     'tail: inotify cannot be used'),
    ('thread_pids_max.txt', 'docker', 'pids.max', "can't start new thread"),
    ('openmp_pids_max.txt', 'docker', 'pids.max', 'libgomp: Thread creation failed'),
    ('thread_nproc.txt', 'login', 'nproc', "can't start new thread"),
])
def test_real_texts_name_their_ceiling(name, context, ceiling, line):
    found = answer(text(name), context, FINDINGS)
    assert (found['verdict'], found['ceiling']) == (cl.LIMIT, ceiling), found['summary']
    assert line in found['line']


def test_the_answer_has_the_value_the_file_line_and_the_fix_of_the_audit_s_finding():
    found = answer(text('emfile_python.txt'), 'login', FINDINGS)
    assert found['value'] == '1024'
    assert found['place'] == LIMITS_D + ':3'
    # the finding's own advice first (it is a gap), then the profile and job-shape changes
    assert found['fix'][0] == 'raise soft nofile at %s:3' % LIMITS_D
    assert any('limits_profile: nofile' in fix for fix in found['fix'])
    assert any('num_workers x prefetch_factor' in fix for fix in found['fix'])
    assert any(e.startswith('the audit: login nofile is 1024:524288 (gap)')
               for e in found['evidence'])
    assert found['summary'].startswith('nofile = 1024 at %s:3 in login: OSError' % LIMITS_D)
    # a service's nofile is another finding: its value and place
    found = answer(text('emfile_python.txt'), 'service', FINDINGS)
    assert found['value'] == '65536' and found['fix'][0].startswith('raise nofile in the')


def test_kernel_ceilings_come_from_the_node_wide_finding():
    found = answer('pyarrow.lib.ArrowInvalid: Memory mapping file failed: Cannot allocate '
                   'memory', 'login', FINDINGS)
    assert (found['ceiling'], found['value'], found['place']) == (
        'vm.max_map_count', '65530', '/etc/sysctl.d/99-site.conf:2')


def test_threads_decide_by_the_values_before_the_context():
    """A thread that could not start: the threads at pids.max decide it in a login too; an
    RLIMIT_NPROC the failure prints is the value; no context and no values: unknown, with
    what would decide it."""
    found = answer(text('thread_nproc.txt'), 'login', FINDINGS, {'threads': 23})
    assert found['ceiling'] == 'nproc' and found['place'] == LIMITS_D + ':5'
    docker = [rlimit('login', 'pids', '24')]
    found = answer(text('thread_nproc.txt'), 'login', docker, {'threads': 24})
    assert found['ceiling'] == 'pids.max' and 'reached pids.max 24' in found['reason']
    found = answer("RuntimeError: can't start new thread", 'unknown')
    assert found['verdict'] == cl.UNKNOWN
    assert found['candidates'] == ['pids.max', 'nproc', 'memory']
    assert 'pids.peak' in found['decide'] and 'context the job ran in' in found['decide']


def test_evidence_beats_text():
    """The issue's three: an RLIMIT_NPROC the text prints rules nproc out; a /dev/shm that
    never filled rules shm out; a measured peak far below rules nofile out."""
    openblas = ('OpenBLAS blas_thread_init: pthread_create failed for thread 1 of 64: '
                'Resource temporarily unavailable\nOpenBLAS blas_thread_init: RLIMIT_NPROC '
                '%s current, %s max')
    found = answer(openblas % (4096, 4096), 'slurm_job')
    assert (found['ceiling'], found['value']) == ('nproc', '4096')
    found = answer(openblas % (1048576, 1048576), 'slurm_job')
    assert found['ceiling'] == 'pids.max'
    assert found['ruled_out'] == {'nproc': 'nproc is 1048576 here'}
    bus = text('bus_error.txt')
    found = answer(bus, 'docker', [], {'shm_size': 8 << 30, 'shm_peak': 1 << 20})
    assert found['verdict'] == cl.UNKNOWN and 'shm' in found['ruled_out']
    assert answer(bus, 'docker', [], {'shm_size': 64 << 20, 'shm_peak': 63 << 20})[
        'ceiling'] == 'shm'
    found = answer(text('emfile_python.txt'), 'service', FINDINGS, {'peaks': {'nofile': 40}})
    assert found['verdict'] == cl.UNKNOWN
    assert found['ruled_out']['nofile'] == 'the measured nofile peak 40 is far below nofile 65536'


def test_a_memory_kill_is_named_as_such_and_not_blamed_on_an_rlimit():
    killed = 'RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.'
    assert answer(killed, 'slurm_job')['ceiling'] == 'memory'
    assert answer('slurmstepd: error: Detected 1 oom_kill event in StepId=55.batch.',
                  'slurm_job')['ceiling'] == 'memory'
    # an exit that names nothing: the cgroup's oom_kill decides, else unknown with what would
    exited = 'RuntimeError: DataLoader worker (pid(s) 12) exited unexpectedly'
    assert answer(exited, 'login', [], {'oom_kill': 2})['ceiling'] == 'memory'
    assert answer(exited, 'login')['verdict'] == cl.UNKNOWN
    found = answer('', 'k8s_pod', [], {'exit_status': 137})
    assert found['verdict'] == cl.UNKNOWN and 'oom_kill' in found['decide']
    # systemd's word for SIGKILL: with the unit's cgroup's oom_kill, memory at MemoryMax=
    killed = 'train.service: Main process exited, code=killed, status=9/KILL'
    assert answer(killed, 'service')['candidates'] == ['memory']
    found = answer(killed, 'service', [], {'oom_kill': 1, 'ceilings': {'memory': {
        'value': '67108864', 'source': '/etc/systemd/system/train.service:5'}}})
    assert (found['ceiling'], found['value'], found['place']) == (
        'memory', '67108864', '/etc/systemd/system/train.service:5')
    # ENOMEM of a fork on a full node is memory; with the maps at the ceiling it is the maps
    enomem = text('mmap_enomem.txt')
    assert answer(enomem, 'login')['ceiling'] == 'memory'
    found = answer(enomem, 'login', FINDINGS, {'peaks': {'maps': 65530}})
    assert found['ceiling'] == 'vm.max_map_count' and found['place'].endswith('99-site.conf:2')
    # a memory kill the node counted wins over a crash the text shows
    assert answer('Segmentation fault (core dumped)', 'login', [], {'oom_kill': 1})[
        'ceiling'] == 'memory'


@pytest.mark.parametrize('error, why', [
    ('RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with '
     "multiprocessing, you must use the 'spawn' start method", 'cuda-fork'),
    ("AttributeError: Can't pickle local object 'main.<locals>.collate'", 'pickling'),
    ('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', 'gpu-oom'),
    ("OSError: [Errno 28] No space left on device: '/scratch/ckpt/step_1000.pt'", 'disk-full'),
    ('ERROR: Unexpected segmentation fault encountered in worker.', 'segfault'),
    ('[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, '
     'OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.', 'nccl'),
])
def test_failures_that_are_not_a_limit_are_not_blamed_on_one(error, why):
    found = answer(error, 'docker', FINDINGS)
    assert (found['verdict'], found['why'], found['ceiling']) == (cl.NOT_A_LIMIT, why, '')
    assert found['summary'].startswith('not a limit (%s)' % why)


def test_no_space_left_is_shm_only_where_the_path_or_the_context_says_so():
    plain = 'OSError: [Errno 28] No space left on device'
    assert answer(plain, 'docker')['ceiling'] == 'shm'
    found = answer(plain, 'login')
    assert found['verdict'] == cl.UNKNOWN and found['candidates'] == ['shm', 'disk']
    assert answer(plain, 'login', [], {'shm_size': 64 << 20, 'shm_peak': 64 << 20})[
        'ceiling'] == 'shm'
    assert answer('RuntimeError: unable to write to file </torch_18_123>', 'login')[
        'ceiling'] == 'shm'


@pytest.mark.parametrize('error, context, ceiling', [
    ('ibv_reg_mr failed: Cannot allocate memory', 'docker', 'memlock'),
    ('UCX  WARN  could not register memory; please set max locked memory (ulimit -l)',
     'slurm_job', 'memlock'),
    ('FileNotFoundError: [Errno 2] No such file or directory\n    self._semlock = '
     '_multiprocessing.SemLock._rebuild(*state)', 'login', 'removeipc'),
    ('cgroup: fork rejected by pids controller in /system.slice/job.service', 'service',
     'pids.max'),
    ('inotify_add_watch failed: No space left on device', 'login',
     'fs.inotify.max_user_watches'),
])
def test_the_other_ceilings(error, context, ceiling):
    assert answer(error, context)['ceiling'] == ceiling


def test_removeipc_is_ruled_out_where_logind_cannot_have_removed_the_files():
    sem = ('    self._semlock = _multiprocessing.SemLock._rebuild(*state)\n'
           'FileNotFoundError: [Errno 2] No such file or directory')
    assert answer(sem, 'docker')['verdict'] == cl.UNKNOWN
    assert 'RemoveIPC is no' in answer(sem, 'login', [], {'remove_ipc': 'no'})[
        'ruled_out']['removeipc']


def test_no_text_is_unknown_with_what_would_decide_it():
    found = answer('', 'login')
    assert found['verdict'] == cl.UNKNOWN and found['reason'] == 'no error text'
    found = answer('Epoch 3: loss 0.12', 'login')
    assert 'matches no known failure' in found['reason'] and found['decide']


def test_a_context_s_record_says_where_the_job_ran():
    """contexts/ declares what the classifier reads of a context: a container's own /dev/shm
    (no RemoveIPC there), its task limit, and a line that shows a context nobody named."""
    assert registry.job_context('docker') == cl.Where('docker', True, 'pids.max')
    assert registry.job_context('service') == cl.Where('service', False, 'pids.max')
    assert registry.job_context('slurm_job').task_limit == 'nproc'
    assert registry.job_context(None, 'x\n-bash: fork: retry: No child processes').name == \
        'login'
    assert registry.job_context('unknown', 'slurmstepd: error: Detected 1 oom_kill event') \
        .name == 'slurm_job'
    assert registry.job_context(None, 'Killed') is cl.NOWHERE
    found = answer('-bash: fork: retry: No child processes')
    assert (found['context'], found['ceiling']) == ('login', 'nproc')


def test_with_both_task_limits_known_the_far_lower_one_is_met_first():
    """A login whose slice caps it at 40 tasks and whose RLIMIT_NPROC is 63000: pids.max, at the
    drop-in's line, with no thread count given."""
    slice_d = '/etc/systemd/system/user-1001.slice.d/50-site.conf'
    found = [rlimit('login', 'nproc', '63000:63000'),
             fd.finding('login', 'pids', 'pids', 'gap', actual='40', short=['value'],
                        places={'value': fd.place(slice_d, 2)})]
    answered = answer(text('thread_nproc.txt'), 'login', found)
    assert (answered['ceiling'], answered['place']) == ('pids.max', slice_d + ':2')
    assert answered['reason'] == 'pids.max 40 is far below nproc 63000 here: the job meets it first'
    # close values do not decide: the context's task limit does
    found[0] = rlimit('login', 'nproc', '60:60')
    assert answer(text('thread_nproc.txt'), 'login', found)['ceiling'] == 'nproc'
