# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is never lowered without being asked: ``keep``. A profile value is a minimum unless the
profile names the side. A plain value (``nofile: 16384``) raises soft and hard to at least
16384 and keeps any higher value the context already has; a side named in ``{soft, hard}`` is
set as written, lower or not. Every side that differs from what was asked, or that is lowered,
is reported (``Kept``).

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    ITEMS, RLIM_INFINITY, UNLIMITED, Limit, compare, exceeds)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.values import format_human


class Kept(namedtuple('Kept', 'item side asked before after action source')):
    """One side of one item the run does not simply write as asked: ``action`` is ``kept``
    (the context already has more, and keeps it), ``raised`` (the hard side, above what the
    context had) or ``lowered`` (the profile named the side; the context had more), with the
    value the context had and where it came from."""

    __slots__ = ()

    def as_dict(self):
        return dict(zip(self._fields, self))

    def capped(self):
        """Whether a kept value is the node's hard ceiling, below what the context had."""
        return self.action == 'kept' and compare(self.after, self.before) != 0

    def message(self):
        """The record in words: the side, the value and its source, each fact of this side
        only (``source`` names the line or setting that sets this side)."""
        item = ITEMS[self.item]
        where = ' (%s)' % self.source if self.source else ''
        if self.capped():
            return ('%s %s %s%s kept, capped at the node\'s ceiling %s, above the profile\'s '
                    '%s (name %s in the profile to lower it)'
                    % (self.side, self.item, format_human(item, self.before), where,
                       format_human(item, self.after), format_human(item, self.asked),
                       self.side))
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


def side_source(source, side):
    """Where ``side`` of a context's value comes from: ``source`` is one text for both sides
    (one setting sets both) or {'soft': text, 'hard': text} (each side its own line)."""
    if isinstance(source, dict):
        return source.get(side)
    return source


#: the unit limits.conf writes an item of this kind in (model/pam.to_limits_conf), in the
#: kernel's units
UNITS = {'size': 1024, 'time': 60}


def whole(item, value):
    """``value`` kept from the node, rounded up to a whole unit of what limits.conf takes
    (KiB, minutes): a live value need not be one (Debian 11 gives a memlock of 1/8 of the
    memory, 194146816 bytes on the VM lane's VM, issue 43), and a kept value is no input of
    the user's to refuse; rounding up lowers nothing."""
    unit = UNITS.get(item.kind)
    if not unit or value == UNLIMITED or not isinstance(value, int) or value % unit == 0 \
            or value >= RLIM_INFINITY - unit:
        return value
    return value + unit - value % unit


def keep(item, asked, named, current, source=None, ceiling=None):
    """(Limit to write, [Kept]) for one item of one context.

    ``asked``: the profile's Limit; ``named``: (soft named, hard named) in the profile;
    ``current``: the Limit the context's new processes get now (None or a side None: unknown);
    ``source``: where it comes from, one text or {side: text} (:func:`side_source`);
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
                records.append(Kept(item.name, side, want, have, want, 'lowered',
                                    side_source(source, side)))
            else:
                value = whole(item, have)
                if ceiling is not None and exceeds(value, ceiling):
                    value = want if exceeds(want, ceiling) else ceiling
                if compare(value, want) != 0:
                    records.append(Kept(item.name, side, want, have, value, 'kept',
                                        side_source(source, side)))
        elif side == 'hard' and have is not None and want is not None and exceeds(want, have):
            records.append(Kept(item.name, side, want, have, want, 'raised',
                                side_source(source, side)))
        result[side] = value
    if result['soft'] is not None and result['hard'] is not None and \
            exceeds(result['soft'], result['hard']):
        # a named (lower) hard side: the soft value kept cannot stay above it
        records = [r for r in records if not (r.side == 'soft' and r.action == 'kept')]
        if exceeds(getattr(current, 'soft') or 0, result['hard']):
            records.append(Kept(item.name, 'soft', asked.soft, current.soft, result['hard'],
                                'lowered', side_source(source, 'soft')))
        result['soft'] = result['hard']
    return Limit(result['soft'], result['hard']), records
