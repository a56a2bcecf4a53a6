"""Item kinds (contexts/kinds.py): each kind compares, keeps and floors through the one function
that already decides, and the contexts declare the kinds they carry."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import kinds
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings

UNL = m.UNLIMITED


def test_rlimit_compares_per_side_unlimited_above_all():
    rl = kinds.get('rlimit')
    assert rl.below(m.Limit(1024, 4096), m.Limit(1024, 8192))
    assert not rl.below(m.Limit(UNL, UNL), m.Limit(1 << 40, 1 << 40))
    assert rl.below(m.Limit(4096, UNL), m.Limit(8192, 8192))
    assert not rl.below(None, m.Limit(1, 1))


def test_rlimit_keep_is_model_keep():
    rl = kinds.get('rlimit')
    limit, kept = rl.keep('nofile', m.Limit(16384, 16384), (False, False), m.Limit(1024, 524288))
    assert (limit.soft, limit.hard) == (16384, 524288)
    assert [k.action for k in kept] == ['kept']
    # a named side is written as asked
    limit, kept = rl.keep('nofile', m.Limit(16384, 16384), (False, True), m.Limit(1024, 524288))
    assert limit.hard == 16384 and kept[0].action == 'lowered'


def test_floors_come_from_their_one_place():
    assert kinds.get('rlimit').floor('nofile')[0] == 1024
    assert kinds.get('rlimit').floor('core') == (None, None)
    assert kinds.get('core').floor('core') == (None, None)
    assert kinds.get('pids').floor('pids') == pids.FLOOR
    assert kinds.get('sysctl').floor('fs.nr_open')[0] == 64
    assert kinds.get('sysctl').floor('net.core.somaxconn') == (None, None)


def test_pids_max_above_all_and_percentages_resolved():
    pk = kinds.get('pids')
    assert pk.below(4096, UNL)
    assert not pk.below(UNL, 10 ** 6)
    value = pids.parse_profile_value('50%')
    # 15% of 100000 is below 50%: write; 60000 holds it: keep what is there
    assert pk.keep(value, pids.TasksMax(permyriad=1500), 100000) is value
    assert pk.keep(value, pids.TasksMax(count=60000), 100000) is None
    assert pk.keep(value, None, 100000) is value


def test_sysctl_is_a_minimum():
    sk = kinds.get('sysctl')
    want = sysctl_plan.Want('sysctl.vm.max_map_count', 'vm/max_map_count', 262144, False)
    assert sk.keep(want, 1048576, None)[:2] == (1048576, 'kept')
    assert sk.keep(want, 65530, None)[:2] == (262144, 'written')
    assert sk.below(65530, 262144) and not sk.below(None, 1)


def test_kind_of():
    assert kinds.kind_of('pids') == 'pids'
    assert kinds.kind_of('vm.max_map_count') == 'sysctl'
    assert kinds.kind_of('nofile') == 'rlimit'


def test_findings_use_the_kind_names():
    assert tuple(findings.KINDS) == kinds.NAMES


def test_contexts_declare_their_kinds():
    for record in registry.REGISTRY:
        assert 'rlimit' in record.kinds or record.kinds == ()
        assert set(record.kinds) <= set(kinds.NAMES), record
    carriers = sorted(c.probe for c in registry.REGISTRY if 'pids' in c.kinds and c.probe)
    assert carriers == ['docker', 'login', 'podman', 'service', 'slurm_job', 'user_manager']


class FakeProber(object):
    """Answers the chain command with one cgroup; records what ran."""

    def __init__(self):
        self.ran = []

    def run(self, command):
        self.ran.append(command)
        if command[:2] == ['systemctl', 'show']:
            return '0\n'
        return 'cgroup /system.slice/x.service\npids.max /system.slice 4096\n'


def test_the_pids_audit_asks_the_records_that_carry_pids(monkeypatch):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_audit
    prober = FakeProber()
    chain = pids_audit.probe_chain(prober, registry.PAM.probe, 'trainer', 1000, {})
    assert chain.effective == 4096 and prober.ran[0][-1] == cgroups.CHAIN_COMMAND
    # a unit's main process (none: MainPID 0)
    with pytest.raises(probe_results.ProbeError, match='has no main process'):
        pids_audit.probe_chain(prober, registry.UNIT_PREFIX + 'x.service', 'trainer', 1000, {})
    # ssh and k8s_pod carry no pids: not covered, and nothing ran
    for record in registry.REGISTRY:
        if record.probe and 'pids' not in record.kinds:
            with pytest.raises(pids_audit.NotCovered):
                pids_audit.probe_chain(prober, record.probe, 'trainer', 1000, {})
    assert len(prober.ran) == 2
    # a record that stops carrying pids is no longer probed for it: nothing else names it
    monkeypatch.setattr(type(registry.PAM), 'kinds', ('rlimit',))
    with pytest.raises(pids_audit.NotCovered):
        pids_audit.probe_chain(prober, registry.PAM.probe, 'trainer', 1000, {})


def test_the_pids_setter_asks_the_records():
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_set
    carriers = sorted(c.name or 'units' for c in registry.REGISTRY if pids_set.carries(c))
    assert carriers == ['podman', 'systemd_system', 'systemd_user', 'units']
    slice_for = sorted(c.name for c in registry.REGISTRY if c.pids_user_slice)
    assert slice_for == ['pam', 'systemd_user']
