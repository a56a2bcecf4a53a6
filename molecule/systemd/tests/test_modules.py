"""Module behaviour on the node: info report, conflicts, guards, check and diff mode, absent."""
import pytest

from conftest import SYSTEM_DROPIN, UID, UNIT, UNIT_DROPIN, USER_DROPIN, as_user, checksums

MANAGED = [SYSTEM_DROPIN, USER_DROPIN, UNIT_DROPIN]
LATE = '/run/systemd/system.conf.d/99-late.conf'


def test_info_reports_configured_live_and_nothing_pending(module):
    ok, result, out = module('gpufleet.tuning.systemd_limits_info', {'units': ['gpufleet-sleeper']})
    assert ok, out
    manager = result['manager']
    assert manager['configured']['nofile'] == {
        'soft': 4096, 'hard': 16384, 'source': SYSTEM_DROPIN, 'line': 6,
        'value': 'DefaultLimitNOFILE=4096:16384'}
    assert manager['configured']['nproc']['hard'] == 8192       # ours beats 10-vendor.conf
    assert manager['files'][0] == '/etc/systemd/system.conf'
    assert manager['live']['nofile'] == {'soft': 4096, 'hard': 16384}
    unit = result['units'][UNIT]
    assert unit['configured']['nofile']['source'] == UNIT_DROPIN
    assert unit['live']['nofile'] == unit['process']['nofile'] == {'soft': 8192, 'hard': 12000}
    assert result['pending'] == []


def test_user_scope_info(module):
    ok, result, out = module('gpufleet.tuning.systemd_limits_info',
                             {'scope': 'user', 'user': 'trainer'})
    assert ok, out
    assert result['manager']['configured']['nofile']['source'] == USER_DROPIN
    assert result['manager']['live']['nofile'] == {'soft': 3000, 'hard': 12000}
    assert result['user_managers']['trainer']['nproc'] == {'soft': 4096, 'hard': 4096}
    assert result['pending'] == []


def test_info_shows_pending_before_reexec(host, module):
    host.check_output('mkdir -p /run/systemd/system.conf.d && printf "[Manager]\\n'
                      'DefaultLimitSIGPENDING=777\\n" > %s' % LATE)
    try:
        ok, result, out = module('gpufleet.tuning.systemd_limits_info', {'scope': 'system'})
        assert ok, out
        assert [(p['item'], p['configured'], p['action']) for p in result['pending']] == [
            ('sigpending', {'soft': 777, 'hard': 777}, 'systemctl daemon-reexec')]
    finally:
        host.check_output('rm -f %s' % LATE)


def test_conflict_fails_and_writes_nothing(host, module):
    host.check_output('mkdir -p /run/systemd/system.conf.d && printf "[Manager]\\n\\n'
                      'DefaultLimitNOFILE=2048\\n" > %s' % LATE)
    try:
        before = checksums(host, MANAGED)
        ok, result, out = module('gpufleet.tuning.systemd_limits', {
            'scope': 'system', 'limits': {'nofile': {'soft': 4096, 'hard': 16384}}})
        assert not ok
        assert '%s:3: DefaultLimitNOFILE=2048 overrides' % LATE in result['msg']
        assert result['conflicts'][0]['line'] == 3
        assert checksums(host, MANAGED) == before
        ok, result, out = module('gpufleet.tuning.systemd_limits', {
            'scope': 'system', 'on_conflict': 'warn',
            'limits': {'nofile': {'soft': 4096, 'hard': 16384}}})
        assert ok and not result['changed'], out
        assert 'overridden by files systemd reads later' in out
    finally:
        host.check_output('rm -f %s' % LATE)


@pytest.mark.parametrize('limits,message', [
    ({'nofile': 'unlimited'}, 'unlimited is not possible for nofile'),
    ({'nofile': 2000000}, 'above fs.nr_open'),
    ({'nofile': 30000}, 'above what this host lets systemd set'),
    ({'nofiles': 5}, 'unknown limit item'),
    ({'maxlogins': 5}, 'not a resource limit systemd can set'),
    ({'nproc': {'soft': 9000, 'hard': 100}}, 'soft 9000 is above hard 100'),
    ({'stack': '8 parsecs'}, 'is not a size'),
])
def test_guards_refuse_and_change_nothing(host, module, limits, message):
    before = checksums(host, MANAGED)
    for target in ({'scope': 'system'}, {'unit': 'gpufleet-sleeper'}):
        args = dict(target, limits=limits)
        ok, result, out = module('gpufleet.tuning.systemd_limits', args)
        assert not ok, out
        assert message in result['msg']
    assert checksums(host, MANAGED) == before


def test_check_and_diff_mode(host, module):
    before = checksums(host, MANAGED)
    ok, result, out = module('gpufleet.tuning.systemd_limits', {
        'unit': 'gpufleet-sleeper', 'limits': {'nofile': {'soft': 8192, 'hard': 12000},
                                               'memlock': '2MiB', 'cpu': '90min',
                                               'nproc': 9999}}, check=True, diff=True)
    assert ok and result['changed'], out
    assert '+LimitNPROC=9999' in out
    assert result['restart_required'] == [UNIT]
    assert checksums(host, MANAGED) == before


def test_unknown_and_masked_units_are_refused(host, module):
    ok, result, out = module('gpufleet.tuning.systemd_limits', {
        'unit': 'gpufleet-nowhere', 'limits': {'nofile': 5000}})
    assert not ok and 'unit: gpufleet-nowhere.service has no unit file' in result['msg'], out
    assert not host.file('/etc/systemd/system/gpufleet-nowhere.service.d').exists
    host.check_output('ln -sf /dev/null /etc/systemd/system/gpufleet-masked.service')
    try:
        ok, result, out = module('gpufleet.tuning.systemd_limits', {
            'unit': 'gpufleet-masked', 'limits': {'nofile': 5000}})
        assert not ok and 'unit: gpufleet-masked.service is masked' in result['msg'], out
    finally:
        host.check_output('rm -f /etc/systemd/system/gpufleet-masked.service')


def test_absent_removes_only_its_keys_then_the_file(host, module):
    scratch = '/etc/systemd/system/gpufleet-scratch.service.d/90-gpufleet-tuning.conf'
    host.check_output("printf '[Service]\\nExecStart=/bin/true\\n' "
                      "> /etc/systemd/system/gpufleet-scratch.service")
    ok, result, out = module('gpufleet.tuning.systemd_limits', {
        'unit': 'gpufleet-scratch', 'limits': {'nofile': 5000, 'nproc': 6000}})
    assert ok and result['changed'] and result['restart_required'] == [], out
    host.check_output('printf "# mine\\n" >> %s' % scratch)
    ok, result, out = module('gpufleet.tuning.systemd_limits', {
        'unit': 'gpufleet-scratch', 'state': 'absent', 'limits': {'nofile': None}})
    assert ok and result['changed'], out
    text = host.file(scratch).content_string
    assert 'LimitNOFILE' not in text and 'LimitNPROC=6000\n' in text and text.endswith('# mine\n')
    ok, result, out = module('gpufleet.tuning.systemd_limits', {
        'unit': 'gpufleet-scratch', 'state': 'absent'})
    assert ok and result['changed'], out
    assert not host.file(scratch).exists
    ok, result, out = module('gpufleet.tuning.systemd_limits', {
        'unit': 'gpufleet-scratch', 'state': 'absent'})
    assert ok and not result['changed'], out


def test_user_managers_are_read_as_systemctl_shows_them(host, module):
    """The modules read a user manager's defaults with ``systemctl --user show`` run as the
    user and list the running user managers with ``systemctl list-units`` (issue 31: never
    over systemd's private sockets); the report is what systemctl shows."""
    names = ['DefaultLimit%s%s' % (item, soft) for item in ('NOFILE', 'NPROC')
             for soft in ('', 'Soft')]
    shown = host.check_output(as_user('systemctl --user show --property=%s' % ','.join(names)))
    expected = dict(line.split('=', 1) for line in shown.splitlines())
    assert expected['DefaultLimitNOFILESoft'] == '3000'
    ok, result, out = module('gpufleet.tuning.systemd_limits_info',
                             {'scope': 'user', 'user': 'trainer'})
    assert ok, out
    live = result['user_managers']['trainer']
    assert live['nofile'] == {'soft': int(expected['DefaultLimitNOFILESoft']),
                              'hard': int(expected['DefaultLimitNOFILE'])}
    listed = host.check_output('systemctl list-units --type=service --state=running --plain '
                               '--no-legend --no-pager "user@*.service"')
    running = sorted(line.split()[0] for line in listed.splitlines())
    assert 'user@%d.service' % UID in running
