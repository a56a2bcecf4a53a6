"""What a failed DataLoader run ran out of (issue 31 item 14): classified from the measured peaks
against the limits of its context first, whatever the error text, then from the text; the
job-fit line agrees with the failure. The records are smoke-test outputs as the role registers
them (a JSON line on stdout, exit status 1)."""
import json

from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_canaries
from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_check as dc
from ansible_collections.gpufleet.tuning.plugins.filter import job_shape

MB = 1024 ** 2
LIMITS = {'nofile': {'soft': 4096, 'hard': 4096}, 'nproc': {'soft': 63704, 'hard': 63704},
          'memlock': {'soft': 8388608, 'hard': 8388608}, 'stack': {'soft': 8388608,
                                                                   'hard': 'unlimited'}}
EOF_TRACEBACK = (
    'Traceback (most recent call last):\n'
    '  File "/usr/local/libexec/gpufleet/dataloader_smoke.py", line 720, in main\n'
    '  File "/opt/gpufleet/pytorch/lib/python3.11/multiprocessing/resource_sharer.py", '
    'line 86, in get_connection\n'
    '  File "/opt/gpufleet/pytorch/lib/python3.11/multiprocessing/connection.py", line 430, '
    'in _recv_bytes\n    raise EOFError\nEOFError\n')


def smoke_output(**fields):
    """A failed run's JSON line as dataloader_smoke.py prints it (its own text-only
    classification in ``exhausted``)."""
    record = {
        'label': 'login', 'host': 'gpu-01', 'uid': 1001, 'pid': 4242,
        'python': '/opt/gpufleet/pytorch/envs/pytorch/bin/python', 'limits': LIMITS,
        'nofile_soft': 4096, 'nofile_hard': 4096, 'tensors_per_sample': 1000,
        'shm_size_bytes': 32768 * MB, 'batch_size': 1, 'prefetch_factor': 2, 'timeout_s': 60.0,
        'ok': False, 'error': 'EOFError:', 'traceback': EOF_TRACEBACK, 'fd_exhausted': False,
        'exhausted': '', 'samples_per_s': 0.35, 'samples': 3, 'num_workers': 2,
        'torch_version': '2.13.0+cpu', 'sharing_strategy': 'file_descriptor',
        'peak_fds': 4094, 'peak_fds_main': 4094, 'peak_fds_worker': 2071,
        'peak_fds_total': 8236, 'peak_threads': 31, 'peak_processes': 3,
        'peak_shm_bytes': 24 * MB, 'shm_used_at_start_bytes': 1 * MB,
        'peak_rss_bytes': 612 * MB, 'workers_seen': 2, 'workers_left': 0,
    }
    record.update(fields)
    return {'item': record['label'], 'rc': 1, 'stdout': json.dumps(record, sort_keys=True) + '\n',
            'stderr': '', 'delta': '0:00:14.120000'}


def parsed(**fields):
    return dc.dataloader_check_parse_run(smoke_output(**fields))


def test_an_eof_error_at_4094_of_4096_descriptors_ran_out_of_nofile():
    record = parsed()
    assert record['exhausted'] == 'nofile' and record['fd_exhausted'] is True
    assert record['exhausted_how'] == 'peak'
    assert record['cause'] == 'nofile: peak 4094 of soft 4096'
    report = dc.dataloader_check_report({'login': record}, None, 'gpu-01', False)
    assert not report['ok']
    assert report['problems'] == ['login: nofile ran out (peak 4094 of soft 4096): EOFError: '
                                  '(nofile 4096/4096; ceiling nofile)']
    assert report['summary'] == ('gpu-01: FAILED: login FAILED (nofile ran out) at peak 4094 of '
                                 'soft 4096, nofile 4096/4096')


def test_an_eof_error_far_from_every_limit_is_another_failure_with_its_text():
    record = parsed(peak_fds=300, peak_fds_main=300, peak_fds_worker=180)
    assert record['exhausted'] == '' and record['fd_exhausted'] is False
    assert record['exhausted_how'] == ''
    assert record['cause'] == 'other: EOFError:'
    report = dc.dataloader_check_report({'login': record}, None, 'gpu-01', False)
    assert report['problems'] == ['login: EOFError: (nofile 4096/4096)']
    assert report['summary'] == 'gpu-01: FAILED: login FAILED nofile 4096/4096'


def test_a_bus_error_with_dev_shm_nearly_full_ran_out_of_shm():
    bus = ('RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. It is '
           "possible that dataloader's workers are out of shared memory. Please try to raise "
           'your shared memory limit.')
    record = parsed(label='container', error=bus, exhausted='shm', shm_size_bytes=64 * MB,
                    peak_shm_bytes=62 * MB, shm_used_at_start_bytes=0, peak_fds=900,
                    peak_fds_main=900, nofile_soft=1048576, nofile_hard=1048576)
    assert record['exhausted'] == 'shm' and record['exhausted_how'] == 'peak'
    assert record['cause'] == 'shm: peak 62.0 MiB of 64.0 MiB /dev/shm'
    report = dc.dataloader_check_report({'container': record}, None, 'gpu-01', False)
    assert 'container FAILED (shm ran out) at peak 62.0 MiB of 64.0 MiB /dev/shm, nofile ' \
           '1048576/1048576' in report['summary']
    # the same error text far from the size of /dev/shm: still shm, from the text
    record = parsed(label='container', error=bus, exhausted='shm', shm_size_bytes=64 * MB,
                    peak_shm_bytes=6 * MB, shm_used_at_start_bytes=0, peak_fds=900)
    assert record['exhausted'] == 'shm' and record['exhausted_how'] == 'text'
    assert record['cause'] == ("shm: ... It is possible that dataloader's workers are out of "
                               'shared memory. Please try to raise your shared memory limit. '
                               '(peak 6.0 MiB of 64.0 MiB /dev/shm)')


def test_dev_shm_in_use_before_the_run_counts_against_its_size():
    record = parsed(error='BrokenPipeError: [Errno 32] Broken pipe', shm_size_bytes=64 * MB,
                    peak_shm_bytes=20 * MB, shm_used_at_start_bytes=43 * MB, peak_fds=500)
    assert record['exhausted'] == 'shm'
    assert record['cause'] == 'shm: peak 63.0 MiB of 64.0 MiB /dev/shm'


def test_threads_at_the_nproc_limit_ran_out_of_nproc():
    limits = dict(LIMITS, nproc={'soft': 4096, 'hard': 4096})
    record = parsed(error='ConnectionResetError: [Errno 104] Connection reset by peer',
                    limits=limits, peak_threads=4090, peak_fds=600)
    assert record['exhausted'] == 'nproc'
    assert record['cause'] == 'nproc: peak 4090 threads of soft 4096'
    # unlimited nproc: no peak to compare, the text decides
    limits = dict(LIMITS, nproc={'soft': 'unlimited', 'hard': 'unlimited'})
    record = parsed(error='ConnectionResetError: [Errno 104] Connection reset by peer',
                    limits=limits, peak_threads=4090, peak_fds=600)
    assert record['exhausted'] == '' and record['cause'].startswith('other: ConnectionReset')


def test_an_error_that_names_a_limit_keeps_it_and_says_what_else_was_near():
    """The errno of the call that failed (EMFILE) names the limit; the sampler, reading every
    50 ms, may miss that peak (a real canary at soft nofile 1024 showed 193) and see another
    limit near, here /dev/shm."""
    record = parsed(error='RuntimeError: unable to open shared memory object </torch_1_2_3> in '
                          'read-write mode: Too many open files (24)', exhausted='nofile',
                    nofile_soft=1024, peak_fds=193, shm_size_bytes=64 * MB,
                    peak_shm_bytes=63 * MB, shm_used_at_start_bytes=0)
    assert record['exhausted'] == 'nofile' and record['exhausted_how'] == 'text'
    assert record['cause'].endswith('Too many open files (24) (peak 193 of soft 1024; shm near '
                                    'its limit: peak 63.0 MiB of 64.0 MiB /dev/shm)')


def test_a_text_classification_stands_where_no_peak_is_near():
    record = parsed(error='RuntimeError: unable to open shared memory object </torch_1_2_3> in '
                          'read-write mode: Too many open files (24)', exhausted='nofile',
                    fd_exhausted=True, peak_fds=3700)
    assert record['exhausted'] == 'nofile' and record['exhausted_how'] == 'text'
    assert record['cause'].endswith('Too many open files (24) (peak 3700 of soft 4096)')
    # a run that printed no JSON (killed by the time-out) has no peaks and no kind
    killed = dc.dataloader_check_parse_run({'item': 'login', 'rc': 124, 'stdout': '',
                                            'stderr': 'Killed'})
    assert killed['exhausted'] == '' and killed['cause'].startswith('other: timed out')


def test_a_canary_that_ends_in_an_eof_error_at_its_limit_failed_as_expected():
    canary = parsed(label='canary', nofile_soft=1024, limits=dict(LIMITS, nofile={
        'soft': 1024, 'hard': 4096}), peak_fds=1023, peak_fds_main=1023)
    login = dict(json.loads(smoke_output(ok=True, error='', peak_fds=2100)['stdout']),
                 nofile_soft=16384)
    report = dc.dataloader_check_report({'login': login}, canary, 'gpu-01')
    assert report['ok'], report['problems']
    assert report['canary']['fd_exhausted'] is True
    assert report['canary']['cause'] == 'nofile: peak 1023 of soft 1024'
    # the failure-mode canaries take the same classification
    nproc = parsed(label='canary-nproc', error='EOFError:', limits=dict(LIMITS, nproc={
        'soft': 4, 'hard': 63704}), peak_threads=4, peak_fds=40)
    out = dataloader_canaries.dataloader_check_canaries(
        {'ok': True, 'problems': [], 'summary': 'n: OK: login ok'}, {'canary_nproc': nproc})
    assert out['ok'] and out['canaries']['nproc']['as_expected']
    assert out['canaries']['nproc']['cause'] == 'nproc: peak 4 threads of soft 4'


# One rank, 2 workers, 1000 tensors per batch: fds_main = 64 + 2 * 2 + 4 * 1000 = 4068 predicted,
# within soft nofile 4096.
JOB = dict(ranks_per_node=1, num_workers=2, batch_size=1, prefetch_factor=2,
           tensors_per_batch=1000, bytes_per_batch='4MiB')


def test_the_job_fit_line_does_not_say_nofile_fits_when_the_run_ran_out_of_it():
    results = dc.dataloader_check_report({'login': parsed()}, None, 'gpu-01', False)
    report = job_shape.job_report(results, JOB, 'dataloader_check_job')
    entry = report['contexts']['login']
    assert entry['fits'] is False and entry['nofile_headroom'] is None
    assert entry['failed_on']['item'] == 'nofile' and entry['failed_on']['how'] == 'peak'
    assert entry['failed_on']['predicted'] == 4068 and entry['failed_on']['predicted_fits']
    assert report['summary'] == (
        'job 1 ranks x 2 workers: login does NOT fit: the run ran out of nofile (peak 4094 of '
        'soft 4096; predicted 4068 descriptors per process: the prediction is too low for this '
        'context)')
    assert 'headroom' not in report['summary']
    guided = job_shape.dataloader_check_guidance(dict(results, job=report), JOB)
    assert guided['guidance']['fits']['login'] == {'fits': False, 'nofile_headroom': None,
                                                   'ran_out': 'nofile'}
    assert 'fits: login NO (nofile ran out)' in guided['guidance']['summary']


def test_the_job_fit_line_of_a_run_that_failed_on_no_limit_says_so():
    results = dc.dataloader_check_report(
        {'login': parsed(peak_fds=300, peak_fds_main=300)}, None, 'gpu-01', False)
    report = job_shape.job_report(results, JOB, 'dataloader_check_job')
    entry = report['contexts']['login']
    assert entry['fits'] is False and 'failed_on' not in entry
    assert report['summary'] == (
        'job 1 ranks x 2 workers: login does NOT fit: the run failed, not on a limit '
        '(EOFError:) (nofile 4096 for a predicted 4068 per process, headroom 1.01x)')


def test_a_failed_run_carries_the_answer_of_why_it_died():
    """The role's record carries model/classify.answer: the ceiling, the line that shows it,
    the value the run read; where the error fits two ceilings (a thread that could not start)
    and nothing decides (no context, no value reached), what would decide it."""
    record = parsed(error="RuntimeError: can't start new thread", peak_threads=40,
                    peak_fds=30, traceback='Traceback ...\nRuntimeError: can\'t start new thread',
                    label='')
    found = record['answer']
    assert found['verdict'] == 'unknown'
    assert found['candidates'] == ['pids.max', 'nproc', 'memory']
    report = dc.dataloader_check_report({'login': record}, None, 'gpu-01', False)
    assert "; ceiling pids.max or nproc or memory (to decide: the job cgroup's pids.max" in report[
        'problems'][0]
    record = parsed(error="RuntimeError: can't start new thread", peak_threads=4095,
                    peak_fds=30, limits={'nofile': {'soft': 4096, 'hard': 4096},
                                         'nproc': {'soft': 4096, 'hard': 4096}})
    found = record['answer']
    assert (found['verdict'], found['ceiling'], found['value']) == ('limit', 'nproc', 4096)
    assert found['line'] == "RuntimeError: can't start new thread"
    assert "soft nproc of the run's /proc/self/limits" in found['place']
    assert found['reason'] == "the job's 4095 threads reached RLIMIT_NPROC 4096"
    # the run's context is its label: a service's thread error without values is pids.max's
    record = parsed(error="RuntimeError: can't start new thread", label='service')
    assert record['answer']['ceiling'] == 'pids.max'


def test_a_failure_that_is_not_a_limit_says_so_on_its_problem_line():
    """docs/dataloader-check.md: a run that died of CUDA in a forked worker ends its problem
    line with '; not a limit (cuda-fork)', not with a ceiling."""
    error = 'RuntimeError: Cannot re-initialize CUDA in forked subprocess.'
    record = parsed(error=error, traceback=error, peak_fds=30)
    assert (record['answer']['verdict'], record['answer']['why']) == ('not_a_limit', 'cuda-fork')
    report = dc.dataloader_check_report({'login': record}, None, 'gpu-01', False)
    assert report['problems'][0].endswith('; not a limit (cuda-fork))'), report['problems']
