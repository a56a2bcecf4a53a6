# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The failure texts the classifier knows (model/classify.py, issue 41): one rule per failure,
the specific before the general, each naming a ceiling, the candidates the evidence decides
between, or a failure that is not a limit. docs/job-shape.md "Why did my job die" prints them
as a table.

Plain Python (no Ansible import), runs on Python 3.8 targets and on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import namedtuple

I = re.IGNORECASE
Rule = namedtuple('Rule', 'name pattern verdict needs')
Rule.__new__.__defaults__ = (None,)
# verdict: a ceiling, a tuple of candidates the evidence decides between, or ('not', why).
# The first rule in this order that matches a line wins: the specific before the general, and
# a failure that is not a limit before the general limit rules its text would also match.
RULES = (
    Rule('enfile', re.compile(r'Too many open files in system|\[Errno 23\]|\bENFILE\b|'
                              r'VFS: file-max limit \d+ reached'),
         'fs.file-max'),
    Rule('inotify-watches', re.compile(
        r'inotify watch limit reached|inotify_add_watch.*No space left on device|upper limit '
        r'on inotify watches|max_user_watches|System limit for number of file watchers|'
        r'watch ENOSPC|ENOSPC.*\bwatch', I),
        'fs.inotify.max_user_watches'),
    Rule('inotify-instances', re.compile(
        r'(inotify|fsnotify|directory watch).*(Too many open files|\bEMFILE\b|instance limit|'
        r'instances limit)|max_user_instances', I), 'fs.inotify.max_user_instances'),
    Rule('cuda-fork', re.compile(r'Cannot re-initialize CUDA in forked subprocess', I),
         ('not', 'cuda-fork')),
    Rule('pickling', re.compile(r"Can't pickle|PicklingError|cannot pickle|Can't get "
                                r"attribute .* on <module", I), ('not', 'pickling')),
    Rule('gpu-oom', re.compile(r'CUDA out of memory|OutOfMemoryError: CUDA|'
                               r'CUBLAS_STATUS_ALLOC_FAILED|out of memory on device|'
                               r'HIP out of memory', I), ('not', 'gpu-oom')),
    Rule('memlock', re.compile(
        r'ibv_reg_mr|ibv_create_(cq|qp|srq)\b.*(fail|Cannot allocate memory)|'
        r'max locked memory|ulimit -l|RLIMIT_MEMLOCK|'
        # a memlock that is too low, not a config line that names MEMLOCK (slurm.conf's
        # PropagateResourceLimitsExcept=...,MEMLOCK)
        r'\bmemlock\b.{0,40}\b(limit|too (low|small)|exceed|insufficient|raise|increase)|'
        r'\bmlock(all)?\b.*(Cannot allocate memory|ENOMEM|Operation not permitted|EPERM)|'
        r'(failed|unable|could not) to (register|pin|lock) (the )?memory|'
        r'memory registration failed|locked memory', I), 'memlock'),
    Rule('removeipc', re.compile(
        r'SemLock\._rebuild|\bRemoveIPC\b|could not unlink the shared memory file|\bsem_unlink\b|'
        r'unable to open shared memory object <?/torch_\S*>? in read-write mode: No such file|'
        r'open shared memory segment .*No such file or directory|'
        # a POSIX shared memory object is a name of one component ('/name'; Python's
        # shared_memory prefixes one more '/'), not a path
        r"FileNotFoundError\b.*'/{1,2}[\w.-]+'\s*$", I), 'removeipc',
        re.compile(r'No such file or directory|FileNotFoundError|RemoveIPC|unlink', I)),
    Rule('ancdata', re.compile(r'received 0 items of ancdata'), 'nofile'),
    Rule('emfile', re.compile(r'Too many open files|\[Errno 24\]|\bEMFILE\b|ulimit -n|'
                              r'unable to open shared memory object', I), 'nofile'),
    Rule('pids-controller', re.compile(r'fork rejected by pids controller'), 'pids.max'),
    Rule('map-count', re.compile(r'vm\.max_map_count|max virtual memory areas|'
                                 r'Memory mapping file failed|max_map_count|'
                                 r'unable to mmap \d+ bytes', I), 'vm.max_map_count'),
    Rule('thread', re.compile(
        r"can't start new thread|pthread_create|Thread creation failed|RLIMIT_NPROC|"
        r'fork: retry|fork: Resource temporarily unavailable|'
        r'(thread|fork|clone|spawn).*(Resource temporarily unavailable|\bEAGAIN\b|'
        r'\[Errno 11\])', I), ('pids.max', 'nproc', 'memory')),
    # an EAGAIN of its own line, where the traceback shows a fork (a non-blocking socket's
    # EAGAIN is not a limit)
    Rule('fork-eagain', re.compile(r'BlockingIOError: \[Errno 11\]'), ('pids.max', 'nproc',
                                                                       'memory'),
         re.compile(r'fork_exec|os\.fork|_posixsubprocess|Popen')),
    Rule('shm', re.compile(
        r'insufficient shared memory|unable to allocate shared memory|out of shared\b|'
        r'raise your shared memory limit|'
        r'\bBus error\b|bus error encountered|SIGBUS|'
        r'creating shared memory segment|unable to write to file <?/torch_|'
        r'(/dev/shm|torch_\d+_|\bshm\b).*No space left on device|'
        r'No space left on device.*(/dev/shm|torch_\d+_|\bshm\b)', I), 'shm'),
    Rule('oom', re.compile(
        r'killed by signal: Killed|oom[_-]kill|OOMKilled|OUT_OF_MEMORY|Out of memory: Kill|'
        r'Memory cgroup out of memory|\b(exit(ed)?|status)\b[^\n]{0,20}\b137\b|'
        r'exitCode: 137|signal 9 \(SIGKILL\)|\bSIGKILL\b.*memory', I), 'memory'),
    Rule('core', re.compile(r'\bcore (dump )?files\b|(?<![A-Za-z0-9_])core\.(\d+|x+)(?![A-Za-z0-9_])|LimitCORE|'
                            r'ulimit -c',
                            I), 'core'),
    Rule('nccl-timeout', re.compile(r'Watchdog caught collective operation timeout|'
                                    r'collective operation timeout|NCCL.*timed? ?out', I),
         ('not', 'nccl')),
    Rule('driver', re.compile(r'\bXid\b|illegal memory access|unspecified launch failure|'
                              r'uncorrectable ECC|CUDA driver version is insufficient|'
                              r'CUDA error: device-side assert', I), ('not', 'driver')),
    Rule('segfault', re.compile(r'Segmentation fault|SIGSEGV|killed by signal: '
                                r'Segmentation', I), ('not', 'segfault')),
    Rule('disk-quota', re.compile(r'Disk quota exceeded|\bEDQUOT\b', I), ('not', 'disk-full')),
    Rule('enospc', re.compile(r'No space left on device|\[Errno 28\]|\bENOSPC\b', I),
         ('shm', 'disk')),
    # ENOMEM of mmap or mprotect (a mapping split in two): the map count, unless the node shows
    # a memory kill
    Rule('mmap-enomem', re.compile(r'(mmap|mprotect|map_count).*(Cannot allocate memory|'
                                   r'\bENOMEM\b|\[Errno 12\]|Out of memory)|(Cannot allocate '
                                   r'memory|\[Errno 12\]).*(mmap|mprotect)', I),
         'vm.max_map_count'),
    Rule('enomem', re.compile(r'Cannot allocate memory|\[Errno 12\]|\bENOMEM\b|MemoryError|'
                              r'std::bad_alloc', I), ('memory', 'vm.max_map_count')),
)
#: an RLIMIT_NPROC a failure prints (OpenBLAS: 'RLIMIT_NPROC 4096 current, 4096 max')
NPROC_STATED = re.compile(r'RLIMIT_NPROC\D{0,20}(\d+|unlimited)\s*current', I)
#: a path a line names; one that names /dev/shm or a torch segment; a DataLoader traceback
PATH = re.compile(r"(?:'|\"|\s|^)(/[\w.@+-]+(?:/[\w.@+-]+)+)")
SHM_PATH = re.compile(r'/dev/shm|/torch_|\bshm\b', I)
DATALOADER = re.compile(r'DataLoader|dataloader\.py|_worker_loop|multiprocessing|'
                        r'torch/storage|share_memory|collate', I)


def last(pattern, lines):
    """The last line that matches (the error a traceback ends with)."""
    found = ''
    for line in lines:
        if pattern.search(line):
            found = line.strip()
    return found[:300]


#: how the lines gpufleet's Slurm prolog and epilog append to a job's output file begin
#: (run/slurm_health.py writes them): an answer already given, never the job's own error
PROLOG_TOLD, EPILOG_TOLD = 'gpufleet-slurm-prolog: ', 'gpufleet-slurm-epilog: '


def job_lines(text):
    """The lines of ``text`` that are the job's own: not those the prolog or epilog appended
    (a file read after the epilog, or a requeued job's)."""
    return [line for line in str(text or '').splitlines()
            if not line.startswith((PROLOG_TOLD, EPILOG_TOLD))]


def read(text):
    """(rule, line) of the first rule that matches a line of ``text`` (the job's own lines:
    :func:`job_lines`); (None, '') when none."""
    lines = job_lines(text)
    for rule in RULES:
        line = last(rule.pattern, lines)
        if line and (rule.needs is None or rule.needs.search('\n'.join(lines))):
            return rule, line
    return None, ''


#: a kernel log line of the OOM killer, the pid it killed, the pids a traceback names
OOM_LOG = re.compile(r'oom[_-]kill|Out of memory: Kill|Memory cgroup out of memory', I)
KILLED_PID = re.compile(r'Killed process (\d+)')
PIDS = re.compile(r'\bpid(?:\(s\))?[ =:]+([\d, ]+)', I)


def pids_in(text):
    """The pids a traceback names ('DataLoader worker (pid 4242)', 'pid(s) 12, 13')."""
    return set(re.findall(r'\d+', ' '.join(m.group(1) for m in PIDS.finditer(text))))


#: the rules of a thread or process that could not start (the task limits decide), and those
#: a memory kill can show as (a node that counted one: memory)
THREADS = ('thread', 'fork-eagain')
MEMORY_SHOWS_AS = ('enomem', 'mmap-enomem', 'segfault', 'oom') + THREADS
#: a process killed by SIGKILL, as systemd and Go's os/exec say it (the OOM killer's signal, or
#: someone's kill -9: an exit status of 137 to a shell)
SIGKILL = re.compile(r'code=killed, status=9/KILL|signal: killed\b')
