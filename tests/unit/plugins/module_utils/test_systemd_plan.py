"""The systemd_limits module's request parsing, guards and conflict detection."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sc
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_precedence as sp)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan as mod

U = m.UNLIMITED
L = m.Limit


class FakeCeiling(object):
    def __init__(self, nr_open=1048576, pid1_hard=None):
        self.nr_open = nr_open
        self.pid1_hard = pid1_hard

    def hard_ceiling(self, item):
        if self.pid1_hard is None:
            return None, None
        return self.pid1_hard, 'PID 1 runs with hard %d' % self.pid1_hard


def test_parse_request_converts_profile_values():
    request = mod.parse_request({'nofile': {'soft': 4096, 'hard': 16384}, 'memlock': '64MiB',
                                 'stack': 'unlimited', 'cpu': 100}, 'present')
    assert request == {'nofile': L(4096, 16384), 'memlock': L(64 * 1024 ** 2, 64 * 1024 ** 2),
                       'stack': L(U, U), 'cpu': L(6000, 6000)}


@pytest.mark.parametrize('limits,message', [
    ({'nofiles': 5}, r'limits.nofiles: unknown limit item'),
    ({'maxlogins': 5}, r'limits.maxlogins: .*not a resource limit systemd can set'),
    ({'nofile': {'soft': 10000}}, r'limits.nofile: systemd needs both soft and hard'),
    ({'nofile': 0}, r'limits.nofile: soft nofile 0 is below the floor 1024, which is never written'),
    ({'nproc': {'soft': 9000, 'hard': 100}}, r'limits.nproc: soft 9000 is above hard 100'),
    ({}, r'limits: required'),
])
def test_parse_request_refuses(limits, message):
    with pytest.raises(m.LimitError, match=message):
        mod.parse_request(limits, 'present')


def test_parse_request_absent_takes_names():
    assert mod.parse_request({'nofile': None, 'MEMLOCK': 1}, 'absent') == ['nofile', 'memlock']
    assert mod.parse_request(None, 'absent') is None


def test_guards():
    errors, warnings = mod.check_guards({'nofile': L(U, U)}, FakeCeiling(), False)
    assert 'unlimited is not possible' in errors[0] and not warnings
    errors, unused = mod.check_guards({'nofile': L(1024, 2000000)}, FakeCeiling(), False)
    assert 'above fs.nr_open (1048576)' in errors[0]
    errors, unused = mod.check_guards({'nproc': L(10, 30000)}, FakeCeiling(pid1_hard=20000), False)
    assert 'set force=true' in errors[0]
    errors, warnings = mod.check_guards({'nproc': L(10, 30000)}, FakeCeiling(pid1_hard=20000),
                                        True)
    assert not errors and 'force=true' in warnings[0]
    # force never lifts the nr_open guard
    errors, unused = mod.check_guards({'nofile': L(1, 2000000)}, FakeCeiling(pid1_hard=20000), True)
    assert errors
    assert mod.check_guards({'nofile': L(1024, 16384)}, FakeCeiling(pid1_hard=20000),
                            False) == ([], [])


def test_conflicts_name_file_and_line(tmp_path):
    root = str(tmp_path)
    late = root + '/run/systemd/system.conf.d/99-late.conf'
    import os
    os.makedirs(os.path.dirname(late))
    with open(late, 'w') as handle:
        handle.write('[Manager]\n\nDefaultLimitNOFILE=2048\nDefaultLimitNPROC=4096\n')
    mine = sdpaths.dropin_path('system')
    request = {'nofile': L(4096, 16384), 'nproc': L(4096, 4096), 'core': L(0, 0)}
    text = sc.plan_edit(None, 'Manager', 'DefaultLimit', request, 'present')
    resolution = sp.resolve_manager('system', root=root, overlay={mine: text}, extra=mine)
    conflicts = mod.find_conflicts(request, resolution, mine)
    assert [(c['item'], c['path'], c['line']) for c in conflicts] == [
        ('nofile', '/run/systemd/system.conf.d/99-late.conf', 3)]
    assert 'overrides the requested nofile 4096:16384' in conflicts[0]['reason']
    assert mod.expected_values(request, resolution)['nofile'] == L(2048, 2048)
