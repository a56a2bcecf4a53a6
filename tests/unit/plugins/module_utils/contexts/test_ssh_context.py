"""issue 32.6: the ssh context (contexts/ssh.py), sessions started by sshd: the pam_limits line
of sshd's PAM stack (includes followed), where each value comes from (a limits line, sshd's unit
Limit*=, or why limits.conf does not apply), and a probe that starts a temporary sshd with the
running sshd's limits and removes everything it made. The real session is
molecule/pam/tests/test_ssh_sessions.py."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import ssh
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import ssh_sessions
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit, UNLIMITED

DEBIAN_SSHD = '''# PAM configuration for the Secure Shell service
@include common-auth
account    required     pam_nologin.so
@include common-account
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so close
session    required     pam_loginuid.so
# Set up user limits from /etc/security/limits.conf.
session    required     pam_limits.so
@include common-session
'''
COMMON_SESSION = 'session\t[default=1]\t\t\tpam_permit.so\n-session optional pam_systemd.so\n'
RHEL_SSHD = 'auth substack password-auth\nsession    include      password-auth\n'
PASSWORD_AUTH = ('auth required pam_env.so\n'
                 'session     optional      pam_keyinit.so revoke\n'
                 'session     required      pam_limits.so conf=/etc/security/site-limits.conf\n')


def reader(files):
    return files.get


def test_the_pam_limits_line_of_a_debian_sshd_stack():
    lines, commented = ssh_sessions.pam_stack('sshd', read=reader({
        '/etc/pam.d/sshd': DEBIAN_SSHD, '/etc/pam.d/common-session': COMMON_SESSION}))
    assert [line.module for line in lines] == ['pam_selinux.so', 'pam_loginuid.so',
                                               'pam_limits.so', 'pam_permit.so',
                                               'pam_systemd.so']
    assert lines[0].control.startswith('[success=ok') and lines[3].control == '[default=1]'
    assert ssh_sessions.limits_at(lines).where == '/etc/pam.d/sshd:8'
    assert commented == []


def test_a_rhel_stack_includes_password_auth_and_its_conf_argument():
    lines, _commented = ssh_sessions.pam_stack('sshd', read=reader({
        '/etc/pam.d/sshd': RHEL_SSHD, '/etc/pam.d/password-auth': PASSWORD_AUTH}))
    found = ssh_sessions.limits_at(lines)
    assert found.where == '/etc/pam.d/password-auth:3'
    assert found.conf() == '/etc/security/site-limits.conf'
    assert [line.module for line in lines] == ['pam_keyinit.so', 'pam_limits.so']


def test_a_commented_out_pam_limits_line_is_named():
    text = DEBIAN_SSHD.replace('session    required     pam_limits.so',
                               '#session    required     pam_limits.so')
    lines, commented = ssh_sessions.pam_stack('sshd', read=reader({'/etc/pam.d/sshd': text}))
    assert ssh_sessions.limits_at(lines) is None
    assert commented == ['/etc/pam.d/sshd:8']


def test_an_include_loop_ends():
    lines, _commented = ssh_sessions.pam_stack('a', read=reader({
        '/etc/pam.d/a': '@include b\nsession required pam_limits.so\n',
        '/etc/pam.d/b': '@include a\n'}))
    assert [line.where for line in lines] == ['/etc/pam.d/a:2']


SSHD_T = '''port 40022
usepam yes
pubkeyauthentication yes
permitrootlogin without-password
authenticationmethods any
authorizedkeysfile /run/gpufleet-ssh-probe.x/auth/%u
listenaddress 127.0.0.1:40022
'''


def test_sshd_t_is_read_for_usepam_and_what_would_refuse_the_probe():
    config = ssh.parse_sshd_t(SSHD_T)
    assert ssh.first(config, 'usepam') == 'yes'
    assert ssh.refusal(config, 'bob') == '' and ssh.refusal(config, 'root') == ''
    assert ssh.keys_file(config, '/run/gpufleet-ssh-probe.x/auth')
    assert 'PermitRootLogin no' in ssh.refusal(ssh.parse_sshd_t(
        SSHD_T.replace('without-password', 'no')), 'root')
    assert 'AuthenticationMethods' in ssh.refusal(ssh.parse_sshd_t(
        SSHD_T.replace('methods any', 'methods publickey,password')), 'bob')
    # a Match block of the node points sshd at the user's own files: not the probe's
    assert ssh.keys_file(ssh.parse_sshd_t(SSHD_T.replace(
        '/run/gpufleet-ssh-probe.x/auth/%u', '.ssh/authorized_keys')),
        '/run/gpufleet-ssh-probe.x/auth') is None


def test_the_temporary_sshd_gets_the_running_sshds_limits_as_properties():
    props = ssh.limit_properties({'nofile': Limit(1024, 20000), 'memlock': Limit(8 << 20, 8 << 20),
                                  'cpu': Limit(UNLIMITED, UNLIMITED)})
    assert props == ['-p', 'LimitMEMLOCK=8M', '-p', 'LimitNOFILE=1024:20000',
                     '-p', 'LimitCPU=infinity']
    options = ssh.server_options(40022, '/r/keys/host', '/r/auth', '/r/sshd.pid')
    assert 'AuthorizedKeysFile=/r/auth/%u' in options and 'ListenAddress=127.0.0.1:40022' in options
    command = ssh.client_command('/r/keys/client', 40022, 'bob')
    assert command[:3] == ['ssh', '-F', '/dev/null']
    assert 'UserKnownHostsFile=/dev/null' in command and command[-2:] == [
        'bob@127.0.0.1', 'cat /proc/self/limits']


def report(**changes):
    base = dict(sshd_config='/etc/ssh/sshd_config', pam_file='/etc/pam.d/sshd',
                unit='ssh.service', running=True, use_pam='yes',
                pam_limits='/etc/pam.d/sshd:40', pam_limits_commented=[],
                effective={'nofile': dict(soft=16384, hard=16384,
                                          soft_source='/etc/security/limits.d/90-x.conf:3',
                                          hard_source='/etc/security/limits.d/90-x.conf:4'),
                           'core': dict(soft=0, hard=None,
                                        soft_source='/etc/security/limits.d/10-site.conf:2',
                                        hard_source=None)},
                sshd={'nofile': dict(soft=1024, hard=20000), 'nproc': dict(soft=5000, hard=7000),
                      'core': dict(soft=0, hard=UNLIMITED)},
                unit_configured={'nproc': dict(soft=5000, hard=7000, line=2,
                                               source='/etc/systemd/system/ssh.service.d/t.conf',
                                               value='LimitNPROC=5000:7000')},
                manager_configured={})
    base.update(changes)
    return base


FIX = ("run limits_profile with contexts: [pam] (it writes "
       "/etc/security/limits.d/90-gpufleet-tuning.conf, which sshd's pam_limits "
       "(/etc/pam.d/sshd:40) applies)")
AT = {'path': '/etc/security/limits.d/90-gpufleet-tuning.conf', 'line': None}


def test_sources_pam_lines_then_sshds_unit():
    found = ssh.CONTEXT.configured(report())
    # each side's own evidence too (soft_source, hard_source): the place of each side
    assert found['nofile'] == dict(
        soft=16384, hard=16384, source='pam_limits (/etc/pam.d/sshd:40): '
        '/etc/security/limits.d/90-x.conf:3 (soft), :4 (hard)',
        soft_source='/etc/security/limits.d/90-x.conf:3',
        hard_source='/etc/security/limits.d/90-x.conf:4')
    assert found['nproc'] == dict(
        soft=5000, hard=7000, source='inherited from sshd: /etc/systemd/system/ssh.service.d/'
        't.conf:2 (ssh.service LimitNPROC=5000:7000)',
        soft_source='/etc/systemd/system/ssh.service.d/t.conf:2 (ssh.service LimitNPROC=5000:7000)',
        hard_source='/etc/systemd/system/ssh.service.d/t.conf:2 (ssh.service LimitNPROC=5000:7000)',
        # no limits line sets it and sshd's pam_limits reads limits.d: the pam context's file
        # is what sets it (issue 40: not "raise or remove inherited from sshd")
        soft_fix=FIX, hard_fix=FIX, soft_fix_place=AT, hard_fix_place=AT)
    assert found['core']['soft'] == 0 and found['core']['hard'] == UNLIMITED
    assert found['core']['source'].startswith(
        'pam_limits (/etc/pam.d/sshd:40): soft: /etc/security/limits.d/10-site.conf:2; hard: '
        'inherited from sshd: ssh.service sets no LimitCORE')


def test_without_pam_limits_every_value_is_sshds_and_the_source_says_why():
    found = ssh.CONTEXT.configured(report(pam_limits=None,
                                          pam_limits_commented=['/etc/pam.d/sshd:40']))
    assert found['nofile']['soft'] == 1024 and found['nofile']['hard'] == 20000
    assert found['nofile']['source'] == (
        '/etc/pam.d/sshd has no session line with pam_limits (/etc/pam.d/sshd:40 is commented '
        "out), so limits.conf does not apply to SSH sessions; inherited from sshd: ssh.service "
        "sets no LimitNOFILE: systemd's built-in default")
    found = ssh.CONTEXT.configured(report(use_pam='no'))
    assert found['nofile']['soft'] == 1024
    assert found['nofile']['source'].startswith('/etc/ssh/sshd_config: UsePAM no (sshd -T)')


def test_the_ssh_context_is_probed_only_and_reported_after_login():
    assert registry.probed('ssh') is ssh.CONTEXT and ssh.CONTEXT.name is None
    assert registry.PROBED.index('ssh') == registry.PROBED.index('login') + 1
    assert 'ssh' in effective.CONTEXTS
    assert registry.probe_map(registry.CONFIGURED) == [
        m for m in registry.probe_map(registry.CONFIGURED) if m['probe'] != 'ssh']


class Module(object):
    def get_bin_path(self, name, opt_dirs=None):
        return '/usr/sbin/' + name


class Prober(object):
    """Records the commands; ssh-keygen writes its files, sshd -T prints ``config``."""

    def __init__(self, config=SSHD_T):
        self.module = Module()
        self.config = config
        self.ran = []
        self.executed = []

    def unit(self, unit):
        self.ran.append(['unit', unit])
        return {'nofile': Limit(1024, 20000), 'nproc': Limit(5000, 7000)}

    def run(self, command):
        self.ran.append(command)
        if command[0] == 'ssh-keygen':
            path = command[command.index('-f') + 1]
            for name in (path, path + '.pub'):
                with open(name, 'w') as handle:
                    handle.write('ssh-ed25519 AAAA gpufleet-ssh-probe\n')
        if '-T' in command and command[0].endswith('sshd'):
            auth = [o for o in command if o.startswith('AuthorizedKeysFile=')][0]
            return self.config.replace('/run/gpufleet-ssh-probe.x/auth/%u',
                                       auth.split('=', 1)[1])
        return ''

    def execute(self, command):
        self.executed.append(command)
        return 0, '', ''

    def proc(self, command, where):
        self.ran.append(command)
        key = command[command.index('-i') + 1]
        assert os.stat(os.path.dirname(key)).st_mode & 0o777 == 0o700
        auth = os.path.join(os.path.dirname(os.path.dirname(key)), 'auth', 'bob')
        assert os.stat(auth).st_mode & 0o777 == 0o644
        return {'nofile': Limit(1024, 20000)}


@pytest.fixture
def node(tmp_path, monkeypatch):
    monkeypatch.setattr(ssh, 'RUN_DIR', str(tmp_path))
    monkeypatch.setattr(ssh, 'sshd_unit', lambda root='': 'ssh.service')
    monkeypatch.setattr(ssh.Ssh, 'detect', lambda self, root='': True)
    monkeypatch.setattr(ssh, 'listening', lambda port, wait: True)
    return tmp_path


def test_the_probe_starts_a_temporary_sshd_and_removes_all_it_made(node):
    prober = Prober()
    got = ssh.CONTEXT.run_probe(prober, 'bob', 1002, [])
    assert got == {'nofile': Limit(1024, 20000)}
    [start] = [c for c in prober.ran if c[0] == 'systemd-run']
    assert '-p' in start and 'LimitNOFILE=1024:20000' in start and 'LimitNPROC=5000:7000' in start
    sshd = start[start.index('/usr/sbin/sshd'):]
    assert sshd[:5] == ['/usr/sbin/sshd', '-D', '-e', '-f', '/etc/ssh/sshd_config']
    unit = [o for o in start if o.startswith('--unit=')][0][len('--unit='):]
    assert ['systemctl', 'stop', unit] in prober.executed
    assert os.listdir(str(node)) == []


def test_a_match_block_with_the_users_own_keys_stops_the_probe_before_any_sshd(node):
    prober = Prober(SSHD_T.replace('/run/gpufleet-ssh-probe.x/auth/%u', '.ssh/authorized_keys'))
    with pytest.raises(effective.ProbeError) as caught:
        ssh.CONTEXT.run_probe(prober, 'bob', 1002, [])
    assert "the user's own files" in str(caught.value)
    assert not [c for c in prober.ran if c[0] == 'systemd-run']
    assert os.listdir(str(node)) == []


def test_root_refused_by_permitrootlogin_is_not_running_not_a_failure(node):
    prober = Prober(SSHD_T.replace('without-password', 'no'))
    with pytest.raises(effective.ProbeError) as caught:
        ssh.CONTEXT.run_probe(prober, 'root', 0, [])
    assert caught.value.kind == errors.NOT_RUNNING
    assert os.listdir(str(node)) == []


def test_no_sshd_is_no_context(monkeypatch, tmp_path):
    assert ssh.CONTEXT.detect(str(tmp_path)) is False
    monkeypatch.setattr(ssh.Ssh, 'detect', lambda self, root='': False)
    assert ssh.CONTEXT.report(None) == (None, [])
    with pytest.raises(effective.ProbeError) as caught:
        ssh.CONTEXT.run_probe(Prober(), 'bob', 1002, [])
    assert caught.value.kind == errors.NOT_RUNNING


class SocketProber(Prober):
    """ssh.service not started yet, ssh.socket listening (Ubuntu 22.10+)."""

    def unit(self, unit):
        raise effective.ProbeError('%s is not running' % unit, kind=errors.NOT_RUNNING)

    def run(self, command):
        if command[:2] == ['systemctl', 'show']:
            self.ran.append(command)
            return 'LimitNOFILE=65536\nLimitNOFILESoft=4096\n'
        return Prober.run(self, command)


def test_a_socket_activated_sshd_not_started_yet_is_probed_with_its_units_limits(
        node, monkeypatch):
    monkeypatch.setattr(ssh, 'socket_unit', lambda unit, root='': 'ssh.socket')
    prober = SocketProber()
    ssh.CONTEXT.run_probe(prober, 'bob', 1002, [])
    assert ['systemctl', 'is-active', '--quiet', 'ssh.socket'] in prober.ran
    [start] = [c for c in prober.ran if c[0] == 'systemd-run']
    assert 'LimitNOFILE=4096:65536' in start
    monkeypatch.setattr(ssh, 'socket_unit', lambda unit, root='': None)
    with pytest.raises(effective.ProbeError) as caught:
        ssh.CONTEXT.run_probe(SocketProber(), 'bob', 1002, [])
    assert caught.value.kind == errors.NOT_RUNNING
    assert os.listdir(str(node)) == []


def test_the_audit_s_advice_for_an_inherited_side_is_the_pam_context_s_file():
    # issue 40: on stock Debian sshd runs pam_limits on limits.d; a side no limits line sets
    # comes from sshd: the collection's pam context sets it, so that is the advice (it was
    # "raise or remove inherited from sshd: ... (it sets 1024:20000)")
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
    found = ssh.CONTEXT.configured(report())
    text, at = audit.advice_at('ssh', found['nproc'], {'soft': 5000, 'hard': 7000},
                               sides=('soft',))
    assert text == FIX and at == AT
    assert not text.startswith('raise or remove inherited')
