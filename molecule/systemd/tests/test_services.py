"""The converged limits reach real processes: a system service, the unit's main process, the
user manager's services. Values from converge.yml."""
from conftest import (UNIT, proc_limits, system_service_limits, user_service_limits,
                      limits_model as m)

U = m.UNLIMITED
L = m.Limit
MiB = 1024 ** 2


def test_system_service_gets_manager_defaults(host):
    got = system_service_limits(host)
    assert got['nofile'] == L(4096, 16384)
    assert got['nproc'] == L(8192, 8192)
    assert got['memlock'] == L(4 * MiB, 8 * MiB)
    assert got['core'] == L(0, U)
    assert got['stack'] == L(16 * MiB, U)


def test_unit_main_process_gets_unit_limits(host):
    pid = host.check_output('systemctl show -p MainPID --value %s' % UNIT)
    assert int(pid) > 0
    got = proc_limits(host, pid)
    assert got['nofile'] == L(8192, 12000)       # drop-in wins over the unit file's 2048
    assert got['memlock'] == L(2 * MiB, 2 * MiB)
    assert got['cpu'] == L(5400, 5400)
    assert got['nproc'] == L(8192, 8192)          # not set on the unit: the manager default


def test_user_services_get_user_manager_defaults(host):
    got = user_service_limits(host)
    assert got['nofile'] == L(3000, 12000)
    assert got['nproc'] == L(4096, 4096)


def test_user_manager_itself_runs_with_system_defaults(host):
    pid = host.check_output('systemctl show -p MainPID --value user@1001.service')
    got = proc_limits(host, pid)
    assert got['nofile'].hard == 16384            # systemd --user raises its soft to the hard
    assert got['nproc'] == L(8192, 8192)


def test_foreign_lines_survive(host):
    text = host.file('/etc/systemd/system.conf.d/90-gpufleet-tuning.conf').content_string
    assert text.startswith('# written by hand before Ansible\n[Manager]\nDefaultTimeoutStopSec=20s\n')
    assert 'DefaultLimitNOFILE=4096:16384\n' in text
    vendor = host.file('/usr/lib/systemd/system.conf.d/10-vendor.conf').content_string
    assert vendor == '[Manager]\nDefaultLimitNOFILE=2048\nDefaultLimitNPROC=1000\n'
