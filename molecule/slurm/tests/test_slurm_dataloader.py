"""issue 13: the DataLoader check's slurm_job context on a real Slurm. The same job shape
(1 rank x 2 workers, batches of 2000 tensors, prefetch 2: about 8,000 descriptors) fails in a
login session that keeps the distribution's soft nofile 1024, and runs when that session submits
it with srun, because slurmd's drop-in and PropagateResourceLimitsExcept give the job step the
profile (converge.yml's last play)."""
import json

RESULTS = '/var/lib/gpufleet/dataloader-check/results'
FD_ERRORS = ('Too many open files', 'received 0 items of ancdata')


def results(host):
    names = host.check_output('ls %s', RESULTS).split()
    assert len(names) == 1, names
    return json.loads(host.file('%s/%s' % (RESULTS, names[0])).content_string)


def test_the_job_fails_in_a_login_session_at_soft_nofile_1024(host):
    login = results(host)['contexts']['login']
    assert not login['ok'], login
    assert login['nofile_soft'] == 1024
    assert any(error in login.get('error', '') for error in FD_ERRORS), login.get('error')


def test_the_same_job_runs_as_a_slurm_job_with_the_profile(host):
    job = results(host)['contexts']['slurm_job']
    assert job['ok'], job.get('error')
    assert job['nofile_soft'] >= 16384      # slurmd's: the profile's or the higher one kept
    # the job really needed more than the login session's 1024
    assert job['peak_fds'] > 1024
    assert job['samples_per_s'] > 0
