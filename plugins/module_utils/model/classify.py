# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why did my job die: the ceiling behind a failure, from its error text and the node's own
evidence (issue 41; docs/job-shape.md, "Why did my job die").

:func:`answer` reads an error text (a traceback, a job's output, a kernel log) in the context
the job ran in, with the node's evidence (measured peaks, the memory cgroup's events, the exit
status, /dev/shm's size and use, logind's RemoveIPC) and the audit's findings for that context
(reports/findings.py: the one evaluation the audit renders), and returns one answer:

* ``verdict``: ``limit`` (a ceiling is named), ``not_a_limit`` (the text shows a failure that
  no node ceiling causes: CUDA in a forked worker, pickling, a full disk, GPU memory, a driver
  or NCCL fault, a crash) or ``unknown`` (the evidence does not support one ceiling:
  ``decide`` says what would);
* ``ceiling`` (one of :data:`CEILINGS`), ``value`` (what the job had there: a value the text
  or the job states, else the finding's), ``place`` (``path:line`` that sets it: the finding's),
  ``fix`` (the profile change and the job-shape change), ``evidence`` (the lines and facts
  used), ``ruled_out`` ({ceiling: why}: evidence beats text), ``candidates``, ``why`` (the
  tag of a failure that is not a limit), ``line`` (the decisive line), ``summary``.

Evidence beats text: a measured peak far below its ceiling, a /dev/shm that never filled, an
``RLIMIT_NPROC`` the text prints that is far above the threads, or a finding that says the
ceiling is unlimited rules a ceiling out; a memory cgroup's ``oom_kill`` rules a memory kill in.

Plain Python (no Ansible import), runs on Python 3.8 targets and on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import namedtuple

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings

LIMIT, NOT_A_LIMIT, UNKNOWN = 'limit', 'not_a_limit', 'unknown'
VERDICTS = (LIMIT, NOT_A_LIMIT, UNKNOWN)
#: every ceiling the collection manages or audits, then the memory cgroup (no rlimit: a kill)
CEILINGS = ('nofile', 'nproc', 'pids.max', 'memlock', 'shm', 'removeipc') + \
    ceilings.names('cause') + ('core', 'memory')
#: where a job ran (the audit's context names; unknown when not said)
CONTEXTS = ('login', 'ssh', 'service', 'docker', 'podman', 'k8s_pod', 'slurm_job', 'unknown')
CONTAINERS = ('docker', 'podman', 'k8s_pod')
#: the evidence :func:`answer` reads (all optional)
EVIDENCE = ('peaks', 'rlimit_nproc', 'threads', 'shm_size', 'shm_peak', 'oom_kill',
            'exit_status', 'job_state', 'remove_ipc', 'linger', 'kernel_log', 'ceilings')
#: which peak a ceiling bounds (``peaks`` keys)
PEAK_OF = {'nofile': 'nofile', 'nproc': 'threads', 'pids.max': 'threads', 'shm': 'shm_bytes',
           'vm.max_map_count': 'maps', 'fs.file-max': 'file_handles'}
#: a peak below this share of its ceiling rules the ceiling out (a sampler misses a burst,
#: but not one of many times the peak it saw)
FAR = 0.5
# How close a measured peak must come to count as reaching a ceiling: (absolute, fraction),
# the larger (a sampler reads between two allocations; /dev/shm fills between two reads).
NEAR = {'shm': (0, 0.05)}
NEAR_DEFAULT = (2, 0.02)
#: an RLIMIT_NPROC this high is not what a job of a few thousand threads ran into
HUGE = 1048576

WHAT = {
    'nofile': 'RLIMIT_NOFILE (soft nofile) of the process that failed',
    'nproc': 'RLIMIT_NPROC (soft nproc): every thread of the user counts',
    'pids.max': "the cgroup's pids.max: every task of the job's cgroup counts",
    'memlock': 'RLIMIT_MEMLOCK: memory a process may pin (RDMA registration, mlock)',
    'shm': "the size of /dev/shm (a container's --shm-size, a pod's memory emptyDir)",
    'removeipc': "systemd-logind's RemoveIPC: a user's /dev/shm files and semaphores go "
                 "when their last session ends",
    'vm.max_map_count': 'vm.max_map_count: memory maps of one process',
    'fs.file-max': 'fs.file-max: open files of the whole node',
    'fs.inotify.max_user_instances': 'fs.inotify.max_user_instances: inotify instances of '
                                     'the user',
    'fs.inotify.max_user_watches': 'fs.inotify.max_user_watches: inotify watches of the user',
    'core': 'RLIMIT_CORE and kernel.core_pattern: where core files go and how large',
    'memory': "the memory cgroup's memory.max (or the node's RAM): the kernel's OOM killer",
}

#: ceiling -> (the profile change, the job-shape change): what, acted on, changes the value
#: or the demand (a finding's own advice, when it has one, comes first)
FIX = {
    'nofile': ('raise nofile in the profile above the job\'s descriptors (limits_profile: '
               'nofile; limits_job sizes it from the job\'s shape)',
               'fewer batches in flight (num_workers x prefetch_factor) or fewer tensors per '
               'batch; each shared tensor a worker sends is one descriptor'),
    'nproc': ('raise nproc in the profile (limits_profile: nproc; limits_job sizes it)',
              'fewer threads: OMP_NUM_THREADS / MKL_NUM_THREADS per worker, fewer workers; '
              'every thread of the user counts, across its jobs'),
    'pids.max': ('raise pids in the profile (limits_profile: pids: TasksMax, the runtime\'s '
                 'pids limit, the kubelet\'s podPidsLimit)',
                 'fewer threads: OMP_NUM_THREADS per worker, fewer workers or compile '
                 'workers'),
    'memlock': ('raise memlock in the profile (limits_profile: memlock: unlimited for RDMA); '
                'in a container run as root or add CAP_IPC_LOCK',
                'none: RDMA registration needs the memory pinned'),
    'shm': ('give the job a larger /dev/shm (limits_docker_shm_size / limits_podman_shm_size '
            'from job_shm_size; a pod: an emptyDir of medium Memory on /dev/shm)',
            'fewer bytes in flight: batch bytes x prefetch_factor x num_workers per rank'),
    'removeipc': ('keep the user\'s IPC: limits_logind_remove_ipc: "no" (a logind.conf.d '
                  'drop-in) or linger the user (loginctl enable-linger)',
                  'run the job inside a session that outlives it (a service, tmux under '
                  'linger)'),
    'vm.max_map_count': ('raise vm.max_map_count (limits_sysctl, or limits_job\'s kernel '
                         'ceilings)', 'fewer shared tensors alive at once'),
    'fs.file-max': ('raise fs.file-max (limits_sysctl)', 'fewer open files across the node'),
    'fs.inotify.max_user_instances': ('raise fs.inotify.max_user_instances (limits_sysctl)',
                                      'fewer file watchers per user'),
    'fs.inotify.max_user_watches': ('raise fs.inotify.max_user_watches (limits_sysctl)',
                                    'fewer watched files'),
    'core': ('cap core files: core in the profile (limits_profile: core: 0) and a '
             'kernel.core_pattern that does not write to the job\'s disk',
             'none: the crash itself is the bug to fix'),
    'memory': ('give the job more memory (memory.max / --mem / resources.limits.memory): no '
               'rlimit of the profile applies',
               'fewer workers or a smaller prefetch_factor (each worker holds its own copy of '
               'the dataset objects), or a dataset that does not copy on access'),
}

_I = re.IGNORECASE
Rule = namedtuple('Rule', 'name pattern verdict')
# verdict: a ceiling, a tuple of candidates the evidence decides between, or ('not', why).
# The first rule in this order that matches a line wins: the specific before the general, and
# a failure that is not a limit before the general limit rules its text would also match.
RULES = (
    Rule('enfile', re.compile(r'Too many open files in system|\[Errno 23\]|\bENFILE\b'),
         'fs.file-max'),
    Rule('inotify-watches', re.compile(
        r'inotify watch limit reached|inotify_add_watch.*No space left on device|upper limit '
        r'on inotify watches|max_user_watches|System limit for number of file watchers', _I),
        'fs.inotify.max_user_watches'),
    Rule('inotify-instances', re.compile(
        r'inotify.*(Too many open files|\bEMFILE\b|instance limit|instances limit)|'
        r'max_user_instances', _I), 'fs.inotify.max_user_instances'),
    Rule('cuda-fork', re.compile(r'Cannot re-initialize CUDA in forked subprocess', _I),
         ('not', 'cuda-fork')),
    Rule('pickling', re.compile(r"Can't pickle|PicklingError|cannot pickle|Can't get "
                                r"attribute .* on <module", _I), ('not', 'pickling')),
    Rule('gpu-oom', re.compile(r'CUDA out of memory|OutOfMemoryError: CUDA|'
                               r'CUBLAS_STATUS_ALLOC_FAILED|out of memory on device|'
                               r'HIP out of memory', _I), ('not', 'gpu-oom')),
    Rule('memlock', re.compile(
        r'ibv_reg_mr|ibv_create_(cq|qp|srq)\b.*(fail|Cannot allocate memory)|'
        r'max locked memory|ulimit -l|RLIMIT_MEMLOCK|\bmemlock\b|'
        r'\bmlock(all)?\b.*(Cannot allocate memory|ENOMEM|Operation not permitted|EPERM)|'
        r'(failed|unable|could not) to (register|pin|lock) (the )?memory|'
        r'memory registration failed|locked memory', _I), 'memlock'),
    Rule('removeipc', re.compile(
        r'SemLock\._rebuild|\bRemoveIPC\b|could not unlink the shared memory file|'
        r'unable to open shared memory object <?/torch_\S*>? in read-write mode: No such file',
        _I), 'removeipc'),
    Rule('ancdata', re.compile(r'received 0 items of ancdata'), 'nofile'),
    Rule('emfile', re.compile(r'Too many open files|\[Errno 24\]|\bEMFILE\b|ulimit -n|'
                              r'shared memory object .*\(24\)'), 'nofile'),
    Rule('pids-controller', re.compile(r'fork rejected by pids controller'), 'pids.max'),
    Rule('map-count', re.compile(r'vm\.max_map_count|max virtual memory areas|'
                                 r'Memory mapping file failed|max_map_count|'
                                 r'unable to mmap \d+ bytes', _I), 'vm.max_map_count'),
    Rule('thread', re.compile(
        r"can't start new thread|pthread_create|Thread creation failed|RLIMIT_NPROC|"
        r'fork: (retry: )?Resource temporarily unavailable|'
        r'(thread|fork|clone|spawn).*(Resource temporarily unavailable|\bEAGAIN\b|'
        r'\[Errno 11\])', _I), ('pids.max', 'nproc')),
    Rule('shm', re.compile(
        r'insufficient shared memory|unable to allocate shared memory|out of shared memory|'
        r'\bBus error\b|bus error encountered|SIGBUS|'
        r'creating shared memory segment|unable to write to file <?/torch_|'
        r'(/dev/shm|torch_\d+_|\bshm\b).*No space left on device|'
        r'No space left on device.*(/dev/shm|torch_\d+_|\bshm\b)', _I), 'shm'),
    Rule('oom', re.compile(
        r'killed by signal: Killed|oom[_-]kill|OOMKilled|OUT_OF_MEMORY|Out of memory: Kill|'
        r'Memory cgroup out of memory|exit(ed)?( with)?( code| status)?:? 137\b|'
        r'exitCode: 137|signal 9 \(SIGKILL\)|\bSIGKILL\b.*memory', _I), 'memory'),
    Rule('core', re.compile(r'core\.\d+ .*(fill|GB|space)|core (dump|file)s? (fill|took|'
                            r'used)|LimitCORE|ulimit -c', _I), 'core'),
    Rule('nccl-timeout', re.compile(r'Watchdog caught collective operation timeout|'
                                    r'collective operation timeout|NCCL.*timed? ?out', _I),
         ('not', 'nccl')),
    Rule('driver', re.compile(r'\bXid\b|illegal memory access|unspecified launch failure|'
                              r'uncorrectable ECC|CUDA driver version is insufficient|'
                              r'CUDA error: device-side assert', _I), ('not', 'driver')),
    Rule('segfault', re.compile(r'Segmentation fault|SIGSEGV|killed by signal: '
                                r'Segmentation', _I), ('not', 'segfault')),
    Rule('disk-quota', re.compile(r'Disk quota exceeded|\bEDQUOT\b', _I), ('not', 'disk-full')),
    Rule('enospc', re.compile(r'No space left on device|\[Errno 28\]|\bENOSPC\b', _I),
         ('shm', 'disk')),
    Rule('mmap-enomem', re.compile(r'(mmap|map_count).*(Cannot allocate memory|\bENOMEM\b|'
                                   r'\[Errno 12\])|(Cannot allocate memory|\[Errno 12\])'
                                   r'.*mmap', _I), ('vm.max_map_count', 'memory')),
    Rule('enomem', re.compile(r'Cannot allocate memory|\[Errno 12\]|\bENOMEM\b|MemoryError|'
                              r'std::bad_alloc', _I), ('memory', 'vm.max_map_count')),
)
_NPROC_STATED = re.compile(r'RLIMIT_NPROC\D{0,20}(\d+|unlimited)\s*current', _I)
_PATH = re.compile(r"(?:'|\"|\s|^)(/[\w.@+-]+(?:/[\w.@+-]+)+)")
_SHM_PATH = re.compile(r'/dev/shm|/torch_|\bshm\b', _I)
_ERRNO_LINE = re.compile(r'No space left on device|\[Errno 28\]|ENOSPC', _I)
_DATALOADER = re.compile(r'DataLoader|dataloader\.py|_worker_loop|multiprocessing|'
                         r'torch/storage|share_memory|collate', _I)


def number(value):
    """An int, or None for unlimited/max/infinity/-1/missing/not a number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in ('unlimited', 'max', 'infinity',
                                                            '-1', ''):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def unlimited(value):
    return isinstance(value, str) and value.strip().lower() in ('unlimited', 'max',
                                                                'infinity', '-1')


def reached(name, peak, limit):
    """Did a measured peak come within NEAR of a finite ceiling?"""
    if peak is None or limit is None:
        return False
    absolute, fraction = NEAR.get(name, NEAR_DEFAULT)
    return peak >= limit - max(absolute, limit * fraction)


def _last(pattern, lines):
    """The last line that matches (the error a traceback ends with)."""
    found = ''
    for line in lines:
        if pattern.search(line):
            found = line.strip()
    return found[:300]


def read(text):
    """(rule, line) of the first rule that matches a line of ``text``; (None, '') when none."""
    lines = str(text or '').splitlines()
    for rule in RULES:
        line = _last(rule.pattern, lines)
        if line:
            return rule, line
    return None, ''


# --- what the node says ------------------------------------------------------------------

def _soft(actual):
    """The soft side of a finding's actual ('soft:hard', a number, 'unlimited')."""
    if actual is None:
        return None
    if isinstance(actual, dict):
        return actual.get('soft')
    return str(actual).split(':', 1)[0]


#: ceiling -> (the finding's context, its item) for a job's context ('' = the job's)
FINDING = {'nofile': ('', 'nofile'), 'nproc': ('', 'nproc'), 'memlock': ('', 'memlock'),
           'pids.max': ('', 'pids'), 'core': ('', 'core')}


def finding_of(ceiling, context, findings):
    """The audit's finding that holds the job's value of a ceiling in its context (kernel
    ceilings: the node-wide finding; core: the context's rlimit, else where cores go)."""
    want = [FINDING[ceiling]] if ceiling in FINDING else []
    if ceiling in ceilings.NAMES:
        want = [('kernel', ceiling)]
    if ceiling == 'core':
        want.append(('kernel', 'core_pattern'))
    for wanted_context, item in want:
        for found in findings or []:
            if found.get('item') == item and found.get('context') == (wanted_context or
                                                                       context):
                return found
    return None


def _place(found):
    """``path:line`` of what sets the job's value: the soft (or only) side's place."""
    places = (found or {}).get('places') or {}
    spot = places.get('soft') or places.get('value') or (found or {}).get('place')
    if not spot or not spot.get('path'):
        return ''
    return spot['path'] if spot.get('line') is None else '%s:%s' % (spot['path'], spot['line'])


def _given(evidence, ceiling):
    """(value, place) of a ceiling as the caller gave it in ``evidence['ceilings']`` (a
    number, 'unlimited', or {value, source}): what the job itself read."""
    entry = ((evidence or {}).get('ceilings') or {}).get(ceiling)
    if isinstance(entry, dict):
        return entry.get('value', entry.get('soft')), entry.get('source') or ''
    return entry, ''


def value_of(ceiling, context, findings, evidence):
    """(value, place, finding) of a ceiling for the job: a value the job or its text states
    first, else the audit's finding in the job's context."""
    value, place = _given(evidence, ceiling)
    if ceiling == 'nproc' and value is None and (evidence or {}).get('rlimit_nproc') is not None:
        value, place = evidence['rlimit_nproc'], 'RLIMIT_NPROC as the failure printed it'
    if ceiling == 'shm' and value is None and (evidence or {}).get('shm_size') is not None:
        value, place = evidence['shm_size'], place or "the job's /dev/shm"
    found = finding_of(ceiling, context, findings)
    if found is not None:
        if value is None:
            value = _soft(found.get('actual'))
        place = _place(found) or place
    return value, place, found


def ruled_out(ceiling, context, findings, evidence):
    """Why the evidence rules a ceiling out ('' when it does not): a measured peak far below
    it, a /dev/shm that never filled, a stated or audited unlimited/huge value, a context the
    ceiling does not reach."""
    evidence = evidence or {}
    value, _place_, _found = value_of(ceiling, context, findings, evidence)
    peaks = evidence.get('peaks') or {}
    limit = number(value)
    if ceiling == 'shm':
        size, peak = number(evidence.get('shm_size') or value), number(evidence.get(
            'shm_peak', peaks.get('shm_bytes')))
        if size and peak is not None and peak < size * FAR:
            return '/dev/shm never filled: peak %d of %d bytes' % (peak, size)
        return ''
    if ceiling == 'removeipc':
        if context in CONTAINERS:
            return 'a container has its own /dev/shm: logind does not clean it'
        if str(evidence.get('remove_ipc', '')).lower() in ('no', 'false', '0'):
            return 'RemoveIPC is no on this node'
        if evidence.get('linger') is True:
            return "the user lingers: logind keeps their IPC"
        return ''
    if ceiling == 'memory':
        if evidence.get('oom_kill') is not None and number(evidence['oom_kill']) == 0 and \
                evidence.get('exit_status') not in (137, '137'):
            return "the job's memory cgroup counted no oom_kill"
        return ''
    if ceiling in ('nproc', 'pids.max', 'nofile', 'memlock', 'vm.max_map_count') and (
            unlimited(value) or (limit is not None and limit >= HUGE and ceiling != 'memlock'
                                 and ceiling != 'vm.max_map_count')):
        return '%s is %s here' % (ceiling, value)
    if ceiling == 'nproc':
        # RLIMIT_NPROC counts every thread of the user, not only the job's: a job's own
        # thread count cannot rule it out
        return ''
    peak = number(peaks.get(PEAK_OF.get(ceiling, '')))
    if ceiling == 'pids.max' and peak is None:
        peak = number(evidence.get('threads'))
    if limit and peak is not None and peak < limit * FAR:
        return 'the measured %s peak %d is far below %s %d' % (PEAK_OF[ceiling], peak,
                                                              ceiling, limit)
    return ''


_OOM_LOG = re.compile(r'oom[_-]kill|Out of memory: Kill|Memory cgroup out of memory', _I)
_KILLED_PID = re.compile(r'Killed process (\d+)')
_PIDS = re.compile(r'\bpid(?:\(s\))?[ =:]+([\d, ]+)', _I)


def _memory_evidence(evidence, pids=()):
    """Node evidence of a memory kill: the cgroup's oom_kill, Slurm's OUT_OF_MEMORY, or a
    kernel log line of the OOM killer; '' when none."""
    evidence = evidence or {}
    if number(evidence.get('oom_kill')):
        return "the job's memory cgroup counted %s oom_kill" % evidence['oom_kill']
    state = str(evidence.get('job_state') or '')
    if state.upper().startswith('OUT_OF_ME') or state == 'OOMKilled':
        return 'the job ended %s' % state
    line = _last(_OOM_LOG, str(evidence.get('kernel_log') or '').splitlines())
    killed = _KILLED_PID.search(line)
    if killed and pids and killed.group(1) not in pids:
        # an OOM kill of another process than the job's
        return ''
    return 'the kernel log: %s' % line if line else ''


def _enospc(line, text, context, evidence):
    """shm, disk or '' for a 'No space left on device': the path the line names decides;
    a DataLoader traceback in a container (64 MiB /dev/shm by default) or a /dev/shm near
    full is shm."""
    paths = _PATH.findall(line)
    if paths:
        return 'shm' if any(_SHM_PATH.search(p) for p in paths) else 'disk'
    size, peak = number((evidence or {}).get('shm_size')), number((evidence or {}).get(
        'shm_peak'))
    if size and peak is not None and reached('shm', peak, size):
        return 'shm'
    if context in CONTAINERS or _DATALOADER.search(text):
        # a container's /dev/shm is 64 MiB unless sized; a worker's shared batch is the write
        # a DataLoader traceback fails on
        return 'shm'
    return ''


def _prior(candidates, context, findings, evidence):
    """Among thread-creation candidates: the one the evidence or the context points to."""
    nproc = number(value_of('nproc', context, findings, evidence)[0])
    threads = number((evidence or {}).get('threads') or ((evidence or {}).get('peaks') or
                                                          {}).get('threads'))
    if nproc is not None and threads is not None and reached('nproc', threads, nproc):
        return 'nproc', 'the job\'s %d threads reached RLIMIT_NPROC %d' % (threads, nproc)
    pids = number(value_of('pids.max', context, findings, evidence)[0])
    if pids is not None and threads is not None and reached('pids.max', threads, pids):
        return 'pids.max', 'the job\'s %d threads reached pids.max %d' % (threads, pids)
    if (evidence or {}).get('rlimit_nproc') is not None:
        return 'nproc', 'the failure printed RLIMIT_NPROC %s' % evidence['rlimit_nproc']
    if context in CONTAINERS + ('service',):
        return 'pids.max', ('a %s has a pids limit (the runtime\'s or TasksMax) and inherits '
                            'an unlimited nproc' % context)
    if context in ('login', 'ssh', 'slurm_job'):
        return 'nproc', 'a %s gets the user\'s RLIMIT_NPROC (limits.conf, or propagated by ' \
                        'Slurm)' % context
    return '', ''


def _peak_at_a_ceiling(context, findings, evidence):
    """(ceiling, why) of the first measured peak that reached its ceiling (an error text that
    names none, such as a worker queue's EOFError, is decided by it), else None."""
    peaks = dict((evidence or {}).get('peaks') or {})
    if (evidence or {}).get('shm_peak') is not None:
        peaks['shm_bytes'] = evidence['shm_peak']
    for name in ('nofile', 'pids.max', 'nproc', 'shm', 'vm.max_map_count', 'fs.file-max'):
        peak = number(peaks.get(PEAK_OF[name]))
        limit = number(value_of(name, context, findings, evidence)[0])
        if reached(name, peak, limit):
            return name, 'no error names a ceiling; the measured %s %d reached %s %d' % (
                PEAK_OF[name], peak, name, limit)
    return None


# --- the answer --------------------------------------------------------------------------

def _answer(context, line, **fields):
    found = dict(verdict=UNKNOWN, ceiling='', context=context, value=None, place='',
                 what='', fix=[], evidence=[line] if line else [], ruled_out={},
                 candidates=[], decide='', why='', line=line, reason='')
    found.update(fields)
    found['summary'] = summary(found)
    return found


def _limit(ceiling, context, line, findings, evidence, reason, used, out):
    value, place, found = value_of(ceiling, context, findings, evidence)
    fix = []
    if found and found.get('advice') and found.get('status') not in ('ok', None):
        fix.append(found['advice'].get('action') or '')
    fix += [f for f in FIX[ceiling] if not f.startswith('none')]
    if found is not None:
        used = used + ['the audit: %s %s is %s (%s)%s' % (
            found.get('context'), found.get('item'), found.get('actual'), found.get('status'),
            ' at %s' % place if place else '')]
    return _answer(context, line, verdict=LIMIT, ceiling=ceiling, value=value, place=place,
                   what=WHAT[ceiling], fix=[f for f in fix if f],
                   evidence=([line] if line else []) + used, ruled_out=out, reason=reason)


def answer(text, context='unknown', findings=None, evidence=None):
    """The answer to "why did my job die" (see the module docstring): ``text`` the error
    text (a traceback, a job's output; a kernel log in ``evidence['kernel_log']`` is read as
    well), ``context`` one of :data:`CONTEXTS`, ``findings`` the audit's findings (the
    limits_audit result's ``findings``), ``evidence`` node facts (:data:`EVIDENCE`)."""
    context = context if context in CONTEXTS else 'unknown'
    evidence = dict(evidence or {})
    text = str(text or '')
    stated = _NPROC_STATED.search(text)
    if stated and evidence.get('rlimit_nproc') is None:
        evidence['rlimit_nproc'] = stated.group(1)
    rule, line = read(text)
    pids = set(re.findall(r'\d+', ' '.join(m.group(1) for m in _PIDS.finditer(text))))
    memory = _memory_evidence(evidence, pids)
    if rule is None and evidence.get('kernel_log'):
        rule, line = read(evidence['kernel_log'])
    out = {}
    if rule is None:
        reached_one = _peak_at_a_ceiling(context, findings, evidence)
        if reached_one:
            return _limit(reached_one[0], context, '', findings, evidence, reached_one[1],
                          [reached_one[1]], out)
        if memory:
            return _limit('memory', context, '', findings, evidence, memory, [memory], out)
        if str(evidence.get('exit_status')) == '137':
            return _answer(context, '', candidates=['memory'], reason='exit status 137 '
                           '(SIGKILL) and no error text', decide="the job cgroup's "
                           "memory.events oom_kill, or the kernel log (dmesg) at the time")
        return _answer(context, '', reason='the text matches no known failure' if
                       text.strip() else 'no error text', decide='the last lines of the '
                       'job\'s stderr, its exit status and the kernel log at the time')
    verdict = rule.verdict
    if memory and rule.name in ('enomem', 'mmap-enomem', 'segfault', 'oom'):
        # a worker the OOM killer took shows as Killed, a crash or ENOMEM: the node says which
        return _limit('memory', context, line, findings, evidence, memory, [memory], {})
    if isinstance(verdict, tuple) and verdict[0] == 'not':
        return _answer(context, line, verdict=NOT_A_LIMIT, why=verdict[1],
                       reason='%s: no node ceiling causes it' % verdict[1])
    candidates = [verdict] if isinstance(verdict, str) else list(verdict)
    if rule.name == 'enospc':
        which = _enospc(line, text, context, evidence)
        if which == 'disk':
            return _answer(context, line, verdict=NOT_A_LIMIT, why='disk-full',
                           reason='the path the error names is not /dev/shm: a full disk')
        candidates = ['shm'] if which == 'shm' else candidates
    for name in list(candidates):
        if name in WHAT:
            why = ruled_out(name, context, findings, evidence)
            if why:
                out[name] = why
    left = [c for c in candidates if c not in out]
    if len(left) > 1 and rule.name == 'thread':
        chosen, why = _prior(left, context, findings, evidence)
        if chosen:
            return _limit(chosen, context, line, findings, evidence, why, [why], out)
    if len(left) > 1 and rule.name in ('enomem', 'mmap-enomem'):
        # ENOMEM: the map count when the maps reached it, else memory
        maps = number((evidence.get('peaks') or {}).get('maps'))
        limit = number(value_of('vm.max_map_count', context, findings, evidence)[0])
        if reached('vm.max_map_count', maps, limit):
            return _limit('vm.max_map_count', context, line, findings, evidence,
                          'the measured maps %d reached vm.max_map_count %d' % (maps, limit),
                          [], out)
        left = ['memory'] if 'memory' in left else left[:1]
    if len(left) == 1:
        return _limit(left[0], context, line, findings, evidence,
                      'the error names it' if len(candidates) == 1 else
                      'the error, and the evidence rules out %s' % ', '.join(sorted(out)),
                      [], out)
    return _answer(context, line, candidates=left, ruled_out=out,
                   reason='the error is one of %s%s' % (
                       ', '.join(candidates), '; ruled out: %s' % '; '.join(
                           '%s (%s)' % kv for kv in sorted(out.items())) if out else ''),
                   decide=decide(left or [c for c in candidates if c in DECIDE], context))


#: what would decide between candidates, per ceiling
DECIDE = {
    'nofile': "the failing process's /proc/PID/limits and its open descriptors (ls "
              "/proc/PID/fd | wc -l) at the failure",
    'nproc': "the user's RLIMIT_NPROC in that context (the audit's nproc row) and the "
             "threads of the user (ps -L -u USER | wc -l)",
    'pids.max': "the job cgroup's pids.max and pids.peak (pids.events: max)",
    'shm': '/dev/shm size and use during the job (df /dev/shm)',
    'memory': "the job cgroup's memory.events oom_kill, the kernel log (dmesg), exit status 137",
    'vm.max_map_count': 'the maps of the failing process (wc -l /proc/PID/maps) against '
                        'vm.max_map_count',
    'removeipc': "logind's RemoveIPC and whether the user lingers (loginctl show-user)",
    'memlock': "the failing process's Max locked memory (/proc/PID/limits) and "
               "CAP_IPC_LOCK",
    'disk': 'df of the path the job wrote to',
}


def decide(candidates, context):
    """What would decide between candidates (one clause each)."""
    said = [DECIDE[c] for c in candidates if c in DECIDE]
    if context == 'unknown':
        said.append('the context the job ran in (login, service, docker, k8s_pod, '
                    'slurm_job)')
    return '; '.join(said)


def summary(found):
    """One line: 'nofile = 1024 at /etc/security/limits.d/x.conf:3: <line>', 'not a limit
    (cuda-fork): <line>' or 'unknown (shm or disk): <decide>'."""
    if found['verdict'] == LIMIT:
        head = found['ceiling']
        if found['value'] is not None:
            head += ' = %s' % found['value']
        if found['place']:
            head += ' at %s' % found['place']
        return '%s in %s: %s' % (head, found['context'], found['line'] or found['reason'])
    if found['verdict'] == NOT_A_LIMIT:
        return 'not a limit (%s): %s' % (found['why'], found['line'])
    return 'unknown%s: %s%s' % (
        ' (%s)' % ' or '.join(found['candidates']) if found['candidates'] else '',
        found['reason'], '; to decide: %s' % found['decide'] if found['decide'] else '')
