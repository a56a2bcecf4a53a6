# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's optional job (issue 13.1): where a training job of a given shape does not fit
the limits a new process gets in each probed context, which item, demand against limit and by
how much. The job is checked before anything is probed; the demand model is job_demand's."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import job_demand as jd
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings

NR_OPEN = '/proc/sys/fs/nr_open'


def parse(job, field='job'):
    """The parsed job, or None when no job was given. Raises job_demand.JobError naming
    ``field.<key>``."""
    if job is None or job == {}:
        return None
    return jd.parse_job(job, field)


def read_nr_open(path=NR_OPEN):
    """The kernel's fs.nr_open (the most any nofile limit may be), or None when unreadable."""
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (IOError, OSError, ValueError):
        return None


def fit(job, contexts, nr_open=None, field='job'):
    """The job against probed contexts ({context: {limits: {item: {soft, hard}}}}).

    Returns {demand, shortfalls: [{context, item, need, have, short_by}], fits: [context],
    short: [context], beyond_kernel: None or a sentence}. ``beyond_kernel`` says when one
    process needs more descriptors than fs.nr_open: then no context can be tuned to hold it."""
    need = jd.demand(job)
    shortfalls = []
    short = []
    fits = []
    for name, entry in sorted((contexts or {}).items()):
        found = jd.shortfalls(need, (entry or {}).get('limits') or {}, name)
        shortfalls.extend(found)
        (short if found else fits).append(name)
    beyond = None
    if nr_open and need['nofile'] > nr_open:
        beyond = ('%s: one process needs %d descriptors, above the kernel\'s fs.nr_open (%d): '
                  'no limit can hold it; use fewer workers, a smaller prefetch_factor, fewer '
                  'tensors per batch or sharing_strategy file_system'
                  % (field, need['nofile'], nr_open))
    return dict(demand=need, shortfalls=shortfalls, fits=fits, short=short,
                beyond_kernel=beyond)


def settle(fit_result, found, pids_shortfalls=None):
    """The job fit made whole, in place, once every item is known: a context the pids part
    found short of the job's threads (``pids_shortfalls``) or whose findings say the job
    cannot start there (findings.OUTLETS['job_fit']: a context no session opens) is short, not
    in ``fits``; a context whose probe gave nothing to compare (unknown) is in neither."""
    short = set(fit_result.get('short') or [])
    short.update(s['context'] for s in pids_shortfalls or [])
    unknown = set()
    for entry in found or []:
        verdict = findings.action('job_fit', entry)
        if verdict == 'short':
            short.add(entry['context'])
        elif verdict == 'unknown' and entry['context'] not in (fit_result.get('fits') or []):
            unknown.add(entry['context'])
    for entry in pids_shortfalls or []:
        if entry not in fit_result['shortfalls']:
            fit_result['shortfalls'].append(entry)
    fit_result['short'] = sorted(short)
    fit_result['fits'] = [c for c in fit_result.get('fits') or [] if c not in short]
    fit_result['unknown'] = sorted(unknown - short)
    return fit_result
