"""The DataLoader check's own cost per context, and the demo job before and after tuning, from
the results `make demo`'s training job fetched (lab/demo_job.sh: LAB_DIR/job-before/ and
LAB_DIR/job-after/).

    python3 scripts/bench_job_contexts.py [LAB_DIR]           write benchmarks/job-contexts.md, .json
    python3 scripts/bench_job_contexts.py --show [LAB_DIR]    print the tables only

Per context the job ran in (login: runuser -l; service: systemd-run; container: docker run of
the torch image; slurm_job: srun from a login, on a node that runs Slurm), in the order of the
demo's picture (scripts/plot_throughput.py: the one list of contexts both use): the wall time of
the whole run as the role starts it (session, unit or container, python, torch import, the job's
ranks and workers), the DataLoader's own time, the peak resident memory of the job's processes
(the sum over ranks and workers, sampled every 50 ms; shared pages count in each process that
maps them), descriptors, /dev/shm, images/s; then the same job at the node's
defaults (soft nofile 1024, Docker's 64 MB /dev/shm) against after tuning.
"""
import glob
import json
import os
import platform
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import plot_throughput  # noqa: E402 pylint: disable=wrong-import-position

MIB = 1024.0 * 1024.0


def load(lab, phase):
    paths = sorted(glob.glob(os.path.join(lab, phase, '*.json')))
    if not paths:
        raise SystemExit('%s/%s: no results; run make demo (lab/demo_job.sh) first' % (lab, phase))
    with open(paths[0]) as handle:
        return json.load(handle)


def last_line(text, width=120):
    """The error's last line (PyTorch puts the cause there), its end kept at a word."""
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    line = lines[-1] if lines else ''
    if len(line) <= width:
        return line
    tail = line[-(width - 4):]
    return '... ' + tail[tail.find(' ') + 1:]


def row(name, run):
    return {
        'context': name, 'ok': bool(run.get('ok')), 'exhausted': run.get('exhausted') or '',
        'error': last_line(run.get('error')), 'wall_s': run.get('wall_s'),
        'dataloader_s': run.get('elapsed_s'), 'images_per_s': run.get('samples_per_s'),
        'images': run.get('samples'), 'peak_rss_mib': round((run.get('peak_rss_bytes') or 0) / MIB, 1),
        'peak_fds': run.get('peak_fds'), 'peak_shm_mib': round((run.get('peak_shm_bytes') or 0) / MIB, 1),
        'shm_size_mib': round((run.get('shm_size_bytes') or 0) / MIB), 'nofile_soft': run.get('nofile_soft'),
        'processes': run.get('peak_processes'), 'threads': run.get('peak_threads'),
    }


def contexts(before, after):
    """Every context the job ran in, before or after tuning, in the picture's order: the contexts
    the picture draws (scripts/plot_throughput.py), from the same list."""
    return plot_throughput.ordered(set(before['contexts']) | set(after['contexts']))


def collect(lab):
    before, after = load(lab, 'job-before'), load(lab, 'job-after')
    job = (after.get('job') or {}).get('job') or {}
    names = contexts(before, after)
    return {
        'host': after.get('host'), 'job': job,
        'demand': (after.get('job') or {}).get('demand'),
        'torch': next((r.get('torch_version') for r in after['contexts'].values()
                       if r.get('torch_version')), ''),
        'contexts': names,
        'before': [row(n, before['contexts'][n]) for n in names if n in before['contexts']],
        'after': [row(n, after['contexts'][n]) for n in names if n in after['contexts']],
    }


def fmt(value, pattern='%s'):
    return '' if value is None else pattern % value


def tables(data):
    out = ['### The check\'s cost per context (after tuning)', '',
           '| context | wall s | job s | images/s | peak RSS MiB | peak fds | peak /dev/shm MiB | processes | threads |',
           '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for r in data['after']:
        out.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            r['context'], fmt(r['wall_s'], '%.1f'), fmt(r['dataloader_s'], '%.1f'),
            fmt(r['images_per_s'], '%.1f') if r['ok'] else 'failed', r['peak_rss_mib'],
            r['peak_fds'], r['peak_shm_mib'], fmt(r['processes']), fmt(r['threads'])))
    out += ['', '### The same job before and after tuning', '',
            '| context | before: limits | before: result | before: wall s | after: limits | after: images/s |',
            '| --- | --- | --- | ---: | --- | ---: |']
    before = dict((r['context'], r) for r in data['before'])
    after = dict((r['context'], r) for r in data['after'])
    for name in data['contexts']:
        r, a = before.get(name), after.get(name)
        if r is None:
            was = ('-', 'did not run', '')
        else:
            was = ('nofile %s, /dev/shm %s MiB' % (r['nofile_soft'], r['shm_size_mib']),
                   ('ok %.1f images/s' % r['images_per_s']) if r['ok'] else
                   '%s ran out: `%s`' % (r['exhausted'] or '?', r['error'].replace('|', '/')),
                   fmt(r['wall_s'], '%.1f'))
        out.append('| %s | %s | %s | %s | %s | %s |' % ((name,) + was + (
            ('nofile %s, /dev/shm %s MiB' % (a['nofile_soft'], a['shm_size_mib'])) if a else '-',
            (fmt(a['images_per_s'], '%.1f') if a['ok'] else 'failed') if a else 'did not run')))
    return out


def main(argv):
    show = '--show' in argv
    args = [a for a in argv if a != '--show']
    lab = args[0] if args else os.path.join(ROOT, 'build', 'lab')
    data = collect(lab)
    job = data['job']
    head = ('The demo job (lab/demo_job.yml) on %s: %s ranks x %s workers, batch %s, prefetch %s, '
            '%s tensors per batch, images pipeline; torch %s.' % (
                data['host'], job.get('ranks_per_node'), job.get('num_workers'),
                job.get('batch_size'), job.get('prefetch_factor'),
                job.get('tensors_per_batch'), data['torch']))
    if show:
        print('\n'.join([head, ''] + tables(data)))
        return 0
    data['measured'] = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    data['machine'] = '%d cores, %s, load average %s when written' % (
        os.cpu_count() or 0, platform.machine(), ' '.join('%.1f' % v for v in os.getloadavg()))
    data['gpu'] = ('none: no device machine (GPU) was lent to this task; CPU-only PyTorch, '
                   'no figure here depends on a GPU')
    md = ['# The DataLoader check per context, and the job before and after tuning', '',
          'Written by `scripts/bench_job_contexts.py` (`make bench-job-contexts`: `make demo`, '
          'then this script) from the results of the demo\'s training job; written %s on %s '
          '(the runs share the machine with whatever else runs on it: compare within a table, '
          'not across machines).'
          % (data['measured'], data['machine']),
          'GPU: %s.' % data['gpu'], '', head, '',
          'wall s: the whole run as the role starts it (login session, transient unit or '
          'container, python and the torch import, the job\'s ranks and workers); job s: from the '
          'start of the ranks to their end (their torch import included); peak RSS: the sum over the ranks and their workers, sampled '
          'every 50 ms (shared pages count once per process that maps them; dockerd and the '
          'container shim are not counted). The first run before tuning (login) also builds the '
          'dataset of JPEGs.', ''] + tables(data) + ['']
    out = os.path.join(ROOT, 'benchmarks', 'job-contexts')
    with open(out + '.md', 'w') as handle:
        handle.write('\n'.join(md))
    with open(out + '.json', 'w') as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write('\n')
    print('\n'.join(md))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
