"""plugins/module_utils/systemd/restarts.py: the order of the owed restarts, the check after a unit
restart, the stop at the first failed unit and the wait for dockerd, against a recorded
command runner (the Molecule scenarios run them on real systemd and dockerd)."""
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
    message = restarts.put_back_message(restored, outcome)
    assert message.startswith('restored: /etc/systemd/user.conf.d/90-gpufleet-tuning.conf, ')
    assert 'done again with the earlier files: systemctl daemon-reexec' in message
    assert 'Job failed' in caught.value.msg


def test_put_back_says_what_it_could_not_restore_or_restart():
    host = Host({('systemctl', 'daemon-reexec'): [(1, '', 'no bus')]})
    restored, outcome = restarts.put_back(
        restarter(host), [('pam', Written('/x.conf', [], fails=True))], [('reexec', None)],
        {'done': []})
    assert restored == ['/x.conf (NOT restored: read-only file system)']
    assert 'daemon-reexec failed' in outcome
    assert 'which failed too' in restarts.put_back_message(restored, outcome)


def test_put_back_after_dockerd_failed_to_answer_waits_for_it_again():
    host = Host()
    _restored, outcome = restarts.put_back(
        restarter(host), [], [('docker', 'docker.service'), ('docker_wait', 'docker.service')],
        {'done': ['restart docker.service']})
    assert outcome['done'] == ['restart docker.service', 'wait for dockerd to answer']
