"""Refusals: bad_input.yml runs every bad case (unparsable daemon.json, unreadable entries,
conflicting dockerd flags, invalid values, broken Podman drop-ins) and checks each message and
checksum; dockerd itself confirms that the flag conflict we refuse is one it refuses."""
from conftest import DAEMON_JSON, checksum, run_playbook


def test_bad_input_is_refused_with_files_untouched(host, podman_conf):
    before = (checksum(host, DAEMON_JSON), checksum(host, podman_conf),
              checksum(host, '/etc/default/docker'))
    rc, output = run_playbook(host, 'bad_input.yml')
    assert rc == 0, output[-6000:]
    # 9 Docker and 3 Podman cases, each ending in its checksum assertion.
    assert output.count('The file is unchanged') == 12, output[-6000:]
    assert output.count('The message names the place') == 12, output[-6000:]
    after = (checksum(host, DAEMON_JSON), checksum(host, podman_conf),
             checksum(host, '/etc/default/docker'))
    assert after == before
    assert not host.file('/etc/systemd/system/docker.service.d/50-flags.conf').exists
    assert host.service('docker').is_running


def test_dockerd_refuses_a_flag_that_daemon_json_also_sets(host):
    """What the module refuses is what dockerd refuses: the converged daemon.json plus one flag.
    (A second dockerd on its own socket and data root; it exits before starting anything.)"""
    for flag, key in (('--default-ulimit nofile=1024:2048', 'default-ulimits'),
                      ('--default-shm-size 2G', 'default-shm-size')):
        result = host.run('timeout 30 dockerd --config-file %s %s -H unix:///run/probe.sock '
                          '--data-root /tmp/probe-root --exec-root /run/probe-exec '
                          '--pidfile /run/probe.pid' % (DAEMON_JSON, flag))
        assert result.rc not in (0, 124), result.stderr
        assert 'specified both as a flag and in the configuration file: %s' % key \
            in result.stderr, result.stderr
