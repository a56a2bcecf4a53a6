"""Unit tests of the dataloader_check result parsing and verdict, and of the smoke test script."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_check as dc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import scenario_support  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
SCRIPT = os.path.join(ROOT, 'roles', 'dataloader_check', 'files', 'dataloader_smoke.py')

GOOD = {'ok': True, 'error': '', 'samples_per_s': 1.5, 'peak_fds': 4009,
        'nofile_soft': 16384, 'nofile_hard': 16384, 'fd_exhausted': False}
CANARY = {'ok': False, 'fd_exhausted': True, 'nofile_soft': 1024, 'nofile_hard': 16384,
          'peak_fds': 730,
          'error': 'RuntimeError: Caught RuntimeError in DataLoader worker process 0.\n...\n'
                   'RuntimeError: unable to open shared memory object </torch_1_2_3> in '
                   'read-write mode: Too many open files (24)'}


def test_parse_takes_the_json_line():
    out = 'motd noise\n' + json.dumps(GOOD) + '\n'
    record = dc.dataloader_check_parse(out, 0, '', 'login')
    assert record['ok'] and record['peak_fds'] == 4009 and record['label'] == 'login'


def test_parse_without_json_is_a_failure():
    record = dc.dataloader_check_parse('', 124, 'Killed\n', 'service')
    assert not record['ok']
    assert 'timed out' in record['error'] and 'Killed' in record['error']
    record = dc.dataloader_check_parse('{not json}', 2)
    assert not record['ok'] and 'no result' in record['error']


def test_parse_ok_but_nonzero_status_is_not_ok():
    record = dc.dataloader_check_parse(json.dumps(GOOD), 1)
    assert not record['ok']


def test_report_all_good():
    report = dc.dataloader_check_report({'login': GOOD, 'service': GOOD}, CANARY, 'node1')
    assert report['ok'] and report['problems'] == []
    assert report['canary']['failed'] and report['canary']['fd_exhausted']
    assert 'Too many open files' in report['canary']['error']
    assert report['contexts']['service']['peak_fds'] == 4009
    assert report['summary'].startswith('node1: OK: canary failed as expected at nofile 1024')
    assert '\n' not in report['summary']


def test_report_canary_that_passes_means_the_check_is_broken():
    passing = dict(GOOD, nofile_soft=1024)
    report = dc.dataloader_check_report({'login': GOOD}, passing, 'n')
    assert not report['ok']
    assert not report['canary']['failed']
    assert 'check is broken' in report['problems'][0]


def test_report_canary_failing_for_another_reason():
    other = dict(CANARY, fd_exhausted=False, error="ImportError: No module named 'torch'")
    report = dc.dataloader_check_report({'login': GOOD}, other, 'n')
    assert not report['ok'] and 'another reason' in report['problems'][0]


def test_report_failed_context():
    bad = dict(CANARY)
    report = dc.dataloader_check_report({'login': GOOD, 'service': bad}, CANARY, 'n')
    assert not report['ok']
    assert report['problems'] == ['service: RuntimeError: unable to open shared memory object '
                                  '</torch_1_2_3> in read-write mode: Too many open files (24) '
                                  '(nofile 1024/16384; ceiling nofile)']


def test_report_without_canary():
    report = dc.dataloader_check_report({'login': GOOD}, None, 'n', canary_enabled=False)
    assert report['ok'] and report['canary'] is None


def test_smoke_script_reads_proc_limits():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import dataloader_smoke
    finally:
        sys.path.pop(0)
    limits = dataloader_smoke.read_limits()
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert limits['nofile'] == {'soft': soft, 'hard': hard}
    assert dataloader_smoke.default_workers(cap=3) <= 3


def _torch_python():
    """An interpreter with torch: TORCH_PYTHON, else this one if it has torch."""
    candidate = os.environ.get('TORCH_PYTHON', sys.executable)
    probe = subprocess.run([candidate, '-c', 'import torch'], capture_output=True, check=False)
    return candidate if probe.returncode == 0 else None


@pytest.mark.skipif(_torch_python() is None, reason='no torch here (set TORCH_PYTHON); the '
                    'Molecule scenario pytorch runs the script with real torch')
def test_smoke_canary_recipe_fails_at_1024(tmp_path):
    """reference.md section 4: K=2000 tensors, 2 workers, soft nofile 1024 -> fd exhaustion."""
    proc = subprocess.run(
        [_torch_python(), SCRIPT, '--data-dir', str(tmp_path / 'data'), '--samples', '4',
         '--num-workers', '2', '--soft-nofile', '1024', '--label', 'canary'],
        capture_output=True, text=True, timeout=300, check=False)
    record = dc.dataloader_check_parse(proc.stdout, proc.returncode, proc.stderr)
    assert proc.returncode == 1, proc.stderr
    assert not record['ok'] and record['fd_exhausted'], record['error']
    assert record['nofile_soft'] == 1024


def test_parse_run_of_registered_results():
    run = {'item': 'service', 'rc': 0, 'stdout': json.dumps(GOOD), 'stderr': ''}
    assert dc.dataloader_check_parse_run(run)['label'] == 'service'
    assert not dc.dataloader_check_parse_run({'skipped': True})['ok']
    canary = {'rc': 1, 'stdout': json.dumps(CANARY), 'stderr': ''}
    report = dc.dataloader_check_report({'login': dc.dataloader_check_parse_run(
        dict(run, item='login'))}, dc.dataloader_check_parse_run(canary), 'h', True, 3)
    assert report['ok'] and report['shm_leftovers_removed'] == 3


def test_plot_svg_from_sweep():
    login = dict(GOOD, num_workers=2, samples_per_s=1.0, sweep=[
        {'num_workers': 1, 'ok': True, 'samples_per_s': 0.5, 'peak_fds': 3000},
        {'num_workers': 4, 'ok': True, 'samples_per_s': 1.5, 'peak_fds': 9000},
        {'num_workers': 8, 'ok': False, 'samples_per_s': 0.0, 'error': 'x'}])
    report = dc.dataloader_check_report({'login': login, 'service': GOOD}, CANARY, 'n1')
    svg = dc.dataloader_check_plot_svg(report)
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    lines = root.findall('{http://www.w3.org/2000/svg}polyline')
    assert len(lines) == 1                      # only login has a sweep
    assert len(lines[0].get('points').split()) == 3   # 1, 2, 4 workers; the failed 8 left out
    assert 'n1: DataLoader throughput' in svg
    assert dc.dataloader_check_plot_svg({'contexts': {'login': GOOD}}) == ''


def test_plot_svg_shows_a_failed_point():
    """issue 17.10: the SVG dropped a failed point silently."""
    login = dict(GOOD, num_workers=2, samples_per_s=1.0, sweep=[
        {'num_workers': 1, 'ok': True, 'samples_per_s': 0.5},
        {'num_workers': 8, 'ok': False, 'samples_per_s': 0.0,
         'error': 'RuntimeError: DataLoader worker (pid 9) is killed by signal: Bus error. It '
                  'is possible that dataloader\'s workers are out of shared memory <&>'}])
    svg = dc.dataloader_check_plot_svg(dc.dataloader_check_report({'login': login}, CANARY, 'n'))
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    crosses = [p for p in root.findall('{http://www.w3.org/2000/svg}path')
               if p.get('class') == 'failed']
    assert len(crosses) == 1
    texts = [t.text for t in root.findall('{http://www.w3.org/2000/svg}text')]
    failed = [t for t in texts if t and t.startswith('failed: login, 8 workers: ')]
    assert len(failed) == 1 and 'out of shared memory <&>' in failed[0]
    # a sweep whose every point failed still gives a plot that says so
    only_failed = dict(login, sweep=login['sweep'][1:])
    svg = dc.dataloader_check_plot_svg({'host': 'n', 'contexts': {'login': only_failed}})
    assert 'failed: login, 8 workers' in svg


def test_summary_names_workers_and_headroom_and_cuts_at_words():
    """issue 17.10: the summary omitted num_workers and headroom and cut the canary error
    mid-word."""
    login = dict(GOOD, num_workers=3, peak_fds=4096, nofile_soft=16384)
    canary = dict(CANARY, error='RuntimeError: ' + 'abcdefghij ' * 12 + 'Too many open files (24)')
    report = dc.dataloader_check_report({'login': login}, canary, 'n')
    assert 'login ok 1.50 samples/s with 3 workers, peak 4096 fds of soft nofile 16384' in \
        report['summary']
    assert 'headroom 4.0x' in report['summary']
    shown = report['summary'].split('canary failed as expected at nofile 1024 (')[1]
    shown = shown.split(');')[0]
    assert shown.startswith('... ') and shown.endswith('Too many open files (24)')
    words = shown[4:].split()
    assert all(word in canary['error'].split() for word in words), shown


@pytest.mark.skipif(not os.environ.get('TORCH_PYTHON'), reason='needs TORCH_PYTHON (a python '
                    'with torch); the pytorch scenario runs it on the node')
def test_a_failed_run_leaves_no_worker_running(tmp_path):
    """issue 17.9: a run that fails (descriptors exhausted in every point of a sweep) shuts its
    workers down; before, they stayed with PPID 1 holding /dev/shm."""
    marker = 'gpufleet-reap-%d' % os.getpid()
    data = tmp_path / marker
    proc = subprocess.run(
        [os.environ['TORCH_PYTHON'], SCRIPT, '--data-dir', str(data), '--samples', '8',
         '--tensors-per-sample', '2000', '--num-workers', '2', '--soft-nofile', '256',
         '--timeout', '20', '--sweep-workers', '1,3'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
        check=False)
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 1 and record['fd_exhausted'], record
    left = subprocess.run(['pgrep', '-f', marker], stdout=subprocess.PIPE,
                          universal_newlines=True, check=False).stdout.split()
    assert left == [], left
    assert record.get('workers_left', 0) == 0


def _start_long_run(tmp_path, marker):
    """A run long enough to be stopped while its workers work: returns (process, worker pids)."""
    import time
    proc = subprocess.Popen(
        [os.environ['TORCH_PYTHON'], SCRIPT, '--data-dir', str(tmp_path / marker), '--samples',
         '400', '--tensors-per-sample', '50', '--num-workers', '2', '--epochs', '50'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    deadline = time.monotonic() + 120
    workers = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = subprocess.run(['pgrep', '-P', str(proc.pid)], stdout=subprocess.PIPE,
                                 universal_newlines=True, check=False).stdout.split()
        assert proc.poll() is None, proc.communicate()
    assert len(workers) >= 2, 'the workers did not start'
    return proc, workers


def _alive(pids):
    return [pid for pid in pids if os.path.exists('/proc/%s' % pid)
            and 'Z' not in open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()[:1]]


@pytest.mark.skipif(not os.environ.get('TORCH_PYTHON'), reason='needs TORCH_PYTHON')
@pytest.mark.parametrize('sig', ['SIGTERM', 'SIGKILL'])
def test_a_stopped_run_leaves_no_worker_running(tmp_path, sig):
    """issue 17.9: the role's `timeout` stops a run with SIGTERM, then SIGKILL. Before, the
    main process died at once and its workers went on with PPID 1 (until PyTorch's watchdog
    noticed, seconds later, or never while blocked), holding descriptors and /dev/shm; now
    SIGTERM unwinds and reaps them, and SIGKILL takes them along (PR_SET_PDEATHSIG)."""
    import signal
    import time
    proc, workers = _start_long_run(tmp_path, 'gpufleet-stop-%s-%d' % (sig, os.getpid()))
    proc.send_signal(getattr(signal, sig))
    out, _err = proc.communicate(timeout=60)
    time.sleep(0.5)
    assert _alive(workers) == [], 'workers left running after %s' % sig
    if sig == 'SIGTERM':
        record = json.loads(out.strip().splitlines()[-1])
        assert not record['ok'] and 'terminated by signal 15' in record['error'], record
        assert proc.returncode == 1


def shm_exhaustion_run(python, script, workdir):
    """Run scenario_support's /dev/shm exhaustion reproduction here: (record, facts)."""
    out = os.path.join(workdir, 'shm-repro.json')
    proc = subprocess.run(['sh', '-c', scenario_support.shm_repro_command(python, script, workdir,
                                                                          out)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    with open(out) as handle:
        return json.load(handle), scenario_support.shm_repro_facts(proc.stdout)


@pytest.mark.skipif(not os.environ.get('TORCH_PYTHON') or os.geteuid() != 0,
                    reason='needs TORCH_PYTHON and root (a mount namespace); the pytorch '
                           'scenario runs it on the node')
def test_a_failed_sweep_point_leaves_no_worker_and_no_shm(tmp_path):
    record, facts = shm_exhaustion_run(os.environ['TORCH_PYTHON'], SCRIPT, str(tmp_path))
    assert record['ok'], record['error']                    # the 1-worker run fits
    point = record['sweep'][0]
    assert not point['ok'] and 'No space left on device' in point['error'], point
    # before: 5 workers left with PPID 1 and 6 torch_* files in /dev/shm
    assert facts == {'rc': '0', 'left': '0', 'shm': '0'}, facts


def test_filters_are_registered():
    names = dc.FilterModule().filters()
    for name in ('dataloader_check_parse', 'dataloader_check_parse_run', 'dataloader_check_report',
                 'dataloader_check_plot_svg'):
        assert callable(names[name])


def test_parse_run_keeps_the_wall_time_of_the_command():
    """issue 13: the check's cost per context is the registered command's delta."""
    run = {'item': 'container', 'rc': 0, 'stdout': json.dumps(GOOD), 'stderr': '',
           'delta': '0:01:02.500000'}
    assert dc.dataloader_check_parse_run(run)['wall_s'] == 62.5
    assert 'wall_s' not in dc.dataloader_check_parse_run(dict(run, delta='soon'))


def test_summary_says_images_per_second_and_what_ran_out():
    images = dict(GOOD, pipeline='images', samples_per_s=9.35, num_workers=2)
    shm = {'ok': False, 'exhausted': 'shm', 'nofile_soft': 20000, 'nofile_hard': 20000,
           'error': 'RuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_3>: '
                    'No space left on device (28)'}
    report = dc.dataloader_check_report({'login': images, 'container': shm}, None, 'h', False)
    assert 'login ok 9.35 images/s with 2 workers' in report['summary']
    assert 'container FAILED (shm ran out) nofile 20000/20000' in report['summary']
    assert report['problems'] == ['container: RuntimeError: unable to allocate shared memory(shm) '
                                  'for file </torch_1_2_3>: No space left on device (28) '
                                  '(nofile 20000/20000; ceiling shm)']


@pytest.mark.skipif(_torch_python() is None, reason='no torch here (set TORCH_PYTHON)')
def test_images_pipeline_carries_the_jobs_annotation_tensors(tmp_path):
    """A sample of the images pipeline with --annotations N is image, label and N tensors:
    N + 2 tensors (descriptors) per collated batch; the result has RSS and /dev/shm's size."""
    proc = subprocess.run(
        [_torch_python(), SCRIPT, '--data-dir', str(tmp_path / 'images'), '--pipeline', 'images',
         '--samples', '8', '--annotations', '30', '--num-workers', '1', '--batch-size', '4'],
        capture_output=True, text=True, timeout=300, check=False)
    record = dc.dataloader_check_parse(proc.stdout, proc.returncode, proc.stderr)
    assert record['ok'], record['error']
    # 2 batches of (images 4x3x224x224, labels 4, 30 boxes 4x4) float32 values
    assert record['values_received'] == 2 * (4 * 3 * 224 * 224 + 4 + 30 * 16)
    assert record['peak_rss_bytes'] > 0 and record['shm_size_bytes'] > 0


def test_a_job_of_several_ranks_sweeps_in_its_first_rank():
    """A job of 2 ranks with --sweep-workers: the first rank's command line carries the sweep
    (it measures it once the job is done), the others do not (make demo's num_workers plot)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('dataloader_smoke', SCRIPT)
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    args = smoke.parse_args(['--ranks', '2', '--num-workers', '2', '--sweep-workers', '1,3',
                             '--pipeline', 'images', '--data-dir', '/tmp/x'])
    first, second = smoke.rank_argv(args, 0), smoke.rank_argv(args, 1)
    assert first[first.index('--sweep-workers') + 1] == '1,3'
    assert '--sweep-workers' not in second
    assert first[first.index('--ranks') + 1] == second[second.index('--ranks') + 1] == '1'
