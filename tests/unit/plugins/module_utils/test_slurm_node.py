# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""This host as a Slurm node: the slurm.conf its slurmd reads (command line, environment,
configless cache, packaged files, in that order, under a fake root), its NodeName (hostname
against NodeHostname, NodeName and NodeAddr, with hostlists) and srun's refusals."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_node as sn


def conf(text, path='/etc/slurm/slurm.conf'):
    return sc.parse(path, reader=lambda _p: text)


# --- hostlists ----------------------------------------------------------------------------

@pytest.mark.parametrize('text,names', [
    ('gpu7', ['gpu7']),
    ('node[1-4]', ['node1', 'node2', 'node3', 'node4']),
    ('node[1-2,7]', ['node1', 'node2', 'node7']),
    ('n[08-10]', ['n08', 'n09', 'n10']),
    ('a,b[1-2],c', ['a', 'b1', 'b2', 'c']),
    ('rack[1-2]-n[1-2]', ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']),
    ('10.0.0.[1-2]', ['10.0.0.1', '10.0.0.2']),
])
def test_hostlists_expand_as_slurm_writes_them(text, names):
    assert sn.expand_hostlist(text, 'f:3') == names


@pytest.mark.parametrize('text,words', [
    ('node[1-4', 'unbalanced brackets'),
    ('node[a-b]', "cannot read 'a-b'"),
    ('node[4-1]', 'reversed or too large'),
])
def test_a_bad_hostlist_names_file_and_line(text, words):
    with pytest.raises(sn.NodeError) as info:
        sn.expand_hostlist(text, '/etc/slurm/slurm.conf:9')
    assert info.value.msg.startswith('/etc/slurm/slurm.conf:9: ')
    assert words in info.value.msg


# --- NodeName of this host ----------------------------------------------------------------

NODES = ('ClusterName=gpu\nSlurmctldHost=ctl\n'
         'NodeName=DEFAULT CPUs=8\n'
         'NodeName=gpu[1-3] NodeHostname=host[1-3] NodeAddr=10.0.0.[1-3] CPUs=8\n'
         'NodeName=solo CPUs=4\n')


@pytest.mark.parametrize('names,addresses,node', [
    (['host2', 'host2.lab'], (), 'gpu2'),         # NodeHostname (not NodeName)
    (['x', 'host3.lab'], (), None),               # the full name is not a NodeHostname here
    (['solo', 'solo.lab'], (), 'solo'),            # NodeHostname defaults to NodeName
    (['gpu1', 'gpu1.lab'], (), 'gpu1'),            # the NodeName itself
    (['other'], ('10.0.0.3',), 'gpu3'),            # NodeAddr
])
def test_this_hosts_nodename(names, addresses, node):
    config = conf(NODES)
    if node is None:
        with pytest.raises(sn.NodeError) as info:
            sn.resolve_node(config, names, '/etc/slurm/slurm.conf', addresses)
        assert info.value.msg.startswith('/etc/slurm/slurm.conf: no NodeName is this host: '
                                         'none of x, host3.lab is a NodeHostname')
        assert '/etc/slurm/slurm.conf:4, /etc/slurm/slurm.conf:5' in info.value.msg
    else:
        assert sn.resolve_node(config, names, '/etc/slurm/slurm.conf', addresses) == node


def test_the_full_hostname_matches_a_nodehostname():
    config = conf('NodeName=n[1-2] NodeHostname=n[1-2].lab.example\n')
    assert sn.resolve_node(config, ['n2', 'n2.lab.example'], 'f') == 'n2'


def test_several_nodes_on_one_host_is_refused_with_the_way_out():
    config = conf('NodeName=a NodeHostname=localhost\nNodeName=b NodeHostname=localhost\n')
    with pytest.raises(sn.NodeError) as info:
        sn.resolve_node(config, ['localhost'], 'f')
    assert info.value.msg == ('f: localhost matches 2 nodes (a, b); start slurmd with -N NAME so '
                              'that the probe knows which one is this host')


def test_nodehostname_count_must_match_nodename():
    config = conf('SlurmctldHost=c\nNodeName=n[1-3] NodeHostname=h[1-2]\n')
    with pytest.raises(sn.NodeError) as info:
        sn.resolve_node(config, ['h1'], 'f')
    assert info.value.msg.startswith('/etc/slurm/slurm.conf:2: NodeName=n[1-3] names 3 nodes '
                                     'but NodeHostname 2')


def test_slurmd_dash_n_wins_over_the_file():
    found = sn.Found(sn.Slurmd(7, ['/usr/sbin/slurmd', '-D', '-N', 'gpu9']))
    assert sn.this_node(found) == 'gpu9'
    assert sn.Slurmd(7, ['slurmd', '-DNgpu8']).node == 'gpu8'


# --- which slurm.conf slurmd reads ---------------------------------------------------------

def fake_root(tmp_path, files=(), argv=None, environ=None):
    root = str(tmp_path)
    for path in files:
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        with open(root + path, 'w') as handle:
            handle.write('SlurmctldHost=ctl\n')
    os.makedirs(root + '/proc/1')
    with open(root + '/proc/1/comm', 'w') as handle:
        handle.write('systemd\n')
    if argv is not None:
        os.makedirs(root + '/proc/812')
        with open(root + '/proc/812/comm', 'w') as handle:
            handle.write('slurmd\n')
        with open(root + '/proc/812/cmdline', 'w') as handle:
            handle.write('\0'.join(argv) + '\0')
        with open(root + '/proc/812/environ', 'w') as handle:
            handle.write('\0'.join('%s=%s' % pair for pair in (environ or {}).items()))
    return root


CACHE, OLD_CACHE = sn.CONFIGLESS_CACHES
LLNL, ETC = sn.PACKAGED


@pytest.mark.parametrize('files,argv,environ,path,how', [
    ([ETC, CACHE, '/opt/s.conf'], ['slurmd', '-f', '/opt/s.conf'], {'SLURM_CONF': ETC},
     '/opt/s.conf', "slurmd's -f (pid 812)"),
    ([ETC, '/opt/e.conf'], ['slurmd', '-D'], {'SLURM_CONF': '/opt/e.conf'},
     '/opt/e.conf', "SLURM_CONF in slurmd's environment (pid 812)"),
    ([ETC, CACHE], ['slurmd', '--conf-server', 'ctl:6817'], {}, CACHE,
     "slurmd's configless cache"),
    ([ETC, OLD_CACHE], ['slurmd', '--conf-server=ctl'], {}, OLD_CACHE,
     "slurmd's configless cache"),
    ([ETC, LLNL], None, None, LLNL, 'the packaged file'),
    ([ETC], None, None, ETC, 'the packaged file'),
])
def test_the_file_slurmd_reads_is_found_in_slurmds_order(tmp_path, files, argv, environ,
                                                         path, how):
    found = sn.find_conf(fake_root(tmp_path, files, argv, environ))
    assert (found.path, found.how) == (path, how)
    assert found.configless == (path in sn.CONFIGLESS_CACHES)
    assert found.warning() is None


def test_configless_slurmd_is_seen(tmp_path):
    root = fake_root(tmp_path, [CACHE], ['/usr/sbin/slurmd', '--conf-server', 'ctl'])
    found = sn.find_conf(root)
    assert found.path == CACHE and found.configless
    assert found.slurmd.conf_server == 'ctl' and found.slurmd.pid == 812
    assert found.file == root + CACHE


def test_slurmd_without_a_config_is_a_warning_naming_what_was_looked_at(tmp_path):
    found = sn.find_conf(fake_root(tmp_path, [], ['slurmd', '--conf-server', 'ctl']))
    assert found.path is None
    assert found.warning() == (
        "slurmd runs (pid 812: slurmd --conf-server ctl) but no slurm.conf it reads was found "
        "(looked at: /run/slurm/conf/slurm.conf (slurmd's configless cache); "
        "/var/spool/slurmd/conf-cache/slurm.conf (slurmd's configless cache); "
        "/etc/slurm-llnl/slurm.conf (the packaged file); /etc/slurm/slurm.conf (the packaged "
        "file)): the slurm context and its slurm_job probe are left out; with configless Slurm "
        "(--conf-server) the cache appears once slurmd has fetched it")


def test_a_file_slurmd_names_is_not_replaced_by_another(tmp_path):
    found = sn.find_conf(fake_root(tmp_path, [ETC], ['slurmd', '-f', '/gone.conf']))
    assert found.path is None
    assert found.looked == ["/gone.conf (slurmd's -f (pid 812))"]
    assert 'no slurm.conf it reads was found (looked at: /gone.conf' in found.warning()


def test_no_slurmd_and_no_file_is_no_warning(tmp_path):
    found = sn.find_conf(fake_root(tmp_path))
    assert found.path is None and found.slurmd is None and found.warning() is None


@pytest.mark.parametrize('path,cached', [
    ('/run/slurm/conf/slurm.conf', True), ('/run/slurm/conf/cgroup.conf', True),
    ('/var/spool/slurmd/conf-cache/slurm.conf', True), ('/etc/slurm/slurm.conf', False),
])
def test_cache_paths(path, cached):
    assert sn.in_cache(path) is cached


# --- srun's refusals ---------------------------------------------------------------------

@pytest.mark.parametrize('text,reason', [
    ('srun: error: Unable to allocate resources: Requested nodes are busy', 'busy'),
    ('srun: error: Unable to allocate resources: Immediate execution impossible, insufficient '
     'priority', 'busy'),
    ('srun: Job allocation 41 has been revoked.', 'busy'),
    ('srun: error: Unable to allocate resources: Required node not available (down, drained or '
     'reserved)', 'unavailable'),
    ('srun: error: Unable to allocate resources: Invalid node name specified', None),
    ('srun: error: Slurm controller not responding, exiting', None),
    ('', None),
])
def test_srun_refusals_are_told_apart(text, reason):
    found = sn.refusal(text)
    assert (found[0] if found else None) == reason
