"""Warnings a fleet can read (issue 39 item 3): on a node whose site lines give logins more than
the profile, limits_profile keeps those sides and warns about none of them (they are records of
``limits_kept``, each citing the line that sets its side); a side the profile names and lowers is
warned on the run that lowers it; an idempotent rerun warns about nothing."""
import re

from conftest import checksums

SITE = '/etc/security/limits.d/50-site.conf'
MANAGED = '/etc/security/limits.d/90-gpufleet-tuning.conf'
ARGS = {'contexts': ['pam'], 'domains': ['*', 'root']}


def warnings_in(result):
    """The module's warnings as ansible printed them ('[WARNING]: ...'), without ansible's own
    (deprecations, interpreter discovery)."""
    found = re.findall(r'\[WARNING\]: (.*?)(?= \[(?:DEPRECATION )?WARNING\]: '
                       r'| \S+ \| (?:CHANGED|SUCCESS|FAILED)|$)', result['output'])
    found = [re.sub(r'^\S+: (?=\w+: )', '', w) for w in found]   # 'NODE: pam: ...'
    return [w for w in found if not w.startswith(('Deprecation warnings', "Host '"))]


def fresh_node_with_site_lines(host):
    """A node before its first tune (no managed file) whose site file gives every login, root's
    included, nofile 12000:18000: more than the profile asks; and a line for a group the node
    does not have (pam_limits finds no such group: the line applies to no user)."""
    host.check_output("rm -f %s && printf '* soft nofile 12000\\n* hard nofile 18000\\n"
                      "root soft nofile 12000\\nroot hard nofile 18000\\n"
                      "@gpufleet-no-such-group hard nofile 1024\\n' > %s" % (MANAGED, SITE))
    assert host.run('getent group gpufleet-no-such-group').rc == 2


def test_kept_sides_are_no_warning_and_a_rerun_warns_nothing(host, module, pristine_security):
    fresh_node_with_site_lines(host)
    ok, result = module('gpufleet.tuning.limits_profile', dict(ARGS, profile={'nofile': 8192}))
    assert ok, result['output']
    kept = dict(((k['side'], k['source']), k) for k in result['limits_kept'])
    # each side of each domain cites its own line (the hard side cited the soft line before;
    # `*` and root are kept each at its own, issue 39.1)
    assert sorted(kept) == [('hard', SITE + ':2'), ('hard', SITE + ':4'), ('soft', SITE + ':1'),
                            ('soft', SITE + ':3')], result['limits_kept']
    assert all(k['action'] == 'kept' for k in kept.values())
    assert kept[('hard', SITE + ':2')]['message'] == (
        "hard nofile 18000 kept: the node already has 18000 (%s:2), above the profile's 8192 "
        "(name hard in the profile to lower it)" % SITE)
    # no warning at all: not the kept sides, nor the line of a group the node lacks, which
    # is no override of anyone (issue 39.4)
    assert warnings_in(result) == [], result['output']
    assert result['overrides'] == [], result['overrides']
    assert host.check_output("su - bob -c 'ulimit -Sn; ulimit -Hn'").split() == ['12000', '18000']

    before = checksums(host, [MANAGED, SITE])
    ok, again = module('gpufleet.tuning.limits_profile', dict(ARGS, profile={'nofile': 8192}))
    assert ok and again['changed'] is False, again['output']
    assert checksums(host, [MANAGED, SITE]) == before
    assert warnings_in(again) == [], again['output']
    # the kept sides are still listed, now from the managed file's own lines
    assert sorted((k['side'], k['action']) for k in again['limits_kept']) == [
        ('hard', 'kept'), ('hard', 'kept'), ('soft', 'kept'), ('soft', 'kept')], \
        again['limits_kept']


def test_a_named_side_lowered_is_warned_once(host, module, pristine_security):
    fresh_node_with_site_lines(host)
    named = dict(ARGS, profile={'nofile': {'soft': 8192, 'hard': 16000}})
    ok, result = module('gpufleet.tuning.limits_profile', named)
    assert ok, result['output']
    said = warnings_in(result)
    assert ('pam: hard nofile lowered from 18000 (%s:2) to 16000, as the profile names it'
            % SITE) in said, said
    assert ('pam: soft nofile lowered from 12000 (%s:1) to 8192, as the profile names it'
            % SITE) in said, said
    # root's own lines (3, 4) are lowered too, each said once
    assert ('pam: hard nofile lowered from 18000 (%s:4) to 16000, as the profile names it'
            % SITE) in said, said
    assert len([w for w in said if 'lowered' in w]) == 4, said
    # the site lines the managed file now overrides, said on this run (issue 17.4)
    assert ('pam: %s:2 (* hard nofile 18000) is read earlier: * now gets hard nofile 16000'
            % SITE) in said, said
    assert host.check_output("su - bob -c 'ulimit -Sn; ulimit -Hn'").split() == ['8192', '16000']

    ok, again = module('gpufleet.tuning.limits_profile', named)
    assert ok and again['changed'] is False, again['output']
    assert warnings_in(again) == [], again['output']
    assert again['limits_kept'] == [], again['limits_kept']
