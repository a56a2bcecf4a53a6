"""plugins/modules/limits_restart.py run as Ansible runs it, on this machine: check mode and
diff mode plan the steps and restart nothing, nothing to do is no change, bad input is refused
by the argument spec. (The restarts themselves run on real systemd and dockerd in Molecule.)"""
from conftest import run_module_file


def run_module(tmp_path, args, check=False, diff=False):
    return run_module_file('limits_restart', tmp_path, dict(
        args, _ansible_check_mode=check, _ansible_diff=diff))


def test_check_mode_plans_every_step_in_order_and_restarts_nothing(tmp_path):
    result = run_module(tmp_path, dict(reexec=True, units=['slurmd'],
                                       user_managers=['user@0.service', 'user@1001.service'],
                                       docker=True), check=True, diff=True)
    assert result['changed'] is True
    assert result['done'] == [] and result['failed_unit'] == {}
    assert result['diff'] == {'before': '', 'after': (
        'systemctl daemon-reexec\nrestart slurmd\nrestart user@0.service user@1001.service\n'
        'restart docker.service\nwait for dockerd to answer\n')}


def test_nothing_to_do_is_no_change(tmp_path):
    result = run_module(tmp_path, {})
    assert result['changed'] is False and result['done'] == []
    assert result.get('failed') is not True


def test_bad_input_is_refused(tmp_path):
    result = run_module(tmp_path, dict(settle='soon'))
    assert result['failed'] is True and 'settle' in result['msg']


def test_bad_verify_options_are_refused_before_any_restart(tmp_path):
    # reexec is planned: a refusal after it would have re-executed this machine's manager
    result = run_module(tmp_path, dict(reexec=True,
                                       verify=dict(contexts=['login'], docker_imag='tiny')))
    assert result['failed'] is True, result
    assert result['msg'].startswith('verify: ') and 'docker_imag' in result['msg'], result
    assert result['done'] == []
    result = run_module(tmp_path, dict(reexec=True, verify=dict(contexts=['nowhere'])))
    assert result['failed'] is True and 'verify: ' in result['msg'] and 'nowhere' in result['msg']
    assert result['done'] == []


def test_verify_probes_after_the_restarts_as_effective_limits_does(tmp_path):
    # nothing to restart: the probes still run, with effective_limits' defaults filled in
    result = run_module(tmp_path, dict(verify=dict(contexts=[], expect={'nofile': 1024})))
    assert result['changed'] is False and result['done'] == []
    verified = result['verified']
    assert verified['contexts'] == {} and verified['gaps'] == [] and verified['errors'] == []
    assert verified['expected']['nofile']['soft'] == 1024 == verified['expected']['nofile']['hard']
    assert isinstance(verified['ceilings']['fs.nr_open'], int)


def test_check_mode_probes_nothing(tmp_path):
    result = run_module(tmp_path, dict(docker=True, verify=dict(contexts=['login'])),
                        check=True)
    assert result['changed'] is True and 'verified' not in result


def test_a_probe_request_that_cannot_run_is_refused_before_any_restart(tmp_path):
    # the probe's own checks (an image where a context needs one, the user, the profile) run
    # before the restarts, not after them
    for verify, expected in ((dict(contexts=['docker']), 'verify.contexts has docker, so '
                              'docker_image is required'),
                             (dict(contexts=[], user='gpufleet-nobody-here'),
                              'verify.user: gpufleet-nobody-here does not exist'),
                             (dict(contexts=[], expect={'nofile': 'lots'}), 'verify.expect')):
        result = run_module(tmp_path, dict(reexec=True, verify=verify))
        assert result['failed'] is True and result['msg'].startswith(expected), result
        assert result['done'] == [] and 'verified' not in result


# --- rollback: one limits_profile call put back (issue 40 item 6) -----------------------------

def profile_result(tmp_path, done=()):
    """A limits_profile result with real files: a drop-in it changed (the backup holds the
    earlier text) and one it created; it owed a daemon-reload and a unit whose restart the
    policy deferred."""
    changed, backup = tmp_path / 'a.conf', tmp_path / 'a.conf.9.2026-12-06@20:00:00~'
    changed.write_text('new\n')
    backup.write_text('old\n')
    created = tmp_path / 'b.conf'
    created.write_text('created\n')
    return dict(changed=True, invocation={'module_args': {}}, files=[
        dict(context='systemd_system', path=str(changed), changed=True, backup_file=str(backup)),
        dict(context='unit:slurmd.service', path=str(created), changed=True, created=True)],
        actions=dict(daemon_reload=True, units=['slurmd.service'],
                     deferred=[dict(unit='slurmd.service', reason='1 process')]),
        restarted=dict(done=list(done))), changed, created


def test_rollback_in_check_mode_says_what_it_would_put_back_and_redo(tmp_path):
    applied, changed, created = profile_result(tmp_path, ['systemctl daemon-reload'])
    result = run_module(tmp_path, dict(rollback=applied), check=True, diff=True)
    assert result['changed'] is True and result.get('failed') is not True, result
    # the last written first, then the reload that call did; never the deferred unit
    assert result['diff']['after'] == 'put back %s\nput back %s\nsystemctl daemon-reload\n' % (
        created, changed)
    assert changed.read_text() == 'new\n' and created.exists()


def test_rollback_puts_back_the_files_of_a_call_that_restarted_nothing(tmp_path):
    # nothing was restarted (the call's only change owed none the policy allowed): nothing runs
    # on this machine, the files go back
    applied, changed, created = profile_result(tmp_path)
    result = run_module(tmp_path, dict(rollback=applied))
    assert result.get('failed') is not True, result
    assert result['changed'] is True and result['done'] == []
    assert result['put_back']['restored'] == [str(changed), str(created)]
    assert changed.read_text() == 'old\n' and not created.exists()


def test_rollback_refuses_a_record_that_is_not_one_calls_and_other_steps(tmp_path):
    applied, changed, created = profile_result(tmp_path, ['restart slurmd.service'])
    result = run_module(tmp_path, dict(rollback=applied))
    assert result['failed'] is True and result['msg'].startswith('rollback: restarted.done'), result
    assert changed.read_text() == 'new\n' and created.exists()
    applied['restarted']['done'] = []
    result = run_module(tmp_path, dict(rollback=applied, units=['slurmd.service']))
    assert result['failed'] is True and result['msg'] == (
        'rollback: give it alone, not with units (nothing put back or restarted)'), result
    result = run_module(tmp_path, dict(rollback=dict(applied, files='a.conf')))
    assert result['failed'] is True and result['msg'].startswith('rollback.files: a list'), result
    assert changed.read_text() == 'new\n' and created.exists()
