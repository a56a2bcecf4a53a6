# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
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


def dataloader_check_guidance(results, job=None, field='dataloader_check_job'):
    """What a user acts on, from a dataloader_check run: the num_workers that gave the most
    samples (images) per second in each context with a sweep, whether the job fits each
    context and with what nofile headroom, the /dev/shm to give its containers and whether
    pin_memory can help. Adds ``guidance`` (with a one-line ``summary``) to the results."""
    results = dict(results or {})
    guidance = {'best_num_workers': {}, 'fits': {}, 'shm_size': None, 'pin_memory': ''}
    parts = []
    for name, record in sorted((results.get('contexts') or {}).items()):
        points = [(p.get('samples_per_s') or 0.0, p['num_workers'])
                  for p in record.get('sweep') or [] if p.get('ok')]
        if record.get('ok') and record.get('num_workers'):
            points.append((record.get('samples_per_s') or 0.0, record['num_workers']))
        if len(points) > 1:
            rate, workers = max(points)
            guidance['best_num_workers'][name] = {'num_workers': workers,
                                                  'per_s': round(rate, 2)}
            parts.append('%s: num_workers=%d gave the most (%.1f/s)' % (name, workers, rate))
    cuda = any((r or {}).get('cuda_available') for r in (results.get('contexts') or {}).values())
    if job:
        parsed = _parse(job, field)
        shm = jd.profile(parsed)[1]
        guidance['shm_size'] = '%dM' % (shm // 1024 ** 2)
        parts.append('containers need --shm-size %s' % guidance['shm_size'])
        for name, entry in sorted(((results.get('job') or {}).get('contexts') or {}).items()):
            guidance['fits'][name] = {'fits': entry['fits'],
                                      'nofile_headroom': entry.get('nofile_headroom')}
        if guidance['fits']:
            parts.append('fits: %s' % ', '.join(
                '%s %s' % (n, ('yes (%sx nofile)' % f['nofile_headroom'])
                           if f['fits'] else 'NO')
                for n, f in sorted(guidance['fits'].items())))
        if parsed['pin_memory'] and not cuda:
            guidance['pin_memory'] = ('pin_memory=True pays only with a GPU copy; no GPU was '
                                      'seen here, so it only pins host memory')
        elif not parsed['pin_memory'] and cuda:
            guidance['pin_memory'] = ('a GPU is there: pin_memory=True makes the host-to-GPU '
                                      'copy asynchronous (memlock: see limits_job)')
    if guidance['pin_memory']:
        parts.append(guidance['pin_memory'])
    guidance['summary'] = '%s: %s' % (results.get('host') or 'host',
                                      '; '.join(parts) or 'no sweep or job to advise on')
    results['guidance'] = guidance
    return results


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
            'dataloader_check_guidance': dataloader_check_guidance,
            'job_report': job_report,
            'job_demand': job_demand,
            'job_profile': job_profile,
            'job_shm_size': job_shm_size,
            'job_fit': job_fit,
        }
