# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which ceiling a failed job ran into, from its error text, its measured peaks and the
context's ceilings (docs/job-shape.md, "Which ceiling failed").

Plain Python (no Ansible import), runs on Python 3.8 targets and on the controller (the
``limits_classify`` filter, the dataloader_check role). :func:`classify` reads an error text (a
traceback, a log) and returns the ceiling that failed, the line that shows it (evidence), the
ceiling's value and the file:line that sets it when the caller gave them, or ``unknown``. It
never names a cause its evidence does not support: an errno that several ceilings raise
(``Resource temporarily unavailable`` from pthread_create: pids.max or RLIMIT_NPROC;
``Cannot allocate memory`` from mmap: vm.max_map_count or memory itself) needs a measured peak
that reached one of them, else the verdict is ``unknown`` with the candidates.

Ceilings (the keys of ``ceilings`` and of the verdict): ``nofile`` (RLIMIT_NOFILE of the
process that failed), ``nproc`` (RLIMIT_NPROC: threads of the user), ``pids.max`` (the cgroup's
tasks), ``shm`` (size of /dev/shm), ``vm.max_map_count``, ``fs.file-max``,
``fs.inotify.max_user_instances``, ``fs.inotify.max_user_watches``. Peaks (the keys of
``peaks``): ``nofile`` (descriptors of the process), ``threads`` (tasks of the job or user),
``shm_bytes`` (/dev/shm in use), ``maps`` (memory maps of the process), ``file_handles``
(node-wide).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings

UNKNOWN = 'unknown'
#: the rlimits and cgroup ceilings, then the kernel's (model/ceilings.py ``cause``)
CEILINGS = ('nofile', 'nproc', 'pids.max', 'shm') + ceilings.names('cause')
# which peak a ceiling bounds
PEAK_OF = {'nofile': 'nofile', 'nproc': 'threads', 'pids.max': 'threads', 'shm': 'shm_bytes',
           'vm.max_map_count': 'maps', 'fs.file-max': 'file_handles'}
# How close to a ceiling a measured peak must come to count as reaching it: (absolute,
# fraction), the larger (a sampler reads between two allocations; the call that failed wanted
# one more; /dev/shm fills between two reads).
NEAR = {'shm': (0, 0.05)}
NEAR_DEFAULT = (2, 0.02)
WHAT = {
    'nofile': 'RLIMIT_NOFILE (soft nofile) of the process that failed',
    'nproc': 'RLIMIT_NPROC (soft nproc): every thread of the user counts',
    'pids.max': "the cgroup's pids.max: every task of the job's cgroup counts",
    'shm': 'the size of /dev/shm (a container\'s --shm-size)',
    'vm.max_map_count': 'vm.max_map_count: memory maps of one process',
    'fs.file-max': 'fs.file-max: open files of the whole node',
    'fs.inotify.max_user_instances': 'fs.inotify.max_user_instances: inotify instances of '
                                     'the user',
    'fs.inotify.max_user_watches': 'fs.inotify.max_user_watches: inotify watches of the user',
}

_I = re.IGNORECASE
# (name, pattern, verdict): verdict a ceiling, or a tuple of candidates that a measured peak
# must decide between. First match in this order wins (the specific before the general).
RULES = (
    ('enfile', re.compile(r'Too many open files in system|\[Errno 23\]|\bENFILE\b'),
     'fs.file-max'),
    ('inotify-watches', re.compile(r'inotify watch limit reached|inotify_add_watch.*'
                                   r'No space left on device|upper limit on inotify watches',
                                   _I), 'fs.inotify.max_user_watches'),
    ('inotify-instances', re.compile(r'inotify.*(Too many open files|\bEMFILE\b|instance'
                                     r' limit|instances limit)', _I),
     'fs.inotify.max_user_instances'),
    ('ancdata', re.compile(r'received 0 items of ancdata'), 'nofile'),
    ('emfile', re.compile(r'Too many open files|\[Errno 24\]|\bEMFILE\b|ulimit -n'), 'nofile'),
    ('pids-controller', re.compile(r'fork rejected by pids controller'), 'pids.max'),
    ('thread', re.compile(r"can't start new thread|pthread_create|Thread creation failed|"
                          r'fork: (retry: )?Resource temporarily unavailable|'
                          r'(thread|fork|clone).*(Resource temporarily unavailable|'
                          r'\bEAGAIN\b|\[Errno 11\])', _I), ('pids.max', 'nproc')),
    ('shm', re.compile(r'insufficient shared memory|unable to allocate shared memory|'
                       r'\bBus error\b|bus error encountered|'
                       r'(/dev/shm|torch_\d+_).*No space left on device|'
                       r'No space left on device.*(/dev/shm|torch_\d+_)', _I), 'shm'),
    ('mmap', re.compile(r'(mmap|map_count).*(Cannot allocate memory|\bENOMEM\b|\[Errno 12\])|'
                        r'(Cannot allocate memory|\[Errno 12\]).*mmap', _I),
     ('vm.max_map_count', 'memory')),
    ('enomem', re.compile(r'Cannot allocate memory|\[Errno 12\]|\bENOMEM\b'),
     ('vm.max_map_count', 'memory')),
)


def _number(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in ('unlimited', 'max', 'infinity',
                                                            '-1', ''):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _ceiling(ceilings, name):
    """(value, source) of a ceiling as given: a number, 'unlimited'/'max', or a mapping
    {value (or soft), source}. value None: unlimited or not given."""
    entry = (ceilings or {}).get(name)
    if isinstance(entry, dict):
        value = entry.get('value', entry.get('soft'))
        return _number(value), entry.get('source') or ''
    return _number(entry), ''


def reached(name, peak, limit):
    """Did a measured peak come within NEAR of a finite ceiling?"""
    if peak is None or limit is None:
        return False
    absolute, fraction = NEAR.get(name, NEAR_DEFAULT)
    return peak >= limit - max(absolute, limit * fraction)


def _evidence(pattern, text):
    """The last line of text that matches (the error a traceback ends with)."""
    found = ''
    for line in text.splitlines():
        if pattern.search(line):
            found = line.strip()
    return found[:300]


def _verdict(ceiling, evidence, ceilings, peaks, reason, candidates=()):
    value, source = _ceiling(ceilings, ceiling) if ceiling != UNKNOWN else (None, '')
    peak = _number((peaks or {}).get(PEAK_OF.get(ceiling, ''))) if ceiling != UNKNOWN \
        else None
    return dict(ceiling=ceiling, evidence=evidence, value=value, peak=peak,
                source=source or UNKNOWN if ceiling != UNKNOWN else '',
                what=WHAT.get(ceiling, ''), reason=reason, candidates=list(candidates))


def _decide(candidates, evidence, ceilings, peaks):
    """A ceiling among candidates that a measured peak reached, in the order given; else
    unknown (the errno alone does not say which)."""
    for name in candidates:
        if name == 'memory':
            continue
        limit = _ceiling(ceilings, name)[0]
        peak = _number((peaks or {}).get(PEAK_OF[name]))
        if reached(name, peak, limit):
            return _verdict(name, evidence, ceilings, peaks,
                            'the error, and the measured %s %d reached %s %d'
                            % (PEAK_OF[name], peak, name, limit))
    measured = ['%s %s of %s %s' % (PEAK_OF[n], (peaks or {}).get(PEAK_OF[n], 'not measured'),
                                    n, _ceiling(ceilings, n)[0] or 'unlimited/not given')
                for n in candidates if n in PEAK_OF]
    return _verdict(UNKNOWN, evidence, ceilings, peaks,
                    'the error is one of %s and no measured peak reached one (%s)'
                    % (', '.join(candidates), '; '.join(measured)), candidates)


def classify(text, peaks=None, ceilings=None):
    """The ceiling a failed job ran into: {ceiling, evidence, value, peak, source, what,
    reason, candidates}. ceiling is one of CEILINGS or 'unknown' (the text matches no known
    failure, or its errno needs a measured peak to decide); evidence the matched line; source
    the file:line that sets the ceiling as given in ``ceilings`` ({name: {value, source}} or
    {name: value}), 'unknown' when not given."""
    text = str(text or '')
    for _name, pattern, verdict in RULES:
        evidence = _evidence(pattern, text)
        if not evidence:
            continue
        if isinstance(verdict, tuple):
            return _decide(verdict, evidence, ceilings, peaks)
        return _verdict(verdict, evidence, ceilings, peaks, 'the error names it')
    # no error text that names a ceiling: a peak at a ceiling is the only evidence left
    for name in ('nofile', 'pids.max', 'nproc', 'shm', 'vm.max_map_count', 'fs.file-max'):
        limit = _ceiling(ceilings, name)[0]
        peak = _number((peaks or {}).get(PEAK_OF[name]))
        if text.strip() and reached(name, peak, limit):
            return _verdict(name, '', ceilings, peaks,
                            'no error names a ceiling; the measured %s %d reached %s %d'
                            % (PEAK_OF[name], peak, name, limit))
    return _verdict(UNKNOWN, '', ceilings, peaks,
                    'the text matches no known ceiling failure' if text.strip()
                    else 'no error text')


def summary(verdict):
    """One line: 'nofile (value 1024, peak 1023, source /etc/security/limits.d/x.conf:3):
    <evidence>', or 'unknown: <why>: <evidence>'."""
    if verdict['ceiling'] == UNKNOWN:
        return 'unknown: %s%s' % (verdict['reason'], (': ' + verdict['evidence'])
                                  if verdict['evidence'] else '')
    parts = []
    if verdict['value'] is not None:
        parts.append('value %s' % verdict['value'])
    if verdict['peak'] is not None:
        parts.append('peak %s' % verdict['peak'])
    parts.append('source %s' % verdict['source'])
    return '%s (%s): %s' % (verdict['ceiling'], ', '.join(parts),
                            verdict['evidence'] or verdict['reason'])
