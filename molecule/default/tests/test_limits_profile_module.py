"""gpufleet.tuning.limits_profile on the converged node: check and diff mode, all or nothing,
idempotence, and a dockerd restart an earlier run left owed. The files are separate from the
role's (70-probe names, a daemon.json of its own where the real one is not needed) and removed
afterwards, so the role's tests that follow see the converged node."""
import json

import pytest

from conftest import FILES
from scenario_support import checksums, run_module

PROFILE = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
PAM = '/etc/security/limits.d/70-probe.conf'
SYSTEM = '/etc/systemd/system.conf.d/70-probe.conf'
DAEMON = '/etc/docker/probe-daemon.json'
ARGS = dict(profile=PROFILE, contexts=['pam', 'systemd_system', 'docker'], pam_path=PAM,
            dropin='70-probe.conf', docker_daemon_json=DAEMON)
OURS = [PAM, SYSTEM, DAEMON]


@pytest.fixture
def clean(host):
    """The role's limits file moved aside (put back afterwards): logins get what no line sets,
    so the pam context has lines to write (a plain value logins already meet writes none)."""
    before = checksums(host, FILES)
    host.run('mv %s %s.keep-aside' % (FILES[0], FILES[0]))
    yield
    host.run('rm -f %s %s.*~ %s.*~ %s.*~' % (' '.join(OURS), PAM, SYSTEM, DAEMON))
    host.run('mv %s.keep-aside %s' % (FILES[0], FILES[0]))
    assert checksums(host, FILES) == before


def test_check_mode_plans_every_context_and_writes_nothing(host, clean):
    ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile', ARGS, check=True,
                                    diff=True)
    assert ok, output
    assert result['changed'] is True
    # the diffs are printed (ansible's tree results do not keep them): one per file
    for path in OURS:
        assert '+++ after: %s' % path in output, output
    assert '--- before: /dev/null' in output
    assert '+DefaultLimitNOFILE=16384' in output
    assert sorted(f['path'] for f in result['files'] if f['created']) == sorted(OURS)
    assert checksums(host, OURS) == dict((p, None) for p in OURS)


def test_one_refused_context_leaves_every_file_as_it_was(host, clean):
    host.check_output("printf '{\"storage-driver\": \"vfs\",\\n  \"debug\": tru }\\n' > %s"
                      % DAEMON)
    before = checksums(host, OURS)
    ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile', ARGS)
    assert not ok
    assert result['context'] == 'docker'
    assert 'docker: %s:2:' % DAEMON in result['msg'], result['msg']
    assert checksums(host, OURS) == before
    assert before[PAM] is None and before[SYSTEM] is None


def test_apply_then_rerun_changes_nothing(host, clean):
    ok, first, output = run_module(host, 'gpufleet.tuning.limits_profile', dict(ARGS, backup=True))
    assert ok, output
    assert first['changed'] and sorted(f['path'] for f in first['files'] if f['created']) == \
        sorted(OURS)
    assert first['actions']['reexec'] is True
    # soft nofile as asked; the hard limit systemd had (PID 1's here) kept (issue 31)
    assert 'DefaultLimitNOFILE=16384:' in host.file(SYSTEM).content_string
    # a new container had containerd's limits, above the profile: kept on both sides
    nofile = json.loads(host.file(DAEMON).content_string)['default-ulimits']['nofile']
    assert 16384 <= nofile['Soft'] <= nofile['Hard'], nofile
    written = checksums(host, OURS)
    ok, second, output = run_module(host, 'gpufleet.tuning.limits_profile', ARGS)
    assert ok, output
    assert second['changed'] is False
    assert all(not f['changed'] for f in second['files'])
    assert checksums(host, OURS) == written


def test_a_dockerd_older_than_daemon_json_is_owed_a_restart(host):
    """Unchanged daemon.json, but written after dockerd started: the restart is still owed."""
    path = '/etc/docker/daemon.json'
    stamp = host.check_output('stat -c %%Y %s' % path).strip()
    args = dict(profile=PROFILE, contexts=['docker'], docker_shm_size='1G')
    try:
        ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile', args)
        assert ok, output
        assert result['changed'] is False
        assert result['actions']['docker'] is False
        host.check_output('touch %s' % path)
        ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile', args)
        assert ok, output
        assert result['changed'] is False
        assert result['actions']['docker_pending'] is True
        assert result['actions']['docker'] is True
    finally:
        host.check_output('touch -d @%s %s' % (stamp, path))
