# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource-limit items, the soft/hard pair (``Limit``) and comparisons in kernel units.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors

UNLIMITED = 'unlimited'
# The kernel's RLIM_INFINITY, as systemd and prlimit print it on 64-bit Linux.
RLIM_INFINITY = 2 ** 64 - 1


# docker/go-units ulimit.go ``ulimitNameMapping``: the ulimit names ParseUlimit and GetRlimit
# know, so the names ``docker run --ulimit``, ``dockerd --default-ulimit``, Podman's and CRI-O's
# ``default_ulimits`` accept. ``as`` is commented out there ("doesn't seem usable with the way
# Docker inits a container"); ``rttime`` is there but is no item of this collection.
GO_UNITS_NAMES = frozenset(('core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue',
                            'nice', 'nofile', 'nproc', 'rss', 'rtprio', 'rttime', 'sigpending',
                            'stack'))


class LimitError(errors.Error, ValueError):
    """A value, item or pair the model cannot accept. The message names what is wrong."""

    kind = errors.BAD_INPUT


class Item(object):
    """One limits.conf item.

    kind: 'count' (plain number), 'size' (bytes; KiB in limits.conf), 'time' (seconds; minutes
    in limits.conf), 'nice' (limits.conf nice value -20..19; kernel raw 20-nice), 'priority'
    (a nice value, not an rlimit), 'logins' (maxlogins/maxsyslogins), 'bool' (nonewprivs).
    """

    def __init__(self, name, kind, rlimit=None, proc_row=None, unlimited=True):
        self.name = name
        self.kind = kind
        self.rlimit = rlimit            # systemd/Docker suffix, e.g. 'NOFILE'; None if no rlimit
        self.proc_row = proc_row        # row name in /proc/PID/limits
        self.unlimited = unlimited      # may the value be unlimited?

    @property
    def is_rlimit(self):
        return self.rlimit is not None

    @property
    def docker_name(self):
        """The ulimit name Docker, Podman and CRI-O take for this item, or None (GO_UNITS_NAMES:
        ``as`` and the items that are no rlimit have none)."""
        return self.name if self.name in GO_UNITS_NAMES else None

    def __repr__(self):
        return 'Item(%r)' % self.name


_ITEM_LIST = [
    Item('core', 'size', 'CORE', 'Max core file size'),
    Item('data', 'size', 'DATA', 'Max data size'),
    Item('fsize', 'size', 'FSIZE', 'Max file size'),
    Item('memlock', 'size', 'MEMLOCK', 'Max locked memory'),
    Item('nofile', 'count', 'NOFILE', 'Max open files'),
    Item('rss', 'size', 'RSS', 'Max resident set'),
    Item('stack', 'size', 'STACK', 'Max stack size'),
    Item('cpu', 'time', 'CPU', 'Max cpu time'),
    Item('nproc', 'count', 'NPROC', 'Max processes'),
    Item('as', 'size', 'AS', 'Max address space'),
    Item('maxlogins', 'logins'),
    Item('maxsyslogins', 'logins'),
    Item('priority', 'priority', unlimited=False),
    Item('locks', 'count', 'LOCKS', 'Max file locks'),
    Item('sigpending', 'count', 'SIGPENDING', 'Max pending signals'),
    # limits.conf documents msgqueue in bytes (pam_limits does not scale it).
    Item('msgqueue', 'count', 'MSGQUEUE', 'Max msgqueue size'),
    Item('nice', 'nice', 'NICE', 'Max nice priority', unlimited=False),
    Item('rtprio', 'count', 'RTPRIO', 'Max realtime priority'),
    Item('nonewprivs', 'bool', unlimited=False),
]

ITEMS = dict((i.name, i) for i in _ITEM_LIST)
ITEM_NAMES = [i.name for i in _ITEM_LIST]
RLIMIT_ITEMS = [i.name for i in _ITEM_LIST if i.is_rlimit]
BY_PROC_ROW = dict((i.proc_row, i) for i in _ITEM_LIST if i.proc_row)
BY_RLIMIT = dict((i.rlimit, i) for i in _ITEM_LIST if i.rlimit)
#: the profile's one item that is no rlimit of any format above: the cgroup ``pids.max``
#: (model/pids.py), kept out of ITEMS so that no rlimit planner or reader can get it
CGROUP_PIDS = 'pids'


def get_item(name, where='item'):
    """The Item called ``name``; LimitError naming ``where`` when there is none."""
    if isinstance(name, str) and name.lower() == CGROUP_PIDS:
        raise LimitError('%s: pids is no resource limit (rlimit) but the cgroup pids.max: '
                         'limits.conf, ulimits and systemd Limit*= cannot set it; give it in '
                         "limits_profile's or limits_audit's profile (model/pids.py)" % where)
    if not isinstance(name, str) or name.lower() not in ITEMS:
        raise LimitError('%s: unknown limit item %r (known: %s)'
                         % (where, name, ', '.join(ITEM_NAMES)))
    return ITEMS[name.lower()]


def is_unlimited(value):
    return value == UNLIMITED


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Limit(object):
    """A soft/hard pair in kernel units (int) or UNLIMITED."""

    __slots__ = ('soft', 'hard')

    def __init__(self, soft, hard):
        self.soft = soft
        self.hard = hard

    def __eq__(self, other):
        return isinstance(other, Limit) and (self.soft, self.hard) == (other.soft, other.hard)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self.soft, self.hard))

    def __repr__(self):
        return 'Limit(%r, %r)' % (self.soft, self.hard)

    def as_dict(self):
        return {'soft': self.soft, 'hard': self.hard}


def compare(a, b):
    """-1/0/1 comparing two kernel values where UNLIMITED is larger than any number."""
    ka = (1, 0) if a == UNLIMITED else (0, a)
    kb = (1, 0) if b == UNLIMITED else (0, b)
    return (ka > kb) - (ka < kb)


def exceeds(a, b):
    """True when kernel value ``a`` is above ``b``."""
    return compare(a, b) > 0
