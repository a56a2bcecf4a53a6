"""Issue 39 item 2 on the converged node: a limits.d entry pam_limits cannot open (a dangling
``*.conf`` link: Debian 12's Linux-PAM 1.5.2 fails every session that runs pam_limits on it) is
found before anything restarts. Before the fix the role missed the link, restarted the running
user manager (an unchanged run: its limits could not be read through runuser's failing PAM
session) and left it failed; a directory named ``*.conf`` was a raw ``[Errno 21]``."""
import json
import os
import re
import sys

from conftest import BASELINE, USER, node, output, run_module, run_role, services, snapshot, snapshot_diff

LINK = '/etc/security/limits.d/50-issue39.conf'
DIRECTORY = '/etc/security/limits.d/60-issue39.conf'


def _sessions_fail(host):
    return node(host, 'runuser -l %s -c true' % USER, check=False)


def _audit(host):
    ok, result, printed = run_module(host, 'gpufleet.tuning.limits_audit', {
        'profile': BASELINE, 'user': USER, 'units': ['gpufleet-rel-sleeper.service']})
    assert ok, printed[-3000:]
    return result


def test_a_dangling_limits_link_is_refused_before_any_restart_and_the_audit_says_broken(
        host, baseline):
    before, running = snapshot(host), services(host)
    assert output(host, 'systemctl is-active user@1001.service').strip() == 'active'
    node(host, 'ln -s /nonexistent %s' % LINK)
    try:
        # the node is broken before the tune runs: that is what the refusal says
        rc, out = _sessions_fail(host)
        assert rc != 0 and 'cannot open session' in out, out
        # the link alone (before: an unchanged run restarted user@1001.service, which stayed
        # failed), then with the directory beside it (before: a raw [Errno 21])
        for planted in ([LINK], [LINK, DIRECTORY]):
            if DIRECTORY in planted:
                node(host, 'mkdir %s' % DIRECTORY)
            rc, out = run_role(host, limits_profile=BASELINE)
            assert rc != 0, out[-3000:]
            assert ('pam: %s is a symbolic link to /nonexistent, which does not exist'
                    % LINK) in out, out[-3000:]
            assert 'every session that runs pam_limits already fails to open' in out
            assert 'Remove the link (rm %s)' % LINK in out
            assert '(nothing written, nothing restarted)' in out
            assert 'Errno 21' not in out
            # nothing restarted: the user manager, dockerd, logind and the unit kept their PIDs
            assert services(host) == running
            assert output(host, 'systemctl is-active user@1001.service').strip() == 'active'
        # limits_restart (the role's handler) does not restart a user manager into it either
        ok, result, printed = run_module(host, 'gpufleet.tuning.limits_restart',
                                         {'user_managers': ['user@1001.service']})
        assert not ok and result['msg'].startswith('user_managers: %s is a symbolic link' % LINK)
        assert result['done'] == [] and services(host) == running, printed[-3000:]
        # nor the undo that restarts
        ok, result, printed = run_module(host, 'gpufleet.tuning.limits_profile',
                                         {'state': 'absent', 'restart': True})
        assert not ok and result['msg'].startswith('pam: %s is a symbolic link' % LINK), \
            printed[-3000:]
        assert services(host) == running
        diff = snapshot_diff(before, snapshot(host))
        assert diff == {'changed': [], 'removed': [], 'new': [LINK, DIRECTORY]}, diff

        # the audit reports the node broken, naming the file (not "0 short")
        result = _audit(host)
        problems = [p for p in result['problems'] if p['source'] == LINK]
        assert problems and problems[0]['state'] == 'broken', result['problems']
        assert problems[0]['context'] == 'login'
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'build',
                                        'collections'))
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import (
            fleet_summary, node_state)
        summary = fleet_summary.build({'node': dict(result, audited=True)})
        assert summary['broken_hosts'] == 1, json.dumps(summary)[:2000]
        assert fleet_summary.lines(summary)[0].endswith(', 1 broken')
        assert node_state.verdict(result).state == node_state.BROKEN

        # the link removed, the directory left: sessions open, the tune warns about the
        # directory by name and changes nothing, restarts nothing
        node(host, 'rm %s' % LINK)
        assert _sessions_fail(host)[0] == 0
        rc, out = run_role(host, limits_profile=BASELINE)
        assert rc == 0, out[-3000:]
        assert re.search(r'changed=0\s', out), out[-3000:]
        assert '%s is a directory: pam_limits opens it and reads no line from it' % DIRECTORY \
            in out, out[-3000:]
        assert services(host) == running
        node(host, 'rmdir %s' % DIRECTORY)
        rc, out = run_role(host, limits_profile=BASELINE)
        assert rc == 0 and re.search(r'changed=0\s', out), out[-3000:]
        assert services(host) == running
        assert snapshot(host) == before
    finally:
        node(host, 'rm -f %s; rmdir %s 2>/dev/null; systemctl reset-failed user@1001.service; '
                   'systemctl start user@1001.service' % (LINK, DIRECTORY), check=False)
        baseline()
