"""dockerd and Podman as the oracles for the decoding rules ported in tests/unit/plugins/
module_utils/test_oracle_containers.py: the real daemon judges daemon.json and containers.conf variants,
and what it does (refuses to start, or the limits and /dev/shm a new container gets) must be
what docker_daemon_json and containers_conf say. Runs after the scenario's other tests and puts
daemon.json, the drop-ins and dockerd back as converge left them."""
import base64
import json

import pytest

from conftest import (DAEMON_JSON, DOCKER, PODMAN, PODMAN_MAIN, container_limits,
                      container_shm_kib, podman_reads_dropins)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)

ULIMIT_VARIANTS = [
    {'nofile': {'name': 'nofile', 'soft': 1111, 'hard': 2222}},
    {'nofile': {'NAME': 'NOFILE', 'SOFT': 1112, 'HARD': 2223}},
    {'nofile': {'Name': 'nofile', 'Soft': 1, 'soft': 1500, 'Hard': 3000}},
]
SHM_VARIANTS = ['"1.5G"', '"64 MB"', '1073741824', '" 1G"', '""']
ORACLE_DROPIN = '/etc/containers/containers.conf.d/95-oracle.conf'


def _write(host, path, text):
    host.check_output('echo %s | base64 -d > %s' % (base64.b64encode(text.encode()).decode(),
                                                    path))


def _pages_kib(size):
    """tmpfs rounds its size up to whole 4 KiB pages."""
    return (size + 4095) // 4096 * 4


def _restart_dockerd(host):
    host.run('systemctl reset-failed docker.service docker.socket')
    return host.run('timeout 90 systemctl restart docker.service').rc == 0


@pytest.fixture(scope='module')
def converged(host):
    original = host.file(DAEMON_JSON).content_string
    yield json.loads(original)
    _write(host, DAEMON_JSON, original)
    host.run('rm -f %s' % ORACLE_DROPIN)
    assert _restart_dockerd(host)


@pytest.mark.parametrize('index', range(len(ULIMIT_VARIANTS)))
def test_dockerd_reads_ulimit_keys_in_any_case(host, converged, index):
    data = dict(converged, **{'default-ulimits': ULIMIT_VARIANTS[index]})
    text = json.dumps(data, indent=2)
    _write(host, DAEMON_JSON, text)
    assert _restart_dockerd(host)
    ours = dj.read_ulimits(dj.parse(text))['nofile']
    got = container_limits(host, DOCKER)['nofile']
    assert (got.soft, got.hard) == (ours.soft, ours.hard)


@pytest.mark.parametrize('value', SHM_VARIANTS)
def test_dockerd_reads_default_shm_size_as_we_do(host, converged, value):
    data = dict(converged)
    data.pop('default-shm-size', None)
    text = json.dumps(data, indent=2)[:-2] + ',\n  "default-shm-size": %s\n}' % value
    try:
        ours = dj.read_shm_size(dj.parse(text))
    except dj.DaemonJsonError:
        ours = None
    _write(host, DAEMON_JSON, text)
    started = _restart_dockerd(host)
    assert started == (ours is not None), (value, ours)
    if started:
        assert container_shm_kib(host, DOCKER) == _pages_kib(ours)


PODMAN_VARIANTS = [
    # nproc too: without it Podman adds nproc 1048576, above this node's hard limit
    '[containers]\ndefault_ulimits = ["nofile=1234:2345", "nproc=4096:8192"]\n'
    'shm_size = "1.5m"\n',
    '[containers]\ndefault_ulimits = ["nofile = 5"]\n',
    '[containers]\ndefault_ulimits = ["NOFILE=5"]\n',
    '[containers]\nshm_size = "1x"\n',
]


@pytest.fixture
def oracle_conf(host):
    """Where a containers.conf variant is read last: a drop-in of its own, or where Podman
    reads no drop-in (before 3.3) /etc/containers/containers.conf, put back afterwards."""
    if podman_reads_dropins(host):
        yield ORACLE_DROPIN
        host.run('rm -f %s' % ORACLE_DROPIN)
    else:
        host.check_output('cp -p %s /root/oracle.keep' % PODMAN_MAIN)
        yield PODMAN_MAIN
        host.check_output('cp -p /root/oracle.keep %s' % PODMAN_MAIN)


@pytest.mark.parametrize('text', PODMAN_VARIANTS)
def test_podman_reads_containers_conf_as_we_do(host, converged, oracle_conf, text):
    _write(host, oracle_conf, text)
    doc = cc.scan(text, oracle_conf)
    try:
        entry = doc.get(cc.TABLE, cc.ULIMITS_KEY)
        ours_ulimits = cc.read_ulimits(doc, entry)[0] if entry else None
        entry = doc.get(cc.TABLE, cc.SHM_KEY)
        ours_shm = cc.read_shm(doc, entry) if entry else None
        accepted = True
    except cc.TomlError:
        accepted = False
    info = host.run('podman info --format json')
    assert (info.rc == 0) == accepted, (text, info.stderr)
    if accepted:
        limits = container_limits(host, PODMAN)
        for item, (limit, _pos) in (ours_ulimits or {}).items():
            assert (limits[item].soft, limits[item].hard) == (limit.soft, limit.hard), item
        if ours_shm:
            assert container_shm_kib(host, PODMAN) == _pages_kib(ours_shm)


def test_podman_reads_no_usr_share_dropins(host, converged):
    """containers_conf.config_files leaves /usr/share/containers/containers.conf.d out."""
    host.check_output('mkdir -p /usr/share/containers/containers.conf.d')
    _write(host, '/usr/share/containers/containers.conf.d/95-oracle.conf',
           '[containers]\ndefault_ulimits = ["nofile=3333:3333"]\n')
    try:
        assert container_limits(host, PODMAN)['nofile'].soft != 3333
    finally:
        host.run('rm -f /usr/share/containers/containers.conf.d/95-oracle.conf')


def test_append_attribute_by_podman_version(host, converged, oracle_conf):
    """containers/common 0.58+ (Podman 5) reads {append=true}; older Podman refuses it."""
    version = host.check_output("podman version --format '{{.Client.Version}}'")
    _write(host, oracle_conf, '[containers]\ndefault_ulimits = ["nofile=1:1", {append=true}]\n')
    info = host.run('podman info --format json')
    major = int(version.split('.')[0])
    assert (info.rc == 0) == (major >= 5), (version, info.stderr)
    if major < 5:
        # Podman 4 (go-toml's decoder): "incompatible types"; Podman 3.0 (BurntSushi/toml):
        # "arrays must be homogeneous"
        assert 'incompatible types' in info.stderr or 'must be homogeneous' in info.stderr, \
            info.stderr
