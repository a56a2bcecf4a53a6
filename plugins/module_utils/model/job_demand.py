# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training job's shape and what it demands of a node's limits (docs/job-shape.md).

Plain Python (no Ansible import), runs on Python 3.8 targets and on the controller (the
``job_profile`` filter). A job is what a platform engineer knows about a training job: ranks
per node, DataLoader workers per rank, batch size, prefetch factor, the tensors and bytes of a
collated batch, pin_memory and the sharing strategy. :func:`demand` turns it into the peak
descriptors of one process, the threads of the job (RLIMIT_NPROC counts every thread of the
user), the ``/dev/shm`` bytes and the pinned bytes; :func:`profile` adds headroom and gives a
limits profile; :func:`shortfalls` says where given limits do not hold the job, and by how much.

The formulas are upper bounds fitted to measurements of PyTorch 2.13's DataLoader
(benchmarks/job-demand.md has predicted against measured for several shapes):

* ``file_descriptor`` strategy (PyTorch's default on Linux): every tensor of a batch in flight
  is one shared-memory descriptor. A rank's main process holds at most (W + 2) batches of them
  (the batch in use, the next, batches that arrived out of order), a worker at most (P + 2)
  (the batches it has sent and not yet handed over, and the one it builds).
* ``file_system`` strategy: no descriptor per tensor (files in /dev/shm instead).
* threads: a rank's main process runs 1 + W queue feeder threads + the pin_memory thread +
  the intra-op pool + a CUDA/NCCL allowance; a worker runs 3 (itself, its queue feeder, the
  descriptor sharer).
* /dev/shm: every tensor is a page-aligned segment; a rank has at most W * P + 2 batches in
  shared memory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model

STRATEGIES = ('file_descriptor', 'file_system')
PAGE = 4096
# Descriptors every Python process with torch has open before the DataLoader runs (the
# interpreter, shared libraries it keeps open, std streams, pipes): measured 16-30.
BASE_FDS = 64
# Threads of the user outside the job (a login shell, an editor, a monitoring agent).
BASE_USER_THREADS = 64
WORKER_THREADS = 3
# Per-rank threads of CUDA, NCCL and the training loop beyond the DataLoader's.
DEFAULT_EXTRA_THREADS = 8
# nproc counts every thread of a user, root's services included: a profile derived from a
# small job never goes below this.
MIN_NPROC = 4096

# field -> (default, minimum); None: required
COUNTS = (
    ('ranks_per_node', 1, 1),
    ('num_workers', None, 1),
    ('batch_size', None, 1),
    ('prefetch_factor', 2, 1),
    ('tensors_per_batch', None, 1),
    ('intra_op_threads', 4, 0),
    ('extra_threads', DEFAULT_EXTRA_THREADS, 0),
)
FIELDS = tuple(name for name, _d, _m in COUNTS) + (
    'bytes_per_batch', 'pin_memory', 'sharing_strategy', 'headroom')


class JobError(ValueError):
    """A job description that cannot be used; the message names the field."""


def _count(job, name, default, minimum, field):
    value = job.get(name, default)
    where = '%s.%s' % (field, name)
    if value is None:
        raise JobError('%s: required (a whole number of at least %d)' % (where, minimum))
    if isinstance(value, bool):
        raise JobError('%s: %r is not a whole number' % (where, value))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise JobError('%s: %r is not a whole number' % (where, value))
    if number < minimum:
        raise JobError('%s: %d is below %d' % (where, number, minimum))
    return number


def parse_job(job, field='dataloader_job'):
    """Check a job description (a dict) and return it normalised. Errors name the field."""
    if not isinstance(job, dict):
        raise JobError('%s: a mapping of the job shape is needed, not %r' % (field, job))
    unknown = sorted(set(job) - set(FIELDS))
    if unknown:
        raise JobError('%s: unknown key(s) %s; known: %s'
                       % (field, ', '.join(unknown), ', '.join(FIELDS)))
    parsed = {}
    for name, default, minimum in COUNTS:
        parsed[name] = _count(job, name, default, minimum, field)
    size = job.get('bytes_per_batch')
    if size is None:
        raise JobError('%s.bytes_per_batch: required (bytes of one collated batch, such as '
                       '150MiB)' % field)
    try:
        parsed['bytes_per_batch'] = model.parse_size(size) if isinstance(size, str) \
            else int(size)
    except (model.LimitError, ValueError, TypeError):
        raise JobError('%s.bytes_per_batch: %r is not a size (bytes, or 150MiB, 2G)'
                       % (field, size))
    if isinstance(size, bool) or parsed['bytes_per_batch'] < 0:
        raise JobError('%s.bytes_per_batch: %r is not a size' % (field, size))
    pin = job.get('pin_memory', False)
    if not isinstance(pin, bool):
        raise JobError('%s.pin_memory: %r is not true or false' % (field, pin))
    parsed['pin_memory'] = pin
    strategy = job.get('sharing_strategy', 'file_descriptor') or 'file_descriptor'
    if strategy not in STRATEGIES:
        raise JobError('%s.sharing_strategy: %r is not one of %s' % (
            field, strategy, ', '.join(STRATEGIES)))
    parsed['sharing_strategy'] = strategy
    headroom = job.get('headroom', 2.0)
    try:
        parsed['headroom'] = float(headroom)
    except (TypeError, ValueError):
        raise JobError('%s.headroom: %r is not a number' % (field, headroom))
    if isinstance(headroom, bool) or parsed['headroom'] < 1.0:
        raise JobError('%s.headroom: %r is below 1 (a factor over the predicted peak)'
                       % (field, headroom))
    return parsed


def batch_shm_bytes(job):
    """/dev/shm bytes of one batch: each tensor is its own segment, rounded up to a page."""
    return job['bytes_per_batch'] + job['tensors_per_batch'] * PAGE


def demand(job):
    """The predicted peaks of a parsed job (:func:`parse_job`).

    Returns ``fds_main``, ``fds_worker`` (descriptors of one process), ``nofile`` (the larger,
    what the soft limit of every process must hold), ``threads`` (the job's threads, with the
    user's other threads: what RLIMIT_NPROC must hold), ``processes``, ``shm_bytes`` (all ranks)
    and ``pinned_bytes`` (host memory pin_memory pins, all ranks)."""
    workers, prefetch = job['num_workers'], job['prefetch_factor']
    ranks, tensors = job['ranks_per_node'], job['tensors_per_batch']
    if job['sharing_strategy'] == 'file_descriptor':
        fds_main = BASE_FDS + 2 * workers + (workers + 2) * tensors
        fds_worker = BASE_FDS + (prefetch + 2) * tensors
    else:
        fds_main = BASE_FDS + 2 * workers
        fds_worker = BASE_FDS
    main_threads = (1 + workers + (1 if job['pin_memory'] else 0) + job['intra_op_threads']
                    + job['extra_threads'])
    threads = ranks * (main_threads + workers * WORKER_THREADS) + BASE_USER_THREADS
    return dict(
        fds_main=fds_main, fds_worker=fds_worker, nofile=max(fds_main, fds_worker),
        threads=threads, processes=ranks * (1 + workers),
        shm_bytes=ranks * (workers * prefetch + 2) * batch_shm_bytes(job),
        pinned_bytes=(ranks * (workers * prefetch + 1) * job['bytes_per_batch']
                      if job['pin_memory'] else 0))


def _round_up(value, step):
    return int(-(-value // step) * step)


def profile(job, nr_open=None):
    """A limits profile that holds the job with its headroom, and the container shm size.

    Returns ``(profile, shm_size)``: profile {nofile, nproc, memlock?} (soft = hard), values
    rounded up (descriptors and threads to 1024, bytes to MiB; nproc at least MIN_NPROC, as
    it counts every thread of the user, root's services too); shm_size in bytes, rounded up
    to 256 MiB. Raises JobError when the job cannot fit the kernel's fs.nr_open."""
    need = demand(job)
    factor = job['headroom']
    nofile = _round_up(need['nofile'] * factor, 1024)
    if nr_open and need['nofile'] > nr_open:
        raise JobError('dataloader_job: one process needs %d descriptors, above the kernel\'s '
                       'fs.nr_open (%d): no limit can hold it; use fewer workers, a smaller '
                       'prefetch_factor or fewer tensors per batch, or sharing_strategy '
                       'file_system' % (need['nofile'], nr_open))
    if nr_open and nofile > nr_open:
        nofile = nr_open
    result = {'nofile': nofile,
              'nproc': max(MIN_NPROC, _round_up(need['threads'] * factor, 1024))}
    if need['pinned_bytes']:
        result['memlock'] = '%dMiB' % (_round_up(need['pinned_bytes'] * factor, 1024 ** 2)
                                       // 1024 ** 2)
    shm = _round_up(need['shm_bytes'] * factor, 256 * 1024 ** 2)
    return result, shm


def shortfalls(need, limits, context=''):
    """Where ``limits`` ({item: {soft, hard}} as probes report them, or Limit objects) do not
    hold ``need`` (:func:`demand`): a list of {context, item, need, have, short_by}.
    ``shm`` (bytes of /dev/shm, as ``limits['shm_bytes']``) is compared when given."""
    found = []
    checks = (('nofile', need['nofile']), ('nproc', need['threads']))
    for item, wanted in checks:
        entry = limits.get(item)
        if entry is None:
            continue
        soft = entry['soft'] if isinstance(entry, dict) else entry.soft
        if soft != model.UNLIMITED and soft is not None and int(soft) < wanted:
            found.append(dict(context=context, item=item, need=wanted, have=int(soft),
                              short_by=wanted - int(soft)))
    shm = limits.get('shm_bytes')
    if shm is not None and shm < need['shm_bytes']:
        found.append(dict(context=context, item='shm', need=need['shm_bytes'], have=shm,
                          short_by=need['shm_bytes'] - shm))
    return found
