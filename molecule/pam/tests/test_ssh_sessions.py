"""issue 32.6: the ssh context on a real node. effective_limits' ssh probe logs bob in through
the node's sshd_config and /etc/pam.d/sshd (a temporary sshd with the running sshd's limits and
a throwaway key) and gets what the profile set, as a login does; limits_audit names the
limits line; bob's home is byte for byte what it was. With pam_limits commented out of
/etc/pam.d/sshd, an SSH session gets sshd's own limits, no longer the login's, and the audit's
source says why."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import (
    Limit, parse_proc_limits)

MANAGED = '/etc/security/limits.d/90-gpufleet-tuning.conf'
PAM_SSHD = '/etc/pam.d/sshd'
# bob in the converged profile: '*' nofile 16384, '*' nproc 4096:8192 (90-gpufleet-tuning.conf)
PROFILE = {'nofile': 16384, 'nproc': {'soft': 4096, 'hard': 8192}}
EXPECTED = {'nofile': Limit(16384, 16384), 'nproc': Limit(4096, 8192)}
# every entry of the home tree (type, mode, owner, size, mtime) and every file's sha256
TREE = ("cd /home/bob && find . -printf '%p %y %m %U %G %s %T@\\n' | LC_ALL=C sort"
        " && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum")


def tree(host):
    return host.check_output(TREE)


def got(result, context):
    limits = result['contexts'][context]['limits']
    return dict((item, Limit(limits[item]['soft'], limits[item]['hard'])) for item in EXPECTED)


def sshd_limits(host):
    pid = host.check_output('systemctl show -p MainPID --value ssh.service').strip()
    return parse_proc_limits(host.check_output('cat /proc/%s/limits' % pid))


def audit_rows(module, context):
    ok, result = module('gpufleet.tuning.limits_audit', {'user': 'bob', 'profile': PROFILE})
    assert ok, result
    return dict((row['item'], row) for row in result['rows'] if row['context'] == context)


def leftovers(host):
    return host.check_output('ls /run | grep gpufleet-ssh-probe || true; systemctl list-units '
                             '--all --plain --no-legend "gpufleet-ssh-probe*" || true').strip()


def test_sshd_runs_with_pam_limits_in_its_stack(host):
    assert host.service('ssh').is_running
    assert host.check_output('sshd -T -C user=bob,host=localhost,addr=127.0.0.1 | '
                             'grep -i "^usepam"') == 'usepam yes'
    assert host.run('grep -E "^session\\s+required\\s+pam_limits.so" %s' % PAM_SSHD).rc == 0


def test_an_ssh_session_gets_the_profile_and_leaves_the_home_as_it_was(host, module):
    before = tree(host)
    root_before = host.check_output('ls -la --time-style=full-iso /root /root/.ssh 2>&1 || true')
    ok, result = module('gpufleet.tuning.effective_limits',
                        {'user': 'bob', 'contexts': ['login', 'ssh'], 'expect': PROFILE})
    assert ok, result
    assert result['errors'] == [], result['errors']
    assert got(result, 'ssh') == EXPECTED, result['contexts']['ssh']
    assert got(result, 'ssh') == got(result, 'login')
    assert [g for g in result['gaps'] if g['context'] == 'ssh'] == []
    # pam_limits set it: sshd itself runs with systemd's soft 1024
    assert sshd_limits(host)['nofile'].soft != 16384
    assert tree(host) == before
    assert host.check_output('ls -la --time-style=full-iso /root /root/.ssh 2>&1 || true') \
        == root_before
    assert leftovers(host) == ''


def test_the_audit_names_the_limits_line_of_an_ssh_session(host, module):
    before = tree(host)
    rows = audit_rows(module, 'ssh')
    line = host.check_output('grep -n -E "^session\\s+required\\s+pam_limits.so" %s | cut -d: -f1'
                             % PAM_SSHD)
    for item in ('nofile', 'nproc'):
        assert rows[item]['how'] == 'probed' and rows[item]['gap'] == '', rows[item]
        want = 'pam_limits (%s:%s): %s:' % (PAM_SSHD, line, MANAGED)
        assert rows[item]['source'].startswith(want), rows[item]
    assert rows['nofile']['actual'] == '16384:16384'
    assert tree(host) == before
    assert leftovers(host) == ''


@pytest.fixture
def sshd_without_pam_limits(host):
    """/etc/pam.d/sshd with its pam_limits line commented out, restored byte for byte."""
    saved = host.file(PAM_SSHD).sha256sum
    host.check_output('cp -p %s /root/pam-sshd.saved' % PAM_SSHD)
    host.check_output(r"sed -i 's/^\(session\s\+required\s\+pam_limits.so\)/#\1/' %s" % PAM_SSHD)
    yield host.check_output('grep -n "^#session.*pam_limits" %s | cut -d: -f1' % PAM_SSHD)
    host.check_output('cp -p /root/pam-sshd.saved %s && rm /root/pam-sshd.saved' % PAM_SSHD)
    assert host.file(PAM_SSHD).sha256sum == saved


def test_without_pam_limits_in_sshds_stack_ssh_differs_from_login(host, module,
                                                                  sshd_without_pam_limits):
    before = tree(host)
    ok, result = module('gpufleet.tuning.effective_limits',
                        {'user': 'bob', 'contexts': ['login', 'ssh'], 'expect': PROFILE})
    assert ok and result['errors'] == [], result
    assert got(result, 'login') == EXPECTED
    own = sshd_limits(host)
    assert got(result, 'ssh') == dict((item, own[item]) for item in EXPECTED)
    assert got(result, 'ssh')['nofile'] != got(result, 'login')['nofile']
    assert 'nofile' in [g['item'] for g in result['gaps'] if g['context'] == 'ssh']
    rows = audit_rows(module, 'ssh')
    why = ('%s has no session line with pam_limits (%s:%s is commented out), so limits.conf '
           'does not apply to SSH sessions; inherited from sshd: ' % (
               PAM_SSHD, PAM_SSHD, sshd_without_pam_limits))
    assert rows['nofile']['source'].startswith(why), rows['nofile']
    assert 'soft' in rows['nofile']['gap']
    login = dict((r['item'], r) for r in module('gpufleet.tuning.limits_audit', {
        'user': 'bob', 'profile': PROFILE})[1]['rows'] if r['context'] == 'login')
    assert MANAGED in login['nofile']['source'] and login['nofile']['gap'] == ''
    assert tree(host) == before
    assert leftovers(host) == ''
