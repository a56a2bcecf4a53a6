# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Item kinds: what kind of value an item is, declared once (issue 40). A kind says

* how it compares (``below(actual, wanted)``: is what a new process gets short of what was
  asked; ``unlimited``/``max`` is above every number);
* its keep rule (``keep(...)``: a plain profile value is a minimum, never lower what a new
  process gets now);
* its floor (``floor(name)``: (lowest value ever written, why), or (None, None)).

Each kind calls the one function that already decides (model/keep.py, model/pids.py,
model/floors.py, host/sysctl_conf.py, kernel/sysctl_plan.py, systemd/core_dumps.py); nothing
is judged twice. A context declares the kinds it carries (``Context.kinds``,
contexts/_base.py). The findings (reports/findings.py KINDS) use the same names. It lives
beside the registry of contexts (the layer above every technology whose judgement it names:
scripts/module_utils_graph.py LAYERS).

Private to the collection (no public API)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import floors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import items
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import keep as keep_rule
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import core_dumps

RLIMIT, PIDS, SYSCTL, CORE, SHM = 'rlimit', 'pids', 'sysctl', 'core', 'shm'


class Kind(object):
    """One item kind. Subclasses declare how it compares (``below``), its keep rule
    (``keep``: its arguments are the kind's own evidence) and its floor."""

    name = None

    def below(self, actual, wanted):
        """Is ``actual`` (what a new process gets) short of ``wanted``? Unknown is not short."""
        raise NotImplementedError

    def floor(self, name):
        """(the lowest value ever written for item ``name``, why), or (None, None)."""
        return None, None

    def __repr__(self):
        return 'Kind(%r)' % self.name


class Rlimit(Kind):
    """A resource limit: per side soft and hard, ``unlimited`` above all (items.exceeds); a
    side not named in the profile is never lowered (model/keep.py); floors.FLOORS."""

    name = RLIMIT

    def below(self, actual, wanted):
        """Per side: a side of ``actual`` (a Limit) below the same side of ``wanted``."""
        if actual is None or wanted is None:
            return False
        for side in ('soft', 'hard'):
            have, want = getattr(actual, side), getattr(wanted, side)
            if have is not None and want is not None and items.exceeds(want, have):
                return True
        return False

    def keep(self, item, asked, named, current, source=None, ceiling=None):
        """(Limit to write, [Kept]): model.keep.keep."""
        return keep_rule.keep(item, asked, named, current, source, ceiling)

    def floor(self, name):
        return floors.floor_of(name)


class Pids(Kind):
    """The cgroup's pids.max: one value, ``max`` above all, a percentage resolved against the
    kernel's limit (TasksMax.resolve); written only where the node gives less (systemd/
    pids_plan.py); pids_model.FLOOR."""

    name = PIDS

    def below(self, actual, wanted):
        """``actual`` and ``wanted``: numbers or UNLIMITED, resolved (pids_model.below)."""
        return pids_model.below(actual, wanted)

    def keep(self, value, now, kernel_max):
        """The TasksMax to write for profile ``value`` where the node gives ``now`` (a
        TasksMax, None: unknown), or None when ``now`` already holds it."""
        wanted = value.resolve(kernel_max)
        have = now.resolve(kernel_max) if now is not None else None
        if now is None or self.below(have, wanted):
            return value
        return None

    def floor(self, name):
        return pids_model.FLOOR


class Sysctl(Kind):
    """A kernel ceiling: one integer, a minimum; the highest of the minimum, the live value and
    the configured value is written (kernel/sysctl_plan.choose); the kernel's own lower bound
    (host/sysctl_conf.KNOWN) is the floor."""

    name = SYSCTL

    def below(self, actual, wanted):
        return actual is not None and wanted is not None and actual < wanted

    def keep(self, want, live, before):
        """(value to write, action, source): sysctl_plan.choose (a planner: loaded here)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan
        return sysctl_plan.choose(want, live, before)

    def floor(self, name):
        bounds = sysctl_conf.KNOWN.get(name)
        if not bounds:
            return None, None
        return bounds[0], 'the lowest value the kernel accepts for %s' % name


class Core(Rlimit):
    """Where core dumps land: the ``core`` rlimit compared and kept as an rlimit (no floor: 0
    turns dumps off), judged against kernel.core_pattern (systemd/core_dumps.root_risk)."""

    name = CORE

    def risk(self, limit, where):
        """The warning for a large ``core`` limit whose cores land uncapped ('' otherwise)."""
        return core_dumps.root_risk(limit, where)


#: every kind, by name
KINDS = dict((k.name, k) for k in (Rlimit(), Pids(), Sysctl(), Core()))
NAMES = (RLIMIT, PIDS, SYSCTL, CORE, SHM)


def kind_of(item):
    """The kind name of a profile or audit item: ``pids``, a dotted sysctl, else an rlimit."""
    if item == pids_model.NAME:
        return PIDS
    if isinstance(item, str) and '.' in item:
        return SYSCTL
    return RLIMIT


def get(name):
    """The Kind called ``name`` (KeyError for one with no record: ``shm``)."""
    return KINDS[name]
