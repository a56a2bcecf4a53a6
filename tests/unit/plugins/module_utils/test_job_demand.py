"""The job-shape demand model: parsing with errors that name the field, the formulas, the
profile derived from a job, and the shortfalls of given limits."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import job_demand as jd
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit

JOB = dict(ranks_per_node=8, num_workers=16, batch_size=256, prefetch_factor=4,
           tensors_per_batch=2, bytes_per_batch='150MiB', pin_memory=True)


def test_the_issue_s_job():
    """8 ranks per node, 16 workers each, batch 256, prefetch 4 (issue 13's example)."""
    job = jd.parse_job(JOB)
    need = jd.demand(job)
    assert need['fds_main'] == 64 + 32 + 18 * 2
    assert need['fds_worker'] == 64 + 6 * 2
    # 8 x (1 + 16 + 1 pin + 4 intra-op + 8 extra) + 8 x 16 x 3 + 64 user threads
    assert need['threads'] == 8 * 30 + 8 * 48 + 64
    assert need['processes'] == 8 * 17
    batch = 150 * 1024 ** 2 + 2 * 4096
    assert need['shm_bytes'] == 8 * (16 * 4 + 2) * batch
    assert need['pinned_bytes'] == 8 * (16 * 4 + 1) * 150 * 1024 ** 2
    profile, shm = jd.profile(job)
    assert profile['nofile'] == 1024                       # x2 headroom, rounded up
    assert profile['nproc'] == 4096                        # 2 x 688 = 1376, but MIN_NPROC
    assert profile['memlock'] == '%dMiB' % (2 * 8 * 65 * 150)
    assert shm % (256 * 1024 ** 2) == 0 and shm >= 2 * need['shm_bytes']


def test_file_system_strategy_needs_no_descriptor_per_tensor():
    job = jd.parse_job(dict(JOB, tensors_per_batch=5000, sharing_strategy='file_system'))
    assert jd.demand(job)['nofile'] == 64 + 32
    job = jd.parse_job(dict(JOB, tensors_per_batch=5000))
    assert jd.demand(job)['nofile'] == 64 + 32 + 18 * 5000   # the main process


@pytest.mark.parametrize('change, message', [
    (dict(num_workers=0), 'dataloader_job.num_workers: 0 is below 1'),
    (dict(ranks_per_node=-2), 'dataloader_job.ranks_per_node: -2 is below 1'),
    (dict(batch_size='many'), "dataloader_job.batch_size: 'many' is not a whole number"),
    (dict(prefetch_factor=True), 'dataloader_job.prefetch_factor: True is not a whole number'),
    (dict(tensors_per_batch=None), 'dataloader_job.tensors_per_batch: required'),
    (dict(bytes_per_batch='lots'), "dataloader_job.bytes_per_batch: 'lots' is not a size"),
    (dict(bytes_per_batch=-1), 'dataloader_job.bytes_per_batch: -1 is not a size'),
    (dict(sharing_strategy='file_socket'),
     "dataloader_job.sharing_strategy: 'file_socket' is not one of file_descriptor, "
     'file_system'),
    (dict(pin_memory='yes'), "dataloader_job.pin_memory: 'yes' is not true or false"),
    (dict(headroom=0.5), 'dataloader_job.headroom: 0.5 is below 1'),
    (dict(workers=4), 'dataloader_job: unknown key(s) workers; known: ranks_per_node'),
])
def test_bad_jobs_name_the_field(change, message):
    job = dict(JOB, **change)
    if change.get('tensors_per_batch', 1) is None:
        del job['tensors_per_batch']
    with pytest.raises(jd.JobError) as info:
        jd.parse_job(job)
    assert str(info.value).startswith(message), str(info.value)


def test_a_job_no_limit_can_hold_is_refused():
    job = jd.parse_job(dict(JOB, tensors_per_batch=400000))
    with pytest.raises(jd.JobError) as info:
        jd.profile(job, nr_open=1048576)
    assert 'above the kernel\'s fs.nr_open (1048576)' in str(info.value)
    assert 'sharing_strategy file_system' in str(info.value)


def test_profile_is_capped_at_nr_open():
    job = jd.parse_job(dict(JOB, tensors_per_batch=50000, headroom=4))
    assert jd.profile(job, nr_open=1048576)[0]['nofile'] == 1048576


def test_shortfalls_say_where_and_by_how_much():
    need = jd.demand(jd.parse_job(JOB))
    found = jd.shortfalls(need, {'nofile': {'soft': 1024, 'hard': 4096},
                                 'nproc': Limit(512, 512), 'shm_bytes': 64 * 1024 ** 2},
                          'container')
    assert [(f['item'], f['short_by']) for f in found] == [
        ('nproc', need['threads'] - 512), ('shm', need['shm_bytes'] - 64 * 1024 ** 2)]
    assert all(f['context'] == 'container' for f in found)
    assert jd.shortfalls(need, {'nofile': {'soft': 'unlimited', 'hard': 'unlimited'}}) == []
    assert jd.shortfalls(need, {'nofile': {'soft': 100, 'hard': 100}})[0]['have'] == 100


def test_guidance_names_best_workers_fit_shm_and_pin_memory():
    from ansible_collections.gpufleet.tuning.plugins.filter import job_shape
    login = {'ok': True, 'num_workers': 2, 'samples_per_s': 80.0, 'cuda_available': False,
             'sweep': [{'num_workers': 1, 'ok': True, 'samples_per_s': 95.0},
                       {'num_workers': 3, 'ok': False, 'samples_per_s': 0.0}]}
    results = {'host': 'n1', 'contexts': {'login': login},
               'job': {'contexts': {'login': {'fits': True, 'nofile_headroom': 2.5}}}}
    out = job_shape.dataloader_check_guidance(results, dict(JOB))
    guidance = out['guidance']
    assert guidance['best_num_workers'] == {'login': {'num_workers': 1, 'per_s': 95.0}}
    assert guidance['shm_size'].endswith('M')
    assert guidance['fits'] == {'login': {'fits': True, 'nofile_headroom': 2.5}}
    assert 'no GPU was seen here' in guidance['pin_memory']
    assert guidance['summary'].startswith('n1: login: num_workers=1 gave the most (95.0/s); '
                                          'containers need --shm-size ')
    assert job_shape.dataloader_check_guidance({'host': 'n'})['guidance']['summary'] == (
        'n: no sweep or job to advise on')
