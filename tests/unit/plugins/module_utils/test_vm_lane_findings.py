"""Issue 43: what the VM lane (docs/vm-lane.md) found on a real kernel, as unit tests of the
limit model (each failed before its fix).

Debian 11 (kernel 5.10, systemd 247, 1.5 GiB VM): a context's live RLIMIT_MEMLOCK is 194146816
bytes (1/8 of the VM's memory, not a whole KiB; which context was not pinned down). With ``memlock: 64MiB`` in the profile the keep rule keeps that
higher value, and the pam context then refuses it as if the user had written it:
``pam: profile.memlock.soft: memlock of 194146816 bytes is not a whole number of KiB, which is
what limits.conf takes`` (tests/vm/run-lane.sh with VM_DISTROS=debian11, step tune-refused). A
kept value is no input of the user's: it could be written as the next whole KiB, which lowers
nothing: model/keep.whole rounds a kept value up to the unit limits.conf takes."""

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.keep import keep
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam.pam_limits_plan import (
    check_limit)

DEBIAN11_LIVE_MEMLOCK = 194146816  # bytes: MemTotal 1553174528 / 8, seen on the VM


def test_the_kept_debian11_memlock_is_not_a_whole_kib():
    assert DEBIAN11_LIVE_MEMLOCK % 1024 != 0


def test_a_kept_memlock_that_is_not_a_whole_kib_does_not_refuse_the_profile():
    asked = m.Limit(64 << 20, 64 << 20)
    current = m.Limit(DEBIAN11_LIVE_MEMLOCK, DEBIAN11_LIVE_MEMLOCK)
    limit, kept = keep('memlock', asked, (False, False), current, source='a context of the Debian 11 VM')
    assert [k.action for k in kept] == ['kept', 'kept']
    check_limit('profile.memlock', m.ITEMS['memlock'], limit)  # raised PlanError before
    assert limit.soft >= DEBIAN11_LIVE_MEMLOCK and limit.soft % 1024 == 0
    assert limit.soft - DEBIAN11_LIVE_MEMLOCK < 1024


def test_a_kept_cpu_time_is_a_whole_minute_and_unlimited_stays():
    limit, _kept = keep('cpu', m.Limit(3600, 3600), (False, False), m.Limit(3601, m.UNLIMITED))
    assert limit == m.Limit(3660, m.UNLIMITED)
