"""plugins/module_utils/run/effective.py (comparison, probes' commands and parsing) and the
effective_limits module run as Ansible runs it on this machine (real runuser, real
/proc/self/limits; systemd is not PID 1 here, so the service probe must report an error)."""
import json
import os
import subprocess
import sys
import time
import shutil

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
COLLECTIONS = os.path.join(ROOT, 'build', 'collections')
U = model.UNLIMITED

PROC = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max processes             8192                 8192                 processes
Max open files            1024                 16384                files
Max locked memory         8388608              8388608              bytes
"""


def test_parse_probe_reads_proc_limits():
    limits = effective.parse_probe(PROC, 'login')
    assert limits['nofile'] == Limit(1024, 16384)
    assert limits['memlock'] == Limit(8 * 1024 ** 2, 8 * 1024 ** 2)
    assert limits['cpu'] == Limit(U, U)


def test_parse_probe_refuses_other_output():
    with pytest.raises(model.LimitError, match=r"login: the probe printed no limits \('su: "):
        effective.parse_probe('su: Authentication failure\n', 'login')


def test_gaps_per_side_with_unlimited_above_numbers():
    expected = model.parse_profile({'nofile': 16384, 'memlock': 'unlimited',
                                    'nproc': {'soft': 4096, 'hard': 8192}})
    observed = {
        'service': {'nofile': Limit(1024, 16384), 'memlock': Limit(U, U),
                    'nproc': Limit(8192, 8192)},
        'login': {'nofile': Limit(16384, 16384), 'memlock': Limit(65536, 8 * 1024 ** 2),
                  'nproc': Limit(4096, 8192)},
        'unit:containerd.service': {'nofile': Limit(16384, 16384)},
    }
    gaps = effective.gaps(expected, observed)
    assert [(g['context'], g['item'], g['sides']) for g in gaps] == [
        ('login', 'memlock', ['soft', 'hard']),
        ('service', 'nofile', ['soft']),
        ('unit:containerd.service', 'memlock', ['soft', 'hard']),
        ('unit:containerd.service', 'nproc', ['soft', 'hard']),
    ]
    assert gaps[1]['expected'] == {'soft': 16384, 'hard': 16384}
    assert gaps[1]['actual'] == {'soft': 1024, 'hard': 16384}
    assert gaps[2]['actual'] is None


def test_no_gap_at_or_above_target_and_for_unasked_sides():
    expected = model.parse_profile({'nofile': {'hard': 4096}})
    observed = {'login': {'nofile': Limit(1024, 4096)}, 'service': {'nofile': Limit(1, U)}}
    assert effective.gaps(expected, observed) == []


def test_regressions_only_below_before_and_target():
    expected = model.parse_profile({'nofile': 16384, 'nproc': 8192})
    before = {'nofile': Limit(20000, 20000), 'nproc': Limit(96362, 96362)}
    # A profile that lowers a limit on purpose: not a regression.
    assert effective.regressions(before, {'nofile': Limit(16384, 16384),
                                          'nproc': Limit(8192, 8192)}, expected) == []
    # The silent pam_limits fallback: soft nofile back to 1024.
    found = effective.regressions(before, {'nofile': Limit(1024, 20000),
                                           'nproc': Limit(8192, 8192)}, expected)
    assert found == [dict(item='nofile', before={'soft': 20000, 'hard': 20000},
                          after={'soft': 1024, 'hard': 20000},
                          expected={'soft': 16384, 'hard': 16384}, sides=['soft'])]


def test_table_names_context_item_expected_actual():
    expected = model.parse_profile({'memlock': '8MiB'})
    gaps = effective.gaps(expected, {'docker': {'memlock': Limit(65536, 65536)}})
    table = effective.gap_table(gaps, pending=['docker'])
    lines = table.splitlines()
    assert lines[0].split() == ['context', 'item', 'expected', 'actual', 'below']
    assert lines[1].split() == ['docker', 'memlock', '8MiB:8MiB', '64KiB:64KiB', 'soft+hard',
                                '(pending', 'restart)']


def test_public_limits_round_trip():
    limits = {'nofile': Limit(1024, 16384), 'memlock': Limit(U, U)}
    public = effective.public_limits(limits)
    assert public['nofile']['human'] == '1024:16384'
    assert public['memlock']['human'] == 'unlimited:unlimited'
    assert effective.from_public(public) == limits


@pytest.mark.parametrize('shell', ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false'])
def test_a_service_account_s_login_probe_runs_in_its_pam_session_with_a_shell(shell):
    # issue 40: a nologin account's login probe failed ("This account is currently not
    # available"), so the report said nothing though runuser -u and sudo -u give it limits
    assert probes.login_command('svc', shell) == ['runuser', '-l', '-s', '/bin/sh', 'svc', '-c',
                                                  'cat /proc/self/limits']


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('runuser'), reason='needs root')
def test_the_nologin_probe_reads_limits_through_real_pam():
    # nobody's shell is nologin on Debian: the probe's own shell gets its limits
    assert probes.login_shell('nobody').endswith(('nologin', 'false'))
    out = subprocess.run(probes.login_command('nobody'), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert 'Max open files' in out
    plain = subprocess.run(['runuser', '-l', 'nobody', '-c', probes.CAT],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, check=False).stdout
    assert 'Max open files' not in plain


def test_commands():
    assert probes.login_command('trainer', '/bin/bash') == ['runuser', '-l', 'trainer', '-c',
                                                            'cat /proc/self/limits']
    assert probes.service_command('trainer')[-3:] == ['User=trainer', 'cat',
                                                      '/proc/self/limits']
    start, show, stop = probes.user_probe_commands('trainer', 1001, 'probe.service')
    assert start[:5] == ['runuser', '-u', 'trainer', '--', 'env']
    assert 'XDG_RUNTIME_DIR=/run/user/1001' in start and '--unit=probe.service' in start
    assert show[-1] == stop[-1] == 'probe.service'
    assert probes.container_command('podman', 'tiny', ['--ulimit', 'nofile=1:2']) == [
        'podman', 'run', '--rm', '--network=none', '--ulimit', 'nofile=1:2', 'tiny', 'cat',
        '/proc/self/limits']
    assert effective.unit_context('containerd') == 'unit:containerd.service'
    assert effective.ordered(['unit:a.service', 'docker', 'login']) == [
        'login', 'docker', 'unit:a.service']


def run_module(tmp_path, args, check=False):
    argsfile = tmp_path / 'args.json'
    argsfile.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': dict(args,
                                                                _ansible_check_mode=check)}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules',
                                                        'effective_limits.py'), str(argsfile)],
                          env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    start = proc.stdout.find('{')
    assert start >= 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout[start:])


def own_limits():
    with open('/proc/self/limits') as handle:
        return model.parse_proc_limits(handle.read())


@pytest.mark.skipif(os.geteuid() != 0, reason='runuser -l needs root')
def test_module_login_probe_is_real_and_service_error_is_reported(tmp_path):
    # Expect more open files than this machine's hard limit allows: a login must miss it.
    hard = own_limits()['nofile'].hard
    above = 1048576 if hard == U else hard + 1
    result = run_module(tmp_path, {'contexts': ['login', 'service'], 'user': 'root',
                                   'expect': {'nofile': above}}, check=True)
    assert result['changed'] is False
    login = result['contexts']['login']['limits']
    assert login['nofile']['hard'] != U and login['nofile']['hard'] < above
    assert [g['context'] for g in result['gaps']] == ['login']
    assert result['gaps'][0]['sides'] == ['soft', 'hard']
    assert 'login' in result['table'] and str(above) in result['table']
    assert set(result['ceilings']) == {'fs.nr_open', 'fs.file-max', 'kernel.pid_max',
                                       'kernel.threads-max'}
    assert result['ceilings']['fs.nr_open'] >= 1024
    if not os.path.isdir('/run/systemd/system'):
        assert [e['context'] for e in result['errors']] == ['service']
        assert 'systemd-run' in result['errors'][0]['msg']


@pytest.mark.skipif(os.geteuid() != 0, reason='runuser -l needs root')
def test_module_no_gap_when_expecting_what_a_login_gets(tmp_path):
    first = run_module(tmp_path, {'contexts': ['login']})
    nofile = first['contexts']['login']['limits']['nofile']
    result = run_module(tmp_path, {'contexts': ['login'],
                                   'expect': {'nofile': {'soft': nofile['soft'],
                                                         'hard': nofile['hard']}}})
    assert result['gaps'] == [] and result['table'] == ''
    assert result['expected']['nofile']['soft'] == nofile['soft']


def test_module_refuses_bad_input(tmp_path):
    result = run_module(tmp_path, {'contexts': ['docker']})
    assert result['failed'] and 'docker_image' in result['msg']
    result = run_module(tmp_path, {'expect': {'nofile': {'soft': 10, 'hard': 5}}})
    assert result['failed'] and result['msg'] == 'expect.nofile: soft 10 is above hard 5 for nofile'
    result = run_module(tmp_path, {'user': 'no-such-user-here'})
    assert result['failed'] and 'no-such-user-here does not exist' in result['msg']


def test_module_reports_a_missing_unit(tmp_path):
    result = run_module(tmp_path, {'contexts': [], 'units': ['gpufleet-no-such-unit']})
    assert result['errors'][0]['context'] == 'unit:gpufleet-no-such-unit.service'
    assert 'gpufleet-no-such-unit.service' in result['contexts']['unit:gpufleet-no-such-unit.service']['command']


@pytest.mark.skipif(os.geteuid() != 0, reason='runuser -l needs root')
def test_module_regressions_against_a_baseline(tmp_path):
    first = run_module(tmp_path, {'contexts': ['login']})
    nofile = first['contexts']['login']['limits']['nofile']
    if nofile['hard'] == U:
        pytest.skip('needs a numeric hard nofile')
    # A baseline with more than a login gets now, and a profile above it: a regression.
    baseline = {'login': {'limits': {'nofile': {'soft': nofile['hard'] + 10,
                                                'hard': nofile['hard'] + 10}}}}
    result = run_module(tmp_path, {'contexts': ['login'], 'baseline': baseline,
                                   'expect': {'nofile': nofile['hard'] + 5}})
    assert [(r['context'], r['item'], r['sides']) for r in result['regressions']] == [
        ('login', 'nofile', ['soft', 'hard'])]
    # The same baseline with a profile the login meets: a lowering on purpose, no regression.
    result = run_module(tmp_path, {'contexts': ['login'], 'baseline': baseline,
                                   'expect': {'nofile': {'hard': nofile['hard']}}})
    assert result['regressions'] == []


def test_user_probe_waits_for_the_exec_of_its_program():
    """A service's main process is the manager's fork (the manager's own limits) until it
    exec's its program: has_exec tells the two apart on real processes."""
    proc = subprocess.Popen(['sh', '-c', 'read line; exec %s 30' % probes.USER_PROBE_PROGRAM],
                            stdin=subprocess.PIPE)
    try:
        assert not probes.has_exec(proc.pid, probes.USER_PROBE_PROGRAM)   # still sh
        proc.stdin.write(b'go\n')
        proc.stdin.flush()
        for _attempt in range(500):
            if probes.has_exec(proc.pid, probes.USER_PROBE_PROGRAM):
                break
            time.sleep(0.01)
        assert probes.has_exec(proc.pid, probes.USER_PROBE_PROGRAM)
    finally:
        proc.kill()
        proc.wait()
    assert not probes.has_exec(proc.pid, probes.USER_PROBE_PROGRAM)      # gone


class _Replayed(object):
    """What Prober needs of a module: every binary is there."""

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/bin/' + name


class _ReplayProber(effective.Prober):
    """A Prober whose commands answer from ``answers`` (a list of (match, rc, out, err) taken
    in order for the first command that contains ``match``), recording what ran."""

    def __init__(self, answers):
        super(_ReplayProber, self).__init__(_Replayed(), timeout=1)
        self.timeout_bin = None
        self.answers = list(answers)
        self.ran = []

    def execute(self, args):
        self.ran.append(' '.join(args))
        for index, (match, rc, out, err) in enumerate(self.answers):
            if match in args:
                del self.answers[index]
                return rc, out, err
        return 0, '', ''


def test_user_manager_that_stops_during_the_probe_is_not_running():
    # is-active passes, then the manager stops (its user's last session ended) before the
    # probe service starts: the same outcome as a manager that was not running
    prober = _ReplayProber([('is-active', 0, '', ''),
                            ('systemd-run', 1, '', 'Failed to connect to bus: Transport endpoint is not connected'),
                            ('is-active', 3, '', '')])
    with pytest.raises(effective.ProbeError) as exc:
        prober.user_manager('root', 0)
    assert exc.value.kind == 'not_running'
    assert 'loginctl enable-linger root' in str(exc.value)
    assert any(' stop ' in ' %s ' % c for c in prober.ran)


def test_user_manager_probe_failure_with_the_manager_running_stays_an_error():
    prober = _ReplayProber([('is-active', 0, '', ''),
                            ('systemd-run', 1, '', 'Unit gpufleet-probe already exists'),
                            ('is-active', 0, '', '')])
    with pytest.raises(effective.ProbeError) as exc:
        prober.user_manager('root', 0)
    assert exc.value.kind != 'not_running'
    assert 'already exists' in str(exc.value)
