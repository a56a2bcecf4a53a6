"""pam_limits as the oracle for cases ported from its source (tests/unit/plugins/module_utils/test_oracle_pam.py):
a real `su -` session of a user with a fully-qualified name (as SSSD or AD give them) gets what
pam_limits_info says, on values the readers once misread: text after the number, 0x, a sign,
overflows, sizes too large to scale, and '%' lines for items other than maxlogins."""
import base64

import pytest

from conftest import login_limits
from test_differential import expected_side
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

USER = 'dana@example.com'
LAYOUT = '\n'.join([
    '# pam_limits.c cases, read the way Linux-PAM 1.5 reads them',
    'dana@example.com soft nofile 4096 extra',
    'dana@example.com hard core 0x10',
    'dana@example.com soft stack 18014398509481983',
    'dana@example.com soft nproc 2000k',
    'dana@example.com soft sigpending +3000',
    'dana@example.com hard fsize 99999999999999999999999',
    'dana@example.com soft msgqueue -0',
    '% - nofile 5',
    '% - maxsyslogins 1',
    'dana soft nofile 1',
]) + '\n'
EXPECTED = {
    'nofile': ('soft', 4096), 'core': ('hard', 0), 'stack': ('soft', m.UNLIMITED),
    'nproc': ('soft', 2000), 'sigpending': ('soft', 3000), 'fsize': ('hard', m.UNLIMITED),
    'msgqueue': ('soft', 0),
}


@pytest.fixture(scope='module')
def oracle_user(host):
    host.check_output('tar -C /etc -cf /root/security-oracle.tar security')
    host.check_output("id '%s' || useradd --badname -m -s /bin/bash '%s'" % (USER, USER))
    host.check_output('rm -f /etc/security/limits.d/* && : > /etc/security/limits.conf')
    baseline = login_limits(host, "'%s'" % USER)
    host.check_output('echo %s | base64 -d > /etc/security/limits.d/50-oracle.conf'
                      % base64.b64encode(LAYOUT.encode()).decode())
    try:
        yield baseline
    finally:
        host.check_output('rm -rf /etc/security && tar -C /etc -xf /root/security-oracle.tar')
        host.run("userdel -r '%s'" % USER)


def test_we_read_what_pam_limits_c_reads(module, oracle_user):
    ok, result = module('gpufleet.tuning.pam_limits_info', {'user': USER})
    assert ok, result
    for item, (side, value) in EXPECTED.items():
        assert result['effective'][item][side] == value, item
    assert 'maxsyslogins' not in result.get('other', {})


def test_su_session_gets_what_info_says(host, module, oracle_user):
    ok, result = module('gpufleet.tuning.pam_limits_info', {'user': USER})
    assert ok, result
    got = login_limits(host, "'%s'" % USER)      # the session opens: maxsyslogins 1 is ignored
    for item, limit in got.items():
        if item in result['effective']:
            for side in ('soft', 'hard'):
                assert getattr(limit, side) == expected_side(
                    result['effective'][item], side, oracle_user[item]), (item, side)
        else:
            assert limit == oracle_user[item], item
