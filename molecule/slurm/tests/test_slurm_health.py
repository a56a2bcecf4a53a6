"""issue 34 item 1: the Slurm health check and prolog (role limits_watch, limits_watch_slurm_health)
on a real slurmctld and slurmd. Drift (slurmd's drop-in hand-edited to nofile 1024, slurmd
restarted) -> slurmd's HealthCheckProgram drains the node with a reason naming the gap and its
file:line -> the limits role re-tunes -> the check resumes the node. A node drained for another
reason stays drained; exit codes 0, 2 and 3; the prolog fails a job on the drifted node (its
output file says why) and lets a job run after the re-tune."""
import os
import tempfile

import pytest

from conftest import DROPIN, SLURM_CONF, main_pid
from scenario_support import run_playbook

HEALTH = '/usr/local/sbin/gpufleet-slurm-health'
PROLOG = '/usr/local/sbin/gpufleet-slurm-prolog'
ENTRY = '/usr/local/lib/gpufleet-tuning/gpufleet_limits_watch.py'
REASON = ('gpufleet: slurm_job nofile 1024 < 16384 (%s:4)' % DROPIN)
RETUNE = '''- hosts: all
  gather_facts: false
  roles:
    - role: gpufleet.tuning.limits
      vars:
        limits_profile: {nofile: 16384, nproc: 8192, memlock: 8MiB}
        limits_contexts: [slurm]
        limits_verify_user: trainer
'''


def node(host):
    return host.check_output('hostname').strip()


def check(host, program=HEALTH, env=''):
    """(exit status, stdout) of the program run as slurmd runs it (root, no arguments)."""
    out = host.run('%s %s' % (env, program))
    return out.rc, out.stdout


def reasons(host):
    """`sinfo -R`'s reasons, whole (%E: no column width)."""
    return host.check_output('sinfo -R -h -o %E').splitlines()


def state(host):
    for word in host.check_output('scontrol show node %s' % node(host)).split():
        if word.startswith('State='):
            return word[len('State='):]
    raise AssertionError('no State')


def wait(host, condition, what, tries=90):
    """Poll every second until the shell ``condition`` holds (a Slurm state change)."""
    rc = host.run('for i in $(seq %d); do %s && exit 0; sleep 1; done; exit 1'
                  % (tries, condition)).rc
    assert rc == 0, '%s: not within %d s; sinfo -R: %s' % (what, tries, reasons(host))


def drift(host):
    """A hand edit of slurmd's drop-in: jobs get nofile 1024 once slurmd restarts."""
    host.check_output("sed -i 's/^LimitNOFILE=.*/LimitNOFILE=1024/' %s && systemctl daemon-reload "
                      "&& systemctl restart slurmd.service" % DROPIN)
    wait(host, "scontrol show node %s | grep -q 'State=IDLE'" % node(host), 'slurmd back')


def retune(host):
    """The limits role again: it rewrites the drop-in and restarts slurmd (a new MainPID)."""
    before = main_pid(host)
    with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as handle:
        handle.write(RETUNE)
    try:
        rc, out = run_playbook(host, handle.name)
    finally:
        os.unlink(handle.name)
    assert rc == 0, out[-3000:]
    assert 'LimitNOFILE=1024' not in host.file(DROPIN).content_string
    assert main_pid(host) != before, out[-3000:]


def slurm_conf(host, lines):
    """The site adds ``lines`` to slurm.conf (docs/slurm.md) and reconfigures."""
    host.check_output("printf '%%s\\n' %s >> %s && scontrol reconfigure"
                      % (' '.join("'%s'" % line for line in lines), SLURM_CONF))


@pytest.fixture
def reconfigured(host):
    """slurmctld reads slurm.conf again once pristine_slurm (requested after this) put it back."""
    yield
    host.check_output('scontrol reconfigure')


def test_the_health_check_passes_on_the_tuned_node(host):
    rc, out = check(host)
    assert (rc, out) == (0, 'OK: gpufleet: slurm_job meet the profile\n')
    assert 'DRAIN' not in state(host)


def test_drift_drains_through_slurmd_and_a_retune_resumes(host, reconfigured, pristine_slurm):
    slurm_conf(host, ['HealthCheckProgram=%s' % HEALTH, 'HealthCheckInterval=5'])
    drift(host)
    # slurmd runs the program (at its restart and every 5 s) and logs its non-zero exit
    wait(host, "sinfo -R -h -o %%E | grep -qxF '%s'" % REASON, 'drained by slurmd\'s check')
    # (nothing else ran the program yet: the drain is slurmd's run's)
    assert 'DRAIN' in state(host)
    # the same program run by hand: critical, the same one-line reason, no second drain
    rc, out = check(host)
    assert rc == 2 and out == 'CRITICAL: %s; already drained by gpufleet\n' % REASON, out
    assert reasons(host) == [REASON]

    retune(host)
    # slurmd's next run (or ours) resumes the node: the drain was ours and the gap is closed
    wait(host, "! scontrol show node %s | grep -q 'State=[A-Z+]*DRAIN'" % node(host), 'resumed')
    assert reasons(host) == []
    assert check(host)[0] == 0


def test_a_drain_of_someone_else_is_left_alone(host):
    name = node(host)
    host.check_output('scontrol update NodeName=%s State=DRAIN Reason="disk swap by ops"' % name)
    try:
        rc, out = check(host)
        assert rc == 0 and 'drained by another reason (disk swap by ops): left alone' in out, out
        assert 'DRAIN' in state(host) and reasons(host) == ['disk swap by ops']
    finally:
        host.check_output('scontrol update NodeName=%s State=RESUME' % name)


def test_an_audit_that_cannot_run_is_unknown_and_changes_nothing(host):
    out = host.run('/usr/bin/python3 -I -S %s --mode slurm-health --profile /nonexistent.json'
                   % ENTRY)
    assert out.rc == 3, out
    assert out.stdout.startswith('UNKNOWN: gpufleet audit did not run (profile_missing): profile '
                                 'file /nonexistent.json does not exist'), out.stdout
    assert out.stdout.strip().endswith('node state unchanged')
    assert 'DRAIN' not in state(host)


def test_the_prolog_fails_a_job_on_a_drifted_node_and_passes_after_retune(host, reconfigured, pristine_slurm):
    host.check_output('rm -f /tmp/gpufleet-prolog.out /tmp/gpufleet-prolog-2.out')
    slurm_conf(host, ['Prolog=%s' % PROLOG])
    drift(host)
    job = host.check_output("runuser -l trainer -c 'cd /tmp && sbatch --parsable "
                            "-o /tmp/gpufleet-prolog.out --wrap \"ulimit -Sn\"'").strip()
    # slurmd fails the launch: the prolog drained the node with the reason first, so
    # slurmctld keeps it (not "Prolog error"), and requeues the job held
    wait(host, "sinfo -R -h -o %%E | grep -qxF '%s'" % REASON, 'drained by the prolog')
    wait(host, "scontrol show job %s | grep -q 'JobState=PENDING.*Reason=launch_failed_requeued_held'"
         % job, 'job requeued held')
    # the job's own output file says why it did not start (our line, written as trainer), then
    # slurmd's own line for the failed prolog
    told = 'gpufleet-slurm-prolog: job %s not started on %s: %s' % (job, node(host), REASON)
    assert host.file('/tmp/gpufleet-prolog.out').content_string.splitlines() == [
        told, 'Error running slurm prolog: 1']
    assert host.file('/tmp/gpufleet-prolog.out').user == 'trainer'

    retune(host)
    rc, out = check(host)
    assert rc == 0 and 'resumed' in out, out
    # the held job waits out the credential window (BeginTime, 1200 s): a new job shows the
    # prolog passing
    host.check_output('scancel %s' % job)
    out = host.check_output("runuser -l trainer -c 'cd /tmp && sbatch --parsable --wait "
                            "-o /tmp/gpufleet-prolog-2.out --wrap \"ulimit -Sn\"'")
    assert int(host.file('/tmp/gpufleet-prolog-2.out').content_string.split()[-1]) >= 16384, out
    assert reasons(host) == []
