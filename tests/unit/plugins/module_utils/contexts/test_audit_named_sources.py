"""The audit names the line that decides a value where a planted source showed it named another
(issue 32.3, molecule/reliability/tests/test_planted_causes.py): a ``--default-ulimit`` flag of
docker.service (was "inherited from containerd") and a ``user@.service`` cap (was user.conf's
line "that does not decide it here")."""
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_user

FLAG_SOURCE = '/etc/systemd/system/docker.service.d/95-site.conf:3'


def test_a_default_ulimit_flag_is_the_docker_source():
    report = {'config': {'default_ulimits': {}},
              'unit_flags': [
                  {'key': 'default-ulimits', 'flag': '--default-ulimit',
                   'value': 'nofile=1024:1024', 'source': FLAG_SOURCE},
                  {'key': 'default-ulimits', 'flag': '--default-ulimit',
                   'value': 'nofile=4096:4096', 'source': FLAG_SOURCE},
                  {'key': 'default-shm-size', 'flag': '--default-shm-size', 'value': '1G',
                   'source': FLAG_SOURCE}]}
    configured = docker.CONTEXT.configured(report)
    # the last flag for a name wins, as in dockerd
    assert configured['nofile']['soft'] == 4096 and configured['nofile']['hard'] == 4096
    assert set(configured) == {'nofile'}
    assert audit.source_of('docker', configured['nofile'],
                           {'soft': 4096, 'hard': 4096}) == FLAG_SOURCE


def test_a_flag_dockerd_refuses_names_nothing_and_daemon_json_stays():
    entry = {'soft': 16384, 'hard': 16384, 'source': '/etc/docker/daemon.json:4:5'}
    report = {'config': {'default_ulimits': {'nofile': entry}},
              'unit_flags': [{'key': 'default-ulimits', 'flag': '--default-ulimit',
                              'value': 'nofile 10', 'source': FLAG_SOURCE}]}
    assert docker.CONTEXT.configured(report) == {'nofile': entry}
    assert docker.CONTEXT.configured(None) == {}


def test_a_user_manager_cap_is_the_user_manager_source():
    conf = '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf'
    cap = '/etc/systemd/system/user@.service.d/95-site.conf'
    report = {'manager': {'configured': {
        'nofile': {'soft': 16384, 'hard': 20000, 'source': conf, 'line': 4},
        'nproc': {'soft': 8192, 'hard': 8192, 'source': conf, 'line': 5}}},
        'manager_unit_caps': [{'item': 'nofile', 'path': cap, 'line': 2, 'hard': 4096,
                               'value': 'LimitNOFILE=4096', 'reason': '...'}]}
    configured = systemd_user.CONTEXT.configured(report)
    assert configured['nofile'] == {'soft': 4096, 'hard': 4096, 'source': cap, 'line': 2}
    assert configured['nproc']['source'] == conf
    assert audit.source_of('user_manager', configured['nofile'],
                           {'soft': 4096, 'hard': 4096}) == cap + ':2'
    # the report itself is not changed
    assert report['manager']['configured']['nofile']['source'] == conf


def test_a_cap_keeps_a_lower_soft():
    report = {'manager': {'configured': {'nofile': {'soft': 1024, 'hard': 20000}}},
              'manager_unit_caps': [{'item': 'nofile', 'path': '/x.conf', 'line': 3,
                                     'hard': 4096}]}
    assert systemd_user.CONTEXT.configured(report)['nofile']['soft'] == 1024
