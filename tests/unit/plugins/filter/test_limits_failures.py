"""The limits role's failure table (roles/limits/tasks/failed.yml, issue 31.10): every row of
the verification's gaps carries its cause, the file:line that the limits_profile call named
for that context and item (the lines its warnings name), from what it returned."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.filter import limits_failures as lf
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import gap_sources

PAM = '/etc/security/limits.d/90-gpufleet-tuning.conf'
SITE = '/etc/security/limits.d/10-site.conf'
LATE = '/etc/security/limits.d/99-late.conf'
SYSTEM = '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'
USERCONF = '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf'
LATER = '/etc/systemd/system.conf.d/99-vendor.conf'
OVERRIDE = ('%s:1 (user) overrides * for the users it matches: trainer gets soft nofile 2048 '
            'instead of 12288' % SITE)

# What limits_profile returns (per_context: each planner's result; probes: its probe map).
PROFILE_RESULT = {
    'probes': [{'context': 'pam', 'probe': 'login', 'image': None},
               {'context': 'systemd_system', 'probe': 'service', 'image': None},
               {'context': 'systemd_user', 'probe': 'user_manager', 'image': None},
               {'context': 'docker', 'probe': 'docker', 'image': 'docker_image'}],
    'per_context': {
        'pam': {
            'path': PAM, 'changed': True,
            'entries': [{'domain': '*', 'item': 'nofile', 'soft': 12288, 'hard': 12288}],
            'overrides': [{'path': SITE, 'line': 1, 'domain': 'trainer', 'type': 'soft',
                           'item': 'nofile', 'value': '2048', 'kind': 'narrower',
                           'reason': OVERRIDE}],
            'conflicts': [{'path': LATE, 'line': 3, 'domain': '*', 'type': 'hard',
                           'item': 'memlock', 'value': '64',
                           'reason': '%s:3 sets hard 64 later in pam_limits order' % LATE}],
            'replaced': [{'path': SITE, 'line': 4, 'item': 'nproc', 'kind': 'replaced',
                          'reason': 'read earlier'}],
            'invalid': [{'path': SITE, 'line': 5, 'text': 'trainer hard nofle 4096',
                         'problem': 'unknown item nofle'}]},
        'systemd_system': {
            'path': SYSTEM, 'changed': True,
            'configured': {'nofile': {'soft': 4096, 'hard': 4096, 'source': LATER, 'line': 2,
                                      'value': 'DefaultLimitNOFILE=4096'},
                           'nproc': {'soft': 8192, 'hard': 8192, 'source': SYSTEM, 'line': 3,
                                     'value': 'DefaultLimitNPROC=8192'}},
            'conflicts': [{'item': 'nofile', 'path': LATER, 'line': 2,
                           'value': 'DefaultLimitNOFILE=4096',
                           'reason': '%s:2: DefaultLimitNOFILE=4096 overrides the requested '
                                     'nofile 12288' % LATER}],
            'invalid': [{'path': LATER, 'line': 4, 'key': 'DefaultLimitMEMLOCK', 'value': '8X',
                         'problem': 'bad value; systemd ignores it'}]},
        'systemd_user': {'path': USERCONF, 'changed': True, 'configured': {}, 'conflicts': [],
                         'invalid': []},
        'docker': {'path': '/etc/docker/daemon.json', 'changed': True},
        'unit:slurmd.service': {
            'path': '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf',
            'configured': {'nofile': {'soft': 65536, 'hard': 65536, 'line': 2,
                                      'source': '/etc/systemd/system/slurmd.service.d/'
                                                '90-gpufleet-tuning.conf',
                                      'value': 'LimitNOFILE=65536'}}},
    },
}


def gap(context, item, actual=(2048, 2048), expected=(12288, 12288), sides=('soft', 'hard')):
    return dict(context=context, item=item, sides=list(sides),
                actual=dict(soft=actual[0], hard=actual[1]),
                expected=dict(soft=expected[0], hard=expected[1]))


@pytest.mark.parametrize('context, item, cause', [
    # a narrower limits line that wins for the user (the warning above the table names it)
    ('login', 'nofile', OVERRIDE),
    # the user manager's own PAM session applies the same line
    ('user_manager', 'nofile', OVERRIDE),
    # a later line in pam_limits order
    ('login', 'memlock', '%s:3 sets hard 64 later in pam_limits order' % LATE),
    # a later system.conf.d file that systemd takes the value from
    ('service', 'nofile', '%s:2: DefaultLimitNOFILE=4096 overrides the requested nofile 12288'
     % LATER),
    # a line systemd skips
    ('service', 'memlock', '%s:4: bad value; systemd ignores it' % LATER),
    # no line overrides the profile's: where systemd takes it from, with the line
    ('service', 'nproc', '%s:3 (DefaultLimitNPROC=8192)' % SYSTEM),
    ('unit:slurmd.service', 'nofile',
     '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf:2 (LimitNOFILE=65536)'),
    # else the profile's own file
    ('docker', 'nofile', "/etc/docker/daemon.json (the profile's file; no later line "
                         "overrides it)"),
    ('login', 'nproc', "%s (the profile's file; no later line overrides it)" % PAM),
    # a context the call returned nothing for
    ('podman', 'nofile', gap_sources.UNKNOWN),
])
def test_each_gap_has_its_cause(context, item, cause):
    assert gap_sources.source(context, item, PROFILE_RESULT) == cause


def test_every_row_of_the_failure_table_carries_its_source():
    gaps = [gap('login', 'nofile'), gap('user_manager', 'nofile'),
            gap('service', 'nofile', actual=(4096, 4096)), gap('docker', 'nofile')]
    table = lf.limits_failure_table(gaps, PROFILE_RESULT, ['docker'])
    lines = table.splitlines()
    assert lines[0].split() == ['context', 'item', 'expected', 'actual', 'below', 'source']
    assert len(lines) == 1 + len(gaps)
    # the columns the Molecule scenarios read stay as they were, the source after them
    assert ' '.join(lines[1].split()).startswith(
        'login nofile 12288:12288 2048:2048 soft+hard %s:1 (user) overrides *' % SITE)
    assert ' '.join(lines[2].split()).startswith(
        'user_manager nofile 12288:12288 2048:2048 soft+hard %s:1' % SITE)
    assert ' '.join(lines[3].split()).startswith(
        'service nofile 12288:12288 4096:4096 soft+hard %s:2: DefaultLimitNOFILE=4096' % LATER)
    assert ' '.join(lines[4].split()).startswith(
        'docker nofile 12288:12288 2048:2048 soft+hard (pending restart) /etc/docker/daemon.json')
    # every row names a file
    assert all('/etc/' in line for line in lines[1:])


def test_the_table_without_a_profile_result_or_gaps():
    lines = lf.limits_failure_table([gap('login', 'nofile')], None).splitlines()
    assert lines[1].endswith(gap_sources.UNKNOWN)
    assert lf.limits_failure_table([], PROFILE_RESULT) == ''
    with pytest.raises(AnsibleFilterError, match='expects the verification'):
        lf.limits_failure_table('login nofile', PROFILE_RESULT)


def test_the_filter_is_registered():
    assert lf.FilterModule().filters()['limits_failure_table'] is lf.limits_failure_table
