# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training job's shape and what it demands of a node's limits (docs/job-shape.md).

Plain Python (no Ansible import), runs on Python 3.8 targets and on the controller (the
``job_profile`` filter). A job is what a platform engineer knows about a training job: ranks
per node, DataLoader workers per rank, batch size, prefetch factor, the tensors and bytes of a
collated batch, pin_memory, the sharing strategy, and the job-shape terms beyond the DataLoader
(nodes, files a sample keeps open, compile workers, OpenMP threads, thread-based workers, RDMA
registered bytes). :func:`demand` turns it into the peak descriptors and memory maps of one
process, the threads of the job (RLIMIT_NPROC counts every thread of the user; the job's cgroup
pids.max every task of the job), the ``/dev/shm`` bytes, the bytes charged to the cgroup's
memory (pinned and shared memory) and the node-wide file handles; :func:`profile` adds headroom
and gives a limits profile with the sysctl minima; :func:`shortfalls` says where given limits do
not hold the job, and by how much.

The formulas are upper bounds fitted to measurements of PyTorch 2.13's DataLoader
(benchmarks/job-demand.md has predicted against measured for several shapes):

* ``file_descriptor`` strategy (PyTorch's default on Linux): every tensor of a batch in flight
  is one shared-memory descriptor. A rank's main process holds at most (W + 2) batches of them
  (the batch in use, the next, batches that arrived out of order), a worker at most (P + 2)
  (the batches it has sent and not yet handed over, and the one it builds).
* ``file_system`` strategy: no descriptor per tensor (files in /dev/shm instead).
* threads: a rank's main process runs 1 + W queue feeder threads + the pin_memory thread +
  its CPU pools (2 per OpenMP thread: the OpenMP pool and the BLAS pool beside it) + a
  CUDA/NCCL allowance; a worker runs 3 (itself, its queue feeder, the descriptor sharer), 5 when
  forked from a rank whose pools run (omp_threads > 1). Thread-based workers are threads of
  the rank: no worker process, no shared-memory descriptor, no /dev/shm.
* /dev/shm: every tensor is a page-aligned segment; a rank has at most W * P + 2 batches in
  shared memory.
* memory maps: every shared storage a process holds is one mapping (vm.max_map_count), beside
  the interpreter's own and two per thread (stack and guard page).
* pin_memory is not charged to RLIMIT_MEMLOCK (cudaHostAlloc): pinned and /dev/shm bytes count
  against the cgroup's memory; memlock bounds RDMA registration (``rdma_registered_bytes``).
* Collective sockets (Gloo and NCCL bootstrap) grow with the world size (nodes x ranks per node):
  ``sockets_per_peer`` per other rank and a fixed allowance (measured with Gloo: 2 per peer).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model

STRATEGIES = ('file_descriptor', 'file_system')
WORKER_TYPES = ('process', 'thread')
PAGE = 4096
# Descriptors every Python process with torch has open before the DataLoader runs (the
# interpreter, shared libraries it keeps open, std streams, pipes): measured 16-30.
BASE_FDS = 64
# Threads of the user outside the job (a login shell, an editor, a monitoring agent).
BASE_USER_THREADS = 64
WORKER_THREADS = 3
# A rank's CPU thread pools: torch's OpenMP (intra-op) pool and the BLAS pool of its matrix
# products beside it (measured with torch 2.13.0+cpu: 3 threads set, 4 more threads once a
# product ran); a worker forked after the pools started runs 2 more threads (measured).
POOLS_PER_OMP_THREAD = 2
FORKED_POOL_THREADS = 2
# Per-rank threads of CUDA, NCCL and the training loop beyond the DataLoader's.
DEFAULT_EXTRA_THREADS = 8
# nproc counts every thread of a user, root's services included: a profile derived from a
# small job never goes below this.
MIN_NPROC = 4096
# Memory maps of a Python process with torch imported before the DataLoader runs (measured
# 342-360 with torch 2.13.0+cpu, Gloo initialised), and per thread (its stack and guard page).
BASE_MAPS = 512
MAPS_PER_THREAD = 2
# A rank in a process group of world size > 1: descriptors beyond its peer sockets (the
# store, epoll and event descriptors: measured 17 on Gloo's rank 0) and threads (measured 4).
DIST_FDS = 32
DIST_THREADS = 4
# A torch.compile (inductor) compile worker is a process of its own: an allowance of threads
# and descriptors (not measured here: no compiler run in the benchmarks).
COMPILE_WORKER_THREADS = 2
COMPILE_CAP = 32
DEFAULT_CPUS = COMPILE_CAP      # min(32, cpus) is at most 32: an upper bound without cpus
# Node-wide file handles of everything else on a node (fs.file-max counts them all).
BASE_NODE_FILES = 65536
# fs.inotify.max_user_instances' default: the user's other watchers (an editor, a desktop).
BASE_INOTIFY = 128

# field -> (default, minimum); None: required
COUNTS = (
    ('ranks_per_node', 1, 1),
    ('num_workers', None, 1),
    ('batch_size', None, 1),
    ('prefetch_factor', 2, 1),
    ('tensors_per_batch', None, 1),
    ('intra_op_threads', 4, 0),
    ('extra_threads', DEFAULT_EXTRA_THREADS, 0),
    ('nodes', 1, 1),
    ('sockets_per_peer', 2, 0),
    ('open_files_per_sample', 0, 0),
    ('inotify_instances', 0, 0),
    ('cpus', DEFAULT_CPUS, 1),
)
# counts whose default comes from other fields (None: not given)
DERIVED = (('compile_workers', 0), ('omp_threads', 0))
FIELDS = tuple(name for name, _d, _m in COUNTS) + tuple(name for name, _m in DERIVED) + (
    'bytes_per_batch', 'rdma_registered_bytes', 'pin_memory', 'torch_compile', 'worker_type',
    'sharing_strategy', 'headroom')


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


def _size(job, name, field, required, example):
    size = job.get(name)
    if size is None:
        if required:
            raise JobError('%s.%s: required (%s)' % (field, name, example))
        return 0
    try:
        value = model.parse_size(size) if isinstance(size, str) else int(size)
    except (model.LimitError, ValueError, TypeError):
        raise JobError('%s.%s: %r is not a size (bytes, or 150MiB, 2G)' % (field, name, size))
    if isinstance(size, bool) or value < 0:
        raise JobError('%s.%s: %r is not a size' % (field, name, size))
    return value


def _flag(job, name, field):
    value = job.get(name, False)
    if not isinstance(value, bool):
        raise JobError('%s.%s: %r is not true or false' % (field, name, value))
    return value


def _choice(job, name, choices, field):
    value = job.get(name, choices[0]) or choices[0]
    if value not in choices:
        raise JobError('%s.%s: %r is not one of %s' % (field, name, value, ', '.join(choices)))
    return value


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
    parsed['bytes_per_batch'] = _size(job, 'bytes_per_batch', field, True,
                                      'bytes of one collated batch, such as 150MiB')
    parsed['rdma_registered_bytes'] = _size(job, 'rdma_registered_bytes', field, False, '')
    parsed['pin_memory'] = _flag(job, 'pin_memory', field)
    parsed['torch_compile'] = _flag(job, 'torch_compile', field)
    parsed['sharing_strategy'] = _choice(job, 'sharing_strategy', STRATEGIES, field)
    parsed['worker_type'] = _choice(job, 'worker_type', WORKER_TYPES, field)
    for name, minimum in DERIVED:
        parsed[name] = (None if job.get(name) is None
                        else _count(job, name, None, minimum, field))
    if parsed['compile_workers'] is None:
        # torch.compile (inductor) starts min(32, cpus) compile workers per rank
        parsed['compile_workers'] = (min(COMPILE_CAP, parsed['cpus'])
                                     if parsed['torch_compile'] else 0)
    if parsed['omp_threads'] is None:
        parsed['omp_threads'] = parsed['intra_op_threads']
    elif 'intra_op_threads' in job and parsed['intra_op_threads'] != parsed['omp_threads']:
        raise JobError('%s.omp_threads: %d differs from intra_op_threads %d (on CPU builds '
                       'torch\'s intra-op pool is the OpenMP pool: give one of them)'
                       % (field, parsed['omp_threads'], parsed['intra_op_threads']))
    parsed['intra_op_threads'] = parsed['omp_threads']
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


def world_size(job):
    return job['nodes'] * job['ranks_per_node']


def _dist(job):
    """(descriptors, threads) a rank's process group adds: none in a world of one."""
    peers = world_size(job) - 1
    if peers <= 0:
        return 0, 0
    return DIST_FDS + job['sockets_per_peer'] * peers, DIST_THREADS


def demand(job):
    """The predicted peaks of a parsed job (:func:`parse_job`).

    Returns ``fds_main``, ``fds_worker`` (descriptors of one process; 0 without worker
    processes), ``nofile`` (the larger, what the soft limit of every process must hold),
    ``threads`` (the job's threads, with the user's other threads: what RLIMIT_NPROC must
    hold), ``pids`` (the job's tasks: what its cgroup's pids.max must hold), ``processes``,
    ``maps_main``, ``maps_worker``, ``map_count`` (memory maps of one process: what
    vm.max_map_count must hold), ``file_handles`` (descriptors of the whole job on the node:
    fs.file-max), ``shm_bytes`` (all ranks), ``pinned_bytes`` (host memory pin_memory pins,
    all ranks), ``cgroup_memory_bytes`` (pinned and /dev/shm bytes: charged to the cgroup's
    memory, not to memlock), ``memlock_bytes`` (RDMA registration of one rank) and
    ``inotify_instances`` (of the user on the node)."""
    workers, prefetch = job['num_workers'], job['prefetch_factor']
    ranks, tensors = job['ranks_per_node'], job['tensors_per_batch']
    held = job['batch_size'] * job['open_files_per_sample']   # a batch being built
    dist_fds, dist_threads = _dist(job)
    compilers = job['compile_workers']
    pin = 1 if job['pin_memory'] else 0
    pools = POOLS_PER_OMP_THREAD * job['omp_threads']
    if job['worker_type'] == 'thread':
        # workers are threads of the rank: no shared-memory descriptor, no /dev/shm
        fds_main = BASE_FDS + workers * held + dist_fds
        fds_worker = maps_worker = worker_threads = processes_per_rank = 0
        main_threads = 1 + workers + pin + pools + job['extra_threads']
        storages_main = 0
        shm = 0
    else:
        storages_main = (workers + 2) * tensors
        if job['sharing_strategy'] == 'file_descriptor':
            fds_main = BASE_FDS + 2 * workers + storages_main
            fds_worker = BASE_FDS + (prefetch + 2) * tensors + held
        else:
            fds_main = BASE_FDS + 2 * workers
            fds_worker = BASE_FDS + held
        fds_main += dist_fds
        main_threads = 1 + workers + pin + pools + job['extra_threads']
        worker_threads = WORKER_THREADS + (FORKED_POOL_THREADS if job['omp_threads'] > 1
                                           else 0)
        maps_worker = (BASE_MAPS + (prefetch + 2) * tensors
                       + MAPS_PER_THREAD * worker_threads)
        processes_per_rank = workers
        shm = ranks * (workers * prefetch + 2) * batch_shm_bytes(job)
    main_threads += dist_threads
    maps_main = BASE_MAPS + storages_main + MAPS_PER_THREAD * main_threads
    pids = ranks * (main_threads + workers * worker_threads
                    + compilers * COMPILE_WORKER_THREADS)
    pinned = (ranks * (workers * prefetch + 1) * job['bytes_per_batch'] if pin else 0)
    return dict(
        fds_main=fds_main, fds_worker=fds_worker, nofile=max(fds_main, fds_worker),
        threads=pids + BASE_USER_THREADS, pids=pids,
        processes=ranks * (1 + processes_per_rank + compilers),
        maps_main=maps_main, maps_worker=maps_worker, map_count=max(maps_main, maps_worker),
        file_handles=ranks * (fds_main + workers * fds_worker + compilers * BASE_FDS),
        shm_bytes=shm, pinned_bytes=pinned, cgroup_memory_bytes=pinned + shm,
        memlock_bytes=job['rdma_registered_bytes'],
        inotify_instances=ranks * job['inotify_instances'])


def _round_up(value, step):
    return int(-(-value // step) * step)


def sysctl_minima(job, need=None):
    """{sysctl: minimum} the job needs of its nodes' kernel, with its headroom:
    vm.max_map_count (maps of one process), fs.file-max (the job's file handles beside
    BASE_NODE_FILES of everything else) and, when the job uses inotify,
    fs.inotify.max_user_instances (beside the default 128 of the user's other watchers)."""
    need = need or demand(job)
    factor = job['headroom']
    found = {'vm.max_map_count': _round_up(need['map_count'] * factor, 1024),
             'fs.file-max': _round_up(need['file_handles'] * factor + BASE_NODE_FILES, 1024)}
    if need['inotify_instances']:
        found['fs.inotify.max_user_instances'] = _round_up(
            need['inotify_instances'] * factor + BASE_INOTIFY, 128)
    return found


def profile(job, nr_open=None):
    """A limits profile that holds the job with its headroom, and the container shm size.

    Returns ``(profile, shm_size)``: profile {nofile, nproc, pids, memlock?, sysctl} (soft =
    hard), values rounded up (descriptors, threads and tasks to 1024, bytes to MiB; nproc at
    least MIN_NPROC, as it counts every thread of the user, root's services too); memlock only
    for RDMA registration (``rdma_registered_bytes``: pin_memory is charged to the cgroup's
    memory, not to memlock); sysctl: :func:`sysctl_minima`. shm_size in bytes, rounded up to
    256 MiB. Raises JobError when the job cannot fit the kernel's fs.nr_open."""
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
              'nproc': max(MIN_NPROC, _round_up(need['threads'] * factor, 1024)),
              'pids': _round_up(need['pids'] * factor, 1024)}
    if need['memlock_bytes']:
        result['memlock'] = '%dMiB' % (_round_up(need['memlock_bytes'] * factor, 1024 ** 2)
                                       // 1024 ** 2)
    result['sysctl'] = sysctl_minima(job, need)
    shm = _round_up(need['shm_bytes'] * factor, 256 * 1024 ** 2)
    return result, shm


def _have(entry):
    """The soft value of a limit as probes report it ({soft, hard}, a Limit, a number or
    'max'/'unlimited'), or None when unlimited or unknown."""
    soft = entry.get('soft') if isinstance(entry, dict) else getattr(entry, 'soft', entry)
    if soft is None or soft in (model.UNLIMITED, 'max', 'infinity'):
        return None
    return int(soft)


def shortfalls(need, limits, context=''):
    """Where ``limits`` ({item: {soft, hard}} as probes report them, or Limit objects) do not
    hold ``need`` (:func:`demand`): a list of {context, item, need, have, short_by}.
    ``pids`` (a cgroup's pids.max), ``shm`` (bytes of /dev/shm, as ``limits['shm_bytes']``),
    ``memory`` (a cgroup's memory limit in bytes, as ``limits['memory_bytes']``, against the
    pinned and /dev/shm bytes it is charged) and ``memlock`` (against RDMA registration only)
    are compared when given."""
    found = []
    checks = (('nofile', need['nofile']), ('nproc', need['threads']),
              ('pids', need.get('pids', 0)), ('memlock', need.get('memlock_bytes', 0)))
    for item, wanted in checks:
        entry = limits.get(item)
        have = None if entry is None or not wanted else _have(entry)
        if have is not None and have < wanted:
            found.append(dict(context=context, item=item, need=wanted, have=have,
                              short_by=wanted - have))
    for item, key, wanted in (('shm', 'shm_bytes', need['shm_bytes']),
                              ('memory', 'memory_bytes', need.get('cgroup_memory_bytes', 0))):
        have = limits.get(key)
        if have is not None and have < wanted:
            found.append(dict(context=context, item=item, need=wanted, have=have,
                              short_by=wanted - have))
    return found
