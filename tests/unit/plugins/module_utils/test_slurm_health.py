"""Slurm health check and prolog (module_utils/run/slurm_health.py): the drain reason from the
audit's rows, its truncation, the marker that limits resumes to our own drains, the Nagios exit
codes, `scontrol show node` parsing and what is drained or resumed. The real slurmctld and slurmd
are in molecule/slurm/tests/test_slurm_health.py."""
import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch as dw
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import slurm_health as sh
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify

DROPIN = '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf'
JOB_ROW = dict(context='slurm_job', item='nofile', actual='1024:1024', expected='16384:16384',
               gap='soft+hard', how='predicted',
               source='%s:4 (not propagated: /etc/slurm/slurm.conf:16 '
                      'PropagateResourceLimitsExcept=NOFILE,NPROC,MEMLOCK)' % DROPIN,
               places={'soft': {'path': DROPIN, 'line': 4}, 'hard': {'path': DROPIN, 'line': 4}})
LOGIN_ROW = dict(context='login', item='nofile', actual='1024:1048576', expected='16384:16384',
                 gap='soft', source='/etc/security/limits.d/80-site.conf:3',
                 places={'soft': {'path': '/etc/security/limits.d/80-site.conf', 'line': 3}})


def f(row):
    """The finding of an audit row, as the audit evaluates it."""
    return findings.from_row(row, findings.row_status(row))


SHOW_NODE = '''NodeName=n1 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.31
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug
   Reason=%s [root@2026-12-06T10:20:11]
'''


def test_the_reason_names_context_item_have_want_and_file_line():
    assert sh.reason([f(JOB_ROW)]) == 'gpufleet: slurm_job nofile 1024 < 16384 (%s:4)' % DROPIN
    assert sh.reason([f(LOGIN_ROW)]) == ('gpufleet: login nofile 1024 < 16384 '
                                         '(/etc/security/limits.d/80-site.conf:3)')


def test_a_hard_gap_says_hard_and_more_gaps_are_counted():
    row = dict(LOGIN_ROW, item='memlock', actual='unlimited:8MiB', expected='16MiB:16MiB',
               gap='hard', source='(distribution default)', places={})
    assert sh.reason([f(row), f(JOB_ROW), f(LOGIN_ROW)]) == (
        'gpufleet: login memlock hard 8MiB < 16MiB +2 more')


def test_the_place_is_the_short_side_s_own_and_no_text_is_read():
    # the soft side from slurm.conf's propagation, the hard from slurmd's drop-in: the drain
    # names slurm.conf's line for a soft gap (issue 40), the drop-in's for a hard one
    row = dict(JOB_ROW, places={'soft': {'path': '/etc/slurm/slurm.conf', 'line': 3},
                                'hard': {'path': DROPIN, 'line': 4}})
    assert sh.phrase(f(dict(row, gap='soft'))).endswith('(/etc/slurm/slurm.conf:3)')
    assert sh.phrase(f(dict(row, gap='hard'))).endswith('(%s:4)' % DROPIN)
    assert sh.phrase(f(dict(JOB_ROW, places={}))) == 'slurm_job nofile 1024 < 16384'


def test_a_long_reason_is_cut_in_the_path_and_stays_one_short_line():
    long_path = '/etc/%s/90-gpufleet-tuning.conf' % ('d' * 200)
    row = dict(JOB_ROW, places={'soft': {'path': long_path, 'line': 4}})
    text = sh.reason([f(row), f(LOGIN_ROW)])
    assert len(text) == sh.MAX_REASON and '\n' not in text
    assert text.startswith('gpufleet: slurm_job nofile 1024 < 16384 (...')
    assert text.endswith('90-gpufleet-tuning.conf:4) +1 more')
    # nothing to cut in: a plain cut
    assert sh.reason([f(dict(row, context='c' * 300, places={}))], 40).endswith('...')
    assert len(sh.reason([f(dict(row, context='c' * 300, places={}))], 40)) == 40


def test_only_our_marker_is_ours():
    assert sh.ours('gpufleet: slurm_job nofile 1024 < 16384')
    assert not sh.ours('Prolog error') and not sh.ours('') and not sh.ours(None)
    assert not sh.ours('disk swap; gpufleet: later')


def outcome(rows=(), errors=()):
    return dw.Outcome(result=dict(rows=list(rows), errors=list(errors)))


@pytest.mark.parametrize('result, contexts, code, words', [
    (dw.Outcome('timeout', 'the audit did not finish within 40 s; stopped it'), ['slurm_job'],
     sh.UNKNOWN, 'gpufleet audit did not run (timeout): the audit did not finish within 40 s'),
    (outcome([JOB_ROW, LOGIN_ROW]), ['slurm_job'], sh.CRITICAL,
     'gpufleet: slurm_job nofile 1024 < 16384'),
    # a gap in a context that is not judged is not this check's
    (outcome([dict(JOB_ROW, gap=''), LOGIN_ROW]), ['slurm_job'], sh.OK,
     'gpufleet: slurm_job meet the profile'),
    (outcome([dict(JOB_ROW, gap='')]), ['slurm_job', 'login'], sh.WARNING,
     'gpufleet: not verified: no audit row for login'),
    # a probe that failed gives no row (the audit's shape), only its error
    (outcome([], [dict(context='slurm_job', msg='slurmd is not running')]),
     ['slurm_job'], sh.WARNING, 'gpufleet: not verified: slurm_job: slurmd is not running'),
])
def test_judge_maps_the_audit_to_nagios_codes(result, contexts, code, words):
    got, sentence, _gaps = sh.judge(result, contexts)
    assert got == code and sentence.startswith(words), sentence


class Scontrol(object):
    """A host whose `scontrol show node` prints ``shown``; records `scontrol update` calls."""

    def __init__(self, shown, rc=0):
        self.shown, self.rc, self.updates = shown, rc, []

    def run_command(self, args, **_kwargs):
        if args[:3] == ['scontrol', 'show', 'node']:
            return self.rc, self.shown, 'slurm_load_node error' if self.rc else ''
        self.updates.append(args[2:])
        return 0, '', ''


def test_read_node_takes_state_and_reason_without_slurms_suffix():
    assert sh.read_node(Scontrol(SHOW_NODE % 'gpufleet: x 1 < 2 (/f:1)'), 'n1') == (
        True, 'gpufleet: x 1 < 2 (/f:1)')
    shown = SHOW_NODE.replace('IDLE+DRAIN', 'IDLE').replace('   Reason=%s [root@2026-12-06T10:20:11]\n', '')
    assert sh.read_node(Scontrol(shown), 'n1') == (False, '')
    with pytest.raises(sh.NodeStateError):
        sh.read_node(Scontrol('', rc=1), 'n1')


def test_a_gap_drains_an_undrained_node_and_rewrites_only_our_reason():
    host = Scontrol(SHOW_NODE.replace('IDLE+DRAIN', 'IDLE').replace(
        '   Reason=%s [root@2026-12-06T10:20:11]\n', ''))
    assert sh.act(host, 'n1', sh.CRITICAL, 'gpufleet: new') == 'drained n1'
    assert host.updates == [['NodeName=n1', 'State=DRAIN', 'Reason=gpufleet: new']]
    host = Scontrol(SHOW_NODE % 'gpufleet: old')
    sh.act(host, 'n1', sh.CRITICAL, 'gpufleet: new')
    assert host.updates == [['NodeName=n1', 'State=DRAIN', 'Reason=gpufleet: new']]
    host = Scontrol(SHOW_NODE % 'gpufleet: new')
    assert sh.act(host, 'n1', sh.CRITICAL, 'gpufleet: new') == 'already drained by gpufleet'
    assert host.updates == []


def test_a_drain_of_someone_else_is_never_touched():
    for code in (sh.OK, sh.CRITICAL):
        host = Scontrol(SHOW_NODE % 'disk swap by ops')
        assert 'left alone' in sh.act(host, 'n1', code, 'gpufleet: x')
        assert host.updates == []


def test_only_our_drain_is_resumed_and_only_by_the_health_check():
    host = Scontrol(SHOW_NODE % 'gpufleet: old')
    assert sh.act(host, 'n1', sh.OK, 'gpufleet: ok').startswith('resumed n1')
    assert host.updates == [['NodeName=n1', 'State=RESUME']]
    prolog = Scontrol(SHOW_NODE % 'gpufleet: old')
    sh.act(prolog, 'n1', sh.OK, 'gpufleet: ok', prolog=True)
    assert prolog.updates == []


def test_unknown_and_warning_change_nothing():
    for code in (sh.UNKNOWN, sh.WARNING):
        host = Scontrol(SHOW_NODE % 'gpufleet: old')
        assert sh.act(host, 'n1', code, 'x') == 'node state unchanged' and host.updates == []


def args(tmp_path, mode='slurm-health', profile=None):
    path = tmp_path / 'profile.json'
    path.write_text(json.dumps(dict(profile={'nofile': 16384}, user='root')))
    return argparse.Namespace(mode=mode, profile=str(profile or path), timeout=None,
                              contexts=None)


def child_printing(rows):
    """A child that checks what the health check asks of the audit and prints ``rows``."""
    code = ('import json,sys; p=json.load(sys.stdin); assert p["probe_only"] == [], p; '
            'print(json.dumps(dict(ok=True, result=dict(rows=%r, errors=[]), warnings=[])))'
            % (rows,))
    return [sys.executable, '-c', code]


@pytest.mark.parametrize('mode, rows, code', [
    ('slurm-health', [JOB_ROW], sh.CRITICAL),
    ('slurm-health', [dict(JOB_ROW, gap='')], sh.OK),
    ('slurm-prolog', [JOB_ROW], 1),
    ('slurm-prolog', [dict(JOB_ROW, gap='')], 0),
])
def test_run_prints_one_line_and_exits_with_the_mode_code(tmp_path, capsys, mode, rows, code):
    host = Scontrol(SHOW_NODE.replace('IDLE+DRAIN', 'IDLE').replace(
        '   Reason=%s [root@2026-12-06T10:20:11]\n', ''))
    env = dict(SLURMD_NODENAME='n1', SLURM_JOB_USER='trainer', SLURM_JOB_ID='7')
    assert sh.run(args(tmp_path, mode), child_printing(rows), env, host) == code
    out = capsys.readouterr().out
    assert out.count('\n') == 1
    if rows[0]['gap']:
        assert out.startswith('CRITICAL: gpufleet: slurm_job nofile 1024 < 16384 (%s:4)' % DROPIN)
        assert host.updates[0][:2] == ['NodeName=n1', 'State=DRAIN']
    else:
        assert out.startswith('OK: ') and host.updates == []
    assert ('(job 7 of trainer)' in out) == (mode == 'slurm-prolog')


def test_an_audit_that_cannot_run_is_unknown_and_the_prolog_lets_the_job_run(tmp_path, capsys):
    host = Scontrol(SHOW_NODE % 'gpufleet: old')
    env = dict(SLURMD_NODENAME='n1')
    missing = tmp_path / 'none.json'
    assert sh.run(args(tmp_path, profile=missing), ['false'], env, host) == sh.UNKNOWN
    assert capsys.readouterr().out.startswith('UNKNOWN: gpufleet audit did not run '
                                              '(profile_missing)')
    assert sh.run(args(tmp_path, 'slurm-prolog', missing), ['false'], env, host) == 0
    assert host.updates == []


def test_the_entry_point_takes_the_slurm_modes():
    parsed = dw.parser(sh).parse_args(['--mode', 'slurm-prolog', '--contexts', 'slurm_job,login'])
    assert (parsed.mode, parsed.contexts, parsed.timeout) == ('slurm-prolog', 'slurm_job,login',
                                                              None)
    assert dw.parser(sh).parse_args([]).mode == 'metrics'


def test_job_file_is_the_jobs_own_absolute_file_with_its_patterns_filled():
    env = dict(SLURM_JOB_ID='12', SLURM_JOB_USER='trainer')
    assert sh.job_file(dict(env, SLURM_JOB_STDOUT='/home/trainer/out.%j')) == '/home/trainer/out.12'
    assert sh.job_file(dict(env, SLURM_JOB_STDERR='/e/%u-%J', SLURM_JOB_STDOUT='/o')) == '/e/trainer-12'
    assert sh.job_file(dict(env, SLURM_JOB_STDOUT='slurm-%j.out')) is None
    assert sh.job_file(dict(env, SLURM_JOB_STDOUT='/o/%x.out')) is None
    assert sh.job_file(env) is None


@pytest.fixture
def shared_dir():
    """A directory other users can enter (pytest's tmp_path is below a 0700 directory)."""
    path = tempfile.mkdtemp(prefix='gpufleet-slurm-health-', dir='/tmp')
    os.chmod(path, 0o755)
    yield pathlib.Path(path)
    shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0, reason='drops privileges: needs root')
def test_tell_job_appends_as_the_jobs_user(shared_dir):
    tmp_path = shared_dir
    out = tmp_path / 'job.out'
    out.write_text('first\n')
    os.chown(str(out), 65534, 65534)
    env = dict(SLURM_JOB_ID='12', SLURM_JOB_STDOUT=str(out), SLURM_JOB_UID='65534',
               SLURM_JOB_GID='65534')
    assert sh.tell_job(env, 'gpufleet: x 1 < 2') == str(out)
    assert out.read_text() == 'first\ngpufleet: x 1 < 2\n'
    # a file the job's user cannot write (root's) is not written
    root_file = tmp_path / 'root.out'
    root_file.write_text('')
    os.chmod(str(root_file), 0o644)
    assert sh.tell_job(dict(env, SLURM_JOB_STDOUT=str(root_file)), 'x') == ''
    assert root_file.read_text() == ''


def test_the_reason_names_the_limits_line_not_the_pam_stack_line():
    # an ssh session's evidence: the PAM stack line that runs pam_limits is the carrier; each
    # side's place is the limits line that sets it (contexts/ssh.py soft_source, hard_source)
    record = {'source': 'pam_limits (/etc/pam.d/sshd:40): /etc/security/limits.d/80-site.conf:3 '
                        '(soft), :4 (hard)',
              'soft_source': '/etc/security/limits.d/80-site.conf:3',
              'hard_source': '/etc/security/limits.d/80-site.conf:4'}
    row = dict(LOGIN_ROW, context='ssh', places=findings.places_of(record))
    assert sh.phrase(f(dict(row, gap='soft'))).endswith('(/etc/security/limits.d/80-site.conf:3)')
    assert sh.phrase(f(dict(row, gap='hard'))).endswith('(/etc/security/limits.d/80-site.conf:4)')


class JobScontrol(object):
    """A host whose `scontrol -o show job` prints ``shown``."""

    def __init__(self, shown):
        self.shown, self.calls = shown, []

    def run_command(self, args, **_kwargs):
        self.calls.append(args)
        return (0, self.shown, '') if self.shown is not None else (1, '', 'Invalid job id')


def test_job_end_reads_exit_code_signal_and_state():
    shown = 'JobId=12 JobName=train JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 StdErr=/x'
    assert sh.slurm_node.job_end(sh.job_record(JobScontrol(shown), '12')) == (1, 'FAILED')
    cancelled = sh.job_record(JobScontrol('JobId=12 JobState=CANCELLED ExitCode=0:9'), '12')
    assert sh.slurm_node.job_end(cancelled) == (137, 'CANCELLED')
    assert sh.job_record(JobScontrol(None), '12') == {}
    assert sh.slurm_node.job_end({}) == (None, '')
    # while the epilog runs the job is COMPLETING: its Reason says how it ended, and an
    # OutOfMemory is the classifier's memory evidence
    record = sh.job_record(JobScontrol('JobId=12 JobState=COMPLETING Reason=OutOfMemory '
                                       'ExitCode=0:125'), '12')
    assert sh.slurm_node.job_end(record) == (253, 'OutOfMemory')
    assert sh.classify.answer('RuntimeError: DataLoader worker (pid 9) exited unexpectedly',
                              sh.registry.SLURM.job_context(), [],
                              {'job_state': 'OutOfMemory'})['ceiling'] == 'memory'


@pytest.mark.skipif(os.geteuid() != 0, reason='drops privileges: needs root')
def test_the_epilog_tells_a_failed_job_why_it_died_and_leaves_a_good_one_alone(
        shared_dir, capsys):
    """slurm-epilog: a job that ended with exit status 1 gets the answer (the audit's slurm_job
    finding: its value and file:line) appended to its own output file, read and written as the
    job's user; a job that ended 0 gets nothing; the epilog always exits 0."""
    out = shared_dir / 'job.err'
    out.write_text('Traceback (most recent call last):\nRuntimeError: received 0 items of '
                   'ancdata\n')
    os.chown(str(out), 65534, 65534)
    env = dict(SLURM_JOB_ID='12', SLURM_JOB_USER='nobody', SLURM_JOB_STDERR=str(out),
               SLURM_JOB_UID='65534', SLURM_JOB_GID='65534')
    host = JobScontrol('JobId=12 JobState=FAILED ExitCode=1:0')
    child = child_printing([JOB_ROW])
    assert sh.run(args(shared_dir, 'slurm-epilog'), child, env, host) == 0
    told = out.read_text().splitlines()[-1]
    assert told == (
        'gpufleet-slurm-epilog: job 12 (FAILED, exit status 1): nofile = 1024 at %s:4 in '
        'slurm_job: RuntimeError: received 0 items of ancdata; fix: raise nofile in the profile '
        'above the job\'s descriptors (limits_profile: nofile; limits_job sizes it from the '
        'job\'s shape)' % DROPIN)
    assert capsys.readouterr().out.startswith(told + '; told the job in %s' % out)
    before = out.read_text()
    host = JobScontrol('JobId=12 JobState=COMPLETED ExitCode=0:0')
    assert sh.run(args(shared_dir, 'slurm-epilog'), child, env, host) == 0
    assert out.read_text() == before
    assert capsys.readouterr().out == 'OK: job 12 ended with exit status 0\n'
    # a file the job's user cannot read is not read (root's): the answer has no text
    secret = shared_dir / 'secret'
    secret.write_text('Too many open files\n')
    os.chmod(str(secret), 0o600)
    assert sh.read_job_tail(dict(env, SLURM_JOB_STDERR=str(secret))) == ''


# the line the epilog appended on the real node (molecule/slurm): its fix names slurm.conf's
# PropagateResourceLimitsExcept=NOFILE,NPROC,MEMLOCK, which the memlock rule matches
TOLD = ('gpufleet-slurm-epilog: job 5 (COMPLETING, exit status 1): nofile = 1024 at %s:4 in '
        "slurm_job: OSError: [Errno 24] Too many open files: '/dev/null'; fix: raise or remove "
        '%s:4 (not propagated: /etc/slurm/slurm.conf:17 PropagateResourceLimitsExcept=NOFILE,'
        'NPROC,MEMLOCK) (it sets 1024:1024); limits_profile does not edit files it does not own'
        % (DROPIN, DROPIN))
JOB_ERR = ('Traceback (most recent call last):\n  File "/tmp/fds.py", line 2, in <module>\n'
           "OSError: [Errno 24] Too many open files: '/dev/null'\n")
MEMLOCK_ROW = dict(JOB_ROW, item='memlock', actual='8MiB:8MiB', expected='unlimited:unlimited',
                   places={'soft': {'path': DROPIN, 'line': 3}})


def test_the_lines_the_prolog_and_epilog_appended_are_no_error_text():
    """The playbook (classify_failure.yml -e classify_slurm_job) and a requeued job's epilog
    read the job's file with the answer already appended: the job's own error decides, not
    the words of our answer (on the real node it answered memlock, from MEMLOCK in the fix)."""
    prolog = ('gpufleet-slurm-prolog: job 5 not started on n1: gpufleet: slurm_job memlock 8MiB '
              '< 16MiB (%s:3)' % DROPIN)
    found = [f(MEMLOCK_ROW), f(JOB_ROW)]
    for text in (JOB_ERR + TOLD + '\n', prolog + '\n' + JOB_ERR + TOLD + '\n'):
        answer = classify.answer(text, registry.SLURM.job_context(), found)
        assert (answer['ceiling'], answer['value'], answer['place']) == (
            'nofile', '1024', '%s:4' % DROPIN), answer['summary']
        assert answer['line'] == "OSError: [Errno 24] Too many open files: '/dev/null'"
    # our lines alone are no error text
    assert classify.answer(TOLD + '\n' + prolog, registry.SLURM.job_context(), found)[
        'verdict'] == 'unknown'


@pytest.mark.skipif(os.geteuid() != 0, reason='drops privileges: needs root')
def test_a_job_with_slurms_default_output_file_is_told_too(shared_dir, capsys):
    """A job submitted without -o/-e writes slurm-%j.out in its working directory, and slurmd's
    Epilog environment then names no SLURM_JOB_STDOUT or SLURM_JOB_STDERR (Slurm 22.05 on the
    real node): the file is the one `scontrol -o show job` names (StdErr, else StdOut; its
    patterns filled by Slurm), read at the epilog's start anyway for the exit code."""
    out = shared_dir / 'slurm-13.out'
    out.write_text(JOB_ERR)
    os.chown(str(out), 65534, 65534)
    env = dict(SLURM_JOB_ID='13', SLURM_JOB_USER='nobody', SLURM_JOB_UID='65534',
               SLURM_JOB_GID='65534', SLURM_JOB_WORK_DIR=str(shared_dir))
    host = JobScontrol('JobId=13 JobName=wrap UserId=nobody(65534) JobState=COMPLETING '
                       'Reason=NonZeroExitCode ExitCode=1:0 Command=(null) WorkDir=%s StdErr=%s '
                       'StdIn=/dev/null StdOut=%s Power= ' % (shared_dir, out, out))
    assert sh.run(args(shared_dir, 'slurm-epilog'), child_printing([JOB_ROW]), env, host) == 0
    told = out.read_text().splitlines()
    assert told[-1].startswith(
        'gpufleet-slurm-epilog: job 13 (NonZeroExitCode, exit status 1): nofile = 1024 at %s:4 in '
        "slurm_job: OSError: [Errno 24] Too many open files: '/dev/null'; fix: " % DROPIN), told
    assert capsys.readouterr().out.rstrip().endswith('; told the job in %s' % out)
    # the environment's file where slurmctld does not answer
    assert sh.job_file(dict(env, SLURM_JOB_STDOUT='/o/%j.out'), {}) == '/o/13.out'
    assert sh.job_file(env, {'StdErr': '/e/x.err', 'StdOut': '/o/x.out'}) == '/e/x.err'
