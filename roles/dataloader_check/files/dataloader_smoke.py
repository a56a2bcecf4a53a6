"""DataLoader smoke test for gpufleet.tuning: do the descriptor limits reach training?

Builds a synthetic dataset on disk (one file per sample, K tiny float32 tensors each), lets
DataLoader workers open and decode the files, and iterates it with worker processes and a timeout.
Every tensor a worker hands to the main process travels as one shared-memory file descriptor under
PyTorch's default `file_descriptor` sharing strategy, so K tensors per sample and a few batches in
flight need thousands of descriptors at once (see docs/dataloader-check.md).

Prints one JSON object (and writes it to --output): ok, error, fd_exhausted, samples_per_s,
peak open fds of the main process and of the workers (sampled from /proc/PID/fd), threads and
/dev/shm bytes, the sharing strategy, and the limits the process saw (/proc/self/limits).
``exhausted`` here is read from the error text only; the role's filter (dataloader_check_parse)
classifies a failure whose text names no limit from the measured peaks against these limits. Exit status 0 when ok, 1 when the
DataLoader failed, 2 when the test could not run at all (no torch, bad arguments).
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback

MAGIC = b'GFDL1'
# Substrings of the errors PyTorch and the OS raise when a process runs out of descriptors.
FD_ERRORS = (
    'Too many open files',
    'received 0 items of ancdata',
    'increase the limit using `ulimit -n`',
    'EMFILE',
)
# ... out of shared memory (/dev/shm too small: a container's 64 MB default) ...
SHM_ERRORS = (
    'No space left on device',
    'Bus error',
    'insufficient shared memory',
    'unable to allocate shared memory',
)
# ... and out of processes or threads (RLIMIT_NPROC counts every thread of the user).
NPROC_ERRORS = (
    "can't start new thread",
    'Resource temporarily unavailable',
    'EAGAIN',
)


def failure_kind(text):
    """What ran out, from an error's text: 'nofile', 'shm', 'nproc' or '' (something else)."""
    for kind, markers in (('nofile', FD_ERRORS), ('shm', SHM_ERRORS), ('nproc', NPROC_ERRORS)):
        if any(marker in text for marker in markers):
            return kind
    return ''


def read_limits(path='/proc/self/limits'):
    """Parse /proc/<pid>/limits into {name: {'soft': v, 'hard': v}} (v an int or 'unlimited')."""
    names = {'Max open files': 'nofile', 'Max processes': 'nproc',
             'Max locked memory': 'memlock', 'Max stack size': 'stack'}
    limits = {}
    with open(path) as handle:
        for line in handle:
            for label, key in names.items():
                if line.startswith(label):
                    fields = line[len(label):].split()
                    values = []
                    for field in fields[:2]:
                        values.append(field if field == 'unlimited' else int(field))
                    limits[key] = {'soft': values[0], 'hard': values[1]}
    return limits


def count_fds(pid):
    try:
        return len(os.listdir('/proc/%d/fd' % pid))
    except OSError:
        return None


def child_pids(pid):
    """Direct children of pid, from /proc/PID/task/*/children (fallback: scan /proc stat)."""
    children = set()
    try:
        for tid in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, tid)) as handle:
                children.update(int(p) for p in handle.read().split())
        return children
    except OSError:
        pass
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                stat = handle.read()
            ppid = int(stat.rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            children.add(int(entry))
    return children


PR_SET_PDEATHSIG = 1


def die_with_parent(worker_id=None):  # pylint: disable=unused-argument
    """DataLoader worker_init_fn: the kernel kills the worker when the main process dies, also
    by SIGKILL (a `timeout --kill-after`), so no worker is left running with PPID 1."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def descendants(pid):
    """Every process below pid (children, their children, ...)."""
    found, queue = [], [pid]
    while queue:
        for child in child_pids(queue.pop()):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def remove_shm_of(pids, shm='/dev/shm'):
    """Remove the shared-memory files that processes ``pids`` (dead workers) left in /dev/shm
    (PyTorch names them torch_<pid>_...). Returns how many were removed."""
    removed = 0
    prefixes = tuple('torch_%d_' % pid for pid in pids)
    try:
        names = os.listdir(shm) if prefixes else []
    except OSError:
        return 0
    for name in names:
        if name.startswith(prefixes):
            try:
                os.unlink(os.path.join(shm, name))
                removed += 1
            except OSError:
                pass
    return removed


def reap_workers(grace=3.0, seen=()):
    """Stop every process this run started (DataLoader workers and their helpers): SIGTERM,
    then SIGKILL after ``grace`` seconds, and remove the /dev/shm files of those and of the
    workers in ``seen``. Returns how many were still running."""
    left = descendants(os.getpid())
    gone = set(left) | set(seen)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while left and time.monotonic() < deadline:
            for pid in list(left):
                try:
                    done, _status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid      # not our child, or already reaped: check /proc
                    if os.path.exists('/proc/%d' % pid):
                        done = 0
                if done:
                    left.remove(pid)
            time.sleep(0.05)
    remove_shm_of(sorted(pid for pid in gone if not os.path.exists('/proc/%d' % pid)))
    return len(descendants(os.getpid()))


class Terminated(BaseException):
    """SIGTERM (the role's `timeout`): unwind, so that the workers are shut down. Not an
    Exception, so that a sweep does not take it for a failed point and go on."""


def on_sigterm(signum, frame):  # pylint: disable=unused-argument
    raise Terminated('terminated by signal %d (the run timed out)' % signum)


def count_maps(pid):
    """Memory maps of a process (what vm.max_map_count bounds), None when it is gone."""
    try:
        with open('/proc/%d/maps' % pid, 'rb') as handle:
            return handle.read().count(b'\n')
    except OSError:
        return None


def count_threads(pid):
    try:
        return len(os.listdir('/proc/%d/task' % pid))
    except OSError:
        return None


def rss_bytes(pid):
    """Resident memory of a process (None when it is gone)."""
    try:
        with open('/proc/%d/statm' % pid) as handle:
            return int(handle.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        return None


def shm_size(path='/dev/shm'):
    """Size of the /dev/shm file system in bytes (a container's is 64 MB unless raised)."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_blocks * stat.f_frsize


def shm_used(path='/dev/shm'):
    """Bytes in use on the /dev/shm file system (None when it cannot be read)."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


class FdSampler(threading.Thread):
    """Samples, every `interval` s, the open descriptors of this process and of every process
    below it, the threads of all of them (what RLIMIT_NPROC counts for the user) and the bytes
    in use in /dev/shm above what was in use when it started."""

    def __init__(self, interval=0.05, count_self=True):
        super().__init__(daemon=True)
        self.interval = interval
        self.count_self = count_self   # False: a coordinator measures only what it started
        self.pid = os.getpid()
        self.peak_main = 0
        self.peak_worker = 0
        self.peak_total = 0
        self.peak_threads = 0
        self.peak_processes = 0
        self.shm_base = shm_used() or 0
        self.peak_shm = 0
        self.peak_rss = 0
        self.peak_maps_main = 0
        self.peak_maps_worker = 0
        self.workers_seen = set()
        self._stop_event = threading.Event()

    def sample(self):
        main = count_fds(self.pid) or 0
        total = main if self.count_self else 0
        threads = (count_threads(self.pid) or 0) if self.count_self else 0
        rss = (rss_bytes(self.pid) or 0) if self.count_self else 0
        below = descendants(self.pid)
        for child in below:
            count = count_fds(child)
            if count is None:
                continue
            self.workers_seen.add(child)
            self.peak_worker = max(self.peak_worker, count)
            total += count
            threads += count_threads(child) or 0
            rss += rss_bytes(child) or 0
        self.peak_main = max(self.peak_main, main)
        if self.count_self:
            self.peak_maps_main = max(self.peak_maps_main, count_maps(self.pid) or 0)
        for child in below:
            self.peak_maps_worker = max(self.peak_maps_worker, count_maps(child) or 0)
        self.peak_total = max(self.peak_total, total)
        self.peak_threads = max(self.peak_threads, threads)
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_processes = max(self.peak_processes,
                                  len(below) + (1 if self.count_self else 0))
        used = shm_used()
        if used is not None:
            self.peak_shm = max(self.peak_shm, used - self.shm_base)

    def run(self):
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def stop(self):
        self._stop_event.set()
        self.join(5)
        self.sample()


def build_dataset(data_dir, samples, tensors, elements):
    """Write `samples` files of `tensors` float32 tensors of `elements` values each, once."""
    marker = os.path.join(data_dir, '.complete')
    if os.path.exists(marker):
        return False
    os.makedirs(data_dir, exist_ok=True)
    payload_len = tensors * elements * 4
    for index in range(samples):
        path = os.path.join(data_dir, 'sample-%06d.bin' % index)
        body = os.urandom(payload_len)
        with open(path + '.tmp', 'wb') as handle:
            handle.write(MAGIC + struct.pack('<III', index, tensors, elements) + body)
        os.replace(path + '.tmp', path)
    with open(marker, 'w') as handle:
        handle.write('%d %d %d\n' % (samples, tensors, elements))
    return True


IMAGE_SIZE = (500, 375)      # ImageNet's typical JPEG
CROP = 224
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CLASSES = 10


def build_images(data_dir, count, seed=0):
    """An ImageNet-like folder: ``count`` JPEGs of 500x375 (about 100 KB each: a smooth colour
    field with noise, quality 90) in CLASSES class directories, written once."""
    import random
    from PIL import Image
    marker = os.path.join(data_dir, '.complete')
    if os.path.exists(marker):
        return False
    rng = random.Random(seed)
    for index in range(count):
        folder = os.path.join(data_dir, 'class-%02d' % (index % CLASSES))
        os.makedirs(folder, exist_ok=True)
        base = Image.new('RGB', (25, 19))
        base.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256))
                      for _pixel in range(25 * 19)])
        image = Image.blend(base.resize(IMAGE_SIZE, Image.BICUBIC),
                            Image.effect_noise(IMAGE_SIZE, 60).convert('RGB'), 0.3)
        path = os.path.join(folder, 'image-%06d.jpg' % index)
        image.save(path + '.tmp', 'JPEG', quality=90)
        os.replace(path + '.tmp', path)
    with open(marker, 'w') as handle:
        handle.write('%d\n' % count)
    return True


def random_resized_crop(image, rng, size=CROP, scale=(0.08, 1.0), ratio=(3.0 / 4, 4.0 / 3)):
    """torchvision's RandomResizedCrop, with PIL: a random area and aspect ratio, resized."""
    import math
    width, height = image.size
    area = width * height
    for _attempt in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            left, top = rng.randint(0, width - w), rng.randint(0, height - h)
            break
    else:
        w = h = min(width, height)
        left, top = (width - w) // 2, (height - h) // 2
    return image.resize((size, size), box=(left, top, left + w, top + h), resample=2)


def make_image_dataset_class(torch):
    import random

    class ImageFolderDataset(torch.utils.data.Dataset):
        """PIL decode, random-resized-crop to 224, ImageNet normalisation: (CHW float, label),
        and ``annotations`` small tensors per sample beside them (a detection dataset's boxes
        and masks; each field is one tensor of the collated batch, so one descriptor in
        flight)."""

        def __init__(self, data_dir, annotations=0):
            self.annotations = annotations
            self.items = []
            for label, folder in enumerate(sorted(
                    d for d in os.listdir(data_dir) if d.startswith('class-'))):
                for name in sorted(os.listdir(os.path.join(data_dir, folder))):
                    if name.endswith('.jpg'):
                        self.items.append((os.path.join(data_dir, folder, name), label))
            self.mean = torch.tensor(MEAN).view(3, 1, 1)
            self.std = torch.tensor(STD).view(3, 1, 1)
            self.rng = random.Random()

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            from PIL import Image
            path, label = self.items[index]
            with Image.open(path) as image:
                crop = random_resized_crop(image.convert('RGB'), self.rng)
            pixels = torch.frombuffer(bytearray(crop.tobytes()), dtype=torch.uint8)
            tensor = pixels.view(CROP, CROP, 3).permute(2, 0, 1).float().div_(255)
            if self.annotations:
                boxes = torch.rand(self.annotations, 4).unbind(0)
                return [(tensor - self.mean) / self.std, label] + list(boxes)
            return (tensor - self.mean) / self.std, label

    return ImageFolderDataset


def make_dataset_class(torch):
    class DiskDataset(torch.utils.data.Dataset):
        """Each item: open the sample file, check its header, decode it into K tensors."""

        def __init__(self, data_dir, open_files=0):
            self.paths = sorted(
                os.path.join(data_dir, name) for name in os.listdir(data_dir)
                if name.startswith('sample-') and name.endswith('.bin'))
            # files each sample keeps open until its batch is collated (a dataset whose
            # samples hold file handles: h5py, memory-mapped shards), per loading thread
            self.open_files = open_files
            self.held = {}

        def collate(self, samples):
            """default_collate, then close the files the samples of this batch held."""
            batch = torch.utils.data.default_collate(samples)
            for fd in self.held.pop(threading.get_ident(), []):
                os.close(fd)
            return batch

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, index):
            with open(self.paths[index], 'rb') as handle:
                raw = handle.read()
            self.held.setdefault(threading.get_ident(), []).extend(
                os.open(self.paths[index], os.O_RDONLY) for _n in range(self.open_files))
            if raw[:5] != MAGIC:
                raise ValueError('%s: not a dataset file' % self.paths[index])
            tensors, elements = struct.unpack('<III', raw[5:17])[1:]
            flat = torch.frombuffer(bytearray(raw[17:]), dtype=torch.float32)
            return [chunk.clone() for chunk in flat.split(elements)][:tensors]

    return DiskDataset


def default_workers(cap=0):
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    # Guidance: about 1.2 x the cores available to the process, at least 2 so workers exist.
    workers = max(2, int(round(cores * 1.2)))
    return min(workers, cap) if cap > 0 else workers


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data-dir', required=True)
    parser.add_argument('--output', help='also write the JSON result here')
    parser.add_argument('--label', default='run', help='context name recorded in the result')
    parser.add_argument('--samples', type=int, default=24)
    parser.add_argument('--tensors-per-sample', type=int, default=2000)
    parser.add_argument('--elements', type=int, default=4, help='float32 values per tensor')
    parser.add_argument('--num-workers', type=int, default=0, help='0: about 1.2 x cores')
    parser.add_argument('--max-workers', type=int, default=8,
                        help='cap of the automatic worker count (0: no cap)')
    parser.add_argument('--batch-size', type=int, default=1)
    parser.add_argument('--prefetch-factor', type=int, default=2)
    parser.add_argument('--timeout', type=float, default=60.0, help='DataLoader timeout, s')
    parser.add_argument('--epochs', type=int, default=1)
    parser.add_argument('--sharing-strategy', default='',
                        help='torch.multiprocessing sharing strategy; empty: PyTorch default')
    parser.add_argument('--sweep-workers', default='',
                        type=lambda text: [int(v) for v in text.split(',') if v.strip()],
                        help='after the run, measure again with each of these worker counts '
                             '(comma-separated) for a throughput curve')
    parser.add_argument('--pipeline', choices=['synthetic', 'images'], default='synthetic',
                        help='synthetic: files of --tensors-per-sample tiny tensors (descriptor '
                             'stress); images: an ImageNet-like JPEG folder of --samples images, '
                             'decoded with PIL, random-resized-crop to 224, normalised')
    parser.add_argument('--annotations', type=int, default=0,
                        help='images pipeline: small tensors per sample beside image and label '
                             '(a job of tensors_per_batch T has T - 2)')
    parser.add_argument('--plot-png', default='',
                        help='with --sweep-workers: draw images/s against num_workers here')
    parser.add_argument('--ranks', type=int, default=1,
                        help='independent rank processes, each with its own DataLoader of '
                             '--num-workers workers (the ranks of a job on one node)')
    parser.add_argument('--soft-nproc', type=int, default=0,
                        help='lower the soft nproc limit (processes and threads of the user) to '
                             'this first (canary)')
    parser.add_argument('--soft-nofile', type=int, default=0,
                        help='lower the soft nofile limit to this first (canary)')
    parser.add_argument('--worker-type', choices=['process', 'thread'], default='process',
                        help='thread: the workers are threads of the rank (a thread pool that '
                             'loads and collates whole batches, num_workers x prefetch_factor '
                             'in flight), as thread-based DataLoader workers do')
    parser.add_argument('--open-files-per-sample', type=int, default=0,
                        help='synthetic pipeline: files each sample keeps open until its batch '
                             'is collated')
    parser.add_argument('--omp-threads', type=int, default=0,
                        help='torch.set_num_threads in each rank, and one matrix product to '
                             'start the pool (0: leave it)')
    parser.add_argument('--process-group', action='store_true',
                        help='with --ranks > 1: the ranks form a Gloo process group on '
                             'localhost (one all_reduce) and keep it while they load')
    parser.add_argument('--rank', type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument('--world-size', type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument('--pg-port', type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run(args, result):
    import warnings
    warnings.filterwarnings('ignore', message='Failed to initialize NumPy')
    import torch
    import torch.multiprocessing
    import torch.utils.data

    result['torch_version'] = torch.__version__
    if args.sharing_strategy:
        torch.multiprocessing.set_sharing_strategy(args.sharing_strategy)
    result['sharing_strategy'] = torch.multiprocessing.get_sharing_strategy()

    result['pipeline'] = args.pipeline
    if args.pipeline == 'images':
        result['dataset_built'] = build_images(args.data_dir, args.samples)
        dataset = make_image_dataset_class(torch)(args.data_dir, args.annotations)
    else:
        result['dataset_built'] = build_dataset(args.data_dir, args.samples,
                                                args.tensors_per_sample, args.elements)
        dataset = make_dataset_class(torch)(args.data_dir, args.open_files_per_sample)
    result['cuda_available'] = bool(torch.cuda.is_available())
    if len(dataset) == 0:
        raise ValueError('%s holds no samples' % args.data_dir)
    workers = args.num_workers or default_workers(args.max_workers)
    result['num_workers'] = workers
    result['worker_type'] = args.worker_type
    if args.omp_threads:
        torch.set_num_threads(args.omp_threads)
        torch.mm(torch.rand(512, 512), torch.rand(512, 512))    # starts the intra-op pool
    result['intra_op_threads'] = torch.get_num_threads()
    group = None
    if args.world_size > 1:
        import torch.distributed as dist
        dist.init_process_group('gloo', init_method='tcp://127.0.0.1:%d' % args.pg_port,
                                rank=args.rank, world_size=args.world_size)
        group = dist
        total = torch.ones(1)
        dist.all_reduce(total)
        result['world_size'] = int(total.item())
    try:
        measure(torch, dataset, args, workers, result)
    finally:
        if group is not None:
            group.barrier()
            group.destroy_process_group()
    if args.sweep_workers:
        # Throughput against num_workers (informational: a failed point does not fail the run).
        result['sweep'] = []
        for count in args.sweep_workers:
            point = {'num_workers': count, 'ok': False, 'error': ''}
            try:
                measure(torch, dataset, args, count, point)
                point['ok'] = True
            except Exception as exc:  # pylint: disable=broad-except
                point['error'] = ('%s: %s' % (type(exc).__name__, exc))[-500:]
            result['sweep'].append(point)
        if args.plot_png:
            try:
                plot_png(result, args.plot_png)
                result['plot_png'] = args.plot_png
            except Exception as exc:  # pylint: disable=broad-except
                result['plot_png_error'] = '%s: %s' % (type(exc).__name__, exc)


def rank_argv(args, index):
    """The command line of rank ``index``: this script with the job's shape, one rank."""
    argv = [sys.executable, os.path.abspath(__file__), '--data-dir', args.data_dir,
            '--label', '%s-rank%d' % (args.label, index), '--ranks', '1',
            '--pipeline', args.pipeline]
    for flag, value in (('--samples', args.samples),
                        ('--tensors-per-sample', args.tensors_per_sample),
                        ('--annotations', args.annotations),
                        ('--elements', args.elements), ('--num-workers', args.num_workers),
                        ('--max-workers', args.max_workers), ('--batch-size', args.batch_size),
                        ('--prefetch-factor', args.prefetch_factor),
                        ('--timeout', args.timeout), ('--epochs', args.epochs)):
        argv += [flag, str(value)]
    if args.sharing_strategy:
        argv += ['--sharing-strategy', args.sharing_strategy]
    for flag, value in (('--worker-type', args.worker_type),
                        ('--open-files-per-sample', args.open_files_per_sample),
                        ('--omp-threads', args.omp_threads)):
        argv += [flag, str(value)]
    if args.process_group:
        argv += ['--rank', str(index), '--world-size', str(args.ranks),
                 '--pg-port', str(args.pg_port)]
    if index == 0 and args.sweep_workers:
        # the sweep of a job of several ranks: its first rank measures it once the job is done
        argv += ['--sweep-workers', ','.join(str(count) for count in args.sweep_workers)]
    return argv


def run_ranks(args, result):
    """Run --ranks rank processes at once, each with its own DataLoader, and measure the
    whole job: descriptors per process, threads and processes of the job (what the user's
    RLIMIT_NPROC must hold), /dev/shm bytes. Raises when a rank failed."""
    import subprocess
    if args.pipeline == 'images':
        result['dataset_built'] = build_images(args.data_dir, args.samples)
    else:
        result['dataset_built'] = build_dataset(args.data_dir, args.samples,
                                                args.tensors_per_sample, args.elements)
    if args.process_group:
        with socket.socket() as probe:      # a free port for the group's store
            probe.bind(('127.0.0.1', 0))
            args.pg_port = probe.getsockname()[1]
    sampler = FdSampler(count_self=False)
    sampler.start()
    started = time.monotonic()
    procs = []
    try:
        for index in range(args.ranks):
            procs.append(subprocess.Popen(rank_argv(args, index), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, universal_newlines=True))
        outputs = [proc.communicate() for proc in procs]
    finally:
        sampler.stop()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    ranks = []
    for proc, (out, err) in zip(procs, outputs):
        lines = [line for line in out.splitlines() if line.startswith('{')]
        record = json.loads(lines[-1]) if lines else {
            'ok': False, 'error': 'rank printed no result (exit status %s): %s'
                                  % (proc.returncode, err.strip()[-300:])}
        ranks.append(record)
    elapsed = time.monotonic() - started
    result['ranks'] = ranks
    result['elapsed_s'] = round(elapsed, 3)
    for key in ('torch_version', 'sharing_strategy', 'num_workers', 'pipeline',
                'cuda_available'):
        result[key] = next((r[key] for r in ranks if key in r), None)
    result['samples'] = sum(r.get('samples', 0) for r in ranks)
    result['samples_per_s'] = round(sum(r.get('samples_per_s', 0.0) for r in ranks), 2)
    for key in ('peak_fds_main', 'peak_fds_worker', 'peak_fds', 'peak_maps_main',
                'peak_maps_worker'):
        result[key] = max(r.get(key, 0) for r in ranks)
    result['peak_fds_total'] = sampler.peak_total
    result['peak_threads'] = sampler.peak_threads
    result['peak_processes'] = sampler.peak_processes
    result['peak_shm_bytes'] = sampler.peak_shm
    result['shm_used_at_start_bytes'] = sampler.shm_base
    result['peak_rss_bytes'] = sampler.peak_rss
    if 'sweep' in ranks[0]:
        # one rank alone, after the job, against num_workers (the job's own run shared the
        # node with the other ranks: not a point of this curve)
        result['sweep'] = ranks[0]['sweep']
        if args.plot_png:
            try:
                plot_png({'sweep': ranks[0]['sweep']}, args.plot_png)
                result['plot_png'] = args.plot_png
            except Exception as exc:  # pylint: disable=broad-except
                result['plot_png_error'] = '%s: %s' % (type(exc).__name__, exc)
    failed = [r for r in ranks if not r.get('ok')]
    if failed:
        result['fd_exhausted'] = any(r.get('fd_exhausted') for r in failed)
        result['exhausted'] = next((r.get('exhausted') for r in failed if r.get('exhausted')), '')
        raise RuntimeError('%d of %d ranks failed; %s: %s' % (
            len(failed), len(ranks), failed[0].get('label', 'rank'), failed[0].get('error')))


def plot_png(result, path, width=480, height=300):
    """Samples/s against num_workers (the run and its sweep) as a PNG, drawn with PIL; a failed
    point is a red cross on the axis."""
    from PIL import Image, ImageDraw
    points = [(p['num_workers'], p['samples_per_s'], p['ok']) for p in result.get('sweep', [])]
    if result.get('num_workers'):
        points.append((result['num_workers'], result.get('samples_per_s', 0.0), True))
    points.sort()
    left, right, top, bottom = 60, 20, 30, 40
    xs = [x for x, _y, _ok in points] or [0]
    x_min, x_max = min(xs), max(xs + [min(xs) + 1])
    y_max = max([y for _x, y, ok in points if ok] + [0.0]) * 1.1 or 1.0
    image = Image.new('RGB', (width, height), 'white')
    draw = ImageDraw.Draw(image)

    def px(x):
        return left + (x - x_min) * (width - left - right) / float(x_max - x_min)

    def py(y):
        return height - bottom - y * (height - top - bottom) / y_max

    draw.line([(left, top), (left, height - bottom), (width - right, height - bottom)],
              fill='black')
    draw.text((left, 8), '%s: %s per second against num_workers' % (
        result.get('label', ''), 'images' if result.get('pipeline') == 'images' else 'samples'),
        fill='black')
    for tick in range(5):
        value = y_max * tick / 4.0
        draw.text((4, py(value) - 6), '%.1f' % value, fill='black')
    good = [(px(x), py(y)) for x, y, ok in points if ok]
    if len(good) > 1:
        draw.line(good, fill=(31, 119, 180), width=2)
    for x, y, ok in points:
        draw.text((px(x) - 3, height - bottom + 6), str(x), fill='black')
        if ok:
            draw.ellipse([px(x) - 3, py(y) - 3, px(x) + 3, py(y) + 3], fill=(31, 119, 180))
        else:
            cx, cy = px(x), py(0)
            draw.line([(cx - 4, cy - 4), (cx + 4, cy + 4)], fill=(214, 39, 40), width=2)
            draw.line([(cx - 4, cy + 4), (cx + 4, cy - 4)], fill=(214, 39, 40), width=2)
    tmp = path + '.tmp'
    image.save(tmp, 'PNG')
    os.replace(tmp, path)


class ThreadLoader(object):
    """Thread-based workers: ``workers`` threads of this process load and collate whole
    batches, ``workers x prefetch`` batches in flight, yielded in order. No worker process,
    so no shared-memory descriptor and no /dev/shm: the demand moves to threads."""

    def __init__(self, dataset, batch_size, workers, prefetch, timeout, collate):
        self.dataset, self.batch_size, self.workers = dataset, batch_size, workers
        self.prefetch, self.timeout, self.collate = prefetch, timeout or None, collate

    def _load(self, indices):
        return self.collate([self.dataset[index] for index in indices])

    def __iter__(self):
        import collections
        from concurrent.futures import ThreadPoolExecutor
        order = list(range(len(self.dataset)))
        batches = iter([order[start:start + self.batch_size]
                        for start in range(0, len(order), self.batch_size)])
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            pending = collections.deque()
            for indices in batches:
                pending.append(pool.submit(self._load, indices))
                if len(pending) >= self.workers * self.prefetch:
                    break
            while pending:
                batch = pending.popleft().result(self.timeout)
                indices = next(batches, None)
                if indices is not None:
                    pending.append(pool.submit(self._load, indices))
                yield batch


def measure(torch, dataset, args, workers, result):
    """Iterate the dataset with `workers` workers; fill samples/s and the fd peaks into result.

    The workers are shut down before it returns or raises, and any process the run left is
    killed: a failed point of a sweep must not leave workers holding descriptors and /dev/shm
    for the next measurement."""
    collate = getattr(dataset, 'collate', None)
    if args.worker_type == 'thread':
        loader = ThreadLoader(dataset, args.batch_size, workers, args.prefetch_factor,
                              args.timeout, collate or torch.utils.data.default_collate)
    else:
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=args.batch_size, num_workers=workers,
            prefetch_factor=args.prefetch_factor, timeout=args.timeout, shuffle=False,
            worker_init_fn=die_with_parent if workers else None, collate_fn=collate)
    sampler = FdSampler()
    sampler.start()
    samples = 0
    received = 0
    started = time.monotonic()
    iterator = None
    try:
        for dummy in range(args.epochs):  # pylint: disable=unused-variable
            iterator = iter(loader)
            for batch in iterator:
                # Touch every tensor so the shared storages are really received and mapped.
                samples += batch[0].shape[0]
                received += sum(t.numel() for t in batch)
            iterator = None
    finally:
        elapsed = time.monotonic() - started
        sampler.stop()
        shutdown = getattr(iterator, '_shutdown_workers', None)
        if shutdown is not None:
            try:
                shutdown()
            except Exception:  # pylint: disable=broad-except
                pass
        iterator = None
        result['workers_left'] = reap_workers(seen=sampler.workers_seen)
        result['samples'] = samples
        result['values_received'] = received
        result['elapsed_s'] = round(elapsed, 3)
        result['samples_per_s'] = round(samples / elapsed, 2) if elapsed > 0 else 0.0
        result['samples_per_s_per_worker'] = round(result['samples_per_s'] / max(1, workers), 2)
        result['peak_fds_main'] = sampler.peak_main
        result['peak_fds_worker'] = sampler.peak_worker
        result['peak_fds_total'] = sampler.peak_total
        result['peak_fds'] = max(sampler.peak_main, sampler.peak_worker)
        result['peak_threads'] = sampler.peak_threads
        result['peak_processes'] = sampler.peak_processes
        result['peak_shm_bytes'] = sampler.peak_shm
        result['shm_used_at_start_bytes'] = sampler.shm_base
        result['peak_rss_bytes'] = sampler.peak_rss
        result['peak_maps_main'] = sampler.peak_maps_main
        result['peak_maps_worker'] = sampler.peak_maps_worker
        result['workers_seen'] = len(sampler.workers_seen)
    expected = len(dataset) * args.epochs
    if samples != expected:
        raise RuntimeError('DataLoader yielded %d samples, expected %d' % (samples, expected))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    import resource
    for value, which in ((args.soft_nofile, resource.RLIMIT_NOFILE),
                         (args.soft_nproc, resource.RLIMIT_NPROC)):
        if value:
            resource.setrlimit(which, (value, resource.getrlimit(which)[1]))
    limits = read_limits()
    result = {
        'label': args.label,
        'host': socket.gethostname(),
        'uid': os.getuid(),
        'pid': os.getpid(),
        'python': sys.executable,
        'limits': limits,
        'nofile_soft': limits.get('nofile', {}).get('soft'),
        'nofile_hard': limits.get('nofile', {}).get('hard'),
        'tensors_per_sample': args.tensors_per_sample,
        'shm_size_bytes': shm_size(),
        'batch_size': args.batch_size,
        'prefetch_factor': args.prefetch_factor,
        'timeout_s': args.timeout,
        'ok': False,
        'error': '',
        'fd_exhausted': False,
        'exhausted': '',
        'samples_per_s': 0.0,
        'peak_fds': 0,
    }
    status = 0
    try:
        if args.ranks < 1:
            raise ValueError('--ranks must be at least 1')
        result['ranks_per_node'] = args.ranks
        if args.ranks > 1:
            run_ranks(args, result)
        else:
            run(args, result)
        result['ok'] = True
    except ImportError as exc:
        result['error'] = 'cannot import torch: %s' % exc
        status = 2
    except (Exception, Terminated) as exc:  # pylint: disable=broad-except
        # Terminated: the run timed out; the workers are reaped below all the same
        # Keep PyTorch's own message (the last lines carry the worker's re-raised error).
        text = '%s: %s' % (type(exc).__name__, exc)
        result['error'] = text.strip()[-2000:]
        result['traceback'] = traceback.format_exc()[-4000:]
        result['exhausted'] = result.get('exhausted') or failure_kind(
            text + '\n' + result['traceback'])
        result['fd_exhausted'] = result['exhausted'] == 'nofile'
        status = 1
    # whatever happened (an error, a time-out), no worker outlives the run
    left = reap_workers()
    if left:
        result['workers_left'] = left
    text = json.dumps(result, sort_keys=True)
    if args.output:
        tmp = args.output + '.tmp'
        with open(tmp, 'w') as handle:
            handle.write(text + '\n')
        os.replace(tmp, args.output)
    sys.stdout.write(text + '\n')
    sys.stdout.flush()
    return status


if __name__ == '__main__':
    # os._exit: skip interpreter teardown, which can hang on a broken DataLoader's queues.
    code = main()
    os._exit(code)
