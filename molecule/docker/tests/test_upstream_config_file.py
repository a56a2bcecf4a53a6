"""dockerd started with --config-file (issue 31.6) and a flag that clashes with the file it reads
(issue 31.9), on the real dockerd: a docker.service drop-in points dockerd at
/etc/docker/other.json (a copy of the converged daemon.json); docker_ulimits without a path
writes there and a new container gets it, a named /etc/docker/daemon.json is refused naming the
drop-in's line, and limits_audit reports a --default-ulimit flag that clashes with the file as
a docker problem, first "would refuse to start at its next restart", then, after a restart
that dockerd refuses, "has refused to start". Puts dockerd back as converge left it."""
import base64

import pytest

from conftest import DAEMON_JSON, DOCKER, checksum, container_limits, run_module

OTHER = '/etc/docker/other.json'
DROPIN = '/etc/systemd/system/docker.service.d/40-config-file.conf'


def _write(host, path, text):
    host.check_output('echo %s | base64 -d > %s' % (base64.b64encode(text.encode()).decode(),
                                                    path))


def _restart_dockerd(host):
    host.run('systemctl reset-failed docker.service docker.socket')
    return host.run('timeout 90 systemctl restart docker.service').rc == 0


def _point_dockerd_at(host, execstart, extra=''):
    _write(host, DROPIN, '[Service]\nExecStart=\nExecStart=%s --config-file=%s%s\n'
           % (execstart, OTHER, extra))
    host.check_output('systemctl daemon-reload')


@pytest.fixture(scope='module')
def other_config(host):
    fragment = host.check_output('systemctl show -p FragmentPath --value docker.service')
    execstart = host.check_output("grep -m1 '^ExecStart=' %s" % fragment)[len('ExecStart='):]
    host.check_output('mkdir -p %s' % DROPIN.rsplit('/', 1)[0])
    host.check_output('cp -p %s %s' % (DAEMON_JSON, OTHER))
    _point_dockerd_at(host, execstart)
    assert _restart_dockerd(host)
    try:
        yield execstart
    finally:
        host.run('rm -f %s %s' % (DROPIN, OTHER))
        host.check_output('systemctl daemon-reload')
        assert _restart_dockerd(host)


def test_docker_ulimits_writes_the_file_dockerd_reads(host, other_config):
    before = checksum(host, DAEMON_JSON)
    ok, result = run_module(host, 'gpufleet.tuning.docker_ulimits',
                            {'ulimits': {'nofile': {'soft': 12345, 'hard': 19999}}})
    assert ok, result['output']
    assert result['path'] == OTHER
    assert result['config_file'] == {'path': OTHER, 'source': DROPIN + ':3 (--config-file)'}
    assert '"Soft": 12345' in host.file(OTHER).content_string
    assert checksum(host, DAEMON_JSON) == before, 'the file dockerd does not read is untouched'
    assert _restart_dockerd(host)
    limits = container_limits(host, DOCKER)
    assert (limits['nofile'].soft, limits['nofile'].hard) == (12345, 19999)
    ok, info = run_module(host, 'gpufleet.tuning.docker_ulimits_info', {'unit': 'docker.service'})
    assert ok and info['path'] == OTHER and info['problems'] == [], info['output']
    assert info['config']['default_ulimits']['nofile']['soft'] == 12345


def test_a_named_path_dockerd_does_not_read_is_refused(host, other_config):
    before = (checksum(host, DAEMON_JSON), checksum(host, OTHER))
    ok, result = run_module(host, 'gpufleet.tuning.docker_ulimits',
                            {'path': DAEMON_JSON, 'ulimits': {'nofile': 20000}})
    assert not ok
    assert '%s:3 passes --config-file %s to dockerd, so dockerd reads %s, not %s' % (
        DROPIN, OTHER, OTHER, DAEMON_JSON) in result['output'], result['output']
    assert (checksum(host, DAEMON_JSON), checksum(host, OTHER)) == before


def test_the_audit_reports_a_flag_that_clashes_with_the_file(host, other_config):
    """other.json has default-ulimits; the drop-in adds --default-ulimit."""
    _point_dockerd_at(host, other_config, ' --default-ulimit nofile=4096:8192')
    args = {'profile': {'nofile': 4096}, 'user': 'root'}
    try:
        ok, result = run_module(host, 'gpufleet.tuning.limits_audit', args)
        assert ok, result['output']
        assert host.service('docker').is_running
        problems = [p for p in result['problems'] if p['context'] == 'docker']
        assert [(p['source'], p['state']) for p in problems] == [(DROPIN + ':3', 'running')]
        assert problems[0]['msg'] == (
            '%s:3 passes --default-ulimit to dockerd and %s sets "default-ulimits": dockerd '
            'would refuse to start at its next restart (remove the flag or the key)'
            % (DROPIN, OTHER))
        # dockerd agrees: it refuses the restart ...
        assert not _restart_dockerd(host)
        assert 'specified both as a flag and in the configuration file' in host.check_output(
            'journalctl -u docker.service -n 50 --no-pager')
        # ... and the audit now says it has refused
        ok, result = run_module(host, 'gpufleet.tuning.limits_audit', args)
        assert ok, result['output']
        problems = [p for p in result['problems'] if p['context'] == 'docker']
        assert [(p['source'], p['state']) for p in problems] == [(DROPIN + ':3', 'refused')]
        assert 'dockerd has refused to start' in problems[0]['msg']
    finally:
        _point_dockerd_at(host, other_config)
        assert _restart_dockerd(host)
