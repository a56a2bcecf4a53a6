"""Unit tests of the dataloader_check result parsing and verdict, and of the smoke test script."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.tuning.plugins.filter import pytorch_env as pe

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
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
    record = pe.dataloader_check_parse(out, 0, '', 'login')
    assert record['ok'] and record['peak_fds'] == 4009 and record['label'] == 'login'


def test_parse_without_json_is_a_failure():
    record = pe.dataloader_check_parse('', 124, 'Killed\n', 'service')
    assert not record['ok']
    assert 'timed out' in record['error'] and 'Killed' in record['error']
    record = pe.dataloader_check_parse('{not json}', 2)
    assert not record['ok'] and 'no result' in record['error']


def test_parse_ok_but_nonzero_status_is_not_ok():
    record = pe.dataloader_check_parse(json.dumps(GOOD), 1)
    assert not record['ok']


def test_report_all_good():
    report = pe.dataloader_check_report({'login': GOOD, 'service': GOOD}, CANARY, 'node1')
    assert report['ok'] and report['problems'] == []
    assert report['canary']['failed'] and report['canary']['fd_exhausted']
    assert 'Too many open files' in report['canary']['error']
    assert report['contexts']['service']['peak_fds'] == 4009
    assert report['summary'].startswith('node1: OK: canary failed as expected at nofile 1024')
    assert '\n' not in report['summary']


def test_report_canary_that_passes_means_the_check_is_broken():
    passing = dict(GOOD, nofile_soft=1024)
    report = pe.dataloader_check_report({'login': GOOD}, passing, 'n')
    assert not report['ok']
    assert not report['canary']['failed']
    assert 'check is broken' in report['problems'][0]


def test_report_canary_failing_for_another_reason():
    other = dict(CANARY, fd_exhausted=False, error="ImportError: No module named 'torch'")
    report = pe.dataloader_check_report({'login': GOOD}, other, 'n')
    assert not report['ok'] and 'another reason' in report['problems'][0]


def test_report_failed_context():
    bad = dict(CANARY)
    report = pe.dataloader_check_report({'login': GOOD, 'service': bad}, CANARY, 'n')
    assert not report['ok']
    assert report['problems'] == ['service: RuntimeError: unable to open shared memory object '
                                  '</torch_1_2_3> in read-write mode: Too many open files (24) '
                                  '(nofile 1024/16384)']


def test_report_without_canary():
    report = pe.dataloader_check_report({'login': GOOD}, None, 'n', canary_enabled=False)
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
    record = pe.dataloader_check_parse(proc.stdout, proc.returncode, proc.stderr)
    assert proc.returncode == 1, proc.stderr
    assert not record['ok'] and record['fd_exhausted'], record['error']
    assert record['nofile_soft'] == 1024


def test_parse_run_of_registered_results():
    run = {'item': 'service', 'rc': 0, 'stdout': json.dumps(GOOD), 'stderr': ''}
    assert pe.dataloader_check_parse_run(run)['label'] == 'service'
    assert not pe.dataloader_check_parse_run({'skipped': True})['ok']
    canary = {'rc': 1, 'stdout': json.dumps(CANARY), 'stderr': ''}
    report = pe.dataloader_check_report({'login': pe.dataloader_check_parse_run(
        dict(run, item='login'))}, pe.dataloader_check_parse_run(canary), 'h', True, 3)
    assert report['ok'] and report['shm_leftovers_removed'] == 3


def test_plot_svg_from_sweep():
    login = dict(GOOD, num_workers=2, samples_per_s=1.0, sweep=[
        {'num_workers': 1, 'ok': True, 'samples_per_s': 0.5, 'peak_fds': 3000},
        {'num_workers': 4, 'ok': True, 'samples_per_s': 1.5, 'peak_fds': 9000},
        {'num_workers': 8, 'ok': False, 'samples_per_s': 0.0, 'error': 'x'}])
    report = pe.dataloader_check_report({'login': login, 'service': GOOD}, CANARY, 'n1')
    svg = pe.dataloader_check_plot_svg(report)
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    lines = root.findall('{http://www.w3.org/2000/svg}polyline')
    assert len(lines) == 1                      # only login has a sweep
    assert len(lines[0].get('points').split()) == 3   # 1, 2, 4 workers; the failed 8 left out
    assert 'n1: DataLoader throughput' in svg
    assert pe.dataloader_check_plot_svg({'contexts': {'login': GOOD}}) == ''
