"""Check mode changes nothing anywhere, and a failed verification rolls every file back.

The limits role runs as users run it (role variables only), and each writing module once alone
in check mode; the tests judge outcomes: the watched files' checksums (and files that appear),
the services' main PIDs and start times, the managers' reloads, and what new processes get."""
import re

import pytest

from conftest import (BASELINE, UNIT, USER, container_limits, login_limits, manager_reloads, node,
                      run_module, run_role, service_limits, services, snapshot, snapshot_diff,
                      unit_limits)

# A change: the profile names both sides, so it lowers what the converged node has (a plain
# 12288 is a minimum and would keep the node's higher values: issue 31)
LOWER = dict(BASELINE, nofile={'soft': 12288, 'hard': 12288})
PAM_FILE = '/etc/security/limits.d/90-gpufleet-tuning.conf'
SITE = '/etc/security/limits.d/10-site.conf'
# A unit the converge run did not give limits to: this run creates its drop-in.
NEW_UNIT = 'gpufleet-rel-fresh.service'
NEW_DROPIN_DIR = '/etc/systemd/system/%s.d' % NEW_UNIT
NEW_DROPIN = NEW_DROPIN_DIR + '/90-gpufleet-tuning.conf'
BACKUP = re.compile(r'\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~$')


def without_backups(snap):
    return dict((p, v) for p, v in snap.items() if not BACKUP.search(p))


def test_check_mode_changes_nothing_anywhere(host):
    files, running, login = snapshot(host), services(host), login_limits(host)
    rc, out = run_role(host, check=True, diff=True, limits_profile=LOWER,
                       limits_units=[UNIT, NEW_UNIT])
    assert rc == 0, out[-3000:]
    # The run did see changes to make (its diff shows the new value for the PAM file) ...
    assert PAM_FILE in out and '12288' in out, out[-3000:]
    assert re.search(r'changed=[1-9]', out), out[-3000:]
    # ... and made none: no file changed or appeared, nothing restarted or re-executed.
    assert snapshot(host) == files, snapshot_diff(files, snapshot(host))
    assert services(host) == running
    assert login_limits(host) == login


CHECK_MODULES = [
    ('gpufleet.tuning.pam_limits', {'limits': [{'domain': '*', 'item': 'nofile', 'value': 12288}]}),
    ('gpufleet.tuning.systemd_limits', {'scope': 'user', 'limits': {'nofile': 12288}}),
    ('gpufleet.tuning.systemd_limits', {'unit': NEW_UNIT, 'limits': {'nofile': 12288}}),
    ('gpufleet.tuning.docker_ulimits', {'ulimits': {'nofile': 12288}, 'shm_size': '1G'}),
    ('gpufleet.tuning.podman_ulimits', {'ulimits': {'nofile': 12288}}),
]


@pytest.mark.parametrize('module,args', CHECK_MODULES,
                         ids=['pam', 'systemd-user', 'systemd-new-unit', 'docker', 'podman'])
def test_each_module_in_check_mode_changes_nothing(host, module, args):
    files = snapshot(host)
    ok, result, printed = run_module(host, module, args, check=True, diff=True)
    assert ok, printed[-3000:]
    assert result['changed'] is True and '+++ after' in printed, printed[-3000:]
    assert snapshot(host) == files, snapshot_diff(files, snapshot(host))


@pytest.fixture
def user_line(host):
    """A trainer line in an earlier limits.d file: it wins over * for trainer (pam_limits
    precedence), so the profile cannot reach trainer's logins and verification fails."""
    node(host, "printf 'trainer soft nofile 2048\\ntrainer hard nofile 2048\\n' > %s" % SITE)
    yield SITE
    node(host, 'rm -f %s' % SITE)
    node(host, 'systemctl restart user@1001.service')


def test_failed_verification_rolls_every_file_back(host, user_line):
    before = without_backups(snapshot(host))
    limits_before = [service_limits(host)['nofile'], unit_limits(host)['nofile'],
                     container_limits(host)['nofile']]
    assert NEW_DROPIN not in before
    rc, out = run_role(host, limits_profile=LOWER, limits_rollback='failure',
                       limits_units=[UNIT, NEW_UNIT])
    after = snapshot(host)
    assert rc != 0, out[-3000:]
    assert USER in out and '2048' in out and '12288' in out, out[-3000:]
    # The run wrote (a backup appears only for a file that changed): PAM, the system and user
    # managers' drop-ins, the unit's drop-in and daemon.json ...
    backups = sorted(p for p in after if p not in before and BACKUP.search(p))
    for path in (PAM_FILE, '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf',
                 '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf',
                 '/etc/systemd/system/%s.d/90-gpufleet-tuning.conf' % UNIT,
                 '/etc/docker/daemon.json'):
        assert [b for b in backups if b.startswith(path + '.')], (path, backups)
    # ... and every file is back to its pre-run checksum, the one it created is gone.
    # (The directory of that drop-in may stay, empty: systemd reads nothing from it.)
    left = dict((p, v) for p, v in without_backups(after).items()
                if not (p == NEW_DROPIN_DIR and v == 'dir'))
    assert left == before, snapshot_diff(before, left)
    assert not [p for p in after if p.startswith(NEW_DROPIN_DIR + '/')]
    # The restored files are in effect again: systemd re-executed, the unit and dockerd
    # restarted with them.
    # (the converged values, which keep the node's higher hard limits: not always the profile's)
    assert [service_limits(host)['nofile'], unit_limits(host)['nofile'],
            container_limits(host)['nofile']] == limits_before


def test_change_that_owes_no_restart_is_verified(host, user_line):
    """A change that owes no restart the policy allows (PAM only, limits_docker_restart never:
    the user managers' restart waits) is still verified: the limits_profile call, with nothing
    to restart, probes after its write (neither the handlers' restart call nor a separate probe
    task runs), so the trainer line that keeps the profile from trainer's logins fails the run
    and the PAM file is rolled back, without restarting what the policy left alone."""
    before, reloads, running = without_backups(snapshot(host)), manager_reloads(host), services(host)
    rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['pam'], limits_units=[],
                       limits_docker_restart='never', limits_rollback='failure')
    assert rc != 0, out[-3000:]
    # Only the profile call ran on the node before the rollback: it restarted nothing and
    # probed (the failure below names what trainer's login got)
    assert 'Restart what the change owes' not in out, out[-3000:]
    assert 'Probe every managed context' not in out, out[-3000:]
    assert manager_reloads(host) == reloads
    assert USER in out and '2048' in out and '12288' in out, out[-3000:]
    assert 'Roll back as limits_rollback says' in out, out[-3000:]
    assert without_backups(snapshot(host)) == before, snapshot_diff(before, snapshot(host))
    # The rollback did not restart the user managers either: the policy deferred their restart.
    assert services(host) == running, out[-3000:]


def test_an_unchanged_node_that_failed_verification_is_not_green(host, user_line, baseline):
    """Issue 31 item 10: a run whose verification failed (trainer's earlier line keeps the
    profile from trainer's logins; limits_on_override warn, no regression so no rollback)
    left its files, and the next run, with nothing to change, said ok. It fails again now,
    naming the line that decides, and changes no file: no task says changed (issue 39 item 6)."""
    try:
        rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['pam'], limits_units=[],
                           limits_docker_restart='never')
        assert rc != 0, out[-3000:]
        files = without_backups(snapshot(host))
        rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['pam'], limits_units=[],
                           limits_docker_restart='never')
        assert rc != 0, out[-3000:]
        assert '%s:1' % SITE in out and USER in out and '2048' in out, out[-3000:]
        assert without_backups(snapshot(host)) == files
        # Issue 39 item 6: its status agrees with itself: the report says it changed nothing,
        # and no task says changed (the profile task was "changed" with that report); the
        # host fails.
        assert 'changed: nothing;' in out, out[-3000:]
        profile_task = out.split('Apply the profile to every context', 1)[1].split('TASK [', 1)[0]
        assert 'ok: [' in profile_task and 'changed: [' not in profile_task, profile_task
        recap = re.search(r'%s\s*: ok=\d+ changed=(\d+) unreachable=0 failed=(\d+)'
                          % re.escape(host.backend.host), out)
        assert recap and recap.groups() == ('0', '1'), out[-1500:]
    finally:
        baseline()
