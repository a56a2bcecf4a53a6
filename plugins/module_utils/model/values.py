# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The value grammar of profiles (what playbooks write): numbers in limits.conf units, sizes,
durations, soft/hard pairs, go-units sizes; and the readable forms used in messages.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.floors import floor_of
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    ITEMS, UNLIMITED, Limit, LimitError, exceeds, get_item, is_int)

_UNLIMITED_WORDS = ('unlimited', 'infinity', '-1')
#: said with a refusal of an unlimited value an item could otherwise take (nofile): a
#: profile's ``-1`` is refused as unlimited
UNLIMITED_MEANS = '-1, "infinity" and "unlimited" all mean unlimited'
_SIZE_UNITS = {'': 1, 'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3, 't': 1024 ** 4,
               'p': 1024 ** 5, 'e': 1024 ** 6}
_SIZE_RE = re.compile(r'^\s*(\d+)\s*([kmgtpe]?)(i?b)?\s*$', re.IGNORECASE)
_BYTES_RE = re.compile(r'^\s*(\d+)\s*b\s*$', re.IGNORECASE)
_TIME_UNITS = {'us': None, 'ms': None, 's': 1, 'sec': 1, 'second': 1, 'seconds': 1,
               'm': 60, 'min': 60, 'minute': 60, 'minutes': 60,
               'h': 3600, 'hr': 3600, 'hour': 3600, 'hours': 3600,
               'd': 86400, 'day': 86400, 'days': 86400, 'w': 604800, 'week': 604800,
               'weeks': 604800}
_TIME_RE = re.compile(r'^\s*(\d+)\s*([a-z]+)\s*$', re.IGNORECASE)


def _check_range(item, value, where):
    if item.kind == 'nice':
        if not 0 <= value <= 40:
            raise LimitError('%s: %s value out of range (nice -20..19)' % (where, item.name))
    elif item.kind == 'priority':
        if not -20 <= value <= 19:
            raise LimitError('%s: priority must be between -20 and 19, got %s' % (where, value))
    elif item.kind == 'bool':
        if value not in (0, 1):
            raise LimitError('%s: nonewprivs must be 0 or 1, got %s' % (where, value))
    elif value < 0:
        raise LimitError('%s: %s must not be negative, got %s' % (where, item.name, value))
    return value


def parse_value(item, value, where='value'):
    """A profile value (what a playbook says) -> kernel units or UNLIMITED.

    Bare numbers use limits.conf units (KiB for size items, minutes for cpu, the nice value for
    nice) so that a profile means the same as the limits.conf line users know. Strings may carry
    units: sizes ``64MiB``, ``8G``, ``512K``, ``1024B``; durations ``90s``, ``30min``, ``2h``.
    """
    item = get_item(item, where) if isinstance(item, str) else item
    if isinstance(value, bool) or value is None:
        raise LimitError('%s: %s needs a number or "unlimited", got %r' % (where, item.name, value))
    if isinstance(value, float):
        if value != int(value):
            raise LimitError('%s: %s must be a whole number, got %r' % (where, item.name, value))
        value = int(value)
    if is_int(value):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip().lower()
    else:
        raise LimitError('%s: %s needs a number or "unlimited", got %r' % (where, item.name, value))

    # -1 is unlimited only where an item can be unlimited (limits.conf(5)): a nice or a
    # priority of -1 is that number, as pam_limits reads it (model/pam.from_limits_conf)
    if text in _UNLIMITED_WORDS and (item.unlimited or text != '-1'):
        if not item.unlimited:
            raise LimitError('%s: %s cannot be unlimited' % (where, item.name))
        return UNLIMITED
    if re.match(r'^[+-]?\d+$', text):
        number = int(text)
        if item.kind == 'size':
            return _check_range(item, number, where) * 1024
        if item.kind == 'time':
            return _check_range(item, number, where) * 60
        if item.kind == 'nice':
            if not -20 <= number <= 19:
                raise LimitError('%s: nice must be between -20 and 19, got %s' % (where, number))
            return 20 - number
        return _check_range(item, number, where)
    if item.kind == 'size':
        return parse_size(text, where)
    if item.kind == 'time':
        return parse_duration(text, where)
    raise LimitError('%s: %s needs a whole number%s, got %r'
                     % (where, item.name, ' or "unlimited"' if item.unlimited else '', value))


def parse_size(text, where='value'):
    """``64MiB``/``64M``/``64MB``/``65536K``/``512B`` -> bytes (base 1024, as systemd and Docker)."""
    match = _SIZE_RE.match(str(text))
    if not match or (match.group(2) == '' and match.group(3) and match.group(3).lower() != 'b'):
        raise LimitError('%s: %r is not a size (use a number with K, M, G, T, optionally '
                         'followed by iB or B, e.g. 64MiB)' % (where, text))
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


def parse_duration(text, where='value'):
    """``90s``/``30min``/``2h``/``1d`` -> seconds."""
    match = _TIME_RE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or _TIME_UNITS.get(unit) is None:
        raise LimitError('%s: %r is not a duration (use s, min, h, d or w, e.g. 90min)'
                         % (where, text))
    return int(match.group(1)) * _TIME_UNITS[unit]


_GO_FLOAT_RE = re.compile(r'^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')
_GO_UNITS = 'kmgtp'


def parse_go_size(text, binary, where='value'):
    """A size as docker/go-units reads it: ``RAMInBytes`` (binary, what dockerd uses for
    ``default-shm-size``) or ``FromHumanSize`` (decimal, what Podman uses for ``shm_size``).

    The number is a Go float (``32.5``, ``.3``, ``32.``, ``1e3``) cut from its suffix at the
    first blank or after the last digit or dot; the suffix is ``b``, or k/m/g/t/p optionally
    followed by ``b`` or ``ib``, in any letter case; the result is truncated to whole bytes.
    Refused on purpose although Go reads them: ``inf``/``nan``, hexadecimal floats and sizes
    of 2**63 bytes and more (Go's int64 conversion is undefined there).
    """
    text = str(text)
    if ' ' in text:
        number, suffix = text.split(' ', 1)
    else:
        cut = max(text.rfind(c) for c in '0123456789.')
        if cut == -1:
            raise LimitError('%s: %r is not a size (no number)' % (where, text))
        number, suffix = text[:cut + 1], text[cut + 1:]
    if not _GO_FLOAT_RE.match(number):
        raise LimitError('%s: %r is not a size (%r is not a number)' % (where, text, number))
    size = float(number)
    if size < 0:
        raise LimitError('%s: %r is not a size (negative)' % (where, text))
    low = suffix.lower()
    if low:
        if len(low) > 3 or (low[0] == 'b' and len(low) > 1) or \
                (low[0] != 'b' and (low[0] not in _GO_UNITS
                                    or (len(low) == 2 and low[1] != 'b')
                                    or (len(low) == 3 and low[1:] != 'ib'))):
            raise LimitError('%s: %r is not a size (suffix %r)' % (where, text, suffix))
        if low[0] != 'b':
            size *= (1024 if binary else 1000) ** (_GO_UNITS.index(low[0]) + 1)
    if size >= 2 ** 63:
        raise LimitError('%s: size %r is too large' % (where, text))
    return int(size)


def parse_limit(item, spec, where='value', floor=True):
    """A profile entry -> Limit. ``spec`` is a value (soft = hard) or a dict with ``soft``/``hard``
    (either may be missing: the missing side is None) or ``value``. ``floor``: refuse a value
    below the item's floor (model.floors), as every value to be written is; an expectation
    that is only compared passes False."""
    item = get_item(item, where) if isinstance(item, str) else item
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(['soft', 'hard', 'value']))
        if unknown:
            raise LimitError('%s: unknown key(s) %s (use soft, hard or value)'
                             % (where, ', '.join(unknown)))
        if 'value' in spec and spec['value'] is not None:
            if spec.get('soft') is not None or spec.get('hard') is not None:
                raise LimitError('%s: give either value or soft/hard, not both' % where)
            value = parse_value(item, spec['value'], where + '.value')
            limit = Limit(value, value)
            if floor:
                check_floor(item, limit, where + '.value')
            return limit
        soft = spec.get('soft')
        hard = spec.get('hard')
        if soft is None and hard is None:
            raise LimitError('%s: needs soft, hard or value' % where)
        limit = Limit(None if soft is None else parse_value(item, soft, where + '.soft'),
                      None if hard is None else parse_value(item, hard, where + '.hard'))
    else:
        value = parse_value(item, spec, where)
        limit = Limit(value, value)
    check_pair(item, limit, where)
    if floor:
        check_floor(item, limit, where)
    return limit


def named_sides(spec):
    """(soft named, hard named) of a profile entry: a plain value or ``{value}`` names neither
    (a minimum: higher values are kept), ``{soft, hard}`` names the sides it gives."""
    if isinstance(spec, dict) and spec.get('value') is None:
        return spec.get('soft') is not None, spec.get('hard') is not None
    return False, False


def profile_sides(profile):
    """{item_name: (soft named, hard named)} of a profile (see :func:`named_sides`)."""
    return dict((get_item(name).name, named_sides(spec)) for name, spec in profile.items())


def check_pair(item, limit, where='value'):
    """Soft above hard is refused: systemd rejects it and pam_limits silently clamps it."""
    if limit.soft is not None and limit.hard is not None and exceeds(limit.soft, limit.hard):
        raise LimitError('%s: soft %s is above hard %s for %s'
                         % (where, format_human(item, limit.soft), format_human(item, limit.hard),
                            item.name))


def parse_profile(profile, where='limits', floor=True):
    """{item: value or {soft, hard}} -> {item_name: Limit} (``floor``: see parse_limit)."""
    if not isinstance(profile, dict):
        raise LimitError('%s: must be a mapping of item -> value or {soft, hard}' % where)
    result = {}
    for name, spec in profile.items():
        item = get_item(name, '%s.%s' % (where, name))
        result[item.name] = parse_limit(item, spec, '%s.%s' % (where, name), floor)
    return result


def parse_shm_size(value, where='shm_size'):
    """A container's /dev/shm size (``64m``, ``8GiB``, bytes) -> bytes, larger than 0."""
    size = parse_size(value, where)
    if size <= 0:
        raise LimitError('%s: must be larger than 0' % where)
    return size


def parse_runtime_request(ulimits, shm_size):
    """A container runtime module's request -> ({item: Limit} or None, shm bytes or None)."""
    requested = parse_profile(ulimits, 'ulimits') if ulimits is not None else None
    size = parse_shm_size(shm_size) if shm_size is not None else None
    return requested, size


def format_human(item, value):
    """A readable form of a kernel value, for messages and reports."""
    item = ITEMS[item] if isinstance(item, str) else item
    if value is None:
        return '(unset)'
    if value == UNLIMITED:
        return UNLIMITED
    if item.kind == 'size':
        return format_size(value)
    if item.kind == 'time':
        return '%ds' % value
    if item.kind == 'nice':
        return 'nice %d' % (20 - value)
    return str(value)


def format_limit(item, limit):
    """A Limit as readable ``soft:hard`` (``8MiB:unlimited``), for messages and reports."""
    return '%s:%s' % (format_human(item, limit.soft), format_human(item, limit.hard))


def format_size(value, short=False):
    """bytes -> the largest exact base-1024 unit: ``64MiB`` (or ``64M`` with ``short``, the form
    systemd and dockerd read; a value that is no whole KiB stays a plain number of bytes)."""
    for suffix, factor in (('T', 1024 ** 4), ('G', 1024 ** 3), ('M', 1024 ** 2), ('K', 1024)):
        if value >= factor and value % factor == 0:
            return '%d%s' % (value // factor, suffix if short else suffix + 'iB')
    return str(value) if short else '%dB' % value


def check_floor(item, limit, where='value'):
    """LimitError naming ``where`` when a side of ``limit`` is below the item's floor."""
    floor, why = floor_of(item)
    if floor is None:
        return
    for side in ('soft', 'hard'):
        value = getattr(limit, side)
        if value is not None and value != UNLIMITED and value < floor:
            raise LimitError(
                '%s: %s %s %s is below the floor %s, which is never written, with or without '
                'force: %s' % (where, side, item.name, format_human(item, value),
                               format_human(item, floor), why))
