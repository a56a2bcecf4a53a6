"""pids beyond the grammar: the cgroup chain (host/cgroups.py, on a temporary cgroup tree and the
chain script run by a real sh), which file sets TasksMax= (systemd/tasks_max.py), the plans
(systemd/pids_plan.py) and where the audit says a value comes from (run/pids_audit.py), all on
temporary trees. The real systemd, login sessions and the canary are in molecule/systemd."""
import os
import shlex
import subprocess

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_set
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import pids_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import tasks_max

U = pids.UNLIMITED
T = pids.TasksMax
LEAF = '/docker/abc/user.slice/user-1001.slice/session-3.scope'


def write(root, path, text):
    full = os.path.join(str(root), path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as handle:
        handle.write(text)


def tree(root, values):
    for path, value in values.items():
        write(root, path + '/pids.max', value + '\n')


def test_the_smallest_pids_max_of_the_chain_decides(tmp_path):
    tree(tmp_path, {'/pids' + LEAF: 'max', '/pids/docker/abc/user.slice/user-1001.slice': '300',
                    '/pids/docker/abc/user.slice': 'max', '/pids/docker/abc': '4000',
                    '/pids/docker': 'max'})
    chain = cgroups.chain_of(LEAF, str(tmp_path))
    assert chain.effective == 300
    assert chain.decides == '/docker/abc/user.slice/user-1001.slice'
    assert [p for p, _v in chain.limits][0] == LEAF and chain.limits[-1] == ('/docker', U)


def test_cgroup_v2_and_no_controller(tmp_path):
    tree(tmp_path, {'/system.slice/x.service': '77', '/system.slice': 'max'})
    chain = cgroups.chain_of('/system.slice/x.service', str(tmp_path), v1=False)
    assert (chain.effective, chain.decides) == (77, '/system.slice/x.service')
    empty = cgroups.chain_of('/nowhere', str(tmp_path), v1=False)
    assert empty.effective is None and empty.decides is None


def test_cgroup_of_proc_text():
    v1 = '12:pids:/user.slice/user-1001.slice/session-1.scope\n1:name=systemd:/x\n0::/y\n'
    assert cgroups.cgroup_of(v1) == '/user.slice/user-1001.slice/session-1.scope'
    assert cgroups.cgroup_of('0::/system.slice/a.service\n') == '/system.slice/a.service'
    assert cgroups.cgroup_of('5:memory:/a\n') is None


def test_the_chain_script_runs_under_sh_and_parses(tmp_path):
    # the script the probes run, on this machine's own /proc/self/cgroup: what it prints must
    # parse, and every pids.max it names must be the file's content
    out = subprocess.check_output(['sh', '-c', cgroups.CHAIN_COMMAND]).decode()
    chain = cgroups.parse_chain(out)
    assert chain.cgroup is not None
    assert '$' not in cgroups.CHAIN_COMMAND and '%' not in cgroups.CHAIN_COMMAND


def test_parse_chain_refuses_what_is_no_chain():
    with pytest.raises(pids.LimitError, match='login: printed no cgroup'):
        cgroups.parse_chain('Max open files 1024 1024 files\n', 'login')
    with pytest.raises(pids.LimitError):
        cgroups.parse_chain('cgroup /a\npids.max /a lots\n')


SITE = '/etc/systemd/system/user-1001.slice.d/50-site.conf'
DEBIAN = '/usr/lib/systemd/system/user-.slice.d/10-defaults.conf'


def test_tasks_max_of_a_user_slice_comes_from_its_dropins(tmp_path):
    write(tmp_path, DEBIAN, '[Unit]\nDescription=x\n\n[Slice]\nTasksMax=33%\n')
    found = tasks_max.unit_tasks_max('user-1001.slice', str(tmp_path))
    assert (found.value, found.where) == (T(permyriad=3300), DEBIAN + ':5')
    write(tmp_path, SITE, '[Slice]\nTasksMax=300\nTasksMax=lots\n')
    found = tasks_max.unit_tasks_max('user-1001.slice', str(tmp_path))
    assert (found.value, found.where) == (T(count=300), SITE + ':2')
    assert found.invalid and SITE + ':3' in found.invalid[0]
    # an empty assignment resets: no file decides
    write(tmp_path, '/etc/systemd/system/user-1001.slice.d/60-reset.conf', '[Slice]\nTasksMax=\n')
    assert tasks_max.unit_tasks_max('user-1001.slice', str(tmp_path)).where is None


def test_default_tasks_max_and_logind(tmp_path):
    write(tmp_path, '/etc/systemd/system.conf', '[Manager]\n#DefaultTasksMax=15%\n')
    assert tasks_max.default_tasks_max('system', str(tmp_path)).where is None
    write(tmp_path, '/etc/systemd/system.conf.d/50-x.conf', '[Manager]\nDefaultTasksMax=4915\n')
    found = tasks_max.default_tasks_max('system', str(tmp_path))
    assert (found.value, found.where) == (T(count=4915), '/etc/systemd/system.conf.d/50-x.conf:2')
    write(tmp_path, '/etc/systemd/logind.conf', '[Login]\nUserTasksMax=12288\n')
    assert tasks_max.logind_user_tasks_max(str(tmp_path)).value == T(count=12288)


def test_unit_of_cgroup():
    assert tasks_max.unit_of_cgroup('/docker/a/user.slice/user-1001.slice') == 'user-1001.slice'
    assert tasks_max.unit_of_cgroup('/docker/abc') is None
    assert tasks_max.unit_of_cgroup('/') is None


def test_user_slice_dropin_keeps_the_highest_value(tmp_path):
    root = str(tmp_path)
    write(tmp_path, DEBIAN, '[Slice]\nTasksMax=33%\n')
    # every slice already at or above the profile: nothing is written
    change = pids_plan.plan_user_slice(T(count=8192), 192724, root=root)
    assert not change.changed and change.new is None
    # one user's slice below it: the drop-in writes the highest value a slice has (33%),
    # which raises that user and lowers nobody
    write(tmp_path, SITE, '[Slice]\nTasksMax=300\n')
    change = pids_plan.plan_user_slice(T(count=8192), 192724, root=root)
    assert change.changed and change.new.endswith('[Slice]\nTasksMax=33%\n')
    assert change.result['daemon_reload_required'] and change.result['pids']['below'] == [
        'user-1001.slice']
    # once written, a second plan changes nothing (its own file is left out of "now")
    write(tmp_path, change.path, change.new)
    assert not pids_plan.plan_user_slice(T(count=8192), 192724, root=root).changed
    # a profile above every slice: the profile's value
    change = pids_plan.plan_user_slice(T(count=100000), 192724, root=root)
    assert change.new.endswith('TasksMax=100000\n')


def test_user_slice_dropin_names_a_later_file_that_keeps_it_low(tmp_path):
    root = str(tmp_path)
    write(tmp_path, '/etc/systemd/system/user-1001.slice.d/99-late.conf', '[Slice]\nTasksMax=300\n')
    change = pids_plan.plan_user_slice(T(count=8192), 192724, root=root)
    assert change.changed
    assert [c['line'] for c in change.result['conflicts']] == [2]
    assert '99-late.conf:2: TasksMax=300 is read after the drop-in' in (
        change.result['conflicts'][0]['reason'])


def test_default_tasks_max_written_only_below_the_profile(tmp_path):
    root = str(tmp_path)
    path = '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'
    change = changes.Change(path, {}, None, '[Manager]\nDefaultLimitNOFILE=65536\n')
    same = pids_plan.add_default(change, T(count=8192), 192724, root=root)
    assert same.new == '[Manager]\nDefaultLimitNOFILE=65536\n'      # 15% is 28908
    assert same.result['pids']['before'] == '15%'
    change = changes.Change(path, {}, None, '[Manager]\nDefaultLimitNOFILE=65536\n')
    raised = pids_plan.add_default(change, T(count=50000), 192724, root=root)
    assert raised.new == '[Manager]\nDefaultLimitNOFILE=65536\nDefaultTasksMax=50000\n'
    assert raised.result['reexec_required']


def test_unit_tasks_max_falls_back_to_the_manager_default(tmp_path):
    root = str(tmp_path)
    write(tmp_path, '/usr/lib/systemd/system/train.service', '[Service]\nTasksMax=4096\n')
    path = '/etc/systemd/system/train.service.d/90-gpufleet-tuning.conf'
    change = pids_plan.add_unit(changes.Change(path, {}, None, '[Service]\n'), 'train.service',
                                T(count=8192), 192724, T(permyriad=1500), root)
    assert change.new == '[Service]\nTasksMax=8192\n' and change.result['daemon_reload_required']
    assert change.result['pids']['source'] == '/usr/lib/systemd/system/train.service:2'


def test_limits_profile_request_keeps_pids_from_the_rlimit_planners():
    params = dict(profile={'nofile': 65536, 'pids': '25%'}, contexts=['pam'], domains=['*'],
                  units=[], force=False, on_conflict='fail', dropin='90-x.conf',
                  docker_shm_size=None)
    params.update((option, None) for option in pp.DEFAULTS)
    request = pp.parse_request(params)
    assert sorted(request.limits) == ['nofile'] and request.pids == T(permyriad=2500)


@pytest.mark.parametrize('value,words', [
    ('150%', 'profile.pids: '), (10, 'below the floor'), ('infinite', 'profile.pids: '),
])
def test_limits_profile_refuses_bad_pids_before_planning(value, words):
    params = dict(profile={'pids': value}, contexts=['pam'], domains=['*'], units=[],
                  force=False, on_conflict='fail', dropin='90-x.conf', docker_shm_size=None)
    params.update((option, None) for option in pp.DEFAULTS)
    with pytest.raises(changes.Failure) as info:
        pp.parse_request(params)
    assert words in info.value.msg


def test_audit_split_has_no_floor_and_names_the_field():
    assert pids_audit.split({'pids': 100, 'nofile': 1})[1] == T(count=100)
    with pytest.raises(pids.LimitError, match='^profile.pids: '):
        pids_audit.split({'pids': 'lots'})
    assert pids_set.SLICE_LABEL == 'unit:user-.slice'


def test_audit_source_names_the_file_or_the_default(tmp_path):
    root = str(tmp_path)
    write(tmp_path, SITE, '[Slice]\nTasksMax=300\n')
    chain = cgroups.Chain(LEAF, [(LEAF, U), ('/docker/abc/user.slice/user-1001.slice', 300)])
    source, owner = pids_audit.source_of('login', chain, 192724, root)
    assert source.startswith(SITE + ':2 (TasksMax=300 of user-1001.slice)') and owner == 'theirs'
    assert pids_audit.advice_for('login', owner, source).startswith(
        'run limits_profile with pids in the profile')
    service = cgroups.Chain('/system.slice/run-u1.service', [('/system.slice/run-u1.service', 28908)])
    source, owner = pids_audit.source_of('service', service, 192724, root)
    assert "built-in DefaultTasksMax=15%" in source and owner == ''
    late = '/etc/systemd/system/user-1001.slice.d/99-late.conf:2 (TasksMax=300 of user-1001.slice)'
    assert pids_audit.advice_for('login', 'theirs', late).startswith('raise or remove')
    free = cgroups.Chain('/a', [('/a', U)])
    assert pids_audit.source_of('login', free, 1, root)[0].startswith('no cgroup of /a sets')


def test_job_fit_names_the_short_contexts():
    rows = [dict(context='login', pids=dict(effective='300')),
            dict(context='service', pids=dict(effective='max'))]
    assert pids_audit.job_fit(1000, rows) == [dict(context='login', item='pids', need=1000,
                                                   have=300, short_by=700)]


def test_effective_checks_pids_in_expect_and_compares_the_rlimits_only():
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
    import pwd
    user = pwd.getpwuid(os.getuid()).pw_name
    params = dict(contexts=['login'], docker_image=None, podman_image=None, pod_image=None,
                  user=user, expect={'nofile': 1024, 'pids': '33%'})
    for record in effective.registry.REGISTRY:
        if record.image_option:
            params.setdefault(record.image_option, None)
    expected, _uid = effective.checked(params)
    assert sorted(expected) == ['nofile']
    params['expect'] = {'pids': 'lots'}
    with pytest.raises(effective.ProbeFailure) as info:
        effective.checked(params)
    assert info.value.msg.startswith('expect.pids: ')


def test_podman_pids_limit_written_only_below_the_profile(tmp_path, monkeypatch):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    root = str(tmp_path)
    path = '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'
    pids_state = pids_set.Pids(T(count=8192), None)
    pids_state.kernel_max = 192724
    # no file sets it: Podman's own 2048 is below 8192
    change = pids_state.add_podman(changes.Change(path, {}, None, '[containers]\n'), root)
    assert change.new == '[containers]\npids_limit = 8192\n'
    assert change.result['pids']['before'] == '2048'
    # a file sets more: nothing written, its place named
    write(tmp_path, '/etc/containers/containers.conf', '[containers]\npids_limit = 16384\n')
    change = pids_state.add_podman(changes.Change(path, {}, None, '[containers]\n'), root)
    assert change.new == '[containers]\n'
    assert change.result['pids']['source'] == '/etc/containers/containers.conf:2:14'
    # 0 or -1 is no limit; infinity in the profile is written as -1
    write(tmp_path, '/etc/containers/containers.conf', '[containers]\npids_limit = 100\n')
    pids_state.value = pids.INFINITY
    change = pids_state.add_podman(changes.Change(path, {}, None, '[containers]\n'), root)
    assert change.new == '[containers]\npids_limit = -1\n'
    write(tmp_path, '/etc/containers/containers.conf', '[containers]\npids_limit = "x"\n')
    with pytest.raises(changes.Failure, match='containers.conf:2:14: pids_limit'):
        pids_state.add_podman(changes.Change(path, {}, None, '[containers]\n'), root)


def test_advice_for_a_main_file_is_not_a_later_dropin():
    source = '/etc/containers/containers.conf:2:14 (pids_limit = 100)'
    assert pids_audit.advice_for('podman', 'theirs', source).startswith(
        'run limits_profile with pids')


def test_state_absent_removes_the_user_slice_dropin(tmp_path, monkeypatch):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
    monkeypatch.setattr(undo_files, 'ROOT', str(tmp_path))
    request = Request({}, {}, ['pam'], dropin='90-gpufleet-tuning.conf')
    [(label, plan)] = pids_set.undo_plans(request)
    assert label == 'unit:user-.slice' and plan() is None          # nothing there: nothing owed
    write(tmp_path, pids_plan.slice_dropin(), '[Slice]\nTasksMax=33%\n')
    found = plan()
    assert found.changed and found.new is None and found.result['daemon_reload_required']
    assert pids_set.undo_plans(Request({}, {}, ['docker'])) == []


def test_the_chain_runs_where_each_probe_cats_its_limits():
    """Each covered probe's command with the chain in place of `cat /proc/self/limits`: a login
    shell's -c, a service's command, and the command a Slurm submit shell's srun runs (the
    chain's words as srun gets them, run here through sh: this machine's real cgroups)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
    login = pids_audit.chain_command(probes.login_command('trainer'))
    assert login[-1] == cgroups.CHAIN_COMMAND and login[:-1] == ['runuser', '-l', 'trainer', '-c']
    service = pids_audit.chain_command(probes.service_command('trainer'))
    assert service[-3:] == ['sh', '-c', cgroups.CHAIN_COMMAND]
    submit = ['runuser', '-l', 'trainer', '-c', slurm.submit_shell('node-1')]
    job = pids_audit.chain_command(submit)
    assert job[:-1] == submit[:-1] and 'cat /proc/self/limits' not in job[-1]
    words = shlex.split(job[-1].split('--job-name=gpufleet-probe ', 1)[1])
    assert words[:2] == ['sh', '-c']
    out = subprocess.check_output(words, universal_newlines=True)
    chain = cgroups.parse_chain(out, 'slurm_job')
    assert chain.cgroup and chain.cgroup.startswith('/')
    assert pids_audit.chain_command(['ssh', 'x', 'true']) is None


class ManagersHost(object):
    """run_command: systemctl list-units shows one running user manager."""

    def __init__(self):
        self.calls = []

    def run_command(self, args, environ_update=None):
        self.calls.append(args)
        if 'list-units' in args:
            return 0, 'user@1001.service loaded active running User Manager for UID 1001\n', ''
        return 0, '', ''


def test_a_pids_setting_alone_owes_no_user_manager_restart(monkeypatch):
    """DefaultTasksMax= beside unchanged Limit*= lines: the system manager re-executes, the
    user managers (which inherit rlimits, not pids.max) are not restarted; a Limit*= change
    still restarts them."""
    monkeypatch.setattr(pp.sdlive, 'systemd_running', lambda root='': True)
    pids_only = changes.Change('/etc/systemd/system.conf.d/90-gpufleet-tuning.conf',
                               dict(reexec_required=True, rlimits_changed=False),
                               '[Manager]\n', '[Manager]\nDefaultTasksMax=33%\n')
    host = ManagersHost()
    result = pp.actions([('systemd_system', pids_only)], host, 'always')
    assert result['reexec'] and result['user_managers'] == []
    both = changes.Change(pids_only.path, dict(reexec_required=True, rlimits_changed=True),
                          '[Manager]\n', '[Manager]\nDefaultLimitNOFILE=16384\n')
    assert pp.actions([('systemd_system', both)], ManagersHost(),
                      'always')['user_managers'] == ['user@1001.service']


USER_DROPIN = '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf'


def test_user_managers_default_is_written_in_user_conf_only_below_the_profile(tmp_path):
    """Issue 43 (VM lane): a user service gets its manager's DefaultTasksMax (15% built in)."""
    root = str(tmp_path)
    write(tmp_path, '/etc/systemd/user.conf', '[Manager]\n#DefaultTasksMax=15%\n')
    change = changes.Change(USER_DROPIN, {}, None, '[Manager]\nDefaultLimitNOFILE=65536\n')
    same = pids_plan.add_default(change, T(count=8192), 192724, root=root,
                                 scope=pids_plan.sdpaths.USER)
    assert same.new == '[Manager]\nDefaultLimitNOFILE=65536\n'
    change = changes.Change(USER_DROPIN, {}, None, '[Manager]\nDefaultLimitNOFILE=65536\n')
    raised = pids_plan.add_default(change, T(count=16384), 65536, root=root,
                                   scope=pids_plan.sdpaths.USER)      # 15%: 9830
    assert raised.new == '[Manager]\nDefaultLimitNOFILE=65536\nDefaultTasksMax=16384\n'
    # the system manager's files are not the user manager's
    write(tmp_path, '/etc/systemd/system.conf.d/50-x.conf', '[Manager]\nDefaultTasksMax=50000\n')
    change = changes.Change(USER_DROPIN, {}, None, '[Manager]\n')
    assert pids_plan.add_default(change, T(count=16384), 65536, root=root,
                                 scope=pids_plan.sdpaths.USER).changed


class UserManagersHost(object):
    """run_command: one running user manager (root's, a user every host has) that says it runs
    ``default`` as its DefaultTasksMax."""

    def __init__(self, default):
        self.default = default
        self.calls = []

    def run_command(self, args, environ_update=None):
        self.calls.append(args)
        if 'list-units' in args:
            return 0, 'user@0.service loaded active running User Manager for UID 0\n', ''
        if 'show' in args and any(a.startswith('--property=') and 'DefaultTasksMax' in a
                                  for a in args):
            return 0, 'DefaultLimitNOFILE=1024\nDefaultTasksMax=%s\n' % self.default, ''
        return 0, '', ''


def _user_pids(monkeypatch, tmp_path, value, host, run=None):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_user
    monkeypatch.setattr(pids_set.sdlive, 'systemd_running', lambda root='': True)
    monkeypatch.setattr(pids_set.cgroups, 'kernel_tasks_max', lambda: 65536)
    real = pids_plan.add_default
    monkeypatch.setattr(pids_plan, 'add_default',
                        lambda *args, **kwargs: real(*args, **dict(kwargs, root=str(tmp_path))))
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    request = Request({}, {}, [])
    pids = pids_set.Pids(value, host, run or (
        lambda args, **kwargs: request.run(host, args, **kwargs)))
    change = changes.Change(USER_DROPIN, {'restart_required': []}, None, '[Manager]\n')
    return systemd_user.CONTEXT.pids_post(pids, 'systemd_user', change)


def test_user_managers_that_run_less_are_owed_a_restart(monkeypatch, tmp_path):
    change = _user_pids(monkeypatch, tmp_path, T(count=16384), UserManagersHost('9830'))
    assert change.new == '[Manager]\nDefaultTasksMax=16384\n'
    assert change.result['restart_required'] == ['user@0.service']
    assert change.result['pids']['stale_user_managers'] == ['user@0.service']
    # a manager that already runs enough (it read the drop-in when it started) is not
    write(tmp_path, USER_DROPIN, '[Manager]\nDefaultTasksMax=16384\n')
    done = _user_pids(monkeypatch, tmp_path, T(count=16384), UserManagersHost('16384'))
    assert done.result['restart_required'] == [] and 'written' not in done.result['pids']


def test_a_later_user_conf_file_is_a_conflict_not_a_restart(monkeypatch, tmp_path):
    write(tmp_path, '/etc/systemd/user.conf.d/99-site.conf', '[Manager]\nDefaultTasksMax=2000\n')
    change = _user_pids(monkeypatch, tmp_path, T(count=16384), UserManagersHost('2000'))
    assert [c['path'] for c in change.result['conflicts']] == [
        '/etc/systemd/user.conf.d/99-site.conf']
    assert change.result['restart_required'] == []


def test_the_advice_names_the_user_managers_default_only_where_it_decides(tmp_path):
    service = '/user.slice/user-1001.slice/user@1001.service/app.slice/probe.service'
    chain = cgroups.Chain(service, [(service, 9830), ('/user.slice/user-1001.slice', 21626)])
    source, owner = pids_audit.source_of('user_manager', chain, 65536, str(tmp_path))
    assert "built-in DefaultTasksMax=15%" in source and owner == ''
    assert pids_audit.advice_for('user_manager', owner, source, chain.decides).startswith(
        'run limits_profile with pids in the profile and contexts: [systemd_user]')
    slice_ = '/user.slice/user-1001.slice'
    assert pids_audit.advice_for('user_manager', '', 'x', slice_) == (
        'run limits_profile with pids in the profile')


def test_the_user_managers_default_is_read_from_the_live_checks_own_show(monkeypatch, tmp_path):
    """The pids plan reads each user manager's DefaultTasksMax from the same ``systemctl
    --user show`` (and list-units) the systemd_user context's live check runs: with the call's
    Request.run, each command runs once."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
    host = UserManagersHost('9830')
    request = Request({}, {}, [])

    def run(args, **kwargs):
        return request.run(host, args, **kwargs)
    # the live check's read (systemd_plan.live_check), then the pids plan's
    assert pids_set.sdlive.manager_live(lambda args: run(args, environ_update=commands.live_env()),
                                        'user', 'root', 0)[1] is None
    change = _user_pids(monkeypatch, tmp_path, T(count=16384), host, run)
    assert change.result['restart_required'] == ['user@0.service']
    assert len([a for a in host.calls if 'show' in a]) == 1, host.calls
