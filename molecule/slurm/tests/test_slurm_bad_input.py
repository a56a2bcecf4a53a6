"""slurm.conf input Slurm would refuse: limits_profile (and the role) fail with a message
naming file:line, before anything is written or restarted. Where slurmd stops at once on the
same file, slurmd is the oracle for the line number."""
import pytest

from conftest import SLURM_CONF, main_pid, watched

# (case, text appended to slurm.conf, extra files, what the message must contain, slurmd's)
# The cases slurmd is the oracle for, and the glob Include. A missing Include, both
# PropagateResourceLimits options and a bad line in an included file are in the reliability
# suite's bad-input table (molecule/reliability/tests/test_bad_input.py), which needs no
# running Slurm.
CASES = [
    ('unparsable-line', 'ThisIsNot a slurm line\n', {},
     ['/etc/slurm/slurm.conf:18: cannot read'], 'Parse error in file /etc/slurm/slurm.conf line 18'),
    ('leftover-after-value', 'MaxJobCount=5000 oops\n', {},
     ['/etc/slurm/slurm.conf:18: cannot read \'oops\' after MaxJobCount=5000'],
     'Parse error in file /etc/slurm/slurm.conf line 18'),
    ('glob-include', 'Include conf.d/*.conf\n', {'/etc/slurm/conf.d/a.conf': 'MaxJobCount=5\n'},
     ['/etc/slurm/slurm.conf:18: Include conf.d/*.conf: Slurm does not expand globs'], None),
    ('unknown-rlimit-name', 'PropagateResourceLimitsExcept=NOFILE,FILES\n', {},
     ["/etc/slurm/slurm.conf:18: PropagateResourceLimitsExcept=NOFILE,FILES: 'FILES' is not a "
      'limit Slurm knows'], 'Bad rlimit name: FILES'),
]


def set_up(host, appended, extra):
    host.check_output("printf '%%s' '%s' >> %s" % (appended, SLURM_CONF))
    for path, text in extra.items():
        host.check_output("mkdir -p $(dirname %s) && printf '%%s' '%s' > %s" % (path, text, path))


@pytest.mark.parametrize('case,appended,extra,expected,oracle', CASES, ids=[c[0] for c in CASES])
def test_limits_profile_refuses_and_writes_nothing(host, module, pristine_slurm, case, appended,
                                                   extra, expected, oracle):
    set_up(host, appended, extra)
    before, pid = watched(host), main_pid(host)
    # nofile 12288 would change slurmd's drop-in: the refusal must come before that write
    ok, result, out = module('gpufleet.tuning.limits_profile', dict(
        profile={'nofile': 12288}, contexts=['slurm'], backup=True))
    assert not ok, result
    for text in expected:
        assert text in result['msg'], (case, result['msg'])
    assert 'nothing written' in result['msg']
    assert watched(host) == before
    assert main_pid(host) == pid
    if oracle:
        slurmd = host.run('timeout 10 slurmd -D -f %s' % SLURM_CONF)
        assert slurmd.rc != 0 and oracle in slurmd.stderr, (case, slurmd.stderr)


def test_the_role_refuses_before_any_write_or_restart(host, pristine_slurm):
    from scenario_support import run_playbook
    set_up(host, 'ThisIsNot a slurm line\n', {})
    before, pid = watched(host), main_pid(host)
    playbook = '/tmp/gpufleet-slurm-bad.yml'
    with open(playbook, 'w') as handle:
        handle.write('- hosts: all\n  gather_facts: false\n  roles:\n'
                     '    - role: gpufleet.tuning.limits\n      vars:\n'
                     '        limits_profile: {nofile: 12288}\n'
                     '        limits_contexts: [slurm]\n        limits_verify_user: trainer\n')
    rc, out = run_playbook(host, playbook)
    assert rc != 0
    assert '/etc/slurm/slurm.conf:18: cannot read' in out
    assert watched(host) == before and main_pid(host) == pid
