"""plugins/module_utils/systemd/restarts.py: the order of the owed restarts, the check after a unit
restart, the stop at the first failed unit and the wait for dockerd, against a recorded
command runner (the Molecule scenarios run them on real systemd and dockerd)."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import restarts


class Host(object):
    """Answers commands from a table: (argv tuple prefix) -> list of (rc, out, err) to give in
    turn (the last one repeats); records every command."""

    def __init__(self, answers=None):
        self.answers = dict(answers or {})
        self.calls = []

    def run_command(self, args, environ_update=None):
        assert environ_update['LC_ALL'] == 'C'
        self.calls.append(' '.join(args))
        for prefix, replies in self.answers.items():
            if tuple(args[:len(prefix)]) == prefix:
                return replies.pop(0) if len(replies) > 1 else replies[0]
        if args[:3] == ['systemctl', 'show', '-p']:
            return 0, dict(ActiveState='active', Result='success')[args[3]] + '\n', ''
        return 0, '', ''


def restarter(host):
    clock = iter(range(0, 1000))
    return restarts.Restarter(host, settle=2, docker_wait=3, sleep=lambda s: None,
                              clock=lambda: next(clock))


PARAMS = dict(reexec=True, daemon_reload=True, units=['slurmd.service'],
              user_managers=['user@0.service', 'user@1001.service'], docker=True)


def test_steps_in_the_roles_order():
    assert restarts.steps(PARAMS) == [
        ('reexec', None), ('daemon_reload', None), ('unit', 'slurmd.service'),
        ('user_managers', 'user@0.service user@1001.service'),
        ('docker', 'docker.service'), ('docker_wait', 'docker.service')]
    assert restarts.steps(dict(units=[], docker=False)) == []


def test_everything_done_in_order():
    host = Host({('docker', 'info'): [(1, '', 'Cannot connect'), (0, '20.10.24\n', '')]})
    result = restarter(host).run(restarts.steps(PARAMS))
    assert result == dict(failed_unit={}, docker_version='20.10.24', done=[
        'systemctl daemon-reexec', 'systemctl daemon-reload', 'restart slurmd.service',
        'restart user@0.service user@1001.service', 'restart docker.service',
        'wait for dockerd to answer'])
    actions = [c for c in host.calls if not c.startswith('systemctl show')]
    assert actions == ['systemctl daemon-reexec', 'systemctl daemon-reload',
                       'systemctl restart slurmd.service',
                       'systemctl restart user@0.service user@1001.service',
                       'systemctl restart docker.service',
                       'docker info --format {{.ServerVersion}}',
                       'docker info --format {{.ServerVersion}}']


def test_a_unit_that_dies_after_its_restart_stops_the_run():
    host = Host({('systemctl', 'show', '-p', 'ActiveState', '--value', 'slurmd.service'):
                 [(0, 'failed\n', '')],
                 ('systemctl', 'show', '-p', 'Result', '--value', 'slurmd.service'):
                 [(0, 'signal\n', '')],
                 ('journalctl',): [(0, 'a\nslurmd.service: status=25/XFSZ\n\n', '')]})
    result = restarter(host).run(restarts.steps(PARAMS))
    assert result['failed_unit'] == dict(
        unit='slurmd.service', error='not active after 2 s: ActiveState failed, Result signal',
        journal=['a', 'slurmd.service: status=25/XFSZ'])
    assert result['done'] == ['systemctl daemon-reexec', 'systemctl daemon-reload']
    assert not [c for c in host.calls if 'user@' in c or 'docker' in c]


def test_a_failed_systemctl_restart_names_its_exit_and_error():
    host = Host({('systemctl', 'restart', 'docker.service'):
                 [(1, '', 'Job for docker.service failed.\nSee "journalctl -xe".\n')]})
    result = restarter(host).run(restarts.steps(dict(docker=True)))
    assert result['failed_unit']['error'] == (
        'systemctl restart failed (exit 1): Job for docker.service failed. See "journalctl -xe".')
    assert not [c for c in host.calls if c.startswith('docker info')]


def test_failures_the_role_cannot_repair_raise():
    host = Host({('systemctl', 'restart', 'user@0.service'): [(5, '', 'no such unit')]})
    worker = restarter(host)
    with pytest.raises(restarts.RestartError, match=r'systemctl restart user@0.service '
                                                    r'user@1001.service failed \(exit 5\): '
                                                    r'no such unit'):
        worker.run(restarts.steps(dict(user_managers=['user@0.service', 'user@1001.service'],
                                       docker=True)))
    assert worker.result['done'] == []
    host = Host({('docker', 'info'): [(1, '', 'Cannot connect to the Docker daemon')]})
    with pytest.raises(restarts.RestartError, match='dockerd did not answer within 3 s'):
        restarter(host).run(restarts.steps(dict(docker=True)))


def test_owed_counts_every_kind_of_restart_deferred_or_not():
    assert restarts.owed(dict(reexec=False, daemon_reload=False, units=[], user_managers=[],
                              docker=False, docker_pending=False, deferred=[])) is False
    for key, value in (('reexec', True), ('daemon_reload', True), ('units', ['slurmd.service']),
                       ('user_managers', ['user@0.service']), ('docker', True)):
        assert restarts.owed({key: value}) is True, key


def test_allowed_leaves_the_deferred_restarts_out():
    actions = dict(reexec=True, daemon_reload=True,
                   units=['slurmd.service', 'containerd.service'],
                   user_managers=['user@0.service', 'user@1001.service'], docker=True,
                   deferred=[dict(unit='slurmd.service', reason='1 process in its cgroup'),
                             dict(unit='user@1001.service', reason='running user services'),
                             dict(unit='docker.service', reason='1 running container(s)')])
    assert restarts.allowed(actions) == dict(
        reexec=True, daemon_reload=True, units=['containerd.service'],
        user_managers=['user@0.service'], docker=False)
    assert restarts.allowed(dict(actions, deferred=[]))['docker'] is True
    assert restarts.allowed({}) == dict(reexec=False, daemon_reload=False, units=[],
                                        user_managers=[], docker=False)


def test_restart_then_probe_probes_after_the_restarts():
    host = Host({('docker', 'info'): [(0, '20.10.24\n', '')]})
    seen = []

    def probe(on, verify):
        seen.append((on, verify, list(host.calls)))
        return dict(gaps=[], errors=[], regressions=[])
    result = dict(changed=True)
    restarts.restart_then_probe(restarter(host), restarts.steps(dict(reexec=True, docker=True)),
                                result, dict(contexts=['login']), probe)
    assert result['verified'] == dict(gaps=[], errors=[], regressions=[])
    assert result['done'] == ['systemctl daemon-reexec', 'restart docker.service',
                              'wait for dockerd to answer']
    assert result['changed'] is True and result['docker_version'] == '20.10.24'
    # probed once, on the same host, after dockerd answered
    assert len(seen) == 1 and seen[0][0] is host and seen[0][1] == dict(contexts=['login'])
    assert seen[0][2][-1] == 'docker info --format {{.ServerVersion}}'


def test_restart_then_probe_probes_nothing_after_a_failed_unit():
    host = Host({('systemctl', 'show', '-p', 'ActiveState'): [(0, 'failed\n', '')]})

    def probe(on, verify):
        raise AssertionError('probed after a failed restart')
    result = {}
    restarts.restart_then_probe(restarter(host), restarts.steps(dict(units=['slurmd.service'])),
                                result, dict(contexts=['login']), probe)
    assert result['failed_unit']['unit'] == 'slurmd.service' and 'verified' not in result


def test_restart_then_probe_says_what_was_done_before_a_failure():
    host = Host({('systemctl', 'daemon-reload'): [(1, '', 'Access denied')]})
    result = {}
    with pytest.raises(restarts.RestartError) as failure:
        restarts.restart_then_probe(restarter(host),
                                    restarts.steps(dict(reexec=True, daemon_reload=True)), result)
    assert 'daemon-reload' in failure.value.msg and 'Access denied' in failure.value.msg
    assert result['done'] == ['systemctl daemon-reexec'] and result['failed_unit'] == {}


class Written(object):
    """A written file (changes.Change's undo), recording the order it is put back in."""

    def __init__(self, path, order, fails=False):
        self.path, self.order, self.fails = path, order, fails

    def undo(self):
        if self.fails:
            raise OSError('read-only file system')
        self.order.append(self.path)


def test_a_restart_that_fails_outright_puts_back_the_files_and_redoes_what_was_done():
    """Issue 31: limits_profile(restart) wrote nofile 0 for both managers, re-executed systemd
    and failed at the user managers' restart, leaving the node locked out. Now every file goes
    back (last written first) and the steps done so far, and the failed one, run again with
    the earlier files."""
    host = Host({('systemctl', 'restart', 'user@0.service'): [(1, '', 'Job failed'),
                                                              (0, '', '')]})
    planned = restarts.steps(PARAMS)
    done = {}
    with pytest.raises(restarts.RestartError) as caught:
        restarts.restart_then_probe(restarter(host), planned, done)
    assert done['done'] == ['systemctl daemon-reexec', 'systemctl daemon-reload',
                            'restart slurmd.service']
    order = []
    written = [('pam', Written('/etc/security/limits.d/90-gpufleet-tuning.conf', order)),
               ('systemd_user', Written('/etc/systemd/user.conf.d/90-gpufleet-tuning.conf',
                                        order))]
    host.calls[:] = []
    restored, outcome = restarts.put_back(restarter(host), written, planned, done)
    assert order == ['/etc/systemd/user.conf.d/90-gpufleet-tuning.conf',
                     '/etc/security/limits.d/90-gpufleet-tuning.conf'] == restored
    assert outcome['done'] == ['systemctl daemon-reexec', 'systemctl daemon-reload',
                               'restart slurmd.service',
                               'restart user@0.service user@1001.service']
    assert 'systemctl restart docker.service' not in host.calls   # never restarted: left alone
    message = restarts.failure_message(caught.value.msg, list(reversed(restored)), outcome)
    assert message.startswith("the restarts failed with this run's files: systemctl restart "
                              'user@0.service user@1001.service failed (exit 1): Job failed. '
                              'Restored: /etc/security/limits.d/90-gpufleet-tuning.conf, ')
    assert 'done again with the previous files: systemctl daemon-reexec' in message


def test_put_back_says_what_it_could_not_restore_or_restart():
    host = Host({('systemctl', 'daemon-reexec'): [(1, '', 'no bus')]})
    restored, outcome = restarts.put_back(
        restarter(host), [('pam', Written('/x.conf', [], fails=True))], [('reexec', None)],
        {'done': []})
    assert restored == ['/x.conf (NOT restored: read-only file system)']
    assert 'daemon-reexec failed' in outcome
    assert 'which failed too' in restarts.failure_message('x', restored, outcome)


def test_put_back_after_dockerd_failed_to_answer_waits_for_it_again():
    host = Host()
    _restored, outcome = restarts.put_back(
        restarter(host), [], [('docker', 'docker.service'), ('docker_wait', 'docker.service')],
        {'done': ['restart docker.service']})
    assert outcome['done'] == ['restart docker.service', 'wait for dockerd to answer']


# --- the engine: policy, checked restarts, put-back and redo (issue 32 item 4) ----------------

def engine(host, **kwargs):
    return restarts.Engine(restarter(host), **kwargs)


def test_the_engine_defers_busy_units_with_their_reason_and_does_the_rest_in_order():
    host = Host({('docker', 'info'): [(0, '20.10.24\n', '')]})
    busy = {'slurmd.service': '3 process(es) besides the main one run in its cgroup',
            'user@1001.service': '1 process(es) of running user services would be stopped'}
    eng = engine(host, policy='when_idle', busy=busy.get)
    result = eng.run(restarts.steps(PARAMS))
    assert eng.deferred == [dict(unit=u, reason=busy[u])
                            for u in ('slurmd.service', 'user@1001.service')]
    assert result['done'] == ['systemctl daemon-reexec', 'systemctl daemon-reload',
                              'restart user@0.service', 'restart docker.service',
                              'wait for dockerd to answer']
    assert 'systemctl restart slurmd.service' not in host.calls


def test_the_engine_under_never_defers_every_restart_but_reloads():
    host = Host()
    eng = engine(host, policy='never', never='restart: never')
    result = eng.run(restarts.steps(PARAMS))
    assert result['done'] == ['systemctl daemon-reexec', 'systemctl daemon-reload']
    assert [d['unit'] for d in eng.deferred] == [
        'slurmd.service', 'user@0.service', 'user@1001.service', 'docker.service']
    assert set(d['reason'] for d in eng.deferred) == {'restart: never'}
    assert not [c for c in host.calls if c.startswith(('systemctl restart', 'docker'))]


def test_the_engine_asks_the_units_cgroup_by_default(monkeypatch):
    asked = []
    monkeypatch.setattr(restarts.systemd_live, 'unit_busy',
                        lambda host, unit: asked.append(unit) or '')
    engine(Host(), policy='when_idle').run([('unit', 'slurmd.service')])
    assert asked == ['slurmd.service']
    with pytest.raises(ValueError):
        restarts.Engine(restarter(Host()), policy='sometimes')


def settle_fails_once(unit):
    """A unit whose first restart reports success and is dead 2 s later; the next one lives."""
    return {('systemctl', 'show', '-p', 'ActiveState', '--value', unit):
            [(0, 'failed\n', ''), (0, 'active\n', '')],
            ('systemctl', 'show', '-p', 'Result', '--value', unit):
            [(0, 'signal\n', ''), (0, 'success\n', '')],
            ('journalctl',): [(0, 'slurmd: Main process exited, code=killed, status=25/XFSZ\n',
                               '')]}


def test_a_unit_dead_after_settle_puts_the_files_back_and_starts_it_with_them():
    host = Host(settle_fails_once('slurmd.service'))
    order = []
    written = [('units', Written('/etc/systemd/system/slurmd.service.d/90-gpufleet.conf', order)),
               ('pam', Written('/etc/security/limits.d/90-gpufleet-tuning.conf', order))]
    planned = [('daemon_reload', None), ('unit', 'slurmd.service'),
               ('docker', 'docker.service'), ('docker_wait', 'docker.service')]
    result = {'steps': ['kept']}
    with pytest.raises(restarts.RestartFailure) as caught:
        engine(host).run(planned, result, written)
    assert order == [written[1][1].path, written[0][1].path]       # the last written first
    assert result['files_restored'] == [written[0][1].path, written[1][1].path]
    assert result['steps'] == ['kept'] and result['failed_unit']['unit'] == 'slurmd.service'
    assert result['put_back']['outcome']['done'] == ['systemctl daemon-reload',
                                                     'restart slurmd.service']
    restarts_done = [c for c in host.calls if c.startswith('systemctl restart')
                     or c == 'systemctl daemon-reload']
    assert restarts_done == ['systemctl daemon-reload', 'systemctl restart slurmd.service',
                             'systemctl daemon-reload', 'systemctl restart slurmd.service']
    assert caught.value.msg == (
        "slurmd.service failed after its restart with this run's files: not active after 2 s: "
        'ActiveState failed, Result signal (its journal: slurmd: Main process exited, '
        'code=killed, status=25/XFSZ). Restored: '
        '/etc/systemd/system/slurmd.service.d/90-gpufleet.conf, '
        '/etc/security/limits.d/90-gpufleet-tuning.conf; slurmd.service is active again with '
        'the previous files (done again with them: systemctl daemon-reload).')
    assert caught.value.kind == 'host'


def test_a_unit_that_fails_again_with_the_previous_files_is_said():
    host = Host({('systemctl', 'restart', 'crio.service'): [
        (5, '', 'Failed to restart crio.service: Unit crio.service not found.\n')]})
    with pytest.raises(restarts.RestartFailure) as caught:
        engine(host).run([('unit', 'crio.service')], {}, [('crio', Written('/d.conf', []))])
    assert caught.value.msg.startswith(
        "crio.service failed after its restart with this run's files: systemctl restart failed "
        '(exit 5): Failed to restart crio.service: Unit crio.service not found.')
    assert caught.value.msg.endswith(
        'Restored: /d.conf; crio.service did NOT start again with the previous files either: '
        'systemctl restart failed (exit 5): Failed to restart crio.service: Unit crio.service '
        'not found..')


def test_without_written_files_the_engine_leaves_the_repair_to_the_caller():
    host = Host(settle_fails_once('slurmd.service'))
    result = engine(host).run([('unit', 'slurmd.service'), ('unit', 'munge.service')])
    assert result['failed_unit']['unit'] == 'slurmd.service' and 'put_back' not in result
    assert 'systemctl restart munge.service' not in host.calls
    host = Host({('systemctl', 'daemon-reexec'): [(1, '', 'no bus')]})
    with pytest.raises(restarts.RestartError):
        engine(host).run([('reexec', None)])


def test_an_outright_failure_with_written_files_puts_back_and_redoes_in_one_message():
    host = Host({('systemctl', 'restart', 'user@0.service'): [(1, '', 'Job failed'),
                                                              (0, '', '')]})
    with pytest.raises(restarts.RestartFailure) as caught:
        engine(host).run(restarts.steps(dict(reexec=True, user_managers=['user@0.service'])),
                         {}, [('systemd_user', Written('/u.conf', []))])
    assert caught.value.msg == (
        "the restarts failed with this run's files: systemctl restart user@0.service failed "
        '(exit 1): Job failed. Restored: /u.conf; done again with the previous files: '
        'systemctl daemon-reexec, restart user@0.service.')


def test_written_files_go_back_from_their_backups(tmp_path):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
    changed, backup = tmp_path / 'a.conf', tmp_path / 'a.conf.1~'
    backup.write_text('old\n')
    backup.chmod(0o600)     # a file gone since its write comes back with its backup's mode
    created = tmp_path / 'b.conf'
    created.write_text('new\n')
    restored = changes.undo_all([
        (None, changes.Written(str(changed), str(backup))),
        (None, changes.Written(str(created), created=True)),
        (None, changes.Written(str(tmp_path / 'c.conf'))),
        (None, changes.Written(str(tmp_path / 'd.conf'), str(tmp_path / 'gone~')))])
    assert changed.read_text() == 'old\n' and changed.stat().st_mode & 0o777 == 0o600
    assert not created.exists()
    assert restored[:2] == ['%s (NOT restored: its backup %s is gone)' % (
        tmp_path / 'd.conf', tmp_path / 'gone~'),
        '%s (NOT restored: no backup of it was made)' % (tmp_path / 'c.conf')]
    assert restored[2:] == [str(created), str(changed)]


# --- the rollback of a failed verification (issue 40 item 6) ---------------------------------

ACTIONS = dict(reexec=True, daemon_reload=True, units=['slurmd.service', 'train.service'],
               user_managers=['user@0.service', 'user@1001.service'], docker=True,
               deferred=[dict(unit='train.service', reason='1 process in its cgroup'),
                         dict(unit='user@1001.service', reason='running user services')])
DONE = ['systemctl daemon-reexec', 'systemctl daemon-reload', 'restart slurmd.service',
        'restart user@0.service', 'restart docker.service', 'wait for dockerd to answer']


def test_done_steps_are_what_the_profile_call_did_never_what_the_policy_deferred():
    assert restarts.done_steps(ACTIONS, dict(done=DONE)) == [
        ('reexec', None), ('daemon_reload', None), ('unit', 'slurmd.service'),
        ('user_managers', 'user@0.service'), ('docker', 'docker.service'),
        ('docker_wait', 'docker.service')]
    # a call that restarted nothing (no `restarted`: no restart option; or nothing owed)
    assert restarts.done_steps(ACTIONS, None) == []
    assert restarts.done_steps({}, dict(done=[])) == []
    # the engine stops at the first failure: `done` is always the start of the steps
    assert restarts.done_steps(ACTIONS, dict(done=DONE[:2])) == [
        ('reexec', None), ('daemon_reload', None)]


def test_done_steps_guess_nothing_from_a_record_that_is_not_one_calls():
    for done in (['restart train.service'], DONE[1:], DONE + ['restart sshd.service']):
        with pytest.raises(restarts.RestartError, match='not the result of one limits_profile'):
            restarts.done_steps(ACTIONS, dict(done=done))


def profile_files(tmp_path):
    """A limits_profile ``files`` record of real files: a drop-in it changed (its backup holds
    the earlier text), one it created, one it left alone; in write order."""
    changed = tmp_path / 'system.conf.d' / '90-gpufleet-tuning.conf'
    changed.parent.mkdir()
    changed.write_text('[Manager]\nDefaultLimitNOFILE=12288:12288\n')
    backup = tmp_path / 'system.conf.d' / '90-gpufleet-tuning.conf.77.2026-12-06@20:00:00~'
    backup.write_text('[Manager]\nDefaultLimitNOFILE=65536:524288\n')
    created = tmp_path / 'slurmd.service.d' / '90-gpufleet-tuning.conf'
    created.parent.mkdir()
    created.write_text('[Service]\nLimitNOFILE=12288\n')
    kept = tmp_path / 'daemon.json'
    kept.write_text('{}\n')
    files = [dict(context='systemd_system', path=str(changed), changed=True, created=False,
                  backup_file=str(backup)),
             dict(context='unit:slurmd.service', path=str(created), changed=True, created=True),
             dict(context='docker', path=str(kept), changed=False, created=False)]
    return files, changed, created, kept


def test_the_rollback_puts_the_files_back_then_redoes_exactly_what_was_restarted(tmp_path):
    """A verification failed after the profile call restarted: its changed files go back (from
    the backup, or removed when it created them; an unchanged one untouched), then what it
    restarted runs again with them, in its order and with its checks; the unit and the user
    manager whose restart the policy deferred keep running."""
    files, changed, created, kept = profile_files(tmp_path)
    host = Host({('docker', 'info'): [(0, '24.0.7\n', '')]})
    written = restarts.written_records(files, changed_only=True)
    result = engine(host).rollback(written, restarts.done_steps(ACTIONS, dict(done=DONE)))
    assert changed.read_text() == '[Manager]\nDefaultLimitNOFILE=65536:524288\n'
    assert not created.exists() and kept.read_text() == '{}\n'
    assert result['put_back']['restored'] == [str(changed), str(created)]
    assert result['done'] == DONE and result['failed_unit'] == {}
    assert result['docker_version'] == '24.0.7'
    restarted = [c for c in host.calls if not c.startswith(('systemctl show', 'docker info'))]
    assert restarted == ['systemctl daemon-reexec', 'systemctl daemon-reload',
                         'systemctl restart slurmd.service', 'systemctl restart user@0.service',
                         'systemctl restart docker.service']
    assert not [c for c in host.calls if 'train.service' in c or 'user@1001' in c]


def test_a_rollback_whose_restart_fails_with_the_restored_files_says_so(tmp_path):
    files, changed, created, _kept = profile_files(tmp_path)
    host = Host({('systemctl', 'show', '-p', 'ActiveState', '--value', 'slurmd.service'):
                 [(0, 'failed\n', '')],
                 ('journalctl',): [(0, 'slurmd: fatal: bad limits\n', '')]})
    with pytest.raises(restarts.RestartFailure) as caught:
        engine(host).rollback(restarts.written_records(files, changed_only=True),
                              restarts.done_steps(ACTIONS, dict(done=DONE)))
    # the files are back all the same, and nothing after the failed unit was restarted
    assert not created.exists() and 'DefaultLimitNOFILE=65536' in changed.read_text()
    assert caught.value.msg == (
        'rollback: slurmd.service did NOT start again with the previous files: not active after '
        '2 s: ActiveState failed, Result success (its journal: slurmd: fatal: bad limits); '
        'restored: %s, %s.' % (changed, created))
    assert caught.value.result['done'] == ['systemctl daemon-reexec', 'systemctl daemon-reload']
    assert not [c for c in host.calls if 'docker' in c or 'user@' in c]


def test_a_rollback_that_cannot_put_a_file_back_restarts_the_rest_and_fails(tmp_path):
    files, changed, _created, _kept = profile_files(tmp_path)
    os_backup = files[0]['backup_file']
    os.unlink(os_backup)
    host = Host()
    with pytest.raises(restarts.RestartFailure) as caught:
        engine(host).rollback(restarts.written_records(files, changed_only=True),
                              [('daemon_reload', None)])
    assert caught.value.msg.startswith(
        'rollback: not every file this run changed could be put back: %s (NOT restored: its '
        'backup %s is gone); restored: ' % (changed, os_backup))
    assert caught.value.result['done'] == ['systemctl daemon-reload']
