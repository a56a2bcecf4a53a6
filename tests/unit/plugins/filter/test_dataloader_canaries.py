"""The failure-mode canaries' verdicts (plugins/filter/dataloader_canaries.py) and the smoke
test's classification of what ran out."""
import os
import sys

import pytest

from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_canaries as dc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'roles', 'dataloader_check', 'files'))
import dataloader_smoke  # noqa: E402  pylint: disable=wrong-import-position

BASE = {'ok': True, 'problems': [], 'summary': 'n: OK: login ok'}
SHM = {'ok': False, 'exhausted': 'shm', 'error': 'RuntimeError: unable to allocate shared '
       'memory(shm) for file </torch_1_2_3>: No space left on device (28)'}
NPROC = {'ok': False, 'exhausted': 'nproc', 'error': "RuntimeError: can't start new thread"}
TUNED = {'ok': True, 'exhausted': ''}


def test_canaries_that_fail_as_expected_keep_the_check_ok():
    out = dc.dataloader_check_canaries(BASE, {'canary_shm': SHM, 'canary_nproc': NPROC,
                                              'canary_shm_tuned': TUNED})
    assert out['ok'] and out['problems'] == []
    assert out['canaries']['shm']['as_expected'] and out['canaries']['nproc']['as_expected']
    assert out['summary'].endswith('nproc canary failed as expected; shm canary failed as '
                                   'expected; shm_tuned passed')


@pytest.mark.parametrize('records, problem', [
    ({'canary_shm': TUNED}, 'canary shm passed: the check cannot detect a lack of shared memory'),
    ({'canary_nproc': SHM}, 'canary nproc failed for another reason than processes and threads'),
    ({'canary_shm_tuned': SHM}, 'canary shm_tuned (the same shape with enough /dev/shm) failed'),
])
def test_a_canary_that_misbehaves_fails_the_check(records, problem):
    out = dc.dataloader_check_canaries(BASE, records)
    assert not out['ok']
    assert out['problems'][0].startswith(problem), out['problems']
    assert out['summary'].startswith('n: FAILED: ')


@pytest.mark.parametrize('text, kind', [
    ('OSError: [Errno 24] Too many open files', 'nofile'),
    ('RuntimeError: received 0 items of ancdata', 'nofile'),
    ('RuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error. It is possible '
     "that dataloader's workers are out of shared memory.", 'shm'),
    ('ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient '
     'shared memory (shm).', 'shm'),
    ('RuntimeError: unable to allocate shared memory(shm) for file </torch_1>: No space left on '
     'device (28)', 'shm'),
    ("RuntimeError: can't start new thread", 'nproc'),
    ('BlockingIOError: [Errno 11] Resource temporarily unavailable', 'nproc'),
    ('ValueError: something else', ''),
])
def test_the_smoke_test_says_what_ran_out(text, kind):
    assert dataloader_smoke.failure_kind(text) == kind
