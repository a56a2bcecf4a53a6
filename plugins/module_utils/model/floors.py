# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is never written, and what is never lowered without being asked.

* ``FLOORS``: per item, the lowest soft or hard value the collection writes, with or without
  ``force``; below it logins, sudo, sshd or systemd stop working (docs/limit-model.md says why
  for each). ``check_floor`` refuses a value below it, naming the field.
* ``keep``: a profile value is a minimum unless the profile names the side. A plain value
  (``nofile: 16384``) raises soft and hard to at least 16384 and keeps any higher value the
  context already has; a side named in ``{soft, hard}`` is set as written, lower or not. Every
  side that differs from what was asked, or that is lowered, is reported.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    ITEMS, UNLIMITED, Limit, LimitError, compare, exceeds)

_KIB = 1024
_MIB = 1024 * 1024
_GIB = 1024 * _MIB

#: item -> (floor in kernel units, why). Items not listed have no floor (0 is a sane value:
#: core 0 turns core dumps off; nice, rtprio and priority 0 are the defaults).
FLOORS = {
    'nofile': (1024, "the kernel's default soft limit, which sshd, sudo and systemd are built "
                     'for; a profile of nofile 0 stopped every login, sudo included'),
    'nproc': (1024, 'it counts every process and thread of the user across all sessions: at 1 '
                    'no login can start a program'),
    'stack': (8 * _MIB, "the kernel's default soft stack size, which programs are built and "
                        'tested with'),
    'memlock': (64 * _KIB, "the kernel's default before Linux 5.16"),
    'as': (_GIB, 'programs reserve address space when they start (CUDA far more): below it they '
                 'fail to start'),
    'data': (_GIB, 'programs allocate their heap against it: below it they fail to start'),
    'fsize': (_GIB, 'a write past it kills the writer with SIGXFSZ (logs, downloads, '
                    'checkpoints)'),
    'cpu': (3600, 'a process past it is killed (SIGXCPU, then SIGKILL): a login shell or user '
                  'manager that lives for days reaches any small value'),
    'sigpending': (1024, 'signals queued beyond it fail (sigqueue returns EAGAIN)'),
    'maxlogins': (4, 'pam_limits refuses every login of the user at 0 and a second session at '
                     '1'),
    'maxsyslogins': (4, 'pam_limits refuses every login on the host at 0 and a second session '
                        'at 1'),
}


def floor_of(item):
    """(floor, why) for ``item`` (an Item or its name), or (None, None)."""
    name = item if isinstance(item, str) else item.name
    return FLOORS.get(name, (None, None))


def check_floor(item, limit, where='value'):
    """LimitError naming ``where`` when a side of ``limit`` is below the item's floor."""
    floor, why = floor_of(item)
    if floor is None:
        return
    for side in ('soft', 'hard'):
        value = getattr(limit, side)
        if value is not None and value != UNLIMITED and value < floor:
            from ansible_collections.gpufleet.tuning.plugins.module_utils.model.values import (
                format_human)
            raise LimitError(
                '%s: %s %s %s is below the floor %s, which is never written, with or without '
                'force: %s' % (where, side, item.name, format_human(item, value),
                               format_human(item, floor), why))


class Kept(object):
    """One side of one item the run does not simply write as asked: ``action`` is ``kept``
    (the context already has more, and keeps it), ``raised`` (the hard side, above what the
    context had) or ``lowered`` (the profile named the side; the context had more), with the
    value the context had and where it came from."""

    __slots__ = ('item', 'side', 'asked', 'before', 'after', 'action', 'source')

    def __init__(self, item, side, asked, before, after, action, source):
        self.item = item
        self.side = side
        self.asked = asked
        self.before = before
        self.after = after
        self.action = action
        self.source = source

    def as_dict(self):
        return dict((name, getattr(self, name)) for name in self.__slots__)

    def message(self):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model.values import (
            format_human)
        item = ITEMS[self.item]
        where = ' (%s)' % self.source if self.source else ''
        if self.action == 'kept':
            return ('%s %s %s kept: the node already has %s%s, above the profile\'s %s '
                    '(name %s in the profile to lower it)'
                    % (self.side, self.item, format_human(item, self.after),
                       format_human(item, self.before), where, format_human(item, self.asked),
                       self.side))
        if self.action == 'raised':
            return ('hard %s raised from %s%s to %s'
                    % (self.item, format_human(item, self.before), where,
                       format_human(item, self.after)))
        return ('%s %s lowered from %s%s to %s, as the profile names it'
                % (self.side, self.item, format_human(item, self.before), where,
                   format_human(item, self.after)))


def keep(item, asked, named, current, source=None, ceiling=None):
    """(Limit to write, [Kept]) for one item of one context.

    ``asked``: the profile's Limit; ``named``: (soft named, hard named) in the profile;
    ``current``: the Limit the context's new processes get now (None or a side None: unknown);
    ``ceiling``: the highest hard value the node can give (None: no known ceiling). A side not
    named is never lowered; a higher value kept is capped at ``ceiling``, which is no lowering
    of what a process can get. A named side is written as asked and reported when it lowers.
    """
    item = ITEMS[item] if isinstance(item, str) else item
    current = current or Limit(None, None)
    result, records = {}, []
    for index, side in enumerate(('soft', 'hard')):
        want, have = getattr(asked, side), getattr(current, side)
        value = want
        if have is not None and want is not None and exceeds(have, want):
            if named[index]:
                records.append(Kept(item.name, side, want, have, want, 'lowered', source))
            else:
                value = have
                if ceiling is not None and exceeds(value, ceiling):
                    value = want if exceeds(want, ceiling) else ceiling
                if compare(value, want) != 0:
                    records.append(Kept(item.name, side, want, have, value, 'kept', source))
        elif side == 'hard' and have is not None and want is not None and exceeds(want, have):
            records.append(Kept(item.name, side, want, have, want, 'raised', source))
        result[side] = value
    if result['soft'] is not None and result['hard'] is not None and \
            exceeds(result['soft'], result['hard']):
        # a named (lower) hard side: the soft value kept cannot stay above it
        records = [r for r in records if not (r.side == 'soft' and r.action == 'kept')]
        if exceeds(getattr(current, 'soft') or 0, result['hard']):
            records.append(Kept(item.name, 'soft', asked.soft, current.soft, result['hard'],
                                'lowered', source))
        result['soft'] = result['hard']
    return Limit(result['soft'], result['hard']), records
