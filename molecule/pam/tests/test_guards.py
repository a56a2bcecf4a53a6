"""Every guard fails with a message that names the problem, and no file changes."""
import pytest

from conftest import checksums

MANAGED = '/etc/security/limits.d/90-gpufleet-tuning.conf'
FILES = ['/etc/security/limits.conf', '/etc/security/limits.d/10-site.conf', MANAGED]

GUARDS = [
    ('nofile unlimited', [{'domain': '*', 'item': 'nofile', 'value': 'unlimited'}],
     'nofile cannot be unlimited'),
    ('nofile -1', [{'domain': 'root', 'item': 'nofile', 'soft': 1024, 'hard': -1}],
     'nofile cannot be unlimited'),
    ('above fs.nr_open', [{'domain': '*', 'item': 'nofile', 'value': 2000000}],
     'above fs.nr_open (1048576)'),
    ('above PID 1 hard without CAP_SYS_RESOURCE',
     [{'domain': '*', 'item': 'nofile', 'value': 30000}],
     'above what login services can set here (20000, the host lacks CAP_SYS_RESOURCE'),
    ('memlock unlimited above PID 1 hard', [{'domain': '@ml', 'item': 'memlock', 'value': 'unlimited'}],
     'hard memlock unlimited is above what login services can set here'),
    ('unknown item', [{'domain': '*', 'item': 'nofiles', 'value': 1}],
     "limits[0].item: unknown limit item 'nofiles'"),
    ('malformed domain', [{'domain': 'ali ce', 'item': 'nofile', 'value': 1}],
     'limits[0].domain'),
    ('malformed range', [{'domain': '10:x', 'item': 'nofile', 'value': 1}],
     'limits[0].domain: range'),
    ('soft above hard', [{'domain': '*', 'item': 'nproc', 'soft': 9000, 'hard': 100}],
     'soft 9000 is above hard 100'),
    ('bad size', [{'domain': '*', 'item': 'stack', 'value': '8 parsecs'}],
     "limits[0].value: '8 parsecs' is not a size"),
]


@pytest.mark.parametrize('name,limits,message', GUARDS, ids=[g[0] for g in GUARDS])
def test_guard_refuses_and_changes_nothing(host, module, name, limits, message):
    before = checksums(host, FILES)
    ok, result = module('gpufleet.tuning.pam_limits', {'limits': limits})
    assert not ok, result
    assert message in result['msg'], result['msg']
    assert checksums(host, FILES) == before


def test_force_writes_above_ceiling_with_warning(host, module, pristine_security):
    ok, result = module('gpufleet.tuning.pam_limits', {
        'path': '/etc/security/limits.d/91-forced.conf', 'force': True,
        'limits': [{'domain': 'bob', 'item': 'nofile', 'value': 30000}]})
    assert ok and result['changed'], result
    assert 'force=true' in result['output'], result['output']
    # and this is why the guard exists: Debian's PAM silently drops every limit of bob's session
    got = host.check_output("su - bob -c 'ulimit -Hn'")
    assert got.strip() != '30000'


def test_conflicting_later_file_fails_and_names_it(host, module, pristine_security):
    host.check_output("printf '* hard nofile 5000\\n' > /etc/security/limits.d/95-later.conf")
    before = checksums(host, FILES)
    ok, result = module('gpufleet.tuning.pam_limits', {
        'limits': [{'domain': '*', 'item': 'nofile', 'value': 12345}]})
    assert not ok
    # issue 39.4: the line, the domain and the item on both sides
    assert ('/etc/security/limits.d/95-later.conf:1 sets * hard nofile 5000 later in pam_limits '
            'order, over the requested * hard nofile 12345') in result['msg'], result['msg']
    assert result['conflicts'][0]['path'] == '/etc/security/limits.d/95-later.conf'
    assert checksums(host, FILES) == before
    ok, result = module('gpufleet.tuning.pam_limits', {
        'on_conflict': 'warn', 'limits': [{'domain': '*', 'item': 'nofile', 'value': 12345}]})
    assert ok and result['changed'], result
    assert '95-later.conf:1' in result['output']


def test_invalid_foreign_lines_are_reported_not_fatal(host, module, pristine_security):
    host.check_output("printf 'not-a-limit-line\\n* soft bogus 1\\n' >> /etc/security/limits.conf")
    ok, result = module('gpufleet.tuning.pam_limits', {
        'limits': [{'domain': '*', 'item': 'nofile', 'value': 16384}]})
    assert ok, result
    problems = [(i['path'], i['problem']) for i in result['invalid']]
    assert ('/etc/security/limits.conf',
            'expected "<domain> <type> <item> <value>", found 1 field') in problems, problems
    assert any('unknown item' in m for p, m in problems), problems


def test_check_mode_with_changes_writes_nothing(host, module):
    before = checksums(host, FILES)
    ok, result = module('gpufleet.tuning.pam_limits', {
        'limits': [{'domain': '*', 'item': 'nofile', 'value': 4242}]}, check=True)
    assert ok and result['changed'], result
    assert checksums(host, FILES) == before


def test_wildcard_without_root_warns(module, pristine_security):
    ok, result = module('gpufleet.tuning.pam_limits', {
        'path': '/etc/security/limits.d/92-w.conf',
        'limits': [{'domain': '*', 'item': 'sigpending', 'value': 4096}]})
    assert ok, result
    assert 'do not apply to root' in result['output']
