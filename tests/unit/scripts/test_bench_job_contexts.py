"""scripts/bench_job_contexts.py: the demo's job table (`make demo` prints it with --show, `make
bench-job-contexts` writes benchmarks/job-contexts.md) shows every context the demo's picture
(scripts/plot_throughput.py) shows, in the picture's order, from a saved lab directory."""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import bench_job_contexts  # noqa: E402  pylint: disable=wrong-import-position
import plot_throughput  # noqa: E402  pylint: disable=wrong-import-position

FD = ('RuntimeError: unable to open shared memory object </torch_1_2_3> in read-write mode: '
      'Too many open files (24)')
SHM = ('RuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_3>: '
       'No space left on device (28)')
FAILED_FD = {'ok': False, 'exhausted': 'nofile', 'error': FD, 'nofile_soft': 1024, 'wall_s': 12.5,
             'shm_size_bytes': 2 ** 31}
# a lab with a Slurm job node, as make demo's (LAB_SLURM_NODES=1): the job ran in four contexts,
# written in an order that is not the picture's
BEFORE = {'host': 'gpufleet-lab-1', 'contexts': {
    'slurm_job': dict(FAILED_FD),
    'container': {'ok': False, 'exhausted': 'shm', 'error': SHM, 'nofile_soft': 20000,
                  'samples_per_s': 0.9, 'wall_s': 14.0, 'shm_size_bytes': 64 * 2 ** 20},
    'service': dict(FAILED_FD),
    'login': dict(FAILED_FD)}}


def good(rate):
    return {'ok': True, 'samples_per_s': rate, 'samples': 64, 'wall_s': 18.0, 'elapsed_s': 17.0,
            'peak_rss_bytes': 1384 * 2 ** 20, 'peak_fds': 5972, 'peak_shm_bytes': 136 * 2 ** 20,
            'shm_size_bytes': 2 ** 31, 'nofile_soft': 16384, 'peak_processes': 6,
            'peak_threads': 20, 'torch_version': '2.13.0+cpu'}


AFTER = {'host': 'gpufleet-lab-1',
         'job': {'job': {'ranks_per_node': 2, 'num_workers': 2, 'batch_size': 16,
                         'prefetch_factor': 2, 'tensors_per_batch': 2000}},
         'contexts': {'slurm_job': good(3.1), 'login': good(3.3), 'container': good(4.8),
                      'service': good(3.7)}}


def lab(tmp_path, before=None, after=None):
    for phase, data in (('job-before', before or BEFORE), ('job-after', after or AFTER)):
        (tmp_path / phase).mkdir()
        (tmp_path / phase / 'gpufleet-lab-1.json').write_text(json.dumps(data))
    return str(tmp_path)


def table_rows(text, title):
    """The context of each row of the table under ``title``."""
    part = text.split(title, 1)[1].split('###', 1)[0]
    return [line.split('|')[1].strip() for line in part.splitlines()
            if line.startswith('| ') and not line.startswith(('| context ', '| --- '))]


def test_the_job_table_shows_every_context_of_the_picture_in_its_order(tmp_path, capsys):
    path = lab(tmp_path)
    assert bench_job_contexts.main(['--show', path]) == 0
    text = capsys.readouterr().out
    picture = plot_throughput.collect(path)
    drawn = plot_throughput.ordered(set(picture['before']) | set(picture['after']))
    assert drawn == ['login', 'service', 'container', 'slurm_job']
    assert table_rows(text, "### The check's cost per context") == drawn
    assert table_rows(text, '### The same job before and after tuning') == drawn
    assert ('| slurm_job | nofile 1024, /dev/shm 2048 MiB | nofile ran out: `RuntimeError: '
            'unable to open shared memory object </torch_1_2_3> in read-write mode: Too many open files (24)` '
            '| 12.5 | nofile 16384, /dev/shm 2048 MiB | 3.1 |') in text
    assert 'gpufleet-lab-1: 2 ranks x 2 workers' in text and 'torch 2.13.0+cpu' in text


def test_a_context_that_ran_in_one_phase_only_keeps_its_row(tmp_path, capsys):
    before = json.loads(json.dumps(BEFORE))
    after = json.loads(json.dumps(AFTER))
    del before['contexts']['slurm_job']
    after['contexts']['k8s_pod'] = dict(good(2.0), ok=False, error='EOFError')
    assert bench_job_contexts.main(['--show', lab(tmp_path, before, after)]) == 0
    text = capsys.readouterr().out
    assert table_rows(text, '### The same job before and after tuning') == [
        'login', 'service', 'container', 'slurm_job', 'k8s_pod']
    assert '| slurm_job | - | did not run |  | nofile 16384, /dev/shm 2048 MiB | 3.1 |' in text
    assert '| k8s_pod | nofile 1024, ' not in text
    assert '| k8s_pod | - | did not run |  | nofile 16384, /dev/shm 2048 MiB | failed |' in text
