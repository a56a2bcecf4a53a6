# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd values (``Limit*=``/``DefaultLimit*=``, ``systemctl show``): kernel units to and
from systemd's own grammar.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    BY_RLIMIT, ITEMS, RLIM_INFINITY, UNLIMITED, Limit, LimitError)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.values import (
    check_pair, format_size)


def systemd_key(item, prefix='Limit'):
    item = ITEMS[item] if isinstance(item, str) else item
    if not item.is_rlimit:
        raise LimitError('%s is not a resource limit systemd can set' % item.name)
    return prefix + item.rlimit


def item_from_systemd_key(key):
    """``LimitNOFILE``/``DefaultLimitNOFILE`` -> Item, or None."""
    match = re.match(r'^(?:Default)?Limit([A-Z]+)$', key)
    if not match:
        return None
    return BY_RLIMIT.get(match.group(1))


def _systemd_side(item, value):
    if value == UNLIMITED:
        return 'infinity'
    if item.kind == 'size':
        return format_size(value, short=True)
    # nice: systemd reads a signed number as a nice level and an unsigned one as the raw
    # RLIMIT_NICE value; the raw form covers the whole range (0..40).
    return str(value)


def to_systemd(item, limit):
    """Limit -> ``LimitX=`` value: ``N`` when soft == hard, else ``SOFT:HARD``."""
    item = ITEMS[item] if isinstance(item, str) else item
    if limit.soft is None or limit.hard is None:
        raise LimitError('%s: systemd needs both soft and hard' % item.name)
    soft = _systemd_side(item, limit.soft)
    hard = _systemd_side(item, limit.hard)
    return soft if soft == hard else '%s:%s' % (soft, hard)


def from_systemd_show(item, value):
    """A raw number from ``systemctl show`` (LimitNOFILE=524288, ...=infinity) -> kernel value."""
    item = ITEMS[item] if isinstance(item, str) else item
    value = value.strip()
    if value == 'infinity' or value == str(RLIM_INFINITY):
        return UNLIMITED
    return int(value)


# systemd 252's own grammar for a ``Limit*=``/``DefaultLimit*=`` assignment (src/basic/rlimit-util.c
# rlimit_parse, parse_size, parse_time, safe_atou64): the one reader of systemd values, for the
# files we write and the ones we find.
_SD_WS = ' \t\n\r'
_SD_SIZE_TABLE = (('E', 1024 ** 6), ('P', 1024 ** 5), ('T', 1024 ** 4), ('G', 1024 ** 3),
                  ('M', 1024 ** 2), ('K', 1024), ('B', 1), ('', 1))
_SD_TIME_TABLE = (('seconds', 10 ** 6), ('second', 10 ** 6), ('sec', 10 ** 6), ('s', 10 ** 6),
                  ('minutes', 6 * 10 ** 7), ('minute', 6 * 10 ** 7), ('min', 6 * 10 ** 7),
                  ('months', 2629800 * 10 ** 6), ('month', 2629800 * 10 ** 6),
                  ('M', 2629800 * 10 ** 6), ('msec', 1000), ('ms', 1000), ('m', 6 * 10 ** 7),
                  ('hours', 3600 * 10 ** 6), ('hour', 3600 * 10 ** 6), ('hr', 3600 * 10 ** 6),
                  ('h', 3600 * 10 ** 6), ('days', 86400 * 10 ** 6), ('day', 86400 * 10 ** 6),
                  ('d', 86400 * 10 ** 6), ('weeks', 604800 * 10 ** 6),
                  ('week', 604800 * 10 ** 6), ('w', 604800 * 10 ** 6),
                  ('years', 31557600 * 10 ** 6), ('year', 31557600 * 10 ** 6),
                  ('y', 31557600 * 10 ** 6), ('usec', 1), ('us', 1), (u'\u03bcs', 1),
                  (u'\u00b5s', 1))   # greek small letter mu and the micro sign (test-time-util.c)
_U64_MAX = 2 ** 64 - 1


def _sd_strtoull(text, base=10):
    """C strtoull: (value, rest) or (None, text) when no digits; raises on overflow."""
    s = text.lstrip(_SD_WS)
    match = re.match(r'^([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)' if base == 0
                     else r'^([+-]?)([0-9]+)', s)
    if not match:
        return None, text
    digits = match.group(2)
    if base == 0 and digits[:2].lower() == '0x':
        value = int(digits, 16)
    elif base == 0 and digits.startswith('0'):
        value = int(digits, 8)
    else:
        value = int(digits)
    if value > _U64_MAX:
        raise ValueError('out of range')
    if match.group(1) == '-' and value:
        value = 2 ** 64 - value
    return value, s[match.end():]


def _sd_u64(text):
    s = text.lstrip(_SD_WS)
    # safe_atou64's mangle_base(): "0b" and "0o" prefixes (checked in systemd 252: 0o11 is 9).
    if s[:2] in ('0b', '0B', '0o', '0O'):
        digits = s[2:].lstrip(_SD_WS)
        pattern = r'^[+-]?[01]+$' if s[1] in 'bB' else r'^[+-]?[0-7]+$'
        if not re.match(pattern, digits):
            raise ValueError('not a number')
        value = int(digits, 2 if s[1] in 'bB' else 8)
        if value > _U64_MAX or (digits.startswith('-') and value):
            raise ValueError('out of range')
        return value
    value, rest = _sd_strtoull(s, 0)
    if value is None or rest:
        raise ValueError('not a number')
    if s.startswith('-') and value:
        raise ValueError('negative')
    return value


def _sd_size(text):
    total = 0
    p = text
    start = 0
    while True:
        p = p.lstrip(_SD_WS)
        number, e = _sd_strtoull(p, 10)
        if number is None:
            raise ValueError('not a size')
        if p.startswith('-'):
            raise ValueError('negative')
        frac = 0.0
        if e.startswith('.'):
            e = e[1:]
            digits = re.match(r'^[0-9]*', e).group(0)
            if digits:
                frac = float(int(digits))
                for _digit in digits:
                    frac /= 10
                e = e[len(digits):]
        e = e.lstrip(_SD_WS)
        for index in range(start, len(_SD_SIZE_TABLE)):
            suffix, factor = _SD_SIZE_TABLE[index]
            if e.startswith(suffix):
                break
        else:
            raise ValueError('unknown suffix')
        if number + (1 if frac > 0 else 0) > _U64_MAX // factor:
            raise ValueError('out of range')
        total += number * factor + int(frac * factor)
        if total > _U64_MAX:
            raise ValueError('out of range')
        p = e[len(suffix):]
        start = index + 1
        if not p:
            return total


def _sd_time_usec(text):
    p = text.lstrip(_SD_WS)
    if p.startswith('infinity'):
        if p[len('infinity'):].strip(_SD_WS):
            raise ValueError('text after infinity')
        return None
    usec = 0
    something = False
    while True:
        p = p.lstrip(_SD_WS)
        if not p:
            if not something:
                raise ValueError('empty time span')
            return usec
        if p.startswith('-'):
            raise ValueError('negative')
        match = re.match(r'^[+]?[0-9]+', p)
        dot = False
        if match:
            number = int(match.group(0).lstrip('+'))
            e = p[match.end():]
        else:
            number, e = 0, p
        if e.startswith('.'):
            dot = True
            frac_digits = re.match(r'^[0-9]*', e[1:]).group(0)
            p = e[1 + len(frac_digits):]
        elif not match:
            raise ValueError('not a time span')
        else:
            p = e
        rest = p.lstrip(_SD_WS)
        multiplier = 10 ** 6
        matched = False
        for suffix, factor in _SD_TIME_TABLE:
            if rest.startswith(suffix):
                multiplier, matched = factor, True
                rest = rest[len(suffix):]
                break
        if not matched and rest and len(rest) == len(p):
            raise ValueError('unknown unit %r' % rest)
        p = rest
        usec += number * multiplier
        something = True
        if dot:
            m = multiplier // 10
            if not frac_digits:
                raise ValueError('nothing after the dot')
            for digit in frac_digits:
                usec += int(digit) * m
                m //= 10


def _sd_side(item, text):
    # rlimit-util.c rlimit_parse_table: every parser but rlimit_parse_nice takes "infinity"
    # (RLIM_INFINITY); LimitNICE=infinity is "Failed to parse resource value, ignoring".
    if text == 'infinity' and item.kind != 'nice':
        return UNLIMITED
    if item.kind == 'size' or item.name == 'msgqueue':
        value = _sd_size(text)
    elif item.kind == 'time':
        usec = _sd_time_usec(text)
        if usec is None:
            return UNLIMITED
        value = (usec + 10 ** 6 - 1) // 10 ** 6
    elif item.kind == 'nice':
        # rlimit_parse_nice: "+N" a nice level 0..19, "-N" one of -20..-0, else the raw
        # RLIMIT_NICE value 0..40 (safe_atou64); no "infinity".
        if text.startswith('+'):
            value = _sd_u64(text[1:])
            if value >= 20:
                raise ValueError('nice level out of range')
            value = 20 - value
        elif text.startswith('-'):
            value = _sd_u64(text[1:])
            if value > 20:
                raise ValueError('nice level out of range')
            value = 20 + value
        else:
            value = _sd_u64(text)
            if value > 40:
                raise ValueError('raw nice limit out of range')
    else:
        value = _sd_u64(text)
    if value >= RLIM_INFINITY:
        raise ValueError('out of range')
    return value


def from_systemd_config(item, text, where='value'):
    """An assignment's value exactly as systemd 252 reads it -> Limit.

    ``text`` is what follows ``=`` (systemd strips the whole value first). Raises LimitError
    where systemd logs "Failed to parse resource value, ignoring" or "Soft resource limit chosen
    higher than hard limit, ignoring" and keeps the earlier value. Accepts what systemd accepts
    and a lenient reader would not: ``0x100``, ``0o11``, ``0b11`` and ``010`` (octal) counts,
    ``1.5K`` and ``1G 512M``
    sizes, suffixed msgqueue sizes, ``1h30min`` and ``1500ms`` (rounded up) for cpu. Refuses
    ``infinity`` for nice only, as systemd's rlimit_parse_nice does.
    """
    item = ITEMS[item] if isinstance(item, str) else item
    text = text.strip(_SD_WS)
    if ':' in text:
        soft_text, hard_text = text.split(':', 1)
    else:
        soft_text = hard_text = text
    try:
        limit = Limit(_sd_side(item, soft_text), _sd_side(item, hard_text))
    except ValueError as exc:
        raise LimitError('%s: systemd cannot parse %r for %s (%s)' % (where, text, item.name, exc))
    check_pair(item, limit, where)
    return limit
