"""Docker after converge: new containers get default-ulimits and the /dev/shm size, every other
daemon.json key survived (and dockerd uses them), and the _info twin agrees with a container."""
import json

from conftest import (CONVERGE_ARGS, DAEMON_JSON, DOCKER, EXPECTED, EXPECTED_SHM,
                      container_limits, container_shm_kib)

FOREIGN = {
    'storage-driver': 'vfs',
    'log-driver': 'json-file',
    'log-opts': {'max-size': '10m', 'max-file': '3'},
    'runtimes': {'nvidia': {'path': '/usr/bin/nvidia-container-runtime', 'runtimeArgs': []}},
    'registry-mirrors': ['https://mirror.gpufleet.invalid'],
}


def test_dockerd_runs_after_the_restart(host):
    assert host.service('docker').is_running
    # The handler restarted dockerd after the file changed: it started after daemon.json's mtime.
    started = host.check_output(
        "date -d \"$(systemctl show -p ActiveEnterTimestamp --value docker.service)\" +%s")
    assert int(started) >= int(host.file(DAEMON_JSON).mtime.timestamp())


def test_new_containers_get_the_default_ulimits(host):
    limits = container_limits(host, DOCKER)
    for item, expected in EXPECTED.items():
        assert limits[item] == expected, (item, limits[item])


def test_new_containers_get_the_shm_size(host):
    assert container_shm_kib(host, DOCKER) * 1024 == EXPECTED_SHM


def test_an_explicit_ulimit_still_wins(host):
    limits = container_limits(host, 'docker run --rm --network=none --ulimit nofile=1000:2000 '
                                    'tiny:latest')
    assert limits['nofile'].soft == 1000 and limits['nofile'].hard == 2000


def test_every_other_key_survived_in_order_with_the_mode(host):
    data = json.loads(host.file(DAEMON_JSON).content_string)
    assert list(data) == list(FOREIGN) + ['default-ulimits', 'default-shm-size']
    for key, value in FOREIGN.items():
        assert data[key] == value
    assert data['default-ulimits']['memlock'] == {'Name': 'memlock', 'Soft': 4194304,
                                                  'Hard': 8388608}
    assert data['default-shm-size'] == '1G'
    assert host.file(DAEMON_JSON).mode == 0o640


def test_dockerd_uses_the_other_keys(host):
    info = json.loads(host.check_output("docker info --format '{{json .}}'"))
    assert 'nvidia' in info['Runtimes']
    assert info['LoggingDriver'] == 'json-file'
    assert 'https://mirror.gpufleet.invalid/' in info['RegistryConfig']['Mirrors']
    assert info['Driver'] == 'vfs'


def test_a_backup_of_the_original_was_kept(host):
    backups = host.check_output('ls /etc/docker/ | grep "^daemon.json\\..*~$" || true').split()
    assert len(backups) == 1
    original = json.loads(host.file('/etc/docker/' + backups[0]).content_string)
    assert original == FOREIGN


def test_info_module_agrees_with_a_real_container(host, module):
    ok, info = module('gpufleet.tuning.docker_ulimits_info',
                      {'image': 'tiny:latest', 'run_options': ['--network=none']})
    assert ok, info
    direct = container_limits(host, DOCKER)
    for item in ('nofile', 'memlock', 'nproc', 'stack', 'core'):
        live = info['live']['limits'][item]
        assert (live['soft'], live['hard']) == (direct[item].soft, direct[item].hard), item
    for item, expected in EXPECTED.items():
        configured = info['config']['default_ulimits'][item]
        assert (configured['soft'], configured['hard']) == (expected.soft, expected.hard)
        assert configured['source'].startswith(DAEMON_JSON + ':')
    assert info['config']['shm_size']['bytes'] == EXPECTED_SHM
    assert info['live']['shm_size'] == EXPECTED_SHM
    assert info['unit_flags'] == [] and info['problems'] == []
    assert info['running_containers'] == {'count': 0, 'live_restore': False}
    assert info['containerd']['limits']['nofile']['hard'] > 0


def test_module_is_idempotent_and_says_no_restart(host, module):
    before = host.file(DAEMON_JSON).sha256sum
    ok, result = module('gpufleet.tuning.docker_ulimits', CONVERGE_ARGS)
    assert ok, result
    assert result['changed'] is False and result['restart_required'] is False
    assert host.file(DAEMON_JSON).sha256sum == before


def test_check_mode_predicts_a_change_and_writes_nothing(host, module):
    before = host.file(DAEMON_JSON).sha256sum
    args = dict(CONVERGE_ARGS, ulimits={'nofile': {'soft': 4096, 'hard': 16384}})
    ok, result = module('gpufleet.tuning.docker_ulimits', args, check=True)
    assert ok, result
    assert result['changed'] is True and result['restart_required'] is True
    assert result['default_ulimits']['nofile']['Soft'] == 4096
    assert host.file(DAEMON_JSON).sha256sum == before
