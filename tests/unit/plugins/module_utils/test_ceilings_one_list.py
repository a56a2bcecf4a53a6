"""Issue 40 item 4: one list of kernel ceilings (model/ceilings.py). The lists the audit, the
probes' proofs, effective_limits, the sysctl parser and the failure classifier use are derived
from it, in the order each had before."""
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import kernel_ceilings
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective


def test_every_list_is_derived_in_its_order():
    assert kernel_ceilings.CEILINGS == ceilings.NAMES == tuple(sysctl_conf.KNOWN)
    assert kernel_ceilings.CEILINGS == (
        'fs.file-max', 'fs.nr_open', 'vm.max_map_count', 'fs.inotify.max_user_instances',
        'fs.inotify.max_user_watches', 'kernel.pid_max', 'kernel.threads-max')
    assert effective.CEILINGS == ('fs.nr_open', 'fs.file-max', 'kernel.pid_max',
                                  'kernel.threads-max')
    assert host_limits.SYSCTLS == ('fs.nr_open', 'fs.file-max', 'kernel.pid_max',
                                   'kernel.threads-max', 'vm.max_map_count')
    assert classify.CEILINGS == ('nofile', 'nproc', 'pids.max', 'memlock', 'shm', 'removeipc',
                                 'vm.max_map_count', 'fs.file-max',
                                 'fs.inotify.max_user_instances', 'fs.inotify.max_user_watches',
                                 'core', 'memory')
    assert set(kernel_ceilings.NODE_EXPORTER) == set(ceilings.NAMES)


def test_per_name_attributes():
    nr_open = ceilings.BY_NAME['fs.nr_open']
    assert sysctl_conf.KNOWN['fs.nr_open'][:2] == (nr_open.low, nr_open.high) == (64, 2147483584)
    assert kernel_ceilings.NODE_EXPORTER['kernel.pid_max'] == (
        'node_processes_max_processes', 'processes')
    # a ceiling added to the one list reaches the parser's bounds and the audit's rows
    assert all(name in sysctl_conf.KNOWN for name in ceilings.names('proof'))
