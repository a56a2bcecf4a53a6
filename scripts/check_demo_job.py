"""Check what `make demo`'s training job left in build/lab (lab/demo_job.sh): before tuning the
job of lab/demo_job.yml failed in the login, service and container contexts (and as a Slurm
job where the job node runs Slurm) with the real error (descriptors at soft nofile 1024; Docker's
64 MB /dev/shm), after tuning it ran in every context with images/s above 0 and fitted the job's
predicted demand.

    python3 scripts/check_demo_job.py [LAB_DIR]     (also called by scripts/check_demo.py)
"""
import glob
import json
import os
import sys

FD_ERRORS = ('Too many open files', 'received 0 items of ancdata')
SHM_ERRORS = ('No space left on device', 'Bus error', 'insufficient shared memory')
CONTEXTS = ('login', 'service', 'container')
MB = 1024 * 1024


def load(lab, phase):
    paths = sorted(glob.glob(os.path.join(lab, phase, '*.json')))
    if not paths:
        return None, ['%s/%s: no results of the job (lab/demo_job.sh %s did not run)'
                      % (lab, phase, phase.split('-')[1])]
    with open(paths[0]) as handle:
        return json.load(handle), []


def check(lab, slurm_hosts=()):
    """Problems (a list of strings) and one summary line. `slurm_hosts`: the lab nodes that run
    Slurm; on one of them the job ran as a Slurm job (slurm_job) too (lab/demo_job.yml)."""
    before, problems = load(lab, 'job-before')
    after, more = load(lab, 'job-after')
    problems += more
    if problems:
        return problems, ''
    contexts = CONTEXTS + (('slurm_job',) if after.get('host') in slurm_hosts else ())
    for name in contexts:
        run = before['contexts'].get(name)
        if run is None:
            problems.append('before: context %s did not run' % name)
            continue
        if run.get('ok'):
            problems.append('before: the job passed in %s: the demo could not show a change' % name)
            continue
        wanted, errors = ('shm', SHM_ERRORS) if name == 'container' else ('nofile', FD_ERRORS)
        if run.get('exhausted') != wanted or not any(e in run.get('error', '') for e in errors):
            problems.append('before: %s failed, but not for want of %s: %s'
                            % (name, wanted, run.get('error', '')[-300:]))
        if name == 'container' and run.get('shm_size_bytes') != 64 * MB:
            problems.append('before: the container had %s bytes of /dev/shm, not Docker\'s 64 MB'
                            % run.get('shm_size_bytes'))
        if name != 'container' and run.get('nofile_soft') != 1024:
            problems.append('before: %s ran at soft nofile %s, not 1024'
                            % (name, run.get('nofile_soft')))
    if not (before.get('canary') or {}).get('fd_exhausted'):
        problems.append('before: the descriptor canary did not run out of descriptors')
    rates = []
    for name in contexts:
        run = after['contexts'].get(name) or {}
        if not run.get('ok'):
            problems.append('after: the job failed in %s: %s' % (name, run.get('error', '')[-300:]))
            continue
        if run.get('pipeline') != 'images' or not run.get('samples_per_s', 0) > 0:
            problems.append('after: %s ran no images (%s, %s/s)'
                            % (name, run.get('pipeline'), run.get('samples_per_s')))
        fit = ((after.get('job') or {}).get('contexts') or {}).get(name) or {}
        if not fit.get('fits'):
            problems.append('after: the job does not fit %s: %s' % (name, fit))
        rates.append('%s %.1f images/s' % (name, run.get('samples_per_s', 0)))
    if not after.get('ok'):
        problems.append('after: the check failed: %s' % after.get('problems'))
    return problems, 'demo job (%s): failed before in %s; after: %s' % (
        after.get('host'), ', '.join(contexts), ', '.join(rates))


def main():
    lab = sys.argv[1] if len(sys.argv) > 1 else 'build/lab'
    problems, line = check(lab)
    if problems:
        print('demo job check failed:\n  ' + '\n  '.join(problems))
        return 1
    print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
