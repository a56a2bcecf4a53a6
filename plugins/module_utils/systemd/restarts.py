# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart engine: every module that writes files and restarts what reads them
(limits_profile's ``restart``, limits_restart, containerd_base_spec, crio_ulimits) writes, restarts
and puts back through it, and the limits role through those modules.

:func:`write_all` writes the changed files in order (a failed write puts back the ones written).
:class:`Engine` then runs the steps in order under the restart policy (``when_idle`` defers a
unit that its ``busy`` check finds in use, with the reason; ``never`` defers every one): re-execute
the system manager, reload unit files, restart units with a check that they still run ``settle``
seconds later, restart user managers, restart dockerd with the same check and wait until it
answers. A checked restart that fails (systemctl's exit status, or the unit not active after
``settle`` seconds: a Type=simple unit reports a good restart and then dies on its new limits)
stops there; nothing after it is restarted. Given the files written (``written``), the engine
then puts them back, does again with the earlier files what it had done and the step that failed,
and raises :class:`RestartFailure` with both outcomes in one message.

Plain Python: commands run through the ``host`` given (an AnsibleModule's run_command and
get_bin_path); ``sleep`` and ``clock`` are injectable for tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live

DOCKER_UNIT = 'docker.service'
DOCKER_PING = ['docker', 'info', '--format', '{{.ServerVersion}}']


class RestartError(errors.Error):
    """A restart that failed outright (re-exec, reload, a user manager, dockerd never
    answering): the host fails with this message."""

    kind = errors.HOST


class RestartFailure(errors.Error):
    """A restart failed with this run's files, which were put back: ``msg`` says both
    outcomes, ``result`` is the engine's result (``put_back``: {restored, outcome};
    ``files_restored``: the paths put back, in write order)."""

    kind = errors.HOST

    def __init__(self, msg, result):
        super(RestartFailure, self).__init__(msg)
        self.result = result


def write_all(planned, backup):
    """Write every changed file of ``planned`` ([(context, Change)]) in order; the written
    ones, [(context, Change)]. A failed write puts the files written so far back and raises
    changes.Failure naming the context (``files_restored``: their paths, in write order)."""
    done = []
    for context, change in planned:
        if not change.changed:
            continue
        try:
            change.apply(backup)
        except changes.Failure as exc:
            restored = changes.undo_all(done)
            raise changes.Failure('%s: %s; nothing else was written%s' % (
                context, exc.msg,
                (', restored: ' + ', '.join(restored)) if restored else ''), context=context,
                files_restored=list(reversed(restored)))
        done.append((context, change))
    return done


def steps(params):
    """The planned steps, in order: (kind, unit) with kind one of reexec, daemon_reload,
    unit (a checked restart), user_managers (every user manager in one restart; ``unit`` is
    their names separated by spaces), docker (a checked restart of dockerd) and
    docker_wait."""
    planned = []
    if params.get('reexec'):
        planned.append(('reexec', None))
    if params.get('daemon_reload'):
        planned.append(('daemon_reload', None))
    planned.extend(('unit', unit) for unit in params.get('units') or [])
    managers = list(params.get('user_managers') or [])
    if managers:
        # one systemctl call: systemd runs the restart jobs at the same time
        planned.append(('user_managers', ' '.join(managers)))
    if params.get('docker'):
        planned.extend([('docker', DOCKER_UNIT), ('docker_wait', DOCKER_UNIT)])
    return planned


def owed(actions):
    """Whether limits_profile's ``actions`` owe any restart (deferred ones included)."""
    return bool(actions.get('reexec') or actions.get('daemon_reload') or actions.get('units')
                or actions.get('user_managers') or actions.get('docker'))


def allowed(actions):
    """limits_restart's options for what ``actions`` (limits_profile's) owes now: the restarts
    the restart policy deferred (``actions.deferred``) left out. A deferred unit that is also
    a user manager or dockerd stays out of those steps too."""
    deferred = set(record['unit'] for record in actions.get('deferred') or [])
    return dict(reexec=bool(actions.get('reexec')),
                daemon_reload=bool(actions.get('daemon_reload')),
                units=[u for u in actions.get('units') or [] if u not in deferred],
                user_managers=[u for u in actions.get('user_managers') or [] if u not in deferred],
                docker=bool(actions.get('docker')) and DOCKER_UNIT not in deferred)


def restart_then_probe(restarter, planned, result, verify=None, probe=None):
    """Do ``planned`` (steps()) with ``restarter`` (a Restarter), then, unless a unit failed
    its restart, ``probe(restarter.host, verify)`` (effective.probe) into
    ``result['verified']``: the limits_restart call, shared with limits_profile's
    ``restart``. ``result`` is updated in place (done, failed_unit, docker_version), so that
    it says what was done when RestartError or the probe's own exception comes out."""
    try:
        restarter.run(planned)
    finally:
        result.update(restarter.result)
    if verify is not None and not result['failed_unit']:
        result['verified'] = probe(restarter.host, verify)
    return result


def describe(step):
    kind, unit = step
    return dict(reexec='systemctl daemon-reexec', daemon_reload='systemctl daemon-reload',
                docker_wait='wait for dockerd to answer').get(kind) or 'restart %s' % unit


class Restarter(object):
    def __init__(self, host, settle=2, docker_wait=60, sleep=time.sleep, clock=time.monotonic):
        self.host = host
        self.settle = settle
        self.docker_wait = docker_wait
        self.sleep = sleep
        self.clock = clock
        self.result = dict(done=[], failed_unit={}, docker_version=None)

    def command(self, args):
        return self.host.run_command(args, environ_update=commands.live_env())

    def systemctl(self, *args):
        rc, out, err = self.command(['systemctl'] + list(args))
        if rc != 0:
            raise RestartError('systemctl %s failed (exit %d): %s'
                               % (' '.join(args), rc, ' '.join((err + out).split())))
        return out

    def show(self, unit, prop):
        rc, out, _err = self.command(['systemctl', 'show', '-p', prop, '--value', unit])
        return out.strip() if rc == 0 and out.strip() else 'unknown'

    def checked_restart(self, unit):
        """None when ``unit`` restarted and is active ``settle`` seconds later; else the
        failure: {unit, error, journal}."""
        rc, out, err = self.command(['systemctl', 'restart', unit])
        if rc == 0:
            self.sleep(self.settle)
        state, result = self.show(unit, 'ActiveState'), self.show(unit, 'Result')
        if rc == 0 and state == 'active':
            return None
        if rc != 0:
            error = 'systemctl restart failed (exit %d): %s' % (rc, ' '.join((err + out).split()))
        else:
            error = 'not active after %s s: ActiveState %s, Result %s' % (
                self.settle, state, result)
        _rc, journal, _err = self.command(['journalctl', '-u', unit, '-n', '3', '--no-pager',
                                           '-o', 'cat'])
        return dict(unit=unit, error=error,
                    journal=[line for line in journal.splitlines() if line.strip()])

    def wait_for_docker(self):
        deadline = self.clock() + self.docker_wait
        while True:
            rc, out, err = self.command(DOCKER_PING)
            if rc == 0:
                return out.strip()
            if self.clock() >= deadline:
                raise RestartError('dockerd did not answer within %s s of its restart: %s'
                                   % (self.docker_wait, ' '.join((err + out).split())))
            self.sleep(0.5)

    def run(self, planned):
        """Do ``planned`` (steps()) in order: {done: [...], failed_unit: {} or the failure,
        docker_version}. RestartError for a failure the role cannot repair (``self.result``
        then says what was done before it)."""
        result = self.result = dict(done=[], failed_unit={}, docker_version=None)
        for step in planned:
            kind, unit = step
            if kind == 'reexec':
                self.systemctl('daemon-reexec')
            elif kind == 'daemon_reload':
                self.systemctl('daemon-reload')
            elif kind == 'user_managers':
                self.systemctl('restart', *unit.split())
            elif kind == 'docker_wait':
                result['docker_version'] = self.wait_for_docker()
            else:
                failure = self.checked_restart(unit)
                if failure:
                    result['failed_unit'] = failure
                    return result
            result['done'].append(describe(step))
        return result


def put_back(restarter, written, planned, done):
    """After a restart that failed outright: every file of ``written`` ([(context, Change)],
    in write order) put back, then the steps of ``planned`` this call had done, and the one
    that failed, done again with the earlier files, so that the node runs on them (a user
    manager, dockerd, the system manager's defaults). Returns (restored paths, the last
    written first; what ran again: the Restarter's result, or the RestartError's message)."""
    restored = changes.undo_all(written)
    again = planned[:len(done.get('done') or []) + 1]
    if again and again[-1][0] == 'docker':
        again.append(('docker_wait', DOCKER_UNIT))
    try:
        outcome = restarter.run(again)
    except RestartError as exc:
        outcome = exc.msg
    return restored, outcome


def failure_message(failure, restored, outcome):
    """One message for a failed restart and its put-back: ``failure`` is the failed unit
    ({unit, error, journal}) or a RestartError's message, ``restored`` the paths put back (in
    write order), ``outcome`` what :func:`put_back` did again (a Restarter result or a
    message)."""
    unit = failure.get('unit') if isinstance(failure, dict) else None
    if unit:
        text = "%s failed after its restart with this run's files: %s" % (unit, failure['error'])
        if failure.get('journal'):
            text += ' (its journal: %s)' % ' | '.join(failure['journal'])
    else:
        text = "the restarts failed with this run's files: %s" % failure
    text += '. Restored: %s; ' % (', '.join(restored) or 'no file')
    if not isinstance(outcome, dict):
        return text + 'done again with the previous files, which failed too: %s.' % outcome
    if outcome.get('failed_unit'):
        return text + '%s did NOT start again with the previous files either: %s.' % (
            outcome['failed_unit']['unit'], outcome['failed_unit']['error'])
    done = outcome.get('done') or []
    if not unit:
        return text + 'done again with the previous files: %s.' % (', '.join(done) or 'nothing')
    others = [step for step in done if step != 'restart %s' % unit]
    return text + '%s is active again with the previous files%s.' % (
        unit, (' (done again with them: %s)' % ', '.join(others)) if others else '')


def written_records(entries, changed_only=False):
    """[(context, changes.Written)] of limits_profile's ``files`` records (``path``,
    ``backup_file``, ``created``; other keys ignored), in the order given: the order they were
    written. ``changed_only``: only the records whose ``changed`` is true (limits_profile's
    whole ``files`` list names the unchanged files too)."""
    return [(entry.get('context'), changes.Written(
        entry['path'], entry.get('backup_file'), bool(entry.get('created'))))
        for entry in entries or []
        if entry.get('path') and (entry.get('changed') or not changed_only)]


def done_steps(actions, restarted):
    """The steps a limits_profile call with ``restart`` did, from its result alone: its
    ``actions`` (what the change owes, ``deferred`` the restarts the policy left for later)
    give the steps it planned, as profile_run.restart plans them (:func:`allowed`, then
    :func:`steps`), and ``restarted['done']`` how many of them ran (the engine runs them in
    order and stops at the first failure). A record whose ``done`` is not the start of those
    steps (an edited or another module's result) raises RestartError: nothing is guessed."""
    planned = steps(allowed(actions or {}))
    done = list((restarted or {}).get('done') or [])
    if [describe(step) for step in planned[:len(done)]] != done:
        raise RestartError('restarted.done %s is not what actions owes (%s): not the result of '
                           'one limits_profile call; nothing put back or restarted'
                           % (done, [describe(step) for step in planned]))
    return planned[:len(done)]


def rollback_message(restored, outcome):
    """'' when every file was put back and every step done again succeeded; else what failed
    (a file not restored, the restart that failed with the restored files)."""
    problems = [path for path in restored if '(NOT restored: ' in path]
    text = ''
    if problems:
        text = 'not every file this run changed could be put back: %s' % ', '.join(problems)
    if not isinstance(outcome, dict):
        failed = 'done again with the previous files, which failed: %s' % outcome
    elif outcome.get('failed_unit'):
        failed = '%s did NOT start again with the previous files: %s%s' % (
            outcome['failed_unit']['unit'], outcome['failed_unit']['error'],
            (' (its journal: %s)' % ' | '.join(outcome['failed_unit']['journal']))
            if outcome['failed_unit'].get('journal') else '')
    else:
        return text and 'rollback: %s; restored: %s.' % (text, ', '.join(restored))
    return 'rollback: %s%s; restored: %s.' % (text + '; ' if text else '', failed,
                                              ', '.join(restored) or 'no file')


POLICIES = ('when_idle', 'always', 'never')


class Engine(object):
    """The steps (:func:`steps`) under the restart ``policy``, checked, with the put-back.

    ``busy(unit)``: why restarting ``unit`` now would disturb a workload, or ''/None (default:
    the unit's cgroup, systemd_live.unit_busy); asked under ``when_idle`` only. ``never``: the
    reason a deferred restart gets under policy ``never``. A caller that applied the policy
    itself (limits_profile's ``actions``) passes ``always``."""

    def __init__(self, restarter, policy='always', busy=None, never='restart policy never'):
        if policy not in POLICIES:
            raise ValueError('restart policy %r' % (policy,))
        self.restarter = restarter
        self.policy = policy
        self.busy = busy or (lambda unit: systemd_live.unit_busy(restarter.host, unit))
        self.never = never
        self.deferred = []

    def decide(self, planned):
        """The steps of ``planned`` to do now; the restarts left for later go to
        ``self.deferred`` ([{unit, reason}])."""
        self.deferred = []
        if self.policy == 'always':
            return list(planned)
        now = []
        for kind, unit in planned:
            if kind in ('unit', 'docker', 'user_managers'):
                idle = []
                for name in unit.split():
                    why = self.never if self.policy == 'never' else self.busy(name)
                    if why:
                        self.deferred.append(dict(unit=name, reason=why))
                    else:
                        idle.append(name)
                if not idle:
                    continue
                unit = ' '.join(idle)
            elif kind == 'docker_wait' and unit in [d['unit'] for d in self.deferred]:
                continue
            now.append((kind, unit))
        return now

    def run(self, planned, result=None, written=None, verify=None, probe=None):
        """Do the steps of ``planned`` the policy allows now, then the probes
        (:func:`restart_then_probe`); ``result`` (updated in place and returned): done,
        failed_unit, docker_version (and ``verified``).

        ``written`` ([(context, Change or changes.Written)], in write order) None: a failed
        unit is returned in ``failed_unit`` and an outright failure raises RestartError, for
        the caller to repair. Given (even empty): either failure puts those files back, does
        again what was done and the step that failed (:func:`put_back`), and raises
        RestartFailure with both outcomes."""
        result = {} if result is None else result
        result.update(done=[], failed_unit={}, docker_version=None)
        now = self.decide(planned)
        try:
            restart_then_probe(self.restarter, now, result, verify, probe)
        except RestartError as exc:
            if written is None:
                raise
            self.restore(written, now, result, exc.msg)
        if result['failed_unit'] and written is not None:
            self.restore(written, now, result, result['failed_unit'])
        return result

    def rollback(self, written, again, result=None):
        """Roll back a run whose restarts succeeded and whose verification failed: every file
        of ``written`` ([(context, Change or changes.Written)], in write order) put back, the
        last written first, then ``again`` (the steps that run did: :func:`done_steps`) done
        once more, in order and with the same checks, so that what it restarted runs on the
        restored files. Nothing else is restarted: a restart the policy deferred was not done,
        so the workload it protected keeps running. ``result`` (updated and returned): done,
        failed_unit, docker_version of the redo and ``put_back`` {restored (in write order),
        outcome}. A file not put back or a step that fails again raises RestartFailure,
        after the other files and steps were done."""
        result = {} if result is None else result
        restored = list(reversed(changes.undo_all(list(written))))
        try:
            outcome = self.restarter.run(list(again))
        except RestartError as exc:
            outcome = exc.msg
        result.update(self.restarter.result)
        result['put_back'] = dict(restored=restored, outcome=outcome)
        result['files_restored'] = restored
        problem = rollback_message(restored, outcome)
        if problem:
            raise RestartFailure(problem, result)
        return result

    def restore(self, written, planned, result, failure):
        restored, outcome = put_back(self.restarter, list(written), planned, dict(result))
        restored = list(reversed(restored))
        result['put_back'] = dict(restored=restored, outcome=outcome)
        result['files_restored'] = restored
        raise RestartFailure(failure_message(failure, restored, outcome), result)
