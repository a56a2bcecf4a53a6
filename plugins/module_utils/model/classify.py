# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why did my job die: the ceiling behind a failure, from its error text and the node's own
evidence (issue 41; docs/job-shape.md, "Why did my job die").

:func:`answer` reads an error text (a traceback, a job's output, a kernel log; the rules are
model/failure_text.py's) where the job ran (:data:`Where`, which contexts/ declares per
record), with the node's evidence (measured peaks, the memory cgroup's events, the exit status,
/dev/shm's size and use, logind's RemoveIPC) and the audit's findings for that context
(reports/findings.py: the one evaluation the audit renders), and returns one answer:

* ``verdict``: ``limit`` (a ceiling is named), ``not_a_limit`` (the text shows a failure that
  no node ceiling causes: CUDA in a forked worker, pickling, a full disk, GPU memory, a driver
  or NCCL fault, a crash) or ``unknown`` (the evidence does not support one ceiling:
  ``decide`` says what would);
* ``ceiling`` (one of :data:`CEILINGS`), ``value`` (what the job had there: a value the text
  or the job states, else the finding's), ``place`` (``path:line`` that sets it: the finding's),
  ``fix`` (the finding's own advice, then the profile change and the job-shape change),
  ``evidence`` (the lines and facts used), ``ruled_out`` ({ceiling: why}: evidence beats text),
  ``candidates``, ``why`` (the tag of a failure that is not a limit), ``line`` (the decisive
  line), ``summary``.

Evidence beats text: a measured peak far below its ceiling, a /dev/shm that never filled, an
``RLIMIT_NPROC`` the text prints that is far above any job, or a finding that says the ceiling
is unlimited rules a ceiling out; a memory cgroup's ``oom_kill`` rules a memory kill in.

Plain Python (no Ansible import), runs on Python 3.8 targets and on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import failure_text as ft

LIMIT, NOT_A_LIMIT, UNKNOWN = 'limit', 'not_a_limit', 'unknown'
VERDICTS = (LIMIT, NOT_A_LIMIT, UNKNOWN)
#: where a job ran, as the classifier needs it: the context's name (the audit's, for its
#: findings), whether it has its own /dev/shm and IPC (a container: logind's RemoveIPC does not
#: reach it, its runtime sizes /dev/shm) and the task limit a thread that cannot start there
#: usually meets first (None: the values must decide). contexts/ declares it per record
#: (registry.job_context).
Where = namedtuple('Where', 'name own_ipc task_limit')
NOWHERE = Where(UNKNOWN, False, None)
#: every ceiling the collection manages or audits, then the memory cgroup (no rlimit: a kill)
CEILINGS = ('nofile', 'nproc', 'pids.max', 'memlock', 'shm', 'removeipc') + \
    ceilings.names('cause') + ('core', 'memory')
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
#: an RLIMIT_NPROC or pids.max this high is not what a job of a few thousand threads ran into
HUGE = 262144
#: why a context's task limit is the likely one (Where.task_limit)
TASK_LIMIT_WHY = {
    'pids.max': "a pids limit (the runtime's, the unit's TasksMax) caps the job's tasks, with "
                "an unlimited nproc,",
    'nproc': "the user's RLIMIT_NPROC (limits.conf, or propagated by Slurm) counts every "
             "thread of the user",
}

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


def number(value):
    """An int, or None for unlimited/max/infinity/-1/missing/not a number."""
    if isinstance(value, bool) or value is None:
        return None
    if unlimited(value) or value == '':
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


# --- what the node says ------------------------------------------------------------------

def _soft(actual):
    """The soft side of a finding's actual ('soft:hard', a number, 'unlimited')."""
    if actual is None:
        return None
    if isinstance(actual, dict):
        return actual.get('soft')
    return str(actual).split(':', 1)[0]


#: ceiling -> the item of the finding that holds it in the job's context
ITEM = {'nofile': 'nofile', 'nproc': 'nproc', 'memlock': 'memlock', 'pids.max': 'pids',
        'core': 'core'}


def finding_of(ceiling, context, findings):
    """The audit's finding that holds the job's value of a ceiling in its context (kernel
    ceilings: the node-wide finding; core: the context's rlimit, else where cores go)."""
    want = [(context, ITEM[ceiling])] if ceiling in ITEM else []
    if ceiling in ceilings.NAMES:
        want = [('kernel', ceiling)]
    if ceiling == 'core':
        want.append(('kernel', 'core_pattern'))
    for wanted_context, item in want:
        for found in findings or []:
            if found.get('item') == item and found.get('context') == wanted_context:
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


def value_of(ceiling, where, findings, evidence):
    """(value, place, finding) of a ceiling for the job: a value the job or its text states
    first, else the audit's finding in the job's context."""
    value, place = _given(evidence, ceiling)
    if ceiling == 'nproc' and value is None and (evidence or {}).get('rlimit_nproc') is not None:
        value, place = evidence['rlimit_nproc'], 'RLIMIT_NPROC as the failure printed it'
    if ceiling == 'shm' and value is None and (evidence or {}).get('shm_size') is not None:
        value, place = evidence['shm_size'], place or "the job's /dev/shm"
    found = finding_of(ceiling, where.name, findings)
    if found is not None:
        if value is None:
            value = _soft(found.get('actual'))
        place = _place(found) or place
    return value, place, found


def ruled_out(ceiling, where, findings, evidence):
    """Why the evidence rules a ceiling out ('' when it does not): a measured peak far below
    it, a /dev/shm that never filled, a stated or audited unlimited/huge value, a context the
    ceiling does not reach."""
    evidence = evidence or {}
    value = value_of(ceiling, where, findings, evidence)[0]
    peaks = evidence.get('peaks') or {}
    limit = number(value)
    if ceiling == 'shm':
        size, peak = number(evidence.get('shm_size') or value), number(evidence.get(
            'shm_peak', peaks.get('shm_bytes')))
        if size and peak is not None and peak < size * FAR:
            return '/dev/shm never filled: peak %d of %d bytes' % (peak, size)
        return ''
    if ceiling == 'removeipc':
        if where.own_ipc:
            return 'a %s has its own /dev/shm and IPC: logind does not clean them' % where.name
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
    if ceiling in ('nproc', 'pids.max', 'memlock') and (
            unlimited(value) or (limit is not None and limit >= HUGE and ceiling != 'memlock')):
        return '%s is %s here' % (ceiling, value)
    if ceiling == 'nproc':
        # RLIMIT_NPROC counts every thread of the user, not only the job's: a job's own
        # thread count cannot rule it out
        return ''
    peak = number(peaks.get(PEAK_OF.get(ceiling, '')))
    if ceiling == 'pids.max' and peak is None:
        peak = number(evidence.get('threads'))
    if limit and peak is not None and peak < limit * FAR:
        return 'the measured %s peak %d is far below %s %d' % (
            PEAK_OF[ceiling], peak, ceiling, limit)
    return ''


def _memory_evidence(evidence, pids=()):
    """Node evidence of a memory kill: the cgroup's oom_kill, Slurm's OUT_OF_MEMORY, a pod's
    OOMKilled, or a kernel log line of the OOM killer (of the job's pid, where the text names
    its pids); '' when none."""
    evidence = evidence or {}
    if number(evidence.get('oom_kill')):
        return "the job's memory cgroup counted %s oom_kill" % evidence['oom_kill']
    state = str(evidence.get('job_state') or '')
    if state.upper().startswith('OUT_OF_ME') or state in ('OOMKilled', 'OutOfMemory'):
        return 'the job ended %s' % state
    line = ft.last(ft.OOM_LOG, str(evidence.get('kernel_log') or '').splitlines())
    killed = ft.KILLED_PID.search(line)
    if killed and pids and killed.group(1) not in pids:
        # an OOM kill of another process than the job's
        return ''
    return 'the kernel log: %s' % line if line else ''


def _enospc(line, text, where, evidence):
    """shm, disk or '' for a 'No space left on device': the path the line names decides;
    a /dev/shm near full, a container (64 MiB /dev/shm unless sized) or a DataLoader traceback
    (a worker's shared batch is the write it fails on) is shm."""
    paths = ft.PATH.findall(line)
    if paths:
        return 'shm' if any(ft.SHM_PATH.search(p) for p in paths) else 'disk'
    size, peak = number((evidence or {}).get('shm_size')), number((evidence or {}).get(
        'shm_peak'))
    if size and peak is not None and reached('shm', peak, size):
        return 'shm'
    if where.own_ipc or ft.DATALOADER.search(text):
        return 'shm'
    return ''


def _prior(candidates, where, findings, evidence):
    """Among thread-creation candidates (those not ruled out): the one the values point to
    (the threads at RLIMIT_NPROC or pids.max, an RLIMIT_NPROC the failure printed), else the
    context's task limit, else the one task limit a known context has left; ('', '') when
    none does."""
    evidence = evidence or {}
    threads = number(evidence.get('threads') or (evidence.get('peaks') or {}).get('threads'))
    for name in ('nproc', 'pids.max'):
        limit = number(value_of(name, where, findings, evidence)[0])
        if name in candidates and reached(name, threads, limit):
            return name, "the job's %d threads reached %s %d" % (
                threads, 'RLIMIT_NPROC' if name == 'nproc' else name, limit)
    if 'nproc' in candidates and (evidence or {}).get('rlimit_nproc') is not None:
        return 'nproc', 'the failure printed RLIMIT_NPROC %s' % evidence['rlimit_nproc']
    both = [(number(value_of(n, where, findings, evidence)[0]), n) for n in ('nproc', 'pids.max')
            if n in candidates]
    if len(both) == 2 and None not in (both[0][0], both[1][0]):
        (low, name), (high, other) = sorted(both)
        if low * 2 <= high:
            # the job's tasks count against both: they meet the far lower one first
            return name, '%s %d is far below %s %d here: the job meets it first' % (
                name, low, other, high)
    if where.task_limit in candidates:
        return where.task_limit, '%s in a %s' % (TASK_LIMIT_WHY[where.task_limit], where.name)
    if where.name != UNKNOWN:
        # one of the two task limits ruled out: the other one is what a known context has left
        for name, other in (('nproc', 'pids.max'), ('pids.max', 'nproc')):
            if name in candidates and other not in candidates:
                return name, '%s is ruled out: %s is the task limit left in a %s' % (
                    other, name, where.name)
    return '', ''


def _peak_at_a_ceiling(where, findings, evidence):
    """(ceiling, why) of the first measured peak that reached its ceiling (an error text that
    names none, such as a worker queue's EOFError, is decided by it), else None."""
    peaks = dict((evidence or {}).get('peaks') or {})
    if (evidence or {}).get('shm_peak') is not None:
        peaks['shm_bytes'] = evidence['shm_peak']
    for name in ('nofile', 'pids.max', 'nproc', 'shm', 'vm.max_map_count', 'fs.file-max'):
        peak = number(peaks.get(PEAK_OF[name]))
        limit = number(value_of(name, where, findings, evidence)[0])
        if reached(name, peak, limit):
            return name, 'no error names a ceiling; the measured %s %d reached %s %d' % (
                PEAK_OF[name], peak, name, limit)
    return None


# --- the answer --------------------------------------------------------------------------

def _answer(where, line, **fields):
    found = dict(verdict=UNKNOWN, ceiling='', context=where.name, value=None, place='',
                 what='', fix=[], evidence=[line] if line else [], ruled_out={},
                 candidates=[], decide='', why='', line=line, reason='')
    found.update(fields)
    found['summary'] = summary(found)
    return found


def _limit(ceiling, where, line, findings, evidence, reason, used, out):
    value, place, found = value_of(ceiling, where, findings, evidence)
    fix = []
    if found and found.get('advice') and found.get('status') not in ('ok', None):
        fix.append(found['advice'].get('action') or '')
    fix += [f for f in FIX[ceiling] if not f.startswith('none')]
    if found is not None:
        used = used + ['the audit: %s %s is %s (%s)%s' % (
            found.get('context'), found.get('item'), found.get('actual'), found.get('status'),
            ' at %s' % place if place else '')]
    return _answer(where, line, verdict=LIMIT, ceiling=ceiling, value=value, place=place,
                   what=WHAT[ceiling], fix=[f for f in fix if f],
                   evidence=([line] if line else []) + used, ruled_out=out, reason=reason)


def _without_rule(text, where, findings, evidence, memory):
    """The answer when no rule matches: a peak at its ceiling, else a memory kill the node
    shows, else unknown with what would decide it."""
    reached_one = _peak_at_a_ceiling(where, findings, evidence)
    if reached_one:
        return _limit(reached_one[0], where, '', findings, evidence, reached_one[1],
                      [reached_one[1]], {})
    if memory:
        return _limit('memory', where, '', findings, evidence, memory, [memory], {})
    if str(evidence.get('exit_status')) == '137':
        return _answer(where, '', candidates=['memory'], reason='exit status 137 (SIGKILL) '
                       'and no error text', decide="the job cgroup's memory.events oom_kill, "
                       "or the kernel log (dmesg) at the time")
    return _answer(where, '', reason='the text matches no known failure' if text.strip()
                   else 'no error text', decide="the last lines of the job's stderr, its "
                   "exit status and the kernel log at the time")


def answer(text, where=None, findings=None, evidence=None):
    """The answer to "why did my job die" (see the module docstring): ``text`` the error
    text (a traceback, a job's output; a kernel log in ``evidence['kernel_log']`` is read as
    well), ``where`` the job's context (:data:`Where`; None: not known), ``findings`` the
    audit's findings (the limits_audit result's ``findings``), ``evidence`` node facts
    (:data:`EVIDENCE`)."""
    where = where or NOWHERE
    evidence = dict(evidence or {})
    text = str(text or '')
    if evidence.get('exit_status') in (None, '') and ft.SIGKILL.search(text):
        evidence['exit_status'] = 137
    stated = ft.NPROC_STATED.search(text)
    if stated and evidence.get('rlimit_nproc') is None:
        evidence['rlimit_nproc'] = stated.group(1)
    rule, line = ft.read(text)
    memory = _memory_evidence(evidence, ft.pids_in(text))
    if rule is None and evidence.get('kernel_log'):
        # the kernel's own lines (fork rejected by the pids controller, ENFILE); its OOM kills
        # are the memory evidence above, which checks their pid
        kernel = str(evidence['kernel_log']).splitlines()
        rule, line = ft.read('\n'.join(l for l in kernel if not ft.OOM_LOG.search(l)))
    if rule is None:
        return _without_rule(text, where, findings, evidence, memory)
    if memory and rule.name in ft.MEMORY_SHOWS_AS:
        # a worker the OOM killer took shows as Killed, a crash, ENOMEM or EAGAIN: the node
        # says which
        return _limit('memory', where, line, findings, evidence, memory, [memory], {})
    if isinstance(rule.verdict, tuple) and rule.verdict[0] == 'not':
        return _answer(where, line, verdict=NOT_A_LIMIT, why=rule.verdict[1],
                       reason='%s: no node ceiling causes it' % rule.verdict[1])
    candidates = [rule.verdict] if isinstance(rule.verdict, str) else list(rule.verdict)
    if rule.name == 'enospc':
        which = _enospc(line, text, where, evidence)
        if which == 'disk':
            return _answer(where, line, verdict=NOT_A_LIMIT, why='disk-full',
                           reason='the path the error names is not /dev/shm: a full disk')
        candidates = ['shm'] if which == 'shm' else candidates
    out = {}
    for name in candidates:
        why = ruled_out(name, where, findings, evidence) if name in WHAT else ''
        if why:
            out[name] = why
    left = [c for c in candidates if c not in out]
    if len(left) > 1 and rule.name in ft.THREADS:
        chosen, why = _prior(left, where, findings, evidence)
        if chosen:
            return _limit(chosen, where, line, findings, evidence, why, [why], out)
    if len(left) > 1 and rule.name == 'enomem':
        # ENOMEM: the map count when the maps reached it, else memory
        maps = number((evidence.get('peaks') or {}).get('maps'))
        limit = number(value_of('vm.max_map_count', where, findings, evidence)[0])
        if reached('vm.max_map_count', maps, limit):
            return _limit('vm.max_map_count', where, line, findings, evidence,
                          'the measured maps %d reached vm.max_map_count %d' % (maps, limit),
                          [], out)
        left = ['memory']
    if len(left) == 1:
        return _limit(left[0], where, line, findings, evidence,
                      'the error names it' if len(candidates) == 1 else
                      'the error, and the evidence rules out %s' % ', '.join(sorted(out)),
                      [], out)
    return _answer(where, line, candidates=left, ruled_out=out,
                   reason='the error is one of %s%s' % (
                       ', '.join(candidates), '; ruled out: %s' % '; '.join(
                           '%s (%s)' % kv for kv in sorted(out.items())) if out else ''),
                   decide=decide(left or [c for c in candidates if c in DECIDE], where))


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


def decide(candidates, where):
    """What would decide between candidates (one clause each)."""
    said = [DECIDE[c] for c in candidates if c in DECIDE]
    if where.name == UNKNOWN:
        said.append('the context the job ran in (login, service, docker, k8s_pod, '
                    'slurm_job)')
    return '; '.join(said)


def summary(found):
    """One line: 'nofile = 1024 at /etc/security/limits.d/x.conf:3 in login: <line>', 'not a
    limit (cuda-fork): <line>' or 'unknown (shm or disk): <reason>; to decide: <decide>'."""
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
