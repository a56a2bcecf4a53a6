"""issue 41 items 3 and 5 on a real slurmctld and slurmd: why did my job die. slurmd's drop-in
hand-edited to nofile 1024 (a drift whose file:line the audit knows), Epilog= the limits_watch
role's /usr/local/sbin/gpufleet-slurm-epilog; sbatch jobs of trainer: one opens 5000 files and
dies of "Too many open files" (its output in Slurm's default slurm-ID.out), one succeeds, one
hides its output file from its own user.
The epilog appends the answer (the value and the drop-in's line) to the failed job's file as
the job's user, nothing to the others; playbooks/classify_failure.yml -e classify_slurm_job
answers the same from the controller (no accounting on this node: scontrol's state and user)."""
import json
import os
import subprocess
import tempfile

from conftest import DROPIN, ROOT
from scenario_support import ansible_command
from test_slurm_health import drift, reconfigured, slurm_conf, wait  # noqa: F401  pylint: disable=unused-import

EPILOG = '/usr/local/sbin/gpufleet-slurm-epilog'
PLACE = '%s:4' % DROPIN
ERROR = "OSError: [Errno 24] Too many open files: '/dev/null'"
# the job: more descriptors than the drifted soft nofile 1024; with an argument, it then makes
# its own error file unreadable to its user (root could still read and append to it)
SCRIPT = '''#!/bin/sh
python3 -c 'files = [open("/dev/null") for _ in range(5000)]'
status=$?
[ -z "$1" ] || chmod 000 "$1"
exit $status
'''
OUT = '/tmp/gpufleet-why-%s.err'


def submit(host, name=None, args='', script='/tmp/gpufleet-why.sh'):
    """The job id of an sbatch job of trainer submitted in /tmp, its stdout and stderr in
    OUT % name; with no name, in Slurm's default /tmp/slurm-ID.out."""
    files = '-o %s -e %s ' % (OUT % name, OUT % name) if name else ''
    return host.check_output("runuser -l trainer -c 'cd /tmp && sbatch --parsable %s%s %s'"
                             % (files, script, args)).strip()


def classify(host, job, answers):
    """(exit status, output) of classify_failure.yml for ``job``, the answer in ``answers``."""
    cmd = ansible_command(host, [
        'ansible-playbook', os.path.join(ROOT, 'playbooks', 'classify_failure.yml'),
        '--limit', host.backend.host, '-e', 'classify_slurm_job=%s' % job,
        '-e', 'classify_answer_dir=%s' % answers])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


def test_a_job_that_ran_out_of_files_is_told_why_and_the_playbook_agrees(
        host, reconfigured, pristine_slurm):
    host.check_output('rm -f /tmp/gpufleet-why*')
    host.check_output("printf '%%s' '%s' > /tmp/gpufleet-why.sh && chmod 755 /tmp/gpufleet-why.sh"
                      % SCRIPT.replace("'", "'\\''"))
    slurm_conf(host, ['Epilog=%s' % EPILOG])
    drift(host)
    # no -o/-e, as most jobs: slurmd's Epilog environment then names no output file
    failed = submit(host)
    good = submit(host, 'good', script='--wrap "echo fine"')
    hidden = submit(host, 'hidden', OUT % 'hidden')
    # slurmd runs the epilog while the job is COMPLETING (the epilog says its Reason): its end
    # state comes after
    for job in (failed, good, hidden):
        wait(host, "scontrol -o show job %s | grep -qE 'JobState=(COMPLETED|FAILED) '" % job,
             'job %s ended' % job, 60)

    # the failed job's own file: its error, then our line, appended as trainer
    failed_out = '/tmp/slurm-%s.out' % failed
    lines = host.file(failed_out).content_string.splitlines()
    print('\n'.join(lines[-2:]))
    assert lines[-2] == ERROR, lines
    assert lines[-1].startswith(
        'gpufleet-slurm-epilog: job %s (NonZeroExitCode, exit status 1): nofile = 1024 at %s in '
        'slurm_job: %s; fix: raise or remove %s ' % (failed, PLACE, ERROR, PLACE)), lines[-1]
    assert host.file(failed_out).user == 'trainer'
    # a job that ended 0 is left alone
    assert host.file(OUT % 'good').content_string == 'fine\n'
    # a file its user cannot read or write: not read, not written (root could have)
    assert host.file(OUT % 'hidden').mode == 0
    assert host.check_output('cat %s' % OUT % 'hidden').splitlines()[-1] == ERROR

    with tempfile.TemporaryDirectory(prefix='gpufleet-why-') as answers:
        check_the_playbook(host, failed, hidden, answers)


def check_the_playbook(host, failed, hidden, answers):
    """classify_failure.yml from the controller, its answers written to ``answers``."""
    rc, out = classify(host, failed, answers)
    assert rc == 0, out[-3000:]
    with open(os.path.join(answers, '%s.json' % host.backend.host)) as handle:
        answer = json.load(handle)
    print(answer['summary'])
    # the job's own error decides (not the words of the epilog's line below it)
    assert (answer['verdict'], answer['ceiling'], answer['value'], answer['place']) == (
        'limit', 'nofile', '1024', PLACE), answer
    assert answer['line'] == ERROR and answer['context'] == 'slurm_job'
    # the hidden file is read as trainer, never as root: the playbook stops there
    rc, out = classify(host, hidden, answers)
    assert rc != 0 and 'Permission denied' in out, out[-3000:]
    # a job slurmctld does not know (it forgets one MinJobAge after it ends; no accounting):
    # the error names the job and what to pass instead
    rc, out = classify(host, 99999, answers)
    assert rc != 0 and ('classify_slurm_job=99999: slurmctld names no output file for it '
                        '(scontrol -o show job: slurm_load_jobs error: Invalid job id '
                        'specified); it forgets a job MinJobAge') in ' '.join(out.split()), out
