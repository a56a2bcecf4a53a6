"""Kernel ceilings (issue 33 item 2) on a real node through Ansible: gpufleet.tuning.sysctl_ceilings
writes /etc/sysctl.d/90-gpufleet-tuning.conf (check mode changes nothing, a second run is
unchanged), refuses bad input and a later file that overrides it before writing, and - /proc/sys
is read-only in the lab's nodes - reports the values as configured, not applied; the limits role
calls it with limits_sysctl and limits_audit reports the kernel rows."""
import json
import os
import subprocess
import tempfile

import pytest

from conftest import BASELINE, run_role
from scenario_support import ansible_command, checksums, run_module

MODULE = 'gpufleet.tuning.sysctl_ceilings'
PATH = '/etc/sysctl.d/90-gpufleet-tuning.conf'
SITE = '/etc/sysctl.d/95-site.conf'


# A Python that runs in a new network and mount namespace with /proc/sys mounted read-write:
# the per-network-namespace sysctls (net.*) are then writable and belong to that namespace
# only, so the real module's live writes meet the real kernel without touching the host.
NETNS_PYTHON = '/usr/local/bin/gpufleet-netns-python3'
NETNS_WRAPPER = """#!/bin/sh
exec unshare --mount --net sh -c 'mount -o remount,rw /proc/sys && exec /usr/bin/python3 "$@"' python3 "$@"
"""


def run_in_netns(host, args):
    """Run sysctl_ceilings through Ansible with NETNS_PYTHON; returns (ok, result, output)."""
    with tempfile.TemporaryDirectory() as tree:
        cmd = ansible_command(host, ['ansible', '--tree', tree, '-m', MODULE, '-a', json.dumps(args),
                                     '-e', 'ansible_python_interpreter=' + NETNS_PYTHON,
                                     host.backend.host])
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        with open(os.path.join(tree, os.listdir(tree)[0])) as handle:
            result = json.load(handle)
    return proc.returncode == 0, result, proc.stdout


def live(host, name):
    return int(host.file('/proc/sys/' + name.replace('.', '/')).content_string.split()[0])


@pytest.fixture
def clean(host):
    """No drop-in of ours or the site's before and after the test."""
    host.run('rm -f %s %s %s.*~' % (PATH, SITE, PATH))
    yield
    host.run('rm -f %s %s %s.*~' % (PATH, SITE, PATH))


@pytest.fixture
def wanted(host):
    """Minimums above the node's live values (so they cannot be met without applying), and
    one the node holds already (met: no line written)."""
    return {'vm.max_map_count': live(host, 'vm.max_map_count') + 1024,
            'fs.inotify.max_user_instances': live(host, 'fs.inotify.max_user_instances') + 64,
            'fs.nr_open': 1024}


def test_proc_sys_is_read_only_in_the_lab(host):
    assert host.run('test -w /proc/sys/vm/max_map_count').rc != 0
    assert ' /proc/sys proc ro,' in ' ' + host.check_output('grep " /proc/sys " /proc/mounts')


def test_check_mode_writes_nothing_and_shows_the_diff(host, clean, wanted):
    ok, result, out = run_module(host, MODULE, {'sysctl': wanted}, check=True, diff=True)
    assert ok, out
    assert result['changed'] is True
    assert '+vm.max_map_count = %d' % wanted['vm.max_map_count'] in out, out
    assert not host.file(PATH).exists


def test_write_is_configured_not_applied_and_idempotent(host, clean, wanted):
    before = live(host, 'vm.max_map_count')
    ok, result, out = run_module(host, MODULE, {'sysctl': wanted})
    assert ok, out
    assert result['changed'] is True
    text = host.file(PATH).content_string
    assert 'vm.max_map_count = %d\n' % wanted['vm.max_map_count'] in text
    assert 'fs.inotify.max_user_instances = %d\n' % wanted['fs.inotify.max_user_instances'] in text
    # a plain value is a minimum: the node's fs.nr_open holds 1024 already (live, and at
    # boot: no line sets it), so no line of ours pins it
    assert 'fs.nr_open' not in text
    rows = dict((r['name'], r) for r in result['sysctl'])
    assert rows['fs.nr_open']['action'] == 'met' and rows['fs.nr_open']['value'] is None
    # read-only /proc/sys: written, not applied, said in the result and a warning
    assert result['configured_not_applied'] == ['fs.inotify.max_user_instances',
                                                'vm.max_map_count']
    assert 'read-only' in result['not_applied']['vm.max_map_count']
    assert result['reboot_required'] is True
    assert 'configured, not applied' in out, out
    assert live(host, 'vm.max_map_count') == before
    assert rows['vm.max_map_count']['source'].startswith(PATH + ':')
    sums = checksums(host, [PATH])
    again_ok, again, out = run_module(host, MODULE, {'sysctl': wanted})
    assert again_ok, out
    assert again['changed'] is False
    assert checksums(host, [PATH]) == sums


def test_lines_it_does_not_own_are_kept(host, clean, wanted):
    host.check_output("printf '# site note\\nnet.core.somaxconn=4096' > %s" % PATH)
    ok, result, out = run_module(host, MODULE, {'sysctl': wanted})
    assert ok, out
    text = host.file(PATH).content_string
    # kept byte for byte; a newline added before appending, never glued onto the last line
    assert text.startswith('# site note\nnet.core.somaxconn=4096\n'
                           'fs.inotify.max_user_instances = '), text
    ok, result, out = run_module(host, MODULE, {'sysctl': {'vm.max_map_count': None},
                                                'state': 'absent'})
    assert ok, out
    assert 'vm.max_map_count' not in host.file(PATH).content_string
    assert 'net.core.somaxconn=4096' in host.file(PATH).content_string


@pytest.mark.parametrize('sysctl,message', [
    ({'fs.no_such_ceiling': 5},
     "sysctl.fs.no_such_ceiling: unknown sysctl 'fs.no_such_ceiling' (no /proc/sys/fs/no_such_ceiling"),
    ({'vm.max_map_count': 'lots'}, "sysctl.vm.max_map_count: 'lots' is not an integer"),
    ({'kernel.pid_max': 100}, 'sysctl.kernel.pid_max: 100 is outside what the kernel accepts for '
                              'kernel.pid_max (301 to 4194304)'),
    ({'fs.inotify.*': 5}, "sysctl.fs.inotify.*: 'fs.inotify.*' is a pattern"),
])
def test_bad_input_is_refused_before_anything_is_written(host, clean, sysctl, message):
    ok, result, out = run_module(host, MODULE, {'sysctl': sysctl})
    assert not ok, out
    assert message in result['msg'], result['msg']
    assert not host.file(PATH).exists


def test_a_later_file_that_overrides_is_refused_naming_its_line(host, clean, wanted):
    host.check_output("printf '# site\\nvm.max_map_count = 65530\\n' > %s" % SITE)
    ok, result, out = run_module(host, MODULE, {'sysctl': wanted})
    assert not ok, out
    assert '%s:2 sets vm.max_map_count = 65530 after %s' % (SITE, PATH) in result['msg']
    assert not host.file(PATH).exists
    ok, result, out = run_module(host, MODULE, {'sysctl': wanted, 'on_conflict': 'warn'})
    assert ok, out
    assert result['conflicts'][0]['source'] == SITE + ':2'
    assert 'on_conflict=warn' in out, out


def test_the_role_writes_limits_sysctl_and_the_audit_reports_it(host, clean, wanted):
    rc, out = run_role(host, limits_profile=BASELINE, limits_sysctl=wanted)
    assert rc == 0, out
    assert 'vm.max_map_count = %d' % wanted['vm.max_map_count'] in host.file(PATH).content_string
    assert 'configured, not applied' in out, out
    # /proc/sys is read-only here: the role says the ceilings wait for the next boot
    assert 'limits_reboot_required=True' in out, out
    # bad input through the role: refused naming the field, nothing written
    sums = checksums(host, [PATH])
    rc, out = run_role(host, limits_profile=BASELINE, limits_sysctl={'vm.max_map_count': 'x'})
    assert rc == 2, out
    assert "sysctl.vm.max_map_count: 'x' is not an integer" in out, out
    assert checksums(host, [PATH]) == sums
    ok, result, out = run_module(host, 'gpufleet.tuning.limits_audit', {
        'profile': BASELINE, 'user': 'trainer', 'sysctl': wanted})
    assert ok, out
    rows = dict((r['name'], r) for r in result['kernel'])
    row = rows['vm.max_map_count']
    assert row['state'] == 'configured_not_applied', row
    assert row['source'].startswith(PATH + ':')
    assert row['configured'] == wanted['vm.max_map_count']
    assert row['gap'] == wanted['vm.max_map_count'] - row['live'] == 1024
    assert row['node_exporter'] == 'node_sysctl_vm_max_map_count'
    assert rows['fs.file-max']['in_use'] > 0
    assert rows['fs.file-max']['node_exporter'] == 'node_filefd_maximum'
    assert 'kernel: %s' % row['reason'] in out, out


@pytest.fixture
def netns_python(host):
    host.check_output("printf '%%s' '%s' > %s && chmod 755 %s"
                      % (NETNS_WRAPPER.replace("'", "'\\''"), NETNS_PYTHON, NETNS_PYTHON))
    yield
    host.run('rm -f %s' % NETNS_PYTHON)


def test_where_proc_sys_is_writable_the_values_are_applied_and_a_refused_one_writes_nothing(
        host, clean, netns_python):
    """The real module against the real kernel: in a network namespace of its own (net.*
    sysctls are per namespace) /proc/sys is writable, so the values are applied, not just
    configured; a value the kernel refuses (net.ipv4.tcp_ecn accepts 0 to 2) fails naming
    it with nothing written, the value applied before it put back."""
    node_value = live(host, 'net.core.somaxconn')
    ok, result, out = run_in_netns(host, {'sysctl': {'net.core.somaxconn': node_value + 1,
                                                     'net.ipv4.tcp_ecn': 5}})
    assert not ok, out
    assert result['msg'].startswith('sysctl.net.ipv4.tcp_ecn: writing 5 to '
                                    '/proc/sys/net/ipv4/tcp_ecn failed: the kernel refuses the '
                                    'value (nothing written'), result['msg']
    assert result['applied'] == {}
    assert not host.file(PATH).exists
    ok, result, out = run_in_netns(host, {'sysctl': {'net.core.somaxconn': node_value + 1}})
    assert ok, out
    assert result['applied'] == {'net.core.somaxconn': node_value + 1}
    assert result['configured_not_applied'] == []
    assert result['reboot_required'] is False
    row = result['sysctl'][0]
    assert (row['live'], row['applied'], row['action']) == (node_value + 1, True, 'written')
    assert 'net.core.somaxconn = %d\n' % (node_value + 1) in host.file(PATH).content_string
    # the node's own network namespace keeps its value (its /proc/sys stays read-only)
    assert live(host, 'net.core.somaxconn') == node_value
