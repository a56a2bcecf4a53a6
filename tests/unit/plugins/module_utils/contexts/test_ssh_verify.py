"""issue 39.8: the tune verifies ssh. limits_profile's ``probes`` (registry.probe_map) has ssh
where what it writes decides an SSH session: the pam context's file when sshd's stack runs
pam_limits on limits.d, sshd's unit when the stack has no pam_limits; where neither holds it has
ssh with ``gap`` and a ``cause`` that names the line and the fix, which known_gaps, the
warnings and the failure table's source (gap_sources) say. A restart of sshd's unit is owed
under the restart policy and leaves ``ssh`` pending. The real node:
molecule/pam/tests/test_ssh_sessions.py (the authselect layout)."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import ssh
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import ssh_sessions
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import gap_sources
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import outcome
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_run
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_stack as stack

RHEL_SSHD = 'session required pam_loginuid.so\nsession include password-auth\n'
PASSWORD_AUTH = ('session optional pam_keyinit.so revoke\n'
                 'session required pam_limits.so\n'
                 '-session optional pam_systemd.so\n')
COMMENTED = PASSWORD_AUTH.replace('session required pam_limits', '#session required pam_limits')
CONF = PASSWORD_AUTH.replace('pam_limits.so', 'pam_limits.so conf=/etc/security/limits-gpu.conf')


class Host(object):
    """limits_profile's module: sshd -T says UsePAM, systemctl show the unit's KillMode."""

    def __init__(self, use_pam='yes', kill_mode='process', sshd_t_rc=0):
        self.use_pam, self.kill_mode, self.sshd_t_rc = use_pam, kill_mode, sshd_t_rc
        self.ran = []

    def get_bin_path(self, name, opt_dirs=None):
        return '/usr/sbin/' + name

    def run_command(self, args, environ_update=None):
        self.ran.append(args)
        if args[0].endswith('sshd') and '-T' in args:
            if self.sshd_t_rc:
                return self.sshd_t_rc, '', 'sshd: no hostkeys available -- exiting.'
            return 0, 'port 22\nusepam %s\n' % self.use_pam, ''
        if args[:2] == ['systemctl', 'show']:
            return 0, self.kill_mode + '\n', ''
        return 1, '', 'unexpected'


@pytest.fixture
def node(monkeypatch):
    """An sshd with the RHEL layout: /etc/pam.d/sshd includes password-auth (set per test)."""
    files = {'/etc/pam.d/sshd': RHEL_SSHD, '/etc/pam.d/password-auth': PASSWORD_AUTH}
    real = stack.pam_stack
    monkeypatch.setattr(ssh_sessions, 'pam_stack', lambda service: real(service, read=files.get))
    monkeypatch.setattr(ssh.Ssh, 'detect', lambda self, root='': True)
    monkeypatch.setattr(ssh, 'sshd_unit', lambda root='': 'ssh.service')
    return files


def ssh_entry(configured, units=(), host=None):
    found = [p for p in registry.probe_map(configured, list(units), host or Host())
             if p['probe'] == 'ssh']
    return found[0] if found else None


def test_with_pam_limits_in_sshds_stack_the_pam_context_verifies_ssh(node):
    # fails before 39.8: ssh was never in probes, so the tune never verified it
    assert ssh_entry(['pam', 'systemd_system']) == dict(
        context='pam', probe='ssh', image=None, gap=False, cause=None)
    probes = registry.probe_map(['pam', 'systemd_system'], [], Host())
    assert [p['probe'] for p in probes] == ['login', 'ssh', 'service']
    # nothing written decides an SSH session: not verified
    assert ssh_entry(['systemd_system']) is None
    # sshd -T failing (no host keys) is UsePAM unknown, taken as yes
    assert ssh_entry(['pam'], host=Host(sshd_t_rc=255))['context'] == 'pam'


def test_pam_limits_commented_out_in_password_auth_is_a_gap_with_the_line_and_the_fixes(node):
    node['/etc/pam.d/password-auth'] = COMMENTED
    entry = ssh_entry(['pam'])
    assert entry['context'] == 'pam' and entry['gap'] is True
    assert entry['cause'] == (
        '/etc/pam.d/sshd has no session line with pam_limits (/etc/pam.d/password-auth:2 is '
        'commented out), so limits.conf does not apply to SSH sessions; fix: add (or '
        'uncomment) `session required pam_limits.so` in /etc/pam.d/sshd '
        '(/etc/pam.d/password-auth:2); or give sshd the profile: add ssh.service to units '
        '(limits role: limits_units), which writes its Limit*= and restarts it under the '
        'restart policy')
    result = dict(probes=registry.probe_map(['pam'], [], Host()), overrides=[])
    assert profile_run.known_gaps(result, []) == ['ssh: ' + entry['cause']]
    # the failure table's source of an ssh row is that cause, not the profile's file
    per_context = {'pam': dict(path='/etc/security/limits.d/90-gpufleet-tuning.conf')}
    assert gap_sources.source('ssh', 'nofile', dict(result, per_context=per_context)) \
        == entry['cause']
    assert gap_sources.source('login', 'nofile', dict(result, per_context=per_context)) \
        .startswith('/etc/security/limits.d/90-gpufleet-tuning.conf')


def test_usepam_no_says_so_and_the_fix_is_usepam_yes(node):
    entry = ssh_entry(['pam'], host=Host(use_pam='no'))
    assert entry['gap'] and entry['cause'].startswith(
        '/etc/ssh/sshd_config: UsePAM no (sshd -T)')
    assert 'fix: set UsePAM yes in /etc/ssh/sshd_config; or give sshd the profile' \
        in entry['cause']


def test_conf_elsewhere_names_the_line_and_is_not_verified_by_the_profiles_file(node):
    node['/etc/pam.d/password-auth'] = CONF
    entry = ssh_entry(['pam'])
    assert entry['gap'] is True
    assert entry['cause'] == (
        '/etc/pam.d/password-auth:2 runs pam_limits with conf=/etc/security/limits-gpu.conf: '
        'SSH sessions read that file only, not /etc/security/limits.conf or '
        "/etc/security/limits.d/*.conf (the profile's file); fix: drop conf= from "
        '/etc/pam.d/password-auth:2')
    # sshd's unit does not help: pam_limits still runs and reads that file
    assert ssh_entry(['pam'], ['ssh.service'])['gap'] is True


def test_without_pam_limits_sshds_unit_decides_and_its_restart_applies_it(node):
    node['/etc/pam.d/password-auth'] = COMMENTED
    entry = ssh_entry(['pam'], ['ssh'])
    assert entry['context'] == 'unit:ssh.service' and entry['gap'] is False
    assert entry['cause'].endswith(
        "SSH sessions inherit sshd's own limits: ssh.service's Limit*= (this profile), applied "
        'by the restart of ssh.service (restart policy; running sessions keep theirs)')
    assert ssh_entry([], ['ssh.service'])['context'] == 'unit:ssh.service'
    result = dict(probes=[entry], overrides=[])
    assert profile_run.known_gaps(result, []) == []
    # the failure table's source: the unit's drop-in line (per_context of unit:ssh.service)
    per_context = {'unit:ssh.service': dict(configured={'nofile': dict(
        source='/etc/systemd/system/ssh.service.d/90-gpufleet-tuning.conf', line=3,
        value='LimitNOFILE=17000')})}
    assert gap_sources.source('ssh', 'nofile', dict(result, per_context=per_context)) == (
        '/etc/systemd/system/ssh.service.d/90-gpufleet-tuning.conf:3 (LimitNOFILE=17000)')


def test_sshds_restart_is_owed_under_the_policy_and_leaves_ssh_pending():
    actions = dict(units=['ssh.service', 'train.service'])
    assert ssh.CONTEXT.owed(actions, {}, Host(), 'when_idle') == [('ssh.service', '')]
    # another KillMode: the unit's cgroup tells (unit_busy)
    assert ssh.CONTEXT.owed(actions, {}, Host(kill_mode='control-group'), 'when_idle') == [
        ('ssh.service', None)]
    assert registry.restart_context('ssh.service') == 'ssh'
    assert registry.restart_context('sshd.service') == 'ssh'
    assert registry.restart_context('train.service') == 'unit:train.service'
    profile = dict(actions=dict(deferred=[dict(unit='ssh.service', context='ssh',
                                               reason='restart policy never')]),
                   units=['ssh.service'])
    assert outcome.pending(profile) == ['ssh', 'unit:ssh.service']
    gap = dict(context='ssh', item='nofile', expected=dict(soft=17000, hard=17000),
               actual=dict(soft=1024, hard=20000), sides=['soft', 'hard'])
    found = outcome.outcome(profile, dict(gaps=[gap], contexts={'ssh': {}}))
    assert found['failed'] == [] and found['pending_gaps'] == [gap]


def test_a_gap_in_ssh_fails_the_verification_and_verified_names_ssh_only_when_it_holds():
    gap = dict(context='ssh', item='nofile', expected=dict(soft=17000, hard=17000),
               actual=dict(soft=1024, hard=20000), sides=['soft', 'hard'])
    probes = [dict(context='pam', probe='login', image=None),
              dict(context='pam', probe='ssh', image=None, gap=True, cause='why; fix: how')]
    profile = dict(contexts=['pam'], probes=probes)
    after = dict(gaps=[gap], contexts={'login': {}, 'ssh': {}})
    found = outcome.outcome(profile, after, user='alice')
    assert found['verify_failed'] and 'Verified in new processes' not in found['report']
    assert 'why; fix: how' in found['failure']
    found = outcome.outcome(profile, dict(gaps=[], contexts={'login': {}, 'ssh': {}}))
    assert 'Verified in new processes: login, ssh.' in found['report']
