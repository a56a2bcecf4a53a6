"""Issue 39.1 on a real node: a plain profile value never lowers a login's side. A login's
soft nproc no limits line sets (what the login's opener passes on) is kept by a profile of a
lower nproc, and a site's `* 12000:18000` nofile stays 12000:18000 under a profile of nofile
8192 (it came out 12000:20000: root's inherited hard was written for `*`). The role's file and
limits.conf are moved aside for the test and put back as they were."""
import pytest

from conftest import FILES, USER, parse
from scenario_support import checksums, run_module

PAM = '/etc/security/limits.d/90-gpufleet-tuning.conf'
LIMITS_CONF = '/etc/security/limits.conf'
SAVED = '/root/keep-plain-saved'
SITE = '* soft nofile 12000\n* hard nofile 18000\n'


def login(host, user=USER):
    return parse(host.check_output("runuser -l %s -c 'cat /proc/self/limits'" % user))


@pytest.fixture
def untuned(host):
    """A node whose limits files set no nofile or nproc line (the role's file moved aside);
    everything put back afterwards, whatever the test did."""
    before = checksums(host, FILES + [LIMITS_CONF])
    host.check_output('rm -rf %s && mkdir -p %s && cp -a %s %s/ && cp -a %s %s/ && rm -f %s'
                      % (SAVED, SAVED, PAM, SAVED, LIMITS_CONF, SAVED, PAM))
    try:
        # pam_limits reads limits.conf and limits.d/*.conf only (backups~ are not read)
        lines = host.check_output("grep -hE '^[^#]*(nofile|nproc)' %s "
                                  "/etc/security/limits.d/*.conf 2>/dev/null || true"
                                  % LIMITS_CONF)
        assert lines.strip() == '', lines
        yield
    finally:
        host.check_output('cp -a %s/%s %s && cp -a %s/limits.conf %s && rm -rf %s'
                          % (SAVED, PAM.rsplit('/', 1)[1], PAM, SAVED, LIMITS_CONF, SAVED))
    assert checksums(host, FILES + [LIMITS_CONF]) == before


def tune(host, profile):
    ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile',
                                    dict(profile=profile, contexts=['pam']))
    assert ok, output
    return result


def test_a_login_keeps_the_soft_nproc_it_inherits(host, untuned):
    before = login(host)['nproc']
    print('login nproc before: %s:%s' % (before.soft, before.hard))
    assert before.soft == 'unlimited' or before.soft > 4096, before
    result = tune(host, {'nproc': 4096})
    after = login(host)['nproc']
    print('login nproc after a profile of nproc 4096: %s:%s' % (after.soft, after.hard))
    print(host.file(PAM).content_string if host.file(PAM).exists else '(no file written)')
    assert after == before
    assert [k['action'] for k in result['limits_kept'] if k['item'] == 'nproc'] and all(
        k['action'] == 'kept' for k in result['limits_kept'] if k['item'] == 'nproc')


def test_a_site_value_a_login_already_has_stays(host, untuned):
    host.check_output("printf '%s' >> %s" % (SITE, LIMITS_CONF))
    before = login(host)['nofile']
    print('login nofile before: %s:%s' % (before.soft, before.hard))
    assert (before.soft, before.hard) == (12000, 18000)
    tune(host, {'nofile': 8192})
    after = login(host)['nofile']
    print('login nofile after a profile of nofile 8192: %s:%s' % (after.soft, after.hard))
    written = host.file(PAM).content_string if host.file(PAM).exists else ''
    print(written or '(no file written)')
    assert (after.soft, after.hard) == (12000, 18000)
    # the collection's line holds the site's values (an earlier line cannot take them away)
    assert [line.split() for line in written.splitlines() if line.startswith('*')] == [
        ['*', 'soft', 'nofile', '12000'], ['*', 'hard', 'nofile', '18000']], written
