"""Which daemon.json dockerd reads (issue 31.6) and the flag that clashes with it (issue 31.9):
module_utils/runtimes/dockerd_config.py and docker_daemon_json.clashes, with docker.service and its
drop-ins under a fake root; the tune (docker_plan), the audit (info.docker_report and the
docker context's problems) and the drift watch's journal lines."""
import json
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import docker_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import dockerd_config
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker as docker_ctx
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit

UNIT_FILE = '/lib/systemd/system/docker.service'
DROPIN = '/etc/systemd/system/docker.service.d/10-config.conf'
STOCK = ('[Unit]\nDescription=Docker Application Container Engine\n\n[Service]\nType=notify\n'
         'EnvironmentFile=-/etc/default/docker\n'
         'ExecStart=/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock'
         ' %s\n'
         'ExecReload=/bin/kill -s HUP $MAINPID\n')


def write(root, path, text):
    full = str(root) + path
    if not os.path.isdir(os.path.dirname(full)):
        os.makedirs(os.path.dirname(full))
    with open(full, 'w') as handle:
        handle.write(text)


def dropin(root, execstart, name=DROPIN):
    write(root, name, '[Service]\nExecStart=\nExecStart=%s\n' % execstart)


class Host(object):
    """What info.docker_report asks of the module: systemctl show of docker.service."""

    def __init__(self, active='active', result='success', restarts=0):
        self.out = 'ActiveState=%s\nResult=%s\nNRestarts=%d\n' % (active, result, restarts)
        self.calls = []

    def run_command(self, args, environ_update=None, **_kwargs):
        self.calls.append(list(args))
        if args[:2] == ['systemctl', 'show']:
            return 0, self.out, ''
        return 1, '', 'not here'


# --- which file dockerd reads ---------------------------------------------------------------

def test_the_stock_unit_reads_the_default_file(tmp_path):
    write(tmp_path, UNIT_FILE, STOCK % '$DOCKER_OPTS')
    found = dockerd_config.config_file(root=str(tmp_path))
    assert found['path'] == '/etc/docker/daemon.json' and found['flag'] is None
    assert found['source'] == "dockerd's default (no --config-file in the ExecStart of " \
        "docker.service)"
    assert dockerd_config.target(None, root=str(tmp_path))[0] == '/etc/docker/daemon.json'
    # no flag: any file may be named (a staging copy, the tests' files)
    assert dockerd_config.target('/srv/daemon.json', root=str(tmp_path))[0] == '/srv/daemon.json'


def test_config_file_in_the_unit_file(tmp_path):
    write(tmp_path, UNIT_FILE, STOCK % '--config-file /etc/docker/other.json')
    found = dockerd_config.config_file(root=str(tmp_path))
    assert found['path'] == '/etc/docker/other.json'
    assert found['flag'] == UNIT_FILE + ':7'
    assert dockerd_config.public(found) == {
        'path': '/etc/docker/other.json', 'source': UNIT_FILE + ':7 (--config-file)'}


@pytest.mark.parametrize('execstart', [
    '/usr/bin/dockerd --config-file=/etc/docker/other.json -H fd://',
    '/usr/bin/dockerd -H fd:// --config-file "/etc/docker/other.json"',
    # the last flag wins, as dockerd's flag parser does
    '/usr/bin/dockerd --config-file /etc/docker/first.json --config-file=/etc/docker/other.json',
])
def test_config_file_in_a_dropin(tmp_path, execstart):
    write(tmp_path, UNIT_FILE, STOCK % '')
    dropin(tmp_path, execstart)
    found = dockerd_config.config_file(root=str(tmp_path))
    assert (found['path'], found['flag']) == ('/etc/docker/other.json', DROPIN + ':3')


def test_config_file_through_an_environment_file(tmp_path):
    write(tmp_path, UNIT_FILE, STOCK % '$DOCKER_OPTS')
    write(tmp_path, '/etc/default/docker', '# opts\nDOCKER_OPTS="--config-file=/etc/docker/o.json"\n')
    found = dockerd_config.config_file(root=str(tmp_path))
    assert found['path'] == '/etc/docker/o.json'
    assert found['flag'] == UNIT_FILE + ':7 (via $DOCKER_OPTS from /etc/default/docker:2)'


def test_an_empty_execstart_drops_the_flag(tmp_path):
    write(tmp_path, UNIT_FILE, STOCK % '--config-file /etc/docker/other.json')
    dropin(tmp_path, '/usr/bin/dockerd -H fd://')
    assert dockerd_config.config_file(root=str(tmp_path))['path'] == '/etc/docker/daemon.json'


def test_an_explicit_other_path_is_refused_naming_the_flag_and_both_paths(tmp_path):
    write(tmp_path, UNIT_FILE, STOCK % '')
    dropin(tmp_path, '/usr/bin/dockerd --config-file=/etc/docker/other.json')
    with pytest.raises(dockerd_config.ConfigFileError) as caught:
        dockerd_config.target('/etc/docker/daemon.json', root=str(tmp_path))
    assert str(caught.value) == (
        '%s:3 passes --config-file /etc/docker/other.json to dockerd, so dockerd reads '
        '/etc/docker/other.json, not /etc/docker/daemon.json (the path given): leave the path '
        'option out to use the file dockerd reads, or name that file' % DROPIN)
    assert caught.value.kind == errors.REFUSED
    # the file the flag names, given explicitly, is fine
    assert dockerd_config.target('/etc/docker//other.json', root=str(tmp_path))[0] == \
        '/etc/docker//other.json'


def test_the_snap_is_read_by_the_audit_and_refused_by_the_tune(tmp_path):
    write(tmp_path, '/etc/systemd/system/snap.docker.dockerd.service',
          '[Service]\nExecStart=/usr/bin/snap run docker.dockerd\n')
    found = dockerd_config.config_file(root=str(tmp_path))
    assert found['path'] == '/var/snap/docker/current/config/daemon.json' and found['snap']
    assert found['unit'] == 'snap.docker.dockerd.service'
    assert docker_ctx.CONTEXT.detect(str(tmp_path))
    with pytest.raises(dockerd_config.ConfigFileError, match=r'dockerd runs from the docker snap '
                       r'\(/etc/systemd/system/snap.docker.dockerd.service: .*\): it reads '
                       r'/var/snap/docker/current/config/daemon.json; .*"snap restart docker"'):
        dockerd_config.target(None, root=str(tmp_path))


# --- the tune writes the file dockerd reads -------------------------------------------------

def request(path, limits=None):
    return runtime_plan.RuntimeRequest(limits or {'nofile': Limit(65536, 65536)}, path,
                                       unit='docker.service', field='profile')


def test_the_tune_writes_the_file_dockerd_reads(tmp_path):
    other = tmp_path / 'etc' / 'docker' / 'other.json'
    default = tmp_path / 'etc' / 'docker' / 'daemon.json'
    other.parent.mkdir(parents=True)
    other.write_text('{\n    "data-root": "/srv/docker"\n}\n')
    write(tmp_path, UNIT_FILE, STOCK % '')
    dropin(tmp_path, '/usr/bin/dockerd -H fd:// --config-file=%s' % other)
    change = docker_plan.plan_docker(request(None), None, probe=False, root=str(tmp_path))
    assert change.path == str(other) and change.changed
    assert change.result['config_file'] == {'path': str(other),
                                            'source': DROPIN + ':3 (--config-file)'}
    change.apply(False)
    data = json.loads(other.read_text())
    assert data['data-root'] == '/srv/docker'
    assert data['default-ulimits'] == {'nofile': {'Name': 'nofile', 'Soft': 65536,
                                                  'Hard': 65536}}
    assert not default.exists()


def test_the_tune_refuses_an_explicit_other_path_before_writing(tmp_path):
    other = tmp_path / 'other.json'
    named = tmp_path / 'daemon.json'
    named.write_text('{}\n')
    write(tmp_path, UNIT_FILE, STOCK % ('--config-file %s' % other))
    with pytest.raises(changes.Failure) as caught:
        docker_plan.plan_docker(request(str(named)), None, probe=False, root=str(tmp_path))
    msg = caught.value.msg
    assert msg.startswith('%s:7 passes --config-file %s to dockerd' % (UNIT_FILE, other)), msg
    assert 'not %s (the path given)' % named in msg
    assert caught.value.kind == errors.REFUSED
    assert named.read_text() == '{}\n' and not other.exists()


def test_the_tune_refuses_a_key_the_file_keeps_that_a_flag_also_sets(tmp_path):
    """dj.clashes looks at the file as it would be written: a default-shm-size it keeps
    clashes with --default-shm-size as much as one it writes."""
    path = tmp_path / 'daemon.json'
    path.write_text('{"default-shm-size": "1G"}\n')
    write(tmp_path, UNIT_FILE, STOCK % '--default-shm-size=2G')
    with pytest.raises(changes.Failure) as caught:
        docker_plan.plan_docker(request(str(path)), None, probe=False, root=str(tmp_path))
    assert caught.value.msg == (
        '%s:7 passes --default-shm-size to dockerd, so "default-shm-size" in %s would make '
        'dockerd refuse to start (remove the flag or manage it there)' % (UNIT_FILE, path))
    assert caught.value.result['conflicts'] == [
        {'key': 'default-shm-size', 'flag': '--default-shm-size', 'source': UNIT_FILE + ':7'}]


# --- the audit and the watch report the clash -----------------------------------------------

CLASH = '{\n  "default-ulimits": {\n    "nofile": {"Name": "nofile", "Soft": 1024, "Hard": 2048}\n  }\n}\n'


@pytest.mark.parametrize('active, outcome, restarts, state, said', [
    ('active', 'success', 0, 'running', 'dockerd would refuse to start at its next restart'),
    ('active', 'success', 2, 'running', 'dockerd would refuse to start at its next restart'),
    ('failed', 'exit-code', 0, 'refused', 'dockerd has refused to start'),
    ('inactive', 'start-limit-hit', 0, 'refused', 'dockerd has refused to start'),
    ('activating', 'exit-code', 1, 'refused', 'dockerd has refused to start'),
    # Restart= trying again: systemd resets Result at the start, the counter says it failed
    ('activating', 'success', 1, 'refused', 'dockerd has refused to start'),
    # a start a user asked for flushes the counter
    ('activating', 'success', 0, 'running', 'dockerd would refuse to start at its next restart'),
    ('inactive', 'success', 0, 'stopped', 'dockerd would refuse to start when it is next started'),
])
def test_the_audit_reports_the_clash_with_file_and_line(tmp_path, active, outcome, restarts, state,
                                                        said):
    other = tmp_path / 'other.json'
    other.write_text(CLASH)
    write(tmp_path, UNIT_FILE, STOCK % '')
    dropin(tmp_path, '/usr/bin/dockerd --config-file %s --default-ulimit nofile=4096:8192' % other)
    host = Host(active, outcome, restarts)
    report = info.docker_report(host, running=False, root=str(tmp_path))
    assert report['path'] == str(other), 'the audit reads the file dockerd reads'
    assert report['config']['default_ulimits']['nofile']['source'] == str(other) + ':3:5'
    msg = ('%s:3 passes --default-ulimit to dockerd and %s sets "default-ulimits": %s'
           % (DROPIN, other, said))
    assert [(c['source'], c['state']) for c in report['flag_conflicts']] == [(DROPIN + ':3', state)]
    assert report['flag_conflicts'][0]['msg'].startswith(msg)
    assert host.calls == [['systemctl', 'show', '-p', 'ActiveState,Result,NRestarts',
                           'docker.service']]
    problems = docker_ctx.CONTEXT.problems(report)
    assert problems == [dict(source=DROPIN + ':3', state=state,
                             msg=report['flag_conflicts'][0]['msg'])]
    # the watch logs what the audit returns: one ERR line naming the context and file:line
    lines = drift_watch.problem_lines({'problems': [dict(p, context='docker') for p in problems]})
    assert lines == ['problem: context=docker: ' + report['flag_conflicts'][0]['msg']]


def test_no_clash_asks_systemd_nothing(tmp_path):
    path = tmp_path / 'daemon.json'
    path.write_text(CLASH)
    write(tmp_path, UNIT_FILE, STOCK % '')
    host = Host()
    report = info.docker_report(host, str(path), running=False, root=str(tmp_path))
    assert report['flag_conflicts'] == [] and report['problems'] == [] and host.calls == []


def test_the_info_report_says_when_the_path_is_not_the_file_dockerd_reads(tmp_path):
    path = tmp_path / 'daemon.json'
    path.write_text('{}')
    write(tmp_path, UNIT_FILE, STOCK % '--config-file=/etc/docker/other.json')
    report = info.docker_report(Host(), str(path), running=False, root=str(tmp_path))
    assert report['config_file']['path'] == '/etc/docker/other.json'
    assert report['problems'][0].startswith(
        '%s:7 passes --config-file /etc/docker/other.json to dockerd, so dockerd reads '
        '/etc/docker/other.json, not %s' % (UNIT_FILE, path))


def test_tune_and_audit_decide_through_the_same_check(tmp_path, monkeypatch):
    """One function decides (dj.clashes): the tune and the audit both call it."""
    calls = []
    real = dj.clashes

    def spy(data, unit='docker.service', root=''):
        calls.append(sorted(k for k in dj.FLAGS if k in data))
        return real(data, unit, root)
    monkeypatch.setattr(dj, 'clashes', spy)
    path = tmp_path / 'daemon.json'
    path.write_text(CLASH)
    write(tmp_path, UNIT_FILE, STOCK % '')
    docker_plan.plan_docker(request(str(path)), None, probe=False, root=str(tmp_path))
    info.docker_report(Host(), str(path), running=False, root=str(tmp_path))
    assert calls == [['default-ulimits'], ['default-ulimits']]
