# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restarts a limits change owes, in one call (the limits_restart module): re-execute the
system manager, reload unit files, restart units with a check that they still run a few seconds
later, restart idle user managers, restart dockerd with the same check and wait until it
answers. Plain Python: commands run through the ``host`` given (an AnsibleModule's
run_command and get_bin_path); ``sleep`` and ``clock`` are injectable for tests.

The order is the limits role's: reexec, daemon_reload, units, user managers, dockerd, the wait
for dockerd. A checked restart that fails (systemctl's exit status, or the unit not active after
``settle`` seconds: a Type=simple unit reports a good restart and then dies on its new limits)
stops there: the result names it (``failed_unit``) so that the role puts the previous files back
and starts it with them; nothing after it is restarted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors

DOCKER_UNIT = 'docker.service'
DOCKER_PING = ['docker', 'info', '--format', '{{.ServerVersion}}']


class RestartError(errors.Error):
    """A restart that failed outright (re-exec, reload, a user manager, dockerd never
    answering): the host fails with this message."""

    kind = errors.HOST


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
    manager, dockerd, the system manager's defaults). Returns (restored paths, what ran again:
    the Restarter's result, or the RestartError's message)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
    restored = changes.undo_all(written)
    again = planned[:len(done.get('done') or []) + 1]
    if again and again[-1][0] == 'docker':
        again.append(('docker_wait', DOCKER_UNIT))
    try:
        outcome = restarter.run(again)
    except RestartError as exc:
        outcome = exc.msg
    return restored, outcome


def put_back_message(restored, outcome):
    """What :func:`put_back` did, for the failure message."""
    text = 'restored: %s' % (', '.join(restored) or 'no file')
    if isinstance(outcome, dict):
        if outcome.get('failed_unit'):
            return text + '; %s did NOT start again with the earlier files: %s' % (
                outcome['failed_unit']['unit'], outcome['failed_unit']['error'])
        return text + '; done again with the earlier files: %s' % (
            ', '.join(outcome.get('done') or []) or 'nothing')
    return text + '; done again with the earlier files, which failed too: %s' % outcome
