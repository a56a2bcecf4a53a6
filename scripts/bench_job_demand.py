"""Predicted against measured: the job-shape demand model (plugins/module_utils/model/job_demand.py)
against the DataLoader check's own measurement of the same shape.

Runs roles/dataloader_check/files/dataloader_smoke.py with each shape (ranks, workers, prefetch,
tensors, batch) under a python with torch, and writes benchmarks/job-demand.md and .json: for
each shape the predicted and measured peak descriptors of a main process and of a worker, the
job's threads and processes, and its /dev/shm bytes, with measured / predicted.

    python3 scripts/bench_job_demand.py --python /path/to/python-with-torch

The smoke script's main process computes nothing, so the prediction uses intra_op_threads 0 and
extra_threads 1 (its own descriptor sampler thread), unless a shape sets omp_threads (the smoke
script then sets torch's threads and runs one matrix product to start the pools). Shapes of more
than one rank form a Gloo process group on localhost (world size = ranks; the model's nodes x
ranks_per_node). The job-shape terms each shape adds (worker_type, open_files_per_sample,
omp_threads) are its fifth field.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import job_demand  # noqa: E402

SCRIPT = os.path.join(ROOT, 'roles', 'dataloader_check', 'files', 'dataloader_smoke.py')
ELEMENTS = 4
TODAY = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
# ranks, workers, prefetch, tensors per sample (= per collated batch), batch size, and the
# job-shape terms beyond the DataLoader's (issue 33)
SHAPES = [
    (1, 2, 2, 2000, 1, {}),
    (1, 4, 2, 2000, 1, {}),
    (1, 1, 4, 1000, 1, {}),
    (1, 3, 3, 800, 4, {}),
    (2, 2, 2, 1000, 2, {}),
    (3, 2, 3, 500, 2, {}),
    (1, 4, 2, 2000, 2, {'worker_type': 'thread', 'open_files_per_sample': 4, 'omp_threads': 2}),
    (1, 2, 2, 2000, 8, {'open_files_per_sample': 16}),
    (2, 2, 2, 1000, 2, {'omp_threads': 3}),
    (4, 1, 2, 500, 2, {}),
]
TERMS = ('worker_type', 'open_files_per_sample', 'omp_threads')


def job_of(shape):
    ranks, workers, prefetch, tensors, batch, terms = shape
    job = dict(ranks_per_node=ranks, num_workers=workers, prefetch_factor=prefetch,
               tensors_per_batch=tensors, batch_size=batch,
               bytes_per_batch=tensors * ELEMENTS * 4 * batch, extra_threads=1)
    job.update(terms)
    if 'omp_threads' not in terms:
        job['intra_op_threads'] = 0
    return job_demand.parse_job(job)


def measure(python, shape, workdir):
    ranks, workers, prefetch, tensors, batch, terms = shape
    argv = [python, '-W', 'ignore', SCRIPT, '--data-dir',
            os.path.join(workdir, 'k%d' % tensors), '--samples', '24',
            '--tensors-per-sample', str(tensors), '--elements', str(ELEMENTS),
            '--num-workers', str(workers), '--prefetch-factor', str(prefetch),
            '--batch-size', str(batch), '--ranks', str(ranks), '--epochs', '2']
    for term in TERMS:
        if term in terms:
            argv += ['--' + term.replace('_', '-'), str(terms[term])]
    if ranks > 1:
        argv.append('--process-group')
    started = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=900, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
    if not lines:
        raise SystemExit('no result for %s: %s' % (shape, proc.stderr[-2000:]))
    record = json.loads(lines[-1])
    if not record['ok']:
        raise SystemExit('shape %s failed: %s' % (shape, record['error']))
    record['wall_s'] = round(time.monotonic() - started, 2)
    return record


PAIRS = [('fds_main', 'peak_fds_main'), ('fds_worker', 'peak_fds_worker'),
         ('threads', 'peak_threads'), ('processes', 'peak_processes'),
         ('shm_bytes', 'peak_shm_bytes'), ('maps_main', 'peak_maps_main'),
         ('maps_worker', 'peak_maps_worker')]


# /dev/shm is the machine's, shared with every other process: its use is sampled for the whole
# file system above what was in use at the start, so others' short-lived files (Python's
# semaphores, other jobs) show as a few pages. Where the model predicts no /dev/shm at all
# (thread workers: nothing crosses a process), a use below this is not the run's.
SHM_NOISE = 1024 ** 2


def ratio(measured, predicted, key=''):
    """measured / predicted; 0 predicted: 0 when nothing was measured either (or, for
    /dev/shm, less than SHM_NOISE), else over 1."""
    if not predicted:
        if key == 'shm_bytes' and measured < SHM_NOISE:
            return 0.0
        return 0.0 if not measured else float('inf')
    return round(measured / float(predicted), 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--python', default=os.environ.get('TORCH_PYTHON', sys.executable))
    parser.add_argument('--out', default=os.path.join(ROOT, 'benchmarks', 'job-demand'))
    args = parser.parse_args()
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as workdir:
        for shape in SHAPES:
            job = job_of(shape)
            need = job_demand.demand(job)
            got = measure(args.python, shape, workdir)
            row = dict(shape=dict(zip(('ranks', 'workers', 'prefetch', 'tensors', 'batch'),
                                      shape), terms=shape[5]), predicted={}, measured={},
                       ratio={},
                       wall_s=got['wall_s'], samples_per_s=got['samples_per_s'])
            for key, measured in PAIRS:
                # the job's threads: the prediction includes the user's other threads
                predicted = need[key] - (job_demand.BASE_USER_THREADS if key == 'threads'
                                         else 0)
                row['predicted'][key] = predicted
                row['measured'][key] = got.get(measured, 0)
                row['ratio'][key] = ratio(row['measured'][key], predicted, key)
            rows.append(row)
            print(json.dumps(row), flush=True)
    torch_version = got.get('torch_version')
    load_after = os.getloadavg()
    with open(args.out + '.json', 'w') as handle:
        json.dump(dict(date=TODAY, machine=platform.node(), cpus=os.cpu_count(),
                       torch=torch_version, load_before=load_before, load_after=load_after,
                       rows=rows), handle, indent=2)
        handle.write('\n')
    lines = ['# Job-shape demand model: predicted against measured', '',
             'No GPU: no device machine was lent to this work (checked), so every figure is '
             'CPU-only PyTorch; no test depends on a GPU. The CUDA/NCCL threads of a rank are an '
             'allowance in the model (`extra_threads`, default 8), not measured here.', '',
             'Written by `scripts/bench_job_demand.py` on %s (torch %s, %d CPUs). Each row runs '
             'the DataLoader check with that shape (%d float32 values per tensor, 24 samples, 2 '
             'epochs) and compares its peaks with `job_demand.demand()` for the same shape. '
             'measured / predicted must stay at or below 1: the model is an upper bound. '
             'Shapes of more than one rank form a Gloo process group on localhost (world size '
             '= ranks: the sockets a rank opens grow with it as with nodes). `terms`: the '
             'job-shape terms of the row (thread workers: a pool of num_workers threads in the '
             'rank loads and collates whole batches; open files: each sample keeps that many '
             'files open until its batch is collated; omp: torch threads set and the pools '
             'started). Maps: memory maps of one process (vm.max_map_count). Load average '
             '(1 min) of the machine, which others share: %.1f before, %.1f after; a loaded '
             'machine delivers batches further out of order, so a main process holds more. '
             '/dev/shm is sampled for the whole file system, which the machine\'s other '
             'processes share: where the model predicts none, under 1 MiB is not the run\'s.'
             % (TODAY, torch_version, os.cpu_count(), ELEMENTS, load_before[0], load_after[0]),
             '',
             '| ranks | workers | prefetch | tensors/batch | batch | terms | fds main (pred / '
             'meas) | fds worker | threads | processes | /dev/shm MiB | maps main | maps worker '
             '| max meas/pred |',
             '| ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | --- | --- | --- | --- '
             '| ---: |']
    for row in rows:
        cells = []
        for key, _measured in PAIRS:
            pred, meas = row['predicted'][key], row['measured'][key]
            if key == 'shm_bytes':
                pred, meas = pred / 1024.0 ** 2, meas / 1024.0 ** 2
                cells.append('%.1f / %.2f' % (pred, meas))
            else:
                cells.append('%d / %d' % (pred, meas))
        shape = row['shape']
        terms = ', '.join('%s %s' % (k, v) for k, v in sorted(shape['terms'].items())) or '-'
        lines.append('| %d | %d | %d | %d | %d | %s | %s | %.2f |' % (
            shape['ranks'], shape['workers'], shape['prefetch'], shape['tensors'],
            shape['batch'], terms, ' | '.join(cells), max(row['ratio'].values())))
    with open(args.out + '.md', 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    worst = max(max(r['ratio'].values()) for r in rows)
    print('worst measured/predicted: %.3f' % worst)
    return 0 if worst <= 1.0 else 1


if __name__ == '__main__':
    sys.exit(main())
