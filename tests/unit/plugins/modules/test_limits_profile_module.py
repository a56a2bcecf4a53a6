"""plugins/modules/limits_profile.py's ``restart`` and ``verify`` run as Ansible runs the module,
on this machine, for the pam context only, written to a file under tmp_path (nothing of this
machine's limits changes): bad verify options are refused before the write, check mode lists
the steps and restarts nothing, and a real call probes a real login session after the write.
The restarts themselves run on real systemd and dockerd in Molecule (the limits role)."""
import os
import pwd

import pytest

from conftest import run_module_file

USER = pwd.getpwuid(os.getuid()).pw_name


def run_module(tmp_path, args, check=False, diff=False):
    return run_module_file('limits_profile', tmp_path, dict(
        dict(profile={'nofile': 4096}, contexts=['pam'], domains=['*'],
             pam_path=str(tmp_path / 'limits.d' / '90-gpufleet-tuning.conf')),
        _ansible_check_mode=check, _ansible_diff=diff, **args), timeout=120)


@pytest.fixture
def limits_d(tmp_path):
    (tmp_path / 'limits.d').mkdir()
    return tmp_path / 'limits.d'


def test_verify_options_the_module_sets_are_refused_before_the_write(tmp_path, limits_d):
    for key in ('contexts', 'units', 'expect', 'baseline'):
        result = run_module(tmp_path, dict(restart=True, verify={'user': USER, key: None}))
        assert result['failed'] is True, result
        assert result['msg'].startswith('verify.%s: set by limits_profile' % key), result
        assert 'nothing was written' in result['msg']
        assert list(limits_d.iterdir()) == []


def test_bad_verify_options_are_refused_before_the_write(tmp_path, limits_d):
    result = run_module(tmp_path, dict(restart=True, verify={'user': USER, 'docker_imag': 'x'}))
    assert result['failed'] is True and 'docker_imag' in result['msg'], result
    result = run_module(tmp_path, dict(restart=True, verify={'user': 'no-such-user-here'}))
    assert result['failed'] is True, result
    assert 'no-such-user-here does not exist' in result['msg'] and 'nothing was written' in result['msg']
    assert list(limits_d.iterdir()) == []


def test_check_mode_lists_the_steps_and_restarts_nothing(tmp_path, limits_d):
    result = run_module(tmp_path, dict(restart=True, verify={'user': USER}), check=True,
                        diff=True)
    assert result['changed'] is True, result
    restarted = result['restarted']
    assert restarted['done'] == [] and restarted['failed_unit'] == {}
    assert 'verified' not in restarted
    # a pam-only change owes no restart but the user managers', and only where systemd runs
    if os.path.isdir('/run/systemd/system'):
        assert all(s.startswith('restart user@') for s in restarted['steps']), restarted
    else:
        assert restarted['steps'] == [], restarted
    assert list(limits_d.iterdir()) == []


def test_without_restart_there_is_no_restarted(tmp_path, limits_d):
    result = run_module(tmp_path, {}, check=True)
    assert 'restarted' not in result and result['changed'] is True


@pytest.mark.skipif(os.getuid() != 0, reason='a login session of another user needs root')
def test_the_write_then_a_real_login_probe_in_the_same_call(tmp_path, limits_d):
    result = run_module(tmp_path, dict(restart=True, verify={'user': USER}))
    assert result.get('failed') is not True, result
    assert (limits_d / '90-gpufleet-tuning.conf').read_text().count('nofile') == 2
    verified = result['restarted']['verified']
    # the login context was probed in a new login session after the write: this machine's
    # PAM does not read tmp_path, so the session shows this machine's own limits
    login = verified['contexts']['login']
    assert login['command'].startswith('runuser -l ') or 'su' in login['command'], login
    assert int(login['limits']['nofile']['hard']) > 0
    assert verified['expected']['nofile']['soft'] == 4096
    shown = set((g['context'], g['item']) for g in verified['gaps'])
    below = int(login['limits']['nofile']['soft']) < 4096
    assert (('login', 'nofile') in shown) == below
    # rerun: nothing changed, nothing owed, nothing probed
    again = run_module(tmp_path, dict(restart=True, verify={'user': USER}))
    assert again['changed'] is False
    assert again['restarted'] == dict(steps=[], done=[], failed_unit={}, docker_version=None)


def test_an_unchanged_call_that_owes_nothing_does_not_check_verify(tmp_path, limits_d):
    # the first call writes (with good options); the second changes nothing and owes no
    # restart, so its verify options are not even read: nothing is probed
    first = run_module(tmp_path, dict(restart=True))
    assert first['changed'] is True and first.get('failed') is not True, first
    again = run_module(tmp_path, dict(restart=True, verify={'user': 'no-such-user-here'}))
    assert again.get('failed') is not True and again['changed'] is False, again
    assert 'verified' not in again['restarted']


def pid1_hard_nofile():
    with open('/proc/1/limits') as handle:
        for line in handle:
            if line.startswith('Max open files'):
                return line.split()[4]
    return None


@pytest.mark.skipif(os.path.isdir('/run/systemd/system'),
                    reason='where systemd runs, logins inherit its defaults, not PID 1 limits')
def test_a_plain_value_keeps_the_higher_hard_limit_logins_inherit(tmp_path, limits_d):
    """Issue 31: a one-value profile set hard = soft and cut the hard limit logins inherit.
    Here no limits line sets nofile, so a login's hard limit is PID 1's (or this process's,
    which su - and runuser -l pass on, when higher): it is kept, the run says so with its
    source, and the soft limit is the profile's (a login starts soft nofile at 1024)."""
    import resource
    hard = pid1_hard_nofile()
    if hard in (None, 'unlimited') or int(hard) <= 2048:
        pytest.skip('PID 1 has no hard nofile above 2048 here')
    own = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = str(max(int(hard), own)) if own != resource.RLIM_INFINITY else hard
    result = run_module(tmp_path, dict(profile={'nofile': 2048}), diff=True)
    assert result.get('failed') is not True, result
    text = (limits_d / '90-gpufleet-tuning.conf').read_text()
    assert [line.split() for line in text.splitlines() if 'nofile' in line] == [
        ['*', 'soft', 'nofile', '2048'], ['*', 'hard', 'nofile', hard]], text
    kept = result['limits_kept']
    assert [(k['context'], k['item'], k['side'], k['action'], k['after'])
            for k in kept] == [('pam', 'nofile', 'hard', 'kept', int(hard))], kept
    assert kept[0]['source'].startswith('no limits line: '), kept
    # issue 39.3: a kept side is no warning; its words are in limits_kept
    assert kept[0]['message'].startswith('hard nofile %s kept' % hard), kept
    assert 'kept' not in str(result.get('warnings')), result.get('warnings')

    # a profile that names the hard side lowers it, and the run says so
    result = run_module(tmp_path, dict(profile={'nofile': {'soft': 2048, 'hard': 2048}}))
    assert result.get('failed') is not True, result
    assert '*               hard  nofile      2048' in (
        limits_d / '90-gpufleet-tuning.conf').read_text()
    assert [(k['side'], k['action'], k['before'], k['after']) for k in result['limits_kept']] == [
        ('hard', 'lowered', int(hard), 2048)], result['limits_kept']
    assert 'pam: hard nofile lowered from %s (no limits line: ' % hard in str(
        result.get('warnings')), result
    assert 'to 2048, as the profile names it' in str(result.get('warnings')), result
    # (a rerun finds it written and says nothing: pam_limits does not read tmp_path, so that
    # is shown on a node, molecule/pam/tests/test_guards.py)


def test_a_value_below_the_floor_is_refused_with_force_and_nothing_is_written(tmp_path, limits_d):
    result = run_module(tmp_path, dict(profile={'nofile': 0, 'nproc': 8192}, force=True))
    assert result['failed'] is True, result
    assert result['msg'].startswith('profile.nofile: soft nofile 0 is below the floor 1024'), result
    assert list(limits_d.iterdir()) == []


def test_state_absent_takes_the_profile_back_and_changes_nothing_in_check_mode(tmp_path, limits_d):
    """issue 31 item 22: the written file goes again; check mode and diff first."""
    assert run_module(tmp_path, {}).get('changed') is True
    ours = limits_d / '90-gpufleet-tuning.conf'
    written = ours.read_text()
    args = dict(state='absent', profile=None, backup=True)
    result = run_module(tmp_path, args, check=True, diff=True)
    assert result['changed'] is True and ours.read_text() == written, result
    assert result['diff'][0]['after_header'] == '/dev/null'
    assert result['undone'][0]['action'] == 'removed'
    result = run_module(tmp_path, args)
    assert result['changed'] is True and not ours.exists(), result
    assert result['files'][0]['removed'] is True and result['files'][0]['backup_file']
    assert run_module(tmp_path, args)['changed'] is False
