"""scripts/check_demo_job.py: what `make demo`'s training job must show before and after tuning
(the real error per context, then images/s in every context), and what it refuses."""
import copy
import json
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import check_demo_job  # noqa: E402  pylint: disable=wrong-import-position

FD = ('RuntimeError: unable to open shared memory object </torch_1_2_3> in read-write mode: '
      'Too many open files (24)')
SHM = ('RuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_3>: '
       'No space left on device (28)')
BEFORE = {'host': 'n1', 'ok': False, 'canary': {'fd_exhausted': True}, 'contexts': {
    'login': {'ok': False, 'exhausted': 'nofile', 'error': FD, 'nofile_soft': 1024},
    'service': {'ok': False, 'exhausted': 'nofile', 'error': FD, 'nofile_soft': 1024},
    'container': {'ok': False, 'exhausted': 'shm', 'error': SHM, 'nofile_soft': 20000,
                  'shm_size_bytes': 64 * 1024 * 1024}}}
GOOD = {'ok': True, 'pipeline': 'images', 'samples_per_s': 9.5, 'nofile_soft': 16384}
AFTER = {'host': 'n1', 'ok': True, 'contexts': dict((n, dict(GOOD)) for n in
                                                    ('login', 'service', 'container')),
         'job': {'contexts': dict((n, {'fits': True}) for n in ('login', 'service', 'container'))}}


def lab(tmp_path, before, after):
    for phase, data in (('job-before', before), ('job-after', after)):
        (tmp_path / phase).mkdir()
        (tmp_path / phase / 'n1.json').write_text(json.dumps(data))
    return str(tmp_path)


def test_the_demo_job_before_and_after(tmp_path):
    problems, line = check_demo_job.check(lab(tmp_path, BEFORE, AFTER))
    assert problems == []
    assert line == ('demo job (n1): failed before in login, service, container; after: '
                    'login 9.5 images/s, service 9.5 images/s, container 9.5 images/s')


@pytest.mark.parametrize('phase, context, change, said', [
    ('before', 'login', {'ok': True}, 'the job passed in login'),
    ('before', 'service', {'exhausted': '', 'error': 'EOFError'}, 'not for want of nofile'),
    ('before', 'container', {'exhausted': 'nofile', 'error': FD}, 'not for want of shm'),
    ('before', 'container', {'shm_size_bytes': 2 ** 30}, "not Docker's 64 MB"),
    ('before', 'login', {'nofile_soft': 4096}, 'not 1024'),
    ('after', 'service', {'ok': False, 'error': FD}, 'the job failed in service'),
    ('after', 'container', {'samples_per_s': 0.0}, 'container ran no images'),
    ('after', 'login', {'pipeline': 'synthetic'}, 'login ran no images'),
])
def test_what_the_demo_job_check_refuses(tmp_path, phase, context, change, said):
    before, after = copy.deepcopy(BEFORE), copy.deepcopy(AFTER)
    (before if phase == 'before' else after)['contexts'][context].update(change)
    problems, _line = check_demo_job.check(lab(tmp_path, before, after))
    assert any(said in p for p in problems), problems


def test_a_job_that_does_not_fit_or_no_results(tmp_path):
    after = copy.deepcopy(AFTER)
    after['job']['contexts']['login']['fits'] = False
    problems, _line = check_demo_job.check(lab(tmp_path, BEFORE, after))
    assert any('does not fit login' in p for p in problems), problems
    problems, _line = check_demo_job.check(str(tmp_path / 'nowhere'))
    assert any('lab/demo_job.sh before did not run' in p for p in problems), problems


def test_on_a_slurm_node_the_job_must_have_run_as_a_slurm_job_too(tmp_path):
    before, after = copy.deepcopy(BEFORE), copy.deepcopy(AFTER)
    path = lab(tmp_path, before, after)
    problems, _line = check_demo_job.check(path, slurm_hosts=['n1'])
    assert 'before: context slurm_job did not run' in problems
    assert any('after: the job failed in slurm_job' in p for p in problems)


def test_a_slurm_job_fails_before_for_want_of_descriptors_and_runs_after(tmp_path):
    before, after = copy.deepcopy(BEFORE), copy.deepcopy(AFTER)
    before['contexts']['slurm_job'] = dict(before['contexts']['login'])
    after['contexts']['slurm_job'] = dict(GOOD)
    after['job']['contexts']['slurm_job'] = {'fits': True}
    problems, line = check_demo_job.check(lab(tmp_path, before, after), slurm_hosts=['n1'])
    assert problems == []
    assert 'failed before in login, service, container, slurm_job' in line
    before['contexts']['slurm_job']['nofile_soft'] = 16384
    (tmp_path / 'again').mkdir()
    problems, _line = check_demo_job.check(lab(tmp_path / 'again', before, after),
                                           slurm_hosts=['n1'])
    assert any('slurm_job ran at soft nofile 16384, not 1024' in p for p in problems)
