"""After converge: real login sessions get the profile, per domain class, and the file keeps
what we do not own."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit, UNLIMITED

MIB = 1024 * 1024
MANAGED = '/etc/security/limits.d/90-gpufleet-tuning.conf'

EXPECTED = {
    # alice: her own nofile line beats '*'; @data (10-site.conf, soft) and @data (ours, hard)
    # beat '*' for nproc; @ml gives memlock and stack.
    'alice': {'nofile': Limit(12000, 18000), 'nproc': Limit(2048, 9000),
              'memlock': Limit(4 * MIB, 8 * MIB), 'stack': Limit(16 * MIB, UNLIMITED)},
    'bob': {'nofile': Limit(16384, 16384), 'nproc': Limit(4096, 8192), 'core': Limit(0, UNLIMITED)},
    # carol: ml is her primary group
    'carol': {'nofile': Limit(16384, 16384), 'nproc': Limit(4096, 8192),
              'memlock': Limit(4 * MIB, 8 * MIB)},
    # root: only literal root lines apply (Debian/Ubuntu pam_limits)
    'root': {'nofile': Limit(16384, 16384), 'nproc': Limit(8192, 8192),
             'memlock': Limit(8 * MIB, 8 * MIB)},
}


@pytest.mark.parametrize('how', ['su', 'runuser'])
@pytest.mark.parametrize('user', sorted(EXPECTED))
def test_login_session_gets_profile(limits, user, how):
    got = limits(user, how)
    for item, expected in EXPECTED[user].items():
        assert got[item] == expected, '%s %s via %s: %r != %r' % (user, item, how, got[item],
                                                                  expected)


@pytest.mark.parametrize('user', sorted(EXPECTED))
def test_info_module_matches_login_session(module, limits, user):
    ok, result = module('gpufleet.tuning.pam_limits_info', {'user': user})
    assert ok, result
    got = limits(user)
    assert result['effective'], result
    for item, eff in result['effective'].items():
        for side in ('soft', 'hard'):
            if eff[side] is not None:
                assert getattr(got[item], side) == eff[side], (user, item, side, eff)
    assert result['root_wildcards'] is False


def test_foreign_lines_kept_byte_for_byte(host):
    managed = host.file(MANAGED)
    assert managed.content_string.startswith(
        '# written by hand before Ansible\n@data\thard\tnproc\t9000\n')
    assert managed.mode == 0o640
    assert host.file('/etc/security/limits.d/10-site.conf').content_string == (
        '# site policy\nbob\tsoft\tcore\t0\n@data soft nproc 2048\n')


def test_each_entry_is_two_lines(host):
    lines = [l.split() for l in host.file(MANAGED).content_string.splitlines()
             if l.strip() and not l.startswith('#')]
    assert ['*', 'soft', 'nofile', '16384'] in lines
    assert ['*', 'hard', 'nofile', '16384'] in lines
    assert ['@ml', 'hard', 'stack', 'unlimited'] in lines
    assert ['@ml', 'soft', 'memlock', '4096'] in lines
    assert not [l for l in lines if l[1] == '-']


def test_backup_written_once(host):
    backups = host.check_output('ls /etc/security/limits.d/ | grep -c "90-gpufleet-tuning.conf.*~" || true')
    assert backups.strip() == '1'
