"""The limits role's refusals, its verification failure with and without rollback, and a dockerd
restart left pending by policy, on a node converged with BASELINE."""
# The fixtures unchanged and site_file come from conftest.py.
import json
import os
import subprocess

from conftest import (BASE, BASELINE, FILES, ROOT, ansible_command, checksums, container_limits,
                      login_limits, run_role, service_limits, user_service_limits)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit

# lowering is asked for by naming the sides (a plain 12288 is a minimum: issue 31)
LOWER = {'nofile': {'soft': 12288, 'hard': 12288}, 'nproc': 8192, 'memlock': '8MiB'}
BASE_NOFILE = Limit(16384, 16384)


def test_baseline_in_effect(host):
    assert login_limits(host)['nofile'] == BASE_NOFILE
    assert service_limits(host)['nofile'] == BASE_NOFILE
    assert container_limits(host)['nofile'] == BASE_NOFILE


def test_role_defaults_are_refused_on_this_node(host, unchanged):
    rc, out = run_role(host)
    assert rc == 2, out
    assert 'hard nofile 65536 is above what login services can set here (20000' in out, out
    assert 'hard memlock unlimited is above what login services can set here' in out, out
    # the advice names the role's variable (issue 17.7: it said `set force=true`)
    assert 'limits_force: true' in out, out
    assert login_limits(host)['nofile'] == BASE_NOFILE


def test_profile_above_the_ceiling_is_refused(host, unchanged):
    rc, out = run_role(host, limits_profile=dict(BASELINE, nofile=30000))
    assert rc == 2, out
    assert 'hard nofile 30000 is above what login services can set here (20000' in out, out


def test_nofile_unlimited_is_refused(host, unchanged):
    rc, out = run_role(host, limits_profile=dict(BASELINE, nofile='unlimited'))
    assert rc == 2, out
    assert ('nofile cannot be unlimited (-1, "infinity" and "unlimited" all mean unlimited): '
            'Linux-PAM >= 1.5.2 silently') in out, out


def test_conflicting_later_limits_file_is_refused(host, unchanged, site_file):
    path = site_file('95-site.conf', '* soft nofile 4096\n* hard nofile 4096\n')
    rc, out = run_role(host, limits_profile=LOWER)
    assert rc == 2, out
    assert 'requested entries are overridden later in pam_limits order' in out, out
    assert path in out, out
    assert 'limits_on_conflict: warn' in out, out


def test_limits_on_conflict_warn_writes_and_warns(host, site_file):
    """issue 17.7: on_conflict=warn was advised but the role had no such variable."""
    path = site_file('95-site.conf', '* soft nofile 4096\n* hard nofile 4096\n')
    rc, out = run_role(host, limits_profile=LOWER, limits_on_conflict='warn',
                       limits_verify=False)
    assert rc == 0, out
    assert 'requested entries are overridden later in pam_limits order' in out, out
    assert path in out, out
    assert 'nofile 12288' in ' '.join(host.file(FILES[0]).content_string.split())
    host.run('rm -f %s' % path)
    rc, out = run_role(host, limits_profile=BASELINE)
    assert rc == 0, out


OVERRIDE = ('/etc/security/limits.d/80-site.conf:1 (user) overrides * for the users it matches: '
            'trainer gets hard nofile 8192 instead of 16384')


def test_a_line_keeping_a_user_below_the_profile_is_shown_on_every_run(
        host, unchanged, site_file):
    """issue 17.4: a `trainer hard nofile 8192` line in another file passed every rerun as a
    silent ok. Now every run shows it with file:line and what the user gets, and
    limits_on_override=fail refuses before any write."""
    site_file('80-site.conf', 'trainer hard nofile 8192\n')
    rc, out = run_role(host, limits_profile=BASELINE)
    # issue 31 item 10: with nothing to change, the node is still probed and not green: the
    # run fails with the gap and the line that causes it (it passed with a warning before)
    assert rc == 2, out
    assert OVERRIDE in out, out
    # trainer's soft is clamped to the line's hard 8192; the row names the line (its cause)
    assert ('login nofile 16384:16384 8192:8192 soft+hard /etc/security/limits.d/80-site.conf:1'
            in ' '.join(out.split())), out[-3000:]
    assert login_limits(host)['nofile'].hard == 8192     # what the warning says the user gets
    rc, out = run_role(host, limits_profile=BASELINE, limits_on_override='fail')
    assert rc == 2, out
    assert 'users stay below the profile because of lines in other files: ' + OVERRIDE in out
    assert 'nothing written' in out and 'limits_on_override: warn' in out, out


def test_failed_verification_rolls_back_every_file(host, site_file):
    # A user line (more specific than *) gives the probe user less than the profile.
    site_file('10-site.conf', 'trainer soft nofile 2048\ntrainer hard nofile 2048\n')
    before = checksums(host, FILES)
    rc, out = run_role(host, limits_profile=LOWER, limits_rollback='failure')
    assert rc == 2, out
    # The user manager's own PAM session (systemd-user) applies the user line too, and a user
    # service cannot exceed its manager: both contexts miss the profile, and ssh sessions,
    # which the tune verifies too (issue 39.8), run the same pam_limits.
    assert 'The profile is not in effect in login, ssh, user_manager for trainer' in out, out
    assert 'login nofile 12288:12288 2048:2048 soft+hard' in out, out
    assert 'user_manager nofile 12288:12288 2048:2048 soft+hard' in out, out
    # issue 31.10: every row carries its cause, the line the warning above it names
    for context in ('login', 'user_manager'):
        assert ('%s nofile 12288:12288 2048:2048 soft+hard '
                '/etc/security/limits.d/10-site.conf:1 (user) overrides * for the users it '
                'matches: trainer gets soft nofile 2048' % context) in out, out
    assert 'Rolled back: the files this run changed were restored' in out, out
    assert checksums(host, FILES) == before
    # And the restored files are in effect again: systemd re-executed, dockerd restarted.
    assert service_limits(host)['nofile'] == BASE_NOFILE
    assert container_limits(host)['nofile'] == BASE_NOFILE
    host.run('rm -f /etc/security/limits.d/10-site.conf')
    assert user_service_limits(host)['nofile'] == BASE_NOFILE


def test_failed_verification_without_regression_keeps_the_files(host, site_file):
    """limits_rollback=regression (the default): the user line was there before, so logins
    do not get less than before: the play fails but keeps the new files."""
    site_file('10-site.conf', 'trainer soft nofile 2048\ntrainer hard nofile 2048\n')
    before = checksums(host, FILES)
    rc, out = run_role(host, limits_profile=LOWER)
    assert rc == 2, out
    assert 'login nofile 12288:12288 2048:2048 soft+hard' in out, out
    assert 'Nothing was rolled back (limits_rollback=regression)' in out, out
    after = checksums(host, FILES)
    assert all(after[path] != before[path] for path in FILES)
    assert service_limits(host)['nofile'] == Limit(12288, 12288)
    host.run('rm -f /etc/security/limits.d/10-site.conf')
    rc, out = run_role(host, limits_profile=BASELINE)
    assert rc == 0, out
    assert checksums(host, FILES) == before


def test_dockerd_restart_pending_while_a_container_runs(host):
    host.check_output('docker run -d --name gpufleet-busy --network=none tiny:latest sleep 600')
    try:
        rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['docker'])
        assert rc == 0, out
        assert 'Pending: docker (limits_docker_restart=when_idle, running containers: 1' in out
        assert '"Soft": 12288' in host.file('/etc/docker/daemon.json').content_string
        # dockerd was not restarted: the busy container runs, new ones get the old limits.
        assert host.check_output("docker inspect -f '{{.State.Running}}' gpufleet-busy") == 'true'
        assert container_limits(host)['nofile'] == BASE_NOFILE
    finally:
        host.run('docker rm -f gpufleet-busy')
    # The next run finds the restart still pending (daemon.json is already written, so
    # docker_ulimits changes nothing) and, the node being idle now, restarts dockerd.
    rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['docker'])
    assert rc == 0, out
    assert 'Pending: docker' not in out, out
    assert container_limits(host)['nofile'] == Limit(12288, 12288)
    rc, out = run_role(host, limits_profile=BASELINE, limits_contexts=['docker'])
    assert rc == 0, out
    assert container_limits(host)['nofile'] == BASE_NOFILE


JOB = {'ranks_per_node': 2, 'num_workers': 2, 'batch_size': 1, 'prefetch_factor': 2,
       'tensors_per_batch': 2000, 'bytes_per_batch': '8MiB', 'headroom': 1.5}


def test_a_bad_job_shape_is_refused_naming_the_field(host, unchanged):
    """issue 13: zero counts and unknown strategies fail naming the field, before any write."""
    rc, out = run_role(host, limits_profile=BASELINE, limits_job=dict(JOB, num_workers=0))
    assert rc == 2, out
    assert 'limits_job.num_workers: 0 is below 1' in out, out
    rc, out = run_role(host, limits_profile=BASELINE,
                       limits_job=dict(JOB, sharing_strategy='file_socket'))
    assert rc == 2, out
    assert "limits_job.sharing_strategy: 'file_socket' is not one of" in out, out


def test_the_profile_follows_the_job_shape(host):
    """issue 13.1: limits_job sizes nofile (8102 descriptors a process, its 2 ranks in one
    process group, x 1.5, rounded up to 12288), nproc (at least 4096) and Docker's /dev/shm
    from the job; memlock stays limits_profile's (the job registers no RDMA memory). The job's sizes are minimums (issue 31): the node's 16384 is kept, and
    the run's report counts it, with no warning (issue 39.3)."""
    # docker.service allows 3 starts a minute: the tests before restarted it already
    host.run('systemctl reset-failed docker.service')
    rc, out = run_role(host, limits_profile=BASELINE, limits_job=JOB)
    assert rc == 0, out
    assert login_limits(host)['nofile'] == BASE_NOFILE
    assert service_limits(host)['nofile'] == BASE_NOFILE
    assert 'Kept above the profile (the node already has more; name the side in the profile ' \
        'to lower it): ' in out, out[-3000:]
    assert 'kept: the node already has' not in out, out[-3000:]
    daemon = host.file('/etc/docker/daemon.json').content_string
    # 2 ranks x (2 x 2 + 2) batches x (8 MiB + 2000 pages) x 1.5, rounded up to 256 MiB
    assert '"default-shm-size": "512M"' in daemon, daemon
    rc, out = run_role(host, limits_profile=BASELINE, limits_docker_shm_size='64M')
    assert rc == 0, out
    assert login_limits(host)['nofile'] == BASE_NOFILE


LOGIND_DROPIN = '/etc/systemd/logind.conf.d/90-gpufleet-tuning.conf'
REMOVE_IPC = ('busctl get-property org.freedesktop.login1 /org/freedesktop/login1 '
              'org.freedesktop.login1.Manager RemoveIPC')


def test_logind_remove_ipc_and_linger(host):
    """issue 13.3: logind's RemoveIPC=yes removes a user's /dev/shm/torch_* when their last
    session ends. The role says which training users would lose them, and sets RemoveIPC=no
    or lets users linger where asked."""
    host.run('useradd -m gpufleet-nolinger')
    try:
        assert host.check_output(REMOVE_IPC) == 'b true'
        rc, out = run_role(host, limits_profile=BASELINE, limits_logind_remove_ipc='check',
                           limits_linger_users=[])
        assert rc == 0, out
        assert 'do not linger' not in out, out            # trainer lingers (prepare.yml)
        rc, out = run_role(host, limits_profile=BASELINE, limits_logind_remove_ipc='check',
                           limits_verify_user='gpufleet-nolinger')
        assert rc == 0, out
        assert 'RemoveIPC is on (b true) and gpufleet-nolinger do not linger' in out, out
        rc, out = run_role(host, limits_profile=BASELINE, limits_linger_users=['gpufleet-nolinger'],
                           limits_verify_user='gpufleet-nolinger',
                           limits_logind_remove_ipc='check')
        assert rc == 0, out
        assert host.file('/var/lib/systemd/linger/gpufleet-nolinger').exists
        assert 'do not linger' not in out, out
        rc, out = run_role(host, limits_profile=BASELINE, limits_logind_remove_ipc='no')
        assert rc == 0, out
        assert 'RemoveIPC=no' in host.file(LOGIND_DROPIN).content_string
        assert host.check_output(REMOVE_IPC) == 'b false'
    finally:
        host.run('loginctl disable-linger gpufleet-nolinger; userdel -r gpufleet-nolinger; '
                 'rm -f %s; systemctl restart systemd-logind' % LOGIND_DROPIN)
    assert host.check_output(REMOVE_IPC) == 'b true'


def run_tune_playbook(host, **variables):
    """playbooks/tune_gpu_nodes.yml --tags limits (the role imported with ansible's own argument
    validation off) with BASE plus ``variables``; returns (rc, whitespace-normalised output)."""
    extra = dict(BASE, gpufleet_hosts='all', **variables)
    cmd = ansible_command(host, ['ansible-playbook', os.path.join(ROOT, 'playbooks',
                                                                  'tune_gpu_nodes.yml'),
                                 '--tags', 'limits', '-e', json.dumps(extra),
                                 '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, ' '.join(proc.stdout.replace('\\n', ' ').split())


BAD_OPTIONS = {'limits_docker_restart': 'sometimes', 'limits_verify': 'maybe'}


def test_bad_role_options_are_refused_naming_them_before_any_change(host, unchanged):
    """The role's options are checked against meta/argument_specs.yml before anything on the
    node changes: by ansible's validation task where the role is listed under `roles`, and by
    the gpufleet.tuning.role_arguments lookup in the first task where tune_gpu_nodes.yml imports
    it with that task off. Both name each bad option."""
    for run in (run_role, run_tune_playbook):
        rc, out = run(host, limits_profile=BASELINE, **BAD_OPTIONS)
        assert rc == 2, out
        assert 'Validation of arguments failed' in out, out
        assert ('value of limits_docker_restart must be one of: when_idle, always, never, got: '
                'sometimes') in out, out
        assert 'limits_verify' in out and 'bool' in out, out
        assert 'changed=0' in out, out
        if run is run_tune_playbook:
            assert 'Validating arguments' not in out, out
            assert "failed for role gpufleet.tuning.limits (entry point 'main')" in out, out
