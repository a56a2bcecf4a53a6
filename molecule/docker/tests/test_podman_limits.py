"""Podman after converge: the real podman reads our drop-in (new containers get the limits and
/dev/shm size), hand-written lines survived byte for byte, the _info twin agrees with a
container, and a broken drop-in makes podman fail (so podman really reads this file)."""
from conftest import (CONVERGE_ARGS, EXPECTED, EXPECTED_SHM, PODMAN, container_limits,
                      container_shm_kib)

PREPARED = ('# hand-written, keep me\n[containers]\nlog_size_max = -1   # no log size limit\n\n'
            '[network]\ndefault_subnet = "10.89.0.0/24"\n')


def test_dropin_keeps_the_hand_written_lines(host, podman_conf):
    content = host.file(podman_conf).content_string
    assert content == PREPARED.replace(
        '[containers]\n',
        '[containers]\ndefault_ulimits = ["nofile=8192:16384", "memlock=4194304:8388608", '
        '"nproc=30000:60000"]\nshm_size = "1073741824"\n')


def test_node_dropin_untouched(host):
    assert host.file('/etc/containers/containers.conf.d/10-node.conf').content_string == (
        '# node settings: cgroupfs inside a container, no journald for events\n[engine]\n'
        'cgroup_manager = "cgroupfs"\nevents_logger = "file"\n')


def test_new_podman_containers_get_the_limits(host):
    limits = container_limits(host, PODMAN)
    for item, expected in EXPECTED.items():
        assert limits[item] == expected, (item, limits[item])


def test_new_podman_containers_get_the_shm_size(host):
    assert container_shm_kib(host, PODMAN) * 1024 == EXPECTED_SHM


def test_info_module_agrees_with_a_real_podman_container(host, module, podman_conf):
    ok, info = module('gpufleet.tuning.podman_ulimits_info',
                      {'image': 'localhost/tiny:latest', 'run_options': ['--network=none']})
    assert ok, info
    direct = container_limits(host, PODMAN)
    for item, expected in EXPECTED.items():
        live = info['live']['limits'][item]
        assert (live['soft'], live['hard']) == (direct[item].soft, direct[item].hard)
        configured = info['config']['default_ulimits'][item]
        assert (configured['soft'], configured['hard']) == (expected.soft, expected.hard)
        assert configured['source'].startswith(podman_conf + ':3:')
    assert info['config']['shm_size'] == {'bytes': EXPECTED_SHM,
                                          'source': podman_conf + ':4:12'}
    assert info['live']['shm_size'] == EXPECTED_SHM
    assert info['problems'] == []


def test_podman_module_is_idempotent(host, module, podman_conf):
    before = host.file(podman_conf).sha256sum
    ok, result = module('gpufleet.tuning.podman_ulimits', CONVERGE_ARGS)
    assert ok, result
    assert result['changed'] is False
    assert host.file(podman_conf).sha256sum == before


def test_podman_reads_this_file(host, podman_conf):
    """The oracle for 'podman parses what we write': the good file passes `podman info`, the
    same file with one broken line makes podman fail and name it."""
    host.check_output('podman info --format json >/dev/null')
    good = host.file(podman_conf).content_string
    host.check_output("cp -p %s /root/dropin.keep && sed -i 's/^shm_size = .*/shm_size = [/' %s"
                      % (podman_conf, podman_conf))
    try:
        broken = host.run('podman info --format json')
    finally:
        host.check_output('cp -p /root/dropin.keep %s' % podman_conf)
    assert broken.rc != 0
    assert podman_conf.rsplit('/', 1)[-1] in broken.stderr
    assert host.file(podman_conf).content_string == good
    host.check_output('podman info --format json >/dev/null')
