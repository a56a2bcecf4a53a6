# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the training job's shape (module_utils/job_demand.py, docs/job-shape.md)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.module_utils import job_demand as jd


def _parse(job, field):
    try:
        return jd.parse_job(job, field)
    except jd.JobError as exc:
        raise AnsibleFilterError(str(exc))


def job_shape(job, field='dataloader_job'):
    """The job's shape checked and normalised (bytes_per_batch in bytes, defaults filled in);
    a bad one raises an error that names the field."""
    return _parse(job, field)


def job_report(results, job, field='dataloader_job'):
    """Predicted against measured for each context of a dataloader_check run with the job's
    shape: {demand, contexts: {name: {measured, fits, headroom, short}}, summary}."""
    parsed = _parse(job, field)
    need = jd.demand(parsed)
    report = {'job': parsed, 'demand': need, 'contexts': {}}
    parts = []
    for name, record in sorted(((results or {}).get('contexts') or {}).items()):
        measured = dict(fds_main=record.get('peak_fds_main'),
                        fds_worker=record.get('peak_fds_worker'),
                        threads=record.get('peak_threads'),
                        processes=record.get('peak_processes'),
                        shm_bytes=record.get('peak_shm_bytes'))
        limits = {}
        if record.get('nofile_soft') is not None:
            limits['nofile'] = {'soft': record['nofile_soft'], 'hard': record.get('nofile_hard')}
        nproc = (record.get('limits') or {}).get('nproc')
        if nproc:
            limits['nproc'] = nproc
        short = jd.shortfalls(need, limits, name)
        soft = record.get('nofile_soft')
        headroom = (round(float(soft) / need['nofile'], 2)
                    if isinstance(soft, int) and need['nofile'] else None)
        fits = bool(record.get('ok')) and not short
        report['contexts'][name] = dict(measured=measured, fits=fits, short=short,
                                        nofile_headroom=headroom)
        parts.append('%s %s%s' % (name, 'fits' if fits else 'does NOT fit',
                                  ' (nofile %s for a predicted %d per process, headroom %sx)'
                                  % (soft, need['nofile'], headroom) if headroom else ''))
    report['summary'] = 'job %d ranks x %d workers: %s' % (
        parsed['ranks_per_node'], parsed['num_workers'], '; '.join(parts) or 'no context run')
    return report


def job_demand(job, field='dataloader_job'):
    """The predicted peaks of a job: fds_main, fds_worker, nofile, threads, processes,
    shm_bytes, pinned_bytes."""
    return jd.demand(_parse(job, field))


def job_profile(job, field='dataloader_job', nr_open=None):
    """A limits profile ({nofile, nproc[, memlock]}) that holds the job with its headroom."""
    try:
        return jd.profile(_parse(job, field), nr_open)[0]
    except jd.JobError as exc:
        raise AnsibleFilterError(str(exc))


def job_shm_size(job, field='dataloader_job'):
    """Bytes of /dev/shm a container running the whole job needs, with headroom, as a size
    Docker reads (``2048M``)."""
    shm = jd.profile(_parse(job, field))[1]
    return '%dM' % (shm // 1024 ** 2)


def job_fit(contexts, job, field='dataloader_job'):
    """Shortfalls of probed contexts ({context: {limits: {item: {soft, hard}}}}, as
    limits_audit and effective_limits return them) against the job: a list of
    {context, item, need, have, short_by}."""
    need = jd.demand(_parse(job, field))
    found = []
    for name, entry in sorted((contexts or {}).items()):
        found.extend(jd.shortfalls(need, (entry or {}).get('limits') or {}, name))
    return found


class FilterModule(object):
    """gpufleet.tuning filters for a training job's shape."""

    def filters(self):
        return {
            'job_shape': job_shape,
            'job_report': job_report,
            'job_demand': job_demand,
            'job_profile': job_profile,
            'job_shm_size': job_shm_size,
            'job_fit': job_fit,
        }
