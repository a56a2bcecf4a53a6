"""issue 13.3, the RemoveIPC canary: a job with the file_system sharing strategy that runs as
the user outside their session (a service, like a job left running after ssh) fails on its
/dev/shm/torch_* files when the user's last login session ends under logind's RemoveIPC=yes
(the default) and no linger; it passes once the limits role set linger or RemoveIPC=no.
Real logind, a real PAM session (runuser -l: pam_systemd), real PyTorch. PyTorch's errors:
"unable to open shared memory object </torch_...> in read-write mode: No such file or
directory (2)" or "could not unlink the shared memory file /torch_..." (then abort).

Issue 33.7 (mlcommons/storage#528): RemoveIPC removes Python multiprocessing semaphores too
(/dev/shm/sem.mp-*). The job's semaphore mode holds a spawn-context Lock in its dataset and
starts new DataLoader workers each epoch; once the session ended, a worker cannot open the lock
(FileNotFoundError in SemLock._rebuild) and the job fails with "DataLoader worker (pid(s) ...)
exited unexpectedly"; with RemoveIPC=no the semaphore stays and the job passes."""
import json
import os
import subprocess
import sys

ROOT = os.environ.get('MOLECULE_PROJECT_DIRECTORY',
                      os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
from scenario_support import ansible_command  # noqa: E402
from container_support import classify  # noqa: E402

PYTHON = os.environ.get('GPUFLEET_TORCH_PYTHON', '/opt/gpufleet/pytorch/bin/python')
USER = os.environ.get('GPUFLEET_IPC_USER', 'gpufleet-check')
JOB = '/usr/local/libexec/gpufleet/removeipc_job.py'
DROPIN = '/etc/systemd/logind.conf.d/90-gpufleet-tuning.conf'
REMOVE_IPC = ('busctl get-property org.freedesktop.login1 /org/freedesktop/login1 '
              'org.freedesktop.login1.Manager RemoveIPC')
UNIT = 'gpufleet-removeipc-job'


def logind_role(host, **variables):
    cmd = ansible_command(host, ['ansible-playbook',
                                 os.path.join(ROOT, 'molecule', 'pytorch', 'logind.yml'),
                                 '-e', json.dumps(variables), '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]


def job_across_session_end(host, semaphore=False):
    """Start the job as a service of USER, open and close a login session of USER while it
    runs, and return (the unit's ExecMainStatus, the job's output); with ``semaphore``, the
    job's semaphore mode, and (status, output, the job's /dev/shm/sem.mp-* files left when the
    user was gone)."""
    host.check_output('systemctl reset-failed %s 2>/dev/null; '
                      'rm -f /tmp/ipc.out /tmp/ipc.started /tmp/ipc.stop' % UNIT)
    host.check_output('systemd-run --unit %s --uid=%s -p StandardOutput=file:/tmp/ipc.out '
                      '-p StandardError=file:/tmp/ipc.out %s %s /tmp/ipc.started /tmp/ipc.stop %s'
                      % (UNIT, USER, PYTHON, JOB, '200 semaphore' if semaphore else '1200'))
    host.check_output('timeout 120 sh -c "until [ -e /tmp/ipc.started ]; do sleep 0.2; done"')
    sessions = host.check_output("runuser -l %s -c 'loginctl list-sessions --no-legend'" % USER)
    assert USER in sessions, 'runuser -l opened no logind session: %s' % sessions
    # logind lets the user go (and removes their IPC) UserStopDelaySec (10 s) after the last
    # session ends, unless they linger: the job keeps taking batches meanwhile, and is stopped
    # 2 s after the user is gone, or after 20 s when the user stays.
    host.run('timeout 20 sh -c "while loginctl show-user %s >/dev/null 2>&1; do sleep 0.3; '
             'done"' % USER)
    left = None
    if semaphore:
        named = host.check_output("grep -m 1 '^semaphores ' /tmp/ipc.out")
        assert named.startswith('semaphores /dev/shm/sem.mp-'), named
        left = [path for path in named.split()[1:] if host.file(path).exists]
    host.check_output('sleep 2; touch /tmp/ipc.stop')
    host.check_output('timeout 120 sh -c "while systemctl is-active -q %s; do sleep 0.5; done"'
                      % UNIT)
    status = host.check_output('systemctl show -p ExecMainStatus --value %s' % UNIT)
    output = host.check_output('cat /tmp/ipc.out')
    host.run('systemctl reset-failed %s' % UNIT)
    if semaphore:
        return status.strip(), output, left
    return status.strip(), output


def test_the_job_loses_its_shm_when_the_session_ends_and_passes_after_tuning(host, tmp_path):
    host.check_output('mkdir -p %s' % os.path.dirname(JOB))
    host.ansible('copy', 'src=%s dest=%s mode=0644' % (
        os.path.join(ROOT, 'molecule', 'pytorch', 'files', 'removeipc_job.py'), JOB), check=False)
    # No drop-in (RemoveIPC's default, yes), no linger, and no user manager left running from
    # earlier sessions (logind would not let the user go while it runs).
    host.check_output('if [ -e %s ]; then rm -f %s; systemctl restart systemd-logind; fi; '
                      'loginctl disable-linger %s; systemctl stop user@$(id -u %s).service'
                      % (DROPIN, DROPIN, USER, USER))
    try:
        assert host.check_output(REMOVE_IPC).strip() == 'b true'
        status, output = job_across_session_end(host)
        # Which error comes first depends on timing: the main process opens a batch whose
        # file is gone (exit 1), or frees one and cannot unlink it (abort, SIGABRT: 6).
        assert status in ('1', '6'), output
        assert ('unable to open shared memory object </torch_' in output
                and 'No such file or directory' in output) or \
            'could not unlink the shared memory file /torch_' in output, output
        # why it died (issue 41): RemoveIPC, at logind's default (no drop-in), the job a
        # service of the user
        found = classify(host, USER, output, 'service', tmp_path)
        assert (found['ceiling'], found['value']) == ('removeipc', 'yes'), found['summary']
        assert found['place'].startswith("systemd-logind's default"), found

        # the semaphore: removed with the session, and the next epoch's worker cannot open it
        status, output, left = job_across_session_end(host, semaphore=True)
        assert left == [], output
        assert status == '1', output
        assert 'SemLock._rebuild' in output and \
            'FileNotFoundError: [Errno 2] No such file or directory' in output, output
        assert 'RuntimeError: DataLoader worker (pid(s) ' in output and \
            'exited unexpectedly' in output, output

        logind_role(host, limits_linger_users=[USER])
        assert host.file('/var/lib/systemd/linger/%s' % USER).exists
        status, output = job_across_session_end(host)
        assert status == '0' and output.startswith('ok '), output

        host.check_output('loginctl disable-linger %s; systemctl stop user@$(id -u %s).service'
                          % (USER, USER))
        logind_role(host, limits_logind_remove_ipc='no')
        assert host.check_output(REMOVE_IPC).strip() == 'b false'
        status, output = job_across_session_end(host)
        assert status == '0' and output.startswith('ok '), output
        status, output, left = job_across_session_end(host, semaphore=True)
        assert len(left) == 1, output
        assert status == '0' and 'ok ' in [line[:3] for line in output.splitlines()], output
    finally:
        host.run('if [ -e %s ]; then rm -f %s; systemctl restart systemd-logind; fi; '
                 'loginctl disable-linger %s; systemctl stop user@$(id -u %s).service'
                 % (DROPIN, DROPIN, USER, USER))
