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
    # 8 ranks form a process group: 32 + 2 sockets for each of 7 peers
    assert need['fds_main'] == 64 + 32 + 18 * 2 + 32 + 2 * 7
    assert need['fds_worker'] == 64 + 6 * 2
    # 8 x (1 + 16 + 1 pin + 2 x 4 CPU pools + 8 extra + 4 process group) + 8 x 16 x 5
    # (workers forked from a rank whose pools run) + 64 user threads
    assert need['threads'] == 8 * 38 + 8 * 80 + 64
    assert need['processes'] == 8 * 17
    batch = 150 * 1024 ** 2 + 2 * 4096
    assert need['shm_bytes'] == 8 * (16 * 4 + 2) * batch
    assert need['pinned_bytes'] == 8 * (16 * 4 + 1) * 150 * 1024 ** 2
    profile, shm = jd.profile(job)
    assert profile['nofile'] == 1024                       # x2 headroom, rounded up
    assert profile['nproc'] == 4096                        # 2 x 688 = 1376, but MIN_NPROC
    # pin_memory is charged to the cgroup's memory (with /dev/shm), not to memlock
    assert 'memlock' not in profile
    assert need['cgroup_memory_bytes'] == need['pinned_bytes'] + need['shm_bytes']
    assert need['memlock_bytes'] == 0
    assert profile['pids'] == 2048                         # 2 x 944 tasks, rounded up
    assert shm % (256 * 1024 ** 2) == 0 and shm >= 2 * need['shm_bytes']


def test_file_system_strategy_needs_no_descriptor_per_tensor():
    job = jd.parse_job(dict(JOB, tensors_per_batch=5000, sharing_strategy='file_system'))
    assert jd.demand(job)['nofile'] == 64 + 32 + 46
    job = jd.parse_job(dict(JOB, tensors_per_batch=5000))
    assert jd.demand(job)['nofile'] == 64 + 32 + 18 * 5000 + 46   # the main process


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


BASE = dict(num_workers=4, batch_size=8, prefetch_factor=2, tensors_per_batch=100,
            bytes_per_batch='1MiB', intra_op_threads=0, extra_threads=1)


def test_rdma_registered_bytes_give_memlock_and_pinned_bytes_do_not():
    job = jd.parse_job(dict(BASE, pin_memory=True, rdma_registered_bytes='2GiB'))
    need = jd.demand(job)
    assert need['memlock_bytes'] == 2 * 1024 ** 3
    assert jd.profile(job)[0]['memlock'] == '4096MiB'          # x2 headroom
    found = jd.shortfalls(need, {'memlock': {'soft': 8 * 1024 ** 2, 'hard': 8 * 1024 ** 2},
                                 'memory_bytes': 16 * 1024 ** 2})
    assert [(f['item'], f['need']) for f in found] == [
        ('memlock', 2 * 1024 ** 3), ('memory', need['pinned_bytes'] + need['shm_bytes'])]
    # without RDMA, no memlock demand: a low memlock is no shortfall, pin_memory or not
    need = jd.demand(jd.parse_job(dict(BASE, pin_memory=True)))
    assert jd.shortfalls(need, {'memlock': {'soft': 65536, 'hard': 65536}}) == []


def test_nodes_grow_the_sockets_of_every_rank():
    one = jd.demand(jd.parse_job(dict(BASE, ranks_per_node=2)))
    four = jd.demand(jd.parse_job(dict(BASE, ranks_per_node=2, nodes=4)))
    # world 2: 32 + 2 x 1 peer; world 8: 32 + 2 x 7 peers
    assert one['fds_main'] == 64 + 8 + 6 * 100 + 32 + 2
    assert four['fds_main'] - one['fds_main'] == 2 * 6
    wide = jd.demand(jd.parse_job(dict(BASE, nodes=64, sockets_per_peer=16)))
    assert wide['fds_main'] == 64 + 8 + 6 * 100 + 32 + 16 * 63
    # a world of one has no process group
    assert jd.demand(jd.parse_job(BASE))['fds_main'] == 64 + 8 + 6 * 100


def test_files_a_sample_keeps_open_are_held_by_the_worker_building_the_batch():
    need = jd.demand(jd.parse_job(dict(BASE, open_files_per_sample=3)))
    assert need['fds_worker'] == 64 + 4 * 100 + 8 * 3
    assert need['fds_main'] == 64 + 8 + 6 * 100


def test_thread_workers_move_demand_from_descriptors_and_shm_to_tasks():
    proc = jd.demand(jd.parse_job(BASE))
    thread = jd.demand(jd.parse_job(dict(BASE, worker_type='thread', open_files_per_sample=2)))
    assert thread['shm_bytes'] == 0 and thread['fds_worker'] == 0
    assert thread['fds_main'] == 64 + 4 * 8 * 2                 # every worker's open files
    assert thread['processes'] == 1 and proc['processes'] == 5
    assert thread['pids'] == 1 + 4 + 1 and proc['pids'] == 1 + 4 + 1 + 4 * 3
    assert thread['maps_main'] == 512 + 2 * 6


def test_compile_workers_and_omp_threads_count_as_tasks():
    job = dict(BASE, ranks_per_node=2, torch_compile=True, cpus=8, omp_threads=6)
    del job['intra_op_threads']
    job = jd.parse_job(job)
    assert job['compile_workers'] == 8 and job['intra_op_threads'] == 6
    need = jd.demand(job)
    # 2 ranks x (1 + 4 feeders + 2 x 6 pools + 1 extra + 4 process group + 4 x 5 worker
    # threads + 8 x 2 compile)
    assert need['pids'] == 2 * (22 + 20 + 16)
    assert need['threads'] == need['pids'] + 64
    assert need['processes'] == 2 * (1 + 4 + 8)
    # without cpus: at most 32 compile workers per rank
    assert jd.parse_job(dict(BASE, torch_compile=True))['compile_workers'] == 32
    assert jd.parse_job(dict(BASE, torch_compile=True, compile_workers=2))['compile_workers'] == 2


def test_sysctl_minima_of_a_job():
    job = jd.parse_job(dict(BASE, tensors_per_batch=20000, num_workers=8))
    need = jd.demand(job)
    minima = jd.profile(job)[0]['sysctl']
    assert need['map_count'] == 512 + 10 * 20000 + 2 * (1 + 8 + 1)
    assert minima['vm.max_map_count'] >= 2 * need['map_count'] > 65530
    assert minima['fs.file-max'] >= 2 * need['file_handles'] + 65536
    assert 'fs.inotify.max_user_instances' not in minima
    minima = jd.sysctl_minima(jd.parse_job(dict(BASE, ranks_per_node=8, inotify_instances=16)))
    assert minima['fs.inotify.max_user_instances'] == 384        # 2 x 128 + 128


def test_pids_shortfall_against_a_cgroup():
    need = jd.demand(jd.parse_job(dict(BASE, ranks_per_node=8)))
    found = jd.shortfalls(need, {'pids': 64}, 'k8s_pod')
    assert found == [dict(context='k8s_pod', item='pids', need=need['pids'], have=64,
                          short_by=need['pids'] - 64)]
    assert jd.shortfalls(need, {'pids': 'max'}) == []


@pytest.mark.parametrize('change, message', [
    (dict(nodes=0), 'dataloader_job.nodes: 0 is below 1'),
    (dict(nodes='four'), "dataloader_job.nodes: 'four' is not a whole number"),
    (dict(open_files_per_sample=-1), 'dataloader_job.open_files_per_sample: -1 is below 0'),
    (dict(worker_type='fiber'),
     "dataloader_job.worker_type: 'fiber' is not one of process, thread"),
    (dict(torch_compile='yes'), "dataloader_job.torch_compile: 'yes' is not true or false"),
    (dict(compile_workers=-3), 'dataloader_job.compile_workers: -3 is below 0'),
    (dict(cpus=0), 'dataloader_job.cpus: 0 is below 1'),
    (dict(omp_threads=2), 'dataloader_job.omp_threads: 2 differs from intra_op_threads 0'),
    (dict(rdma_registered_bytes='lots'),
     "dataloader_job.rdma_registered_bytes: 'lots' is not a size"),
])
def test_bad_new_fields_name_the_field(change, message):
    with pytest.raises(jd.JobError) as info:
        jd.parse_job(dict(BASE, **change))
    assert str(info.value).startswith(message), str(info.value)


def test_the_job_profile_filter_gives_pids_and_leaves_the_sysctls_to_job_sysctl():
    """The limits role combines job_profile into limits_profile (pids included: a cgroup
    item limits_profile sets) and gives job_sysctl to sysctl_ceilings."""
    from ansible_collections.gpufleet.tuning.plugins.filter import job_shape
    profile = job_shape.job_profile(dict(JOB))
    assert profile['pids'] == jd.profile(jd.parse_job(dict(JOB)))[0]['pids']
    assert 'sysctl' not in profile and {'nofile', 'nproc'} <= set(profile)
    assert set(job_shape.job_sysctl(dict(JOB))) >= {'vm.max_map_count', 'fs.file-max'}
