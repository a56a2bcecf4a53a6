"""The ceiling classifier (model/classify.py) on real failure texts (failure_texts/README.md
says how each was made): the ceiling, the evidence line, the source, and 'unknown' where the
text and the peaks do not support one ceiling."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify as cl

HERE = os.path.join(os.path.dirname(__file__), 'failure_texts')


def text(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


CEILINGS = {
    'nofile': {'value': 1024, 'source': '/etc/security/limits.d/90-gpufleet.conf:3'},
    'nproc': {'value': 8, 'source': '/etc/security/limits.d/90-gpufleet.conf:5'},
    'pids.max': {'value': 24, 'source': '/sys/fs/cgroup/pids/docker/ID/pids.max'},
    'shm': {'value': 16 * 1024 ** 2, 'source': 'docker run --shm-size 16m'},
    'vm.max_map_count': {'value': 65530, 'source': '/etc/sysctl.d/99-gpufleet.conf:2'},
}


@pytest.mark.parametrize('name, ceiling, evidence', [
    ('emfile_python.txt', 'nofile', "OSError: [Errno 24] Too many open files: '/dev/null'"),
    ('shm_open_emfile.txt', 'nofile', 'in read-write mode: Too many open files (24)'),
    ('ancdata.txt', 'nofile', 'RuntimeError: received 0 items of ancdata'),
    ('shm_full.txt', 'shm', 'No space left on device (28)'),
    ('bus_error.txt', 'shm', 'Unexpected bus error encountered in worker'),
    ('enfile_strerror.txt', 'fs.file-max', 'Too many open files in system'),
    ('inotify_instances_tail.txt', 'fs.inotify.max_user_instances',
     'tail: inotify cannot be used'),
])
def test_texts_that_name_their_ceiling(name, ceiling, evidence):
    verdict = cl.classify(text(name), ceilings=CEILINGS)
    assert verdict['ceiling'] == ceiling
    assert evidence in verdict['evidence']
    assert verdict['source'] == CEILINGS.get(ceiling, {}).get('source', 'unknown')


def test_a_nofile_verdict_carries_value_source_and_peak():
    verdict = cl.classify(text('ancdata.txt'), peaks={'nofile': 2299}, ceilings=CEILINGS)
    assert (verdict['value'], verdict['peak']) == (1024, 2299)
    assert cl.summary(verdict) == (
        'nofile (value 1024, peak 2299, source /etc/security/limits.d/90-gpufleet.conf:3): '
        'RuntimeError: received 0 items of ancdata')


@pytest.mark.parametrize('name', ['thread_nproc.txt', 'thread_pids_max.txt',
                                  'openmp_pids_max.txt'])
def test_thread_creation_needs_a_peak_to_name_pids_or_nproc(name):
    # the same errno under both: without a measured peak, no ceiling is named
    verdict = cl.classify(text(name), ceilings=CEILINGS)
    assert verdict['ceiling'] == 'unknown'
    assert verdict['candidates'] == ['pids.max', 'nproc']
    assert verdict['evidence']
    # threads at the cgroup's pids.max
    verdict = cl.classify(text(name), peaks={'threads': 24}, ceilings=CEILINGS)
    assert (verdict['ceiling'], verdict['source']) == (
        'pids.max', '/sys/fs/cgroup/pids/docker/ID/pids.max')
    # pids.max far away, threads at soft nproc
    verdict = cl.classify(text(name), peaks={'threads': 8},
                          ceilings=dict(CEILINGS, **{'pids.max': 'max'}))
    assert verdict['ceiling'] == 'nproc'
    assert verdict['source'] == '/etc/security/limits.d/90-gpufleet.conf:5'
    # neither reached: unknown, saying what was measured
    verdict = cl.classify(text(name), peaks={'threads': 5},
                          ceilings={'nproc': 4096, 'pids.max': 'max'})
    assert verdict['ceiling'] == 'unknown'
    assert 'threads 5 of nproc 4096' in verdict['reason']


def test_the_pids_controller_s_kernel_line_names_pids_max():
    verdict = cl.classify('cgroup: fork rejected by pids controller in /docker/abc\n')
    assert verdict['ceiling'] == 'pids.max' and verdict['source'] == 'unknown'


def test_mmap_enomem_is_max_map_count_only_with_the_maps_at_the_ceiling():
    verdict = cl.classify(text('mmap_enomem.txt'), peaks={'maps': 65530}, ceilings=CEILINGS)
    assert verdict['ceiling'] == 'vm.max_map_count'
    assert verdict['evidence'] == 'OSError: [Errno 12] Cannot allocate memory'
    assert verdict['source'] == '/etc/sysctl.d/99-gpufleet.conf:2'
    # memory itself can be what ran out: no maps near the ceiling, no verdict
    verdict = cl.classify(text('mmap_enomem.txt'), peaks={'maps': 900}, ceilings=CEILINGS)
    assert verdict['ceiling'] == 'unknown'
    assert verdict['candidates'] == ['vm.max_map_count', 'memory']


@pytest.mark.parametrize('error', [
    "OSError: [Errno 28] No space left on device: '/data/ckpt/model.pt'",   # a full disk
    'EOFError',
    'ValueError: bad header in sample-000001.bin',
])
def test_texts_that_name_no_ceiling_are_unknown(error):
    verdict = cl.classify(error, ceilings=CEILINGS)
    assert verdict['ceiling'] == 'unknown'
    assert verdict['source'] == ''
    assert cl.summary(verdict).startswith('unknown: ')


def test_a_peak_at_a_ceiling_decides_an_error_that_names_none():
    verdict = cl.classify('EOFError', peaks={'nofile': 1023}, ceilings=CEILINGS)
    assert verdict['ceiling'] == 'nofile' and verdict['evidence'] == ''
    assert 'nofile 1023 reached nofile 1024' in verdict['reason']
    assert cl.classify('', peaks={'nofile': 1023}, ceilings=CEILINGS)['ceiling'] == 'unknown'


def test_inotify_watches_are_not_instances():
    verdict = cl.classify('Error: ENOSPC: System limit for number of file watchers reached, '
                          'inotify watch limit reached')
    assert verdict['ceiling'] == 'fs.inotify.max_user_watches'


def test_ceilings_given_as_plain_numbers_or_unlimited():
    verdict = cl.classify(text('emfile_python.txt'), ceilings={'nofile': '64'})
    assert (verdict['value'], verdict['source']) == (64, 'unknown')
    verdict = cl.classify(text('thread_nproc.txt'), peaks={'threads': 10 ** 6},
                          ceilings={'nproc': 'unlimited', 'pids.max': 'max'})
    assert verdict['ceiling'] == 'unknown'
