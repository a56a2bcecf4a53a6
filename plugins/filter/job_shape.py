# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the training job's shape (module_utils/model/job_demand.py, docs/job-shape.md)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.plugin_utils.lazy import module

# imported when a filter uses them (plugin_utils/lazy.py)
jd = module('module_utils.model.job_demand')
lm = module('module_utils.model.limits_model')
pids_model = module('module_utils.model.pids')


def _dataloader_check():
    """The DataLoader check's filter file, imported where a run's record is read (job_report,
    job_fit, the guidance), not where a role only sizes a profile (job_profile, job_shm_size,
    job_sysctl): Ansible forks a worker per host and task, and each worker imports the filter
    files its templates name again, compiled from source (that file pulls in the contexts
    registry and the failure classifier: about 0.1 s of controller CPU per host and task,
    benchmarks/profile.md)."""
    from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_check
    return dataloader_check


# What the job's demand predicts for each limit a run can run out of, as words.
_PREDICTED = {
    'nofile': lambda need: '%d descriptors per process' % need['nofile'],
    'nproc': lambda need: '%d threads' % need['threads'],
    'shm': lambda need: '%.1f MiB of /dev/shm' % (need['shm_bytes'] / 1024.0 ** 2),
}


def _parse(job, field):
    try:
        return jd.parse_job(job, field)
    except jd.JobError as exc:
        raise AnsibleFilterError(str(exc))


def job_shape(job, field='dataloader_job'):
    """The job's shape checked and normalised (bytes_per_batch in bytes, defaults filled in);
    a bad one raises an error that names the field."""
    return _parse(job, field)


def _failed_on(record, need):
    """{item, how, cause, measured, peak, limit, predicted, predicted_fits} of a failed run
    that ran out of a limit (from its measured peaks first, else its error text), or None."""
    check = _dataloader_check()
    record = check.classified(dict(record))
    kind = record.get('exhausted')
    if record.get('ok') or not kind:
        return None
    peak = check.measured_peaks(record).get(kind)
    wanted = {'nofile': need['nofile'], 'nproc': need['threads'],
              'shm': need['shm_bytes']}[kind]
    return dict(item=kind, how=record.get('exhausted_how') or 'text',
                cause=record.get('cause', ''), measured=peak[2] if peak else '',
                peak=peak[0] if peak else None, limit=peak[1] if peak else None,
                predicted=wanted, predicted_fits=bool(peak) and wanted <= peak[1])


def _fit_line(name, record, entry, need, soft):
    """One context's part of the job-fit line: never says a limit holds the job when the run
    ran out of it."""
    failed_on = entry.get('failed_on')
    if failed_on:
        return '%s does NOT fit: the run ran out of %s (%s; predicted %s%s)' % (
            name, failed_on['item'], failed_on['measured'] if failed_on['how'] == 'peak'
            else ', '.join(['from the error text'] + ([failed_on['measured']]
                                                      if failed_on['measured'] else [])),
            _PREDICTED[failed_on['item']](need),
            ': the prediction is too low for this context' if failed_on['predicted_fits']
            else '')
    headroom = entry.get('nofile_headroom')
    limits = (' (nofile %s for a predicted %d per process, headroom %sx)'
              % (soft, need['nofile'], headroom) if headroom else '')
    if not record.get('ok'):
        return '%s does NOT fit: the run failed, not on a limit (%s)%s' % (
            name, _dataloader_check().last_line(record.get('error'), 100) or 'no error text', limits)
    return '%s %s%s' % (name, 'fits' if entry['fits'] else 'does NOT fit', limits)


def job_report(results, job, field='dataloader_job'):
    """Predicted against measured for each context of a dataloader_check run with the job's
    shape: {demand, contexts: {name: {measured, fits, headroom, short, failed_on}}, summary}.

    A run that failed for want of a limit (``failed_on``: from its measured peaks, else its
    error text) does not fit, and its line says which limit ran out and what the prediction
    was, with no nofile headroom when nofile is what ran out."""
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
        failed_on = None if record.get('ok') else _failed_on(record, need)
        if failed_on and failed_on['item'] == 'nofile':
            headroom = None
        entry = dict(measured=measured, fits=fits, short=short, nofile_headroom=headroom)
        if failed_on:
            entry['failed_on'] = failed_on
        report['contexts'][name] = entry
        parts.append(_fit_line(name, record, entry, need, soft))
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
            if entry.get('failed_on'):
                guidance['fits'][name]['ran_out'] = entry['failed_on']['item']
        if guidance['fits']:
            parts.append('fits: %s' % ', '.join(
                '%s %s' % (n, ('yes (%sx nofile)' % f['nofile_headroom'])
                           if f['fits'] else 'NO' + (' (%s ran out)' % f['ran_out']
                                                     if f.get('ran_out') else ''))
                for n, f in sorted(guidance['fits'].items())))
        if parsed['pin_memory'] and not cuda:
            guidance['pin_memory'] = ('pin_memory=True pays only with a GPU copy; no GPU was '
                                      'seen here, so it only pins host memory')
        elif not parsed['pin_memory'] and cuda:
            guidance['pin_memory'] = ('a GPU is there: pin_memory=True makes the host-to-GPU '
                                      'copy asynchronous (pinned bytes count against the cgroup\'s memory, '
                                      'not memlock)')
    if guidance['pin_memory']:
        parts.append(guidance['pin_memory'])
    guidance['summary'] = '%s: %s' % (results.get('host') or 'host',
                                      '; '.join(parts) or 'no sweep or job to advise on')
    results['guidance'] = guidance
    return results


def job_demand(job, field='dataloader_job'):
    """The predicted peaks of a job (job_demand.demand): fds_main, fds_worker, nofile, threads,
    pids, processes, map_count, file_handles, shm_bytes, pinned_bytes, cgroup_memory_bytes,
    memlock_bytes, ..."""
    return jd.demand(_parse(job, field))


def job_profile(job, field='dataloader_job', nr_open=None):
    """A limits profile ({nofile, nproc[, pids][, memlock]}) that holds the job with its
    headroom: the items of the limit model (``pids`` where the model knows that item; memlock
    only for RDMA registration). The kernel's minima are ``job_sysctl``'s."""
    try:
        found = jd.profile(_parse(job, field), nr_open)[0]
    except jd.JobError as exc:
        raise AnsibleFilterError(str(exc))
    return dict((item, value) for item, value in found.items()
                if item in lm.ITEM_NAMES or item == pids_model.NAME)


def job_sysctl(job, field='dataloader_job'):
    """{sysctl: minimum} the job needs of its nodes' kernel (vm.max_map_count, fs.file-max,
    fs.inotify.max_user_instances when it uses inotify), with its headroom."""
    return jd.sysctl_minima(_parse(job, field))


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
            'job_sysctl': job_sysctl,
            'job_shm_size': job_shm_size,
            'job_fit': job_fit,
        }
