"""Drift watch: textfile metrics rendering and atomic writes (module_utils/reports/textfile_metrics.py),
the node-side runner (module_utils/run/drift_watch.py) and its entry point, with the faults of
issue 14.5: missing or read-only metrics directory, an audit that crashes or times out, a
missing or corrupt profile file."""
import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch as dw
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import textfile_metrics as tm

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
from scenario_support import key, samples  # noqa: E402  pylint: disable=wrong-import-position
sys.path.insert(0, os.path.dirname(__file__))
from audit_shape import with_rows  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
ENTRY = os.path.join(ROOT, 'roles', 'limits_watch', 'files', 'gpufleet_limits_watch.py')
PROMTOOL = shutil.which('promtool')

RESULT = with_rows({
    'contexts': {
        'login': {'limits': {'nofile': {'soft': 1024, 'hard': 65536},
                             'memlock': {'soft': 'unlimited', 'hard': 'unlimited'},
                             'cpu': {'soft': 'unlimited', 'hard': 'unlimited'}}},
        'unit:gpufleet-sleeper.service': {'limits': {
            'nofile': {'soft': 65536, 'hard': 65536},
            'memlock': {'soft': 8388608, 'hard': 8388608},
            'cpu': {'soft': 'unlimited', 'hard': 'unlimited'}}},
        'docker': {'limits': {}},
    },
    'expected': {'nofile': {'soft': 65536, 'hard': 65536},
                 'memlock': {'soft': 'unlimited', 'hard': 'unlimited'},
                 'cpu': {'soft': 3600, 'hard': None}},
    'gaps': [{'context': 'login', 'item': 'nofile', 'sides': ['soft'],
              'expected': {'soft': 65536, 'hard': 65536}, 'actual': {'soft': 1024, 'hard': 65536}},
             {'context': 'unit:gpufleet-sleeper.service', 'item': 'memlock',
              'sides': ['soft', 'hard'], 'expected': {'soft': 'unlimited', 'hard': 'unlimited'},
              'actual': {'soft': 8388608, 'hard': 8388608}}],
    'errors': [{'context': 'docker', 'msg': 'docker run failed (rc 125): no such image'}],
    'systemd_pending': [{'target': 'manager', 'item': 'nofile'}],
})
ITEMS = ['nofile', 'memlock', 'cpu']


def test_render_audit_values_units_gaps_and_compliance():
    text = tm.render_audit(RESULT, ITEMS, 1700000000.5, duration=1.2344, period=1200)
    got = samples(text)
    assert got[key('gpufleet_limits_soft', context='login', item='nofile')] == '1024'
    assert got[key('gpufleet_limits_hard', context='login', item='nofile')] == '65536'
    # base units in the name, never two units in one name
    assert got[key('gpufleet_limits_soft_bytes', context='login', item='memlock')] == '+Inf'
    assert got[key('gpufleet_limits_hard_bytes', context='unit:gpufleet-sleeper.service',
                   item='memlock')] == '8388608'
    assert got[key('gpufleet_limits_soft_seconds', context='login', item='cpu')] == '+Inf'
    assert not any(n == 'gpufleet_limits_soft' and ('item', 'memlock') in labels
                   for n, labels in got)
    # gaps: how far below, +Inf when the profile is unlimited, 0 when not below
    assert got[key('gpufleet_limits_gap', context='login', item='nofile', side='soft')] == '64512'
    assert got[key('gpufleet_limits_gap', context='login', item='nofile', side='hard')] == '0'
    assert got[key('gpufleet_limits_gap_bytes', context='unit:gpufleet-sleeper.service',
                   item='memlock', side='hard')] == '+Inf'
    assert got[key('gpufleet_limits_gap_seconds', context='login', item='cpu', side='soft')] == '0'
    assert key('gpufleet_limits_gap_seconds', context='login', item='cpu', side='hard') not in got
    # compliance per context and item
    assert got[key('gpufleet_limits_compliant', context='login', item='nofile')] == '0'
    assert got[key('gpufleet_limits_compliant', context='login', item='memlock')] == '1'
    assert got[key('gpufleet_limits_compliant', context='unit:gpufleet-sleeper.service',
                   item='memlock')] == '0'
    assert got[key('gpufleet_limits_compliant', context='unit:gpufleet-sleeper.service',
                   item='nofile')] == '1'
    # the probe that failed has no values, an error instead
    assert not any(('context', 'docker') in labels for n, labels in got
                   if n != 'gpufleet_limits_probe_error')
    assert got[key('gpufleet_limits_probe_error', context='docker')] == '1'
    # the profile as an info metric, node-level metrics
    assert got[key('gpufleet_limits_profile_info', item='nofile', soft='65536',
                   hard='65536')] == '1'
    assert got[key('gpufleet_limits_profile_info', item='cpu', soft='3600', hard='')] == '1'
    assert got[key('gpufleet_limits_audit_success')] == '1'
    assert got[key('gpufleet_limits_audit_last_success_timestamp_seconds')] == '1700000000.5'
    assert got[key('gpufleet_limits_audit_duration_seconds')] == '1.234'
    assert got[key('gpufleet_limits_audit_period_seconds')] == '1200'
    assert got[key('gpufleet_limits_systemd_pending')] == '1'
    assert not any(n == 'gpufleet_limits_audit_error' for n, labels in got)


def test_render_one_help_and_type_per_name_before_its_samples():
    text = tm.render_audit(RESULT, ITEMS, 1.0)
    seen = []
    current = None
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name = line.split()[2]
            assert name not in seen, name
            seen.append(name)
            current = name
        elif line.startswith('# TYPE '):
            assert line.split()[2] == current and line.split()[3] == 'gauge'
        else:
            assert line.split('{')[0].split(' ')[0] == current, line
    assert all(n.startswith('gpufleet_limits_') for n in seen)
    assert not re.search(r' \d+ \d+$', text, re.MULTILINE), 'no client-side timestamps'


def test_render_failure_keeps_last_success_and_names_the_reason():
    got = samples(tm.render_failure('timeout', 1700000000.5, duration=3, period=1200))
    assert got == {
        key('gpufleet_limits_audit_success'): '0',
        key('gpufleet_limits_audit_error', reason='timeout'): '1',
        key('gpufleet_limits_audit_last_success_timestamp_seconds'): '1700000000.5',
        key('gpufleet_limits_audit_duration_seconds'): '3',
        key('gpufleet_limits_audit_period_seconds'): '1200',
    }
    assert key('gpufleet_limits_audit_last_success_timestamp_seconds') not in samples(
        tm.render_failure('crashed'))
    with pytest.raises(ValueError):
        tm.render_failure('no such reason')


def test_label_values_are_escaped():
    assert tm.labels([('context', 'a"b\\c\nd')]) == '{context="a\\"b\\\\c\\nd"}'


@pytest.mark.skipif(not PROMTOOL, reason='promtool not installed (scripts/bootstrap-host.sh)')
@pytest.mark.parametrize('text', [tm.render_audit(RESULT, ITEMS, 1700000000.5, 1.5, 1200),
                                  tm.render_failure('profile_invalid', 1700000000.5, 0.1, 1200)])
def test_promtool_accepts_the_metrics(text):
    proc = subprocess.run([PROMTOOL, 'check', 'metrics'], input=text.encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert proc.returncode == 0, proc.stdout.decode()


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path):
    (tmp_path / tm.FILE_NAME).write_text('old\n')
    stale = tmp_path / ('%sabc%s' % (tm.TEMP_PREFIX, tm.TEMP_SUFFIX))
    stale.write_text('half')
    os.utime(str(stale), (time.time() - 3600, time.time() - 3600))
    path = tm.write_atomic(str(tmp_path), 'new\n')
    assert open(path).read() == 'new\n'
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert sorted(os.listdir(str(tmp_path))) == [tm.FILE_NAME]


def test_write_atomic_missing_directory(tmp_path):
    with pytest.raises(tm.MetricsWriteError, match='does not exist'):
        tm.write_atomic(str(tmp_path / 'missing'), 'x\n')


def test_write_atomic_read_only_directory(tmp_path, monkeypatch):
    (tmp_path / tm.FILE_NAME).write_text('old\n')

    def refuse(**_kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(tm.tempfile, 'mkstemp', refuse)
    with pytest.raises(tm.MetricsWriteError, match='read-only file system'):
        tm.write_atomic(str(tmp_path), 'new\n')
    assert (tmp_path / tm.FILE_NAME).read_text() == 'old\n'


def test_write_atomic_failed_rename_keeps_the_old_file(tmp_path, monkeypatch):
    (tmp_path / tm.FILE_NAME).write_text('old\n')

    def fail(_src, _dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(tm.os, 'rename', fail)
    with pytest.raises(tm.MetricsWriteError):
        tm.write_atomic(str(tmp_path), 'new\n')
    assert sorted(os.listdir(str(tmp_path))) == [tm.FILE_NAME]
    assert (tmp_path / tm.FILE_NAME).read_text() == 'old\n'


def test_previous_last_success(tmp_path):
    assert tm.previous_last_success(str(tmp_path)) is None
    (tmp_path / tm.FILE_NAME).write_text(tm.render_audit(RESULT, ITEMS, 1700000123.25))
    assert tm.previous_last_success(str(tmp_path)) == 1700000123.25
    (tmp_path / tm.FILE_NAME).write_text(tm.render_failure('crashed', 1700000123.25))
    assert tm.previous_last_success(str(tmp_path)) == 1700000123.25


def write_profile(tmp_path, data):
    path = tmp_path / 'limits-watch.json'
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_read_profile(tmp_path):
    params = dw.read_profile(write_profile(tmp_path, {
        'profile': {'nofile': 65536}, 'user': 'trainer', 'units': ['x.service'],
        'docker_image': '', 'podman_image': 'p:1', 'probe_timeout': 30}))
    assert params == dict(profile={'nofile': 65536}, user='trainer', units=['x.service'],
                          probe_options={'podman_image': 'p:1'}, timeout=30,
                          probe_max_age=0, probe_proofs={}, sysctl={})


def test_read_profile_takes_the_probe_options_as_one_mapping(tmp_path):
    # what the limits_watch role writes: the contexts' probe options in one mapping, passed
    # through to the audit unread (a top-level image of an earlier role's file under it)
    params = dw.read_profile(write_profile(tmp_path, {
        'profile': {'nofile': 65536}, 'docker_image': 'd:1',
        'probe_options': {'podman_image': 'p:1', 'pod_image': '', 'docker_image': 'd:2'}}))
    assert params['probe_options'] == {'podman_image': 'p:1', 'docker_image': 'd:2'}
    with pytest.raises(dw.ProfileError) as caught:
        dw.read_profile(write_profile(tmp_path, {'profile': {'nofile': 1}, 'probe_options': []}))
    assert 'probe_options must be an object' in caught.value.msg


@pytest.mark.parametrize('content,reason,words', [
    (None, 'profile_missing', 'does not exist'),
    ('{"profile": {"nofile": 65536}', 'profile_invalid', 'not JSON'),
    ('[]', 'profile_invalid', 'no "profile"'),
    ('{"profile": {}}', 'profile_invalid', 'no "profile"'),
    ('{"profile": {"nofiles": 10}}', 'profile_invalid', 'unknown limit item'),
    ('{"profile": {"nofile": 10}, "units": "x"}', 'profile_invalid', 'units a list'),
    ('{"profile": {"nofile": 10, "pids": "lots"}}', 'profile_invalid', 'profile.pids'),
])
def test_read_profile_faults(tmp_path, content, reason, words):
    path = str(tmp_path / 'limits-watch.json') if content is None else write_profile(
        tmp_path, content)
    with pytest.raises(dw.ProfileError) as caught:
        dw.read_profile(path)
    assert caught.value.reason == reason
    assert words in caught.value.msg


def test_read_profile_takes_pids_apart_from_the_rlimits(tmp_path):
    profile = {'profile': {'nofile': 65536, 'pids': '33%'}}
    params = dw.read_profile(write_profile(tmp_path, profile))
    assert params['profile'] == {'nofile': 65536, 'pids': '33%'}


def test_pids_rows_become_pids_max_gap_and_compliance():
    result = dict(RESULT, rows=[
        dict(context='login', item='pids', actual='300', expected='8192', gap='max'),
        dict(context='service', item='pids', actual='max', expected='8192', gap=''),
        dict(context='user_manager', item='pids', actual='63598', expected='63598 (33%)',
             gap=''),
        dict(context='login', item='nofile', actual='1024:65536', gap='soft')])
    got = samples(tm.render_audit(result, ITEMS, 1700000000.5))
    assert got[key('gpufleet_limits_pids_max', context='login')] == '300'
    assert got[key('gpufleet_limits_pids_max', context='service')] == '+Inf'
    assert got[key('gpufleet_limits_pids_gap', context='login')] == '7892'
    assert got[key('gpufleet_limits_pids_gap', context='service')] == '0'
    assert got[key('gpufleet_limits_pids_gap', context='user_manager')] == '0'
    assert got[key('gpufleet_limits_compliant', context='login', item='pids')] == '0'
    assert got[key('gpufleet_limits_compliant', context='service', item='pids')] == '1'
    # an rlimit row gives no pids sample
    assert not [k for k in got if 'pids' in k and 'nofile' in k]


PARAMS = dict(profile={'nofile': 65536}, user='root', units=[], probe_options={}, timeout=60)


def child(code):
    return [sys.executable, '-c', code]


def test_audit_in_child_ok_and_audit_failed():
    ok = dw.audit_in_child(child(
        'import json,sys; p=json.load(sys.stdin); '
        'print(json.dumps(dict(ok=True, result=dict(profile=p["profile"]), warnings=["w"])))'),
        PARAMS, 10)
    assert ok.reason is None and ok.result == {'profile': {'nofile': 65536}}
    assert ok.warnings == ['w']
    failed = dw.audit_in_child(child('print(\'{"ok": false, "msg": "user: x does not exist"}\')'),
                               PARAMS, 10)
    assert (failed.reason, failed.msg) == ('audit_failed', 'user: x does not exist')


@pytest.mark.parametrize('code,words', [
    ('raise RuntimeError("boom")', 'exit status 1)'),
    ('import os; os.abort()', 'killed by signal 6'),
    ('print("not json")', 'printed no result'),
])
def test_audit_in_child_crashes(code, words):
    outcome = dw.audit_in_child(child(code), PARAMS, 10)
    assert outcome.reason == 'crashed'
    assert words in outcome.msg
    if 'boom' in code:
        assert 'RuntimeError: boom' in outcome.msg


def test_audit_in_child_timeout_stops_the_child_and_what_it_started(tmp_path):
    marker = tmp_path / 'grandchild.pid'
    code = ('import subprocess,sys,time; p=subprocess.Popen(["sleep","60"]); '
            'open(%r,"w").write(str(p.pid)); time.sleep(60)' % str(marker))
    started = time.time()
    outcome = dw.audit_in_child(child(code), PARAMS, 2)
    assert outcome.reason == 'timeout'
    assert time.time() - started < 15
    pid = int(marker.read_text())
    deadline = time.time() + 5
    while time.time() < deadline and not gone(pid):
        time.sleep(0.1)
    assert gone(pid), 'the audit\'s own child %d survived the timeout' % pid


def gone(pid):
    """True when ``pid`` has exited (no process, or a zombie waiting for its reaper)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(') ', 1)[1].startswith('Z')
    except IOError:
        return True


class Args(object):
    def __init__(self, profile, metrics_dir, timeout=10, period=1200):
        self.profile = profile
        self.metrics_dir = metrics_dir
        self.timeout = timeout
        self.period = period


OK_CHILD = child('import json,sys; json.load(sys.stdin); print(json.dumps(dict(ok=True, '
                 'result=%r, warnings=[])))' % (RESULT,))


def test_watch_writes_metrics_and_journal_lines(tmp_path, capsys):
    profile = write_profile(tmp_path, {'profile': {'nofile': 65536, 'memlock': 'unlimited',
                                                   'cpu': {'soft': 3600}}})
    metrics = tmp_path / 'metrics'
    metrics.mkdir()
    assert dw.watch(Args(profile, str(metrics)), OK_CHILD) == 0
    got = samples((metrics / tm.FILE_NAME).read_text())
    assert got[key('gpufleet_limits_compliant', context='login', item='nofile')] == '0'
    assert got[key('gpufleet_limits_audit_success')] == '1'
    err = capsys.readouterr().err
    assert ('<4>gpufleet-limits-watch: below profile: context=login item=nofile sides=soft '
            'actual=1024:65536 expected=65536:65536') in err
    assert '<4>gpufleet-limits-watch: probe failed: context=docker' in err
    assert re.search(r'<6>gpufleet-limits-watch: audit done in [\d.]+ s: 2 gaps, 1 probe errors, '
                     r'0 probes pending', err)


BUSY = dict(context='slurm_job', kind='busy', node='gpu2', reason='busy', waited_s=5.0,
            msg='pending: node gpu2 runs jobs, so srun -w gpu2 --immediate=5 could not start the '
                'probe job (srun: "Requested nodes are busy"; waited 5.0 s); verified once a job '
                'can start there. Configured: nofile 16384:16384 from /etc/x.conf:3',
            configured={'nofile': {'soft': 16384, 'hard': 16384, 'source': '/etc/x.conf:3'}})


def test_a_busy_slurm_node_is_pending_in_metrics_and_journal(tmp_path, capsys):
    result = dict(RESULT, contexts=dict(RESULT['contexts'], slurm_job={'limits': {}}),
                  errors=RESULT['errors'] + [BUSY])
    got = samples(tm.render_audit(result, ITEMS, 1.0))
    assert got[key('gpufleet_limits_probe_pending', context='slurm_job')] == '1'
    assert key('gpufleet_limits_probe_error', context='slurm_job') not in got
    assert got[key('gpufleet_limits_probe_error', context='docker')] == '1'
    assert not any(('context', 'slurm_job') in labels for n, labels in got
                   if n != 'gpufleet_limits_probe_pending')
    profile = write_profile(tmp_path, {'profile': {'nofile': 65536}})
    metrics = tmp_path / 'metrics'
    metrics.mkdir()
    command = child('import json,sys; json.load(sys.stdin); print(json.dumps(dict(ok=True, '
                    'result=%r, warnings=[])))' % (result,))
    assert dw.watch(Args(profile, str(metrics)), command) == 0
    err = capsys.readouterr().err
    assert ('<6>gpufleet-limits-watch: probe pending: context=slurm_job: pending: node gpu2 runs '
            'jobs') in err
    assert 'probe failed: context=slurm_job' not in err
    assert re.search(r'audit done in [\d.]+ s: 2 gaps, 1 probe errors, 1 probes pending', err)


@pytest.mark.parametrize('fault,reason', [
    ('missing', 'profile_missing'), ('corrupt', 'profile_invalid'), ('crash', 'crashed'),
    ('timeout', 'timeout'), ('audit_failed', 'audit_failed')])
def test_watch_faults_write_an_error_metric_and_a_journal_line(tmp_path, capsys, fault, reason):
    metrics = tmp_path / 'metrics'
    metrics.mkdir()
    profile = write_profile(tmp_path, {'profile': {'nofile': 65536, 'memlock': 'unlimited',
                                                   'cpu': {'soft': 3600}}})
    assert dw.watch(Args(profile, str(metrics)), OK_CHILD) == 0
    before = tm.previous_last_success(str(metrics))
    command = OK_CHILD
    timeout = 10
    if fault == 'missing':
        os.unlink(profile)
    elif fault == 'corrupt':
        write_profile(tmp_path, '{"profile": ')
    elif fault == 'crash':
        command = child('import sys; sys.exit(3)')
    elif fault == 'timeout':
        command, timeout = child('import time; time.sleep(30)'), 1
    else:
        command = child('print(\'{"ok": false, "msg": "user: trainer does not exist"}\')')
    capsys.readouterr()
    assert dw.watch(Args(profile, str(metrics), timeout=timeout), command) == 1
    got = samples((metrics / tm.FILE_NAME).read_text())
    assert got[key('gpufleet_limits_audit_success')] == '0'
    assert got[key('gpufleet_limits_audit_error', reason=reason)] == '1'
    assert float(got[key('gpufleet_limits_audit_last_success_timestamp_seconds')]) == before
    assert not any(n == 'gpufleet_limits_compliant' for n, labels in got)
    assert '<3>gpufleet-limits-watch: audit failed (%s): ' % reason in capsys.readouterr().err
    assert sorted(os.listdir(str(metrics))) == [tm.FILE_NAME]


def test_watch_missing_metrics_directory_is_a_journal_line_and_exit_1(tmp_path, capsys):
    profile = write_profile(tmp_path, {'profile': {'nofile': 65536}})
    assert dw.watch(Args(profile, str(tmp_path / 'gone')), OK_CHILD) == 1
    assert ('<3>gpufleet-limits-watch: metrics not written: metrics directory %s does not exist'
            % (tmp_path / 'gone')) in capsys.readouterr().err


def test_child_main_reports_an_audit_error_and_a_result(monkeypatch):
    class Failure(Exception):
        msg = 'user: nobody2 does not exist on this host'

    monkeypatch.setattr(dw, 'audit_failure_types', lambda: (Failure,))

    def failing(_host, _params):
        raise Failure()
    monkeypatch.setattr(dw, 'run_audit', failing)
    out = io.StringIO()
    assert dw.child_main(io.StringIO(json.dumps(PARAMS)), out) == 0
    assert json.loads(out.getvalue()) == {'ok': False, 'msg': Failure.msg}

    def working(host, params):
        host.warn('careful')
        return dict(RESULT, table='x', rows=[]), ['daemon.json: odd']
    monkeypatch.setattr(dw, 'run_audit', working)
    out = io.StringIO()
    dw.child_main(io.StringIO(json.dumps(PARAMS)), out)
    data = json.loads(out.getvalue())
    assert data['ok'] and data['result']['gaps'] == RESULT['gaps']
    assert data['warnings'] == ['daemon.json: odd', 'careful']

    # the findings reach the watch's outlets as the audit evaluated them, with their places
    # (the rows carry none): a drain reason once lost its file:line without them (issue 40)
    placed = [dict(context='slurm_job', item='nofile', kind='rlimit', status='gap',
                   expected='16384:16384', actual='1024:1024', short=['soft', 'hard'],
                   places={'soft': {'path': '/x.conf', 'line': 4}},
                   place={'path': '/x.conf', 'line': 4}, cause='', advice=None, how='predicted')]
    monkeypatch.setattr(dw, 'run_audit', lambda host, params: (
        dict(RESULT, findings=placed, pids={'expected': '8192'}, core={'pattern': 'core'}), []))
    out = io.StringIO()
    dw.child_main(io.StringIO(json.dumps(PARAMS)), out)
    result = json.loads(out.getvalue())['result']
    assert result['findings'] == placed
    assert result['pids'] == {'expected': '8192'} and result['core'] == {'pattern': 'core'}


def test_local_host_runs_commands_like_run_command():
    host = dw.LocalHost()
    rc, out, err = host.run_command(['sh', '-c', 'echo "$LANG"; echo e >&2; exit 3'],
                                    environ_update={'LANG': 'C'})
    assert (rc, out, err) == (3, 'C\n', 'e\n')
    assert host.run_command(['/nonexistent/binary'])[0] == 127
    assert host.get_bin_path('sh')
    assert host.get_bin_path('no-such-binary-here') is None


def test_entry_point_runs_from_the_installed_layout(tmp_path):
    """The role's layout: the entry point next to ansible_collections/.../module_utils, run with
    python3 -I -S (standard library only)."""
    lib = tmp_path / 'lib'
    code = lib / 'ansible_collections' / 'gpufleet' / 'tuning' / 'plugins' / 'module_utils'
    shutil.copytree(os.path.join(ROOT, 'plugins', 'module_utils'), str(code),
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ENTRY, str(lib))
    metrics = tmp_path / 'metrics'
    metrics.mkdir()
    proc = subprocess.run([sys.executable, '-I', '-S', str(lib / 'gpufleet_limits_watch.py'),
                           '--profile', str(tmp_path / 'none.json'), '--metrics-dir',
                           str(metrics), '--period', '60'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd='/', check=False)
    assert proc.returncode == 1, proc.stderr.decode()
    assert b'audit failed (profile_missing)' in proc.stderr
    got = samples((metrics / tm.FILE_NAME).read_text())
    assert got[key('gpufleet_limits_audit_error', reason='profile_missing')] == '1'
    assert got[key('gpufleet_limits_audit_period_seconds')] == '60'
    # the child runs the same file with --child and reads parameters on stdin
    proc = subprocess.run([sys.executable, '-I', '-S', str(lib / 'gpufleet_limits_watch.py'),
                           '--child'], input=json.dumps(dict(PARAMS, user='no-such-user-x')).encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd='/', check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout.decode()) == {
        'ok': False, 'msg': 'user: no-such-user-x does not exist on this host'}


def test_pack_module_utils_is_deterministic_and_takes_python_files_with_subpackages(tmp_path):
    sys.path.insert(0, os.path.dirname(ENTRY))
    try:
        import pack_module_utils
    finally:
        sys.path.remove(os.path.dirname(ENTRY))
    source = os.path.join(ROOT, 'plugins', 'module_utils')
    first, second = str(tmp_path / 'a.tar'), str(tmp_path / 'b.tar')
    pack_module_utils.pack(source, first)
    os.utime(os.path.join(source, 'run', 'drift_watch.py'))    # a newer mtime changes nothing
    pack_module_utils.pack(source, second)
    assert open(first, 'rb').read() == open(second, 'rb').read()
    with tarfile.open(first) as archive:
        files = [m.name for m in archive.getmembers() if m.isfile()]
        assert all(m.mtime == 0 and m.uid == 0 and m.mode == (0o644 if m.isfile() else 0o755)
                   for m in archive.getmembers())
    expected = sorted(os.path.relpath(os.path.join(d, n), source)
                      for d, _dirs, names in os.walk(source) for n in names if n.endswith('.py'))
    assert files == expected
    # the subpackages travel too: the audit imports the registry of contexts
    assert 'run/drift_watch.py' in files and 'run/audit.py' in files
    assert 'contexts/__init__.py' in files
