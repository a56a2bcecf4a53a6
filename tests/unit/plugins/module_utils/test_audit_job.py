"""The audit's optional job (issue 13.1): the job is checked before probing with errors that
name job.FIELD, and each probed context where it does not fit is marked with the item, the
demand, the soft limit and by how much; a job above fs.nr_open is said to fit no limit."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import audit_job
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import job_demand as jd

# 8 workers, 2000 tensors per batch, file_descriptor: the main process holds
# 64 + 2 x 8 + (8 + 2) x 2000 = 20080 descriptors at its peak.
JOB = dict(num_workers=8, batch_size=64, tensors_per_batch=2000, bytes_per_batch='64MiB')


def limits(nofile, nproc):
    return {'limits': {'nofile': {'soft': nofile, 'hard': nofile},
                       'nproc': {'soft': nproc, 'hard': nproc}}}


def test_no_job_is_no_job_fit():
    assert audit_job.parse(None) is None
    assert audit_job.parse({}) is None


@pytest.mark.parametrize('job, message', [
    (dict(JOB, num_workers=0), 'job.num_workers: 0 is below 1'),
    (dict(JOB, tensors_per_batch=-3), 'job.tensors_per_batch: -3 is below 1'),
    (dict(JOB, sharing_strategy='cuda_ipc'), "job.sharing_strategy: 'cuda_ipc' is not one of"),
    (dict(JOB, workers=4), 'job: unknown key(s) workers'),
    ('8 workers', 'job: a mapping of the job shape is needed'),
])
def test_a_bad_job_names_the_field(job, message):
    with pytest.raises(jd.JobError) as caught:
        audit_job.parse(job)
    assert message in str(caught.value)


def test_each_context_where_the_job_does_not_fit_is_marked_by_how_much():
    job = audit_job.parse(JOB)
    contexts = {'login': limits(1024, 4096), 'service': limits(65536, 'unlimited'),
                'docker': limits(16384, 8192)}
    found = audit_job.fit(job, contexts, nr_open=1048576)
    assert found['demand']['nofile'] == 20080
    assert found['shortfalls'] == [
        dict(context='docker', item='nofile', need=20080, have=16384, short_by=3696),
        dict(context='login', item='nofile', need=20080, have=1024, short_by=19056)]
    assert found['fits'] == ['service'] and found['short'] == ['docker', 'login']
    assert found['beyond_kernel'] is None


def test_threads_short_in_a_context_with_a_low_nproc():
    job = audit_job.parse(dict(JOB, num_workers=32, ranks_per_node=8))
    need = jd.demand(job)['threads']
    found = audit_job.fit(job, {'login': limits(10 ** 6, 1024)})
    assert found['shortfalls'] == [dict(context='login', item='nproc', need=need, have=1024,
                                        short_by=need - 1024)]


def test_a_job_above_fs_nr_open_fits_no_limit(tmp_path):
    path = tmp_path / 'nr_open'
    path.write_text('16384\n')
    nr_open = audit_job.read_nr_open(str(path))
    assert nr_open == 16384
    found = audit_job.fit(audit_job.parse(JOB), {'service': limits(65536, 65536)}, nr_open)
    assert found['fits'] == ['service']
    assert 'one process needs 20080 descriptors, above the kernel\'s fs.nr_open (16384)' \
        in found['beyond_kernel']
    assert audit_job.read_nr_open(str(tmp_path / 'missing')) is None


def test_this_kernel_s_nr_open_is_read():
    with open('/proc/sys/fs/nr_open') as handle:
        assert audit_job.read_nr_open() == int(handle.read())
