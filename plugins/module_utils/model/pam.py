# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""limits.conf (pam_limits) values: kernel units to and from KiB, minutes, nice values.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    ITEMS, RLIM_INFINITY, UNLIMITED, LimitError)


def to_limits_conf(item, value, where='value'):
    """kernel value -> limits.conf text (KiB, minutes, nice value, 'unlimited')."""
    item = ITEMS[item] if isinstance(item, str) else item
    if value == UNLIMITED:
        return 'unlimited'
    if item.kind == 'size':
        if value % 1024:
            raise LimitError('%s: %s of %d bytes is not a whole number of KiB, which is what '
                             'limits.conf takes' % (where, item.name, value))
        return str(value // 1024)
    if item.kind == 'time':
        if value % 60:
            raise LimitError('%s: cpu of %d seconds is not a whole number of minutes, which is '
                             'what limits.conf takes' % (where, value))
        return str(value // 60)
    if item.kind == 'nice':
        return str(20 - value)
    return str(value)


def _c_strtoull(text):
    """C ``strtoull(text, &end, 10)``: (value, rest, sign, overflow), value None without digits.

    An overflow gives ULLONG_MAX (ERANGE, which pam_limits does not check); ``-N`` is negated
    modulo 2**64, as C does."""
    match = re.match(r'^[ \t\n\v\f\r]*([+-]?)([0-9]+)', text)
    if not match:
        return None, text, '', False
    value = int(match.group(2))
    overflow = value > RLIM_INFINITY
    if overflow:
        value = RLIM_INFINITY
    elif match.group(1) == '-':
        value = (2 ** 64 - value) % 2 ** 64
    return value, text[match.end():], match.group(1), overflow


def _c_strtol_int(text):
    """C ``strtol`` clamped to an int, as pam_limits reads priority, nice and maxlogins."""
    match = re.match(r'^[ \t\n\v\f\r]*([+-]?[0-9]+)', text)
    if not match:
        return None, text
    value = max(-2 ** 31, min(2 ** 31 - 1, int(match.group(1))))
    return value, text[match.end():]


_PAM_UNLIMITED_WORDS = ('-1', '-', 'unlimited', 'infinity')


def from_limits_conf(item, text, nr_open=None):
    """limits.conf value text -> kernel value, with pam_limits' own parsing rules
    (process_limit() in Linux-PAM's modules/pam_limits/pam_limits.c).

    Returns (value, problem). ``value`` is None when pam_limits would skip the line;
    ``problem`` is a reason string or None. nofile unlimited becomes ``nr_open`` when given
    (Linux-PAM >= 1.5.2 substitutes fs.nr_open).

    ``text`` is the value as pam_limits sees it (lower-cased by it): one word before
    Linux-PAM 1.6, the rest of the line from 1.6 on (see pam_limits_conf.Line). Numbers are read
    with strtoull/strtol: text after the number is ignored, ``0x10`` is 0, a negative number
    wraps around modulo 2**64 (``-2`` is 18446744073709551614), an overflow is RLIM_INFINITY;
    a size or cpu value that would overflow when scaled becomes unlimited.
    """
    item = ITEMS[item] if isinstance(item, str) else item
    text = text.strip(' \t').lower()
    if item.kind == 'bool':
        if text in ('0', '1'):
            return int(text), None
        return 0, ('nonewprivs takes 0 or 1: pam_limits logs "wrong limit value" for %r and '
                   'sets nonewprivs to 0' % text)
    if item.kind not in ('priority', 'nice') and text in _PAM_UNLIMITED_WORDS:
        if item.name == 'nofile':
            return _pam_nofile_unlimited(nr_open, None)
        return UNLIMITED, None
    if item.kind in ('priority', 'logins', 'nice'):
        number, rest = _c_strtol_int(text)
        if number is None:
            return None, 'value %r is not a number' % text
        problem = None
        if rest.strip(' \t'):
            problem = 'text after the value (%r) is ignored by pam_limits' % rest.strip(' \t')
        if item.kind == 'nice':
            return 20 - max(-20, min(19, number)), problem
        return number, problem
    number, rest, sign, overflow = _c_strtoull(text)
    if number is None:
        return None, 'value %r is not a number' % text
    problems = []
    if rest.strip(' \t'):
        problems.append('text after the value (%r) is ignored by pam_limits' % rest.strip(' \t'))
    if sign == '-' and number and not overflow:
        problems.append('negative value %s: pam_limits reads it with strtoull as %d'
                        % (text[:len(text) - len(rest)].strip(), number))
    if overflow:
        problems.append('a number above 18446744073709551615 is read as unlimited')
    scale = {'size': 1024, 'time': 60}.get(item.kind)
    if scale and RLIM_INFINITY // scale <= number < RLIM_INFINITY:
        problems.append('%d %s does not fit 64 bits: pam_limits makes it unlimited'
                        % (number, 'KiB' if scale == 1024 else 'minutes'))
    problem = '; '.join(problems) or None
    if number == RLIM_INFINITY:
        if item.name == 'nofile':
            return _pam_nofile_unlimited(nr_open, problem)
        return UNLIMITED, problem
    if scale:
        return (UNLIMITED if number >= RLIM_INFINITY // scale else number * scale), problem
    return number, problem


def _pam_nofile_unlimited(nr_open, problem):
    if nr_open is not None:
        note = 'nofile unlimited: pam_limits substitutes fs.nr_open (%d)' % nr_open
        return nr_open, '; '.join(p for p in (problem, note) if p)
    note = 'nofile unlimited: older PAM passes RLIM_INFINITY, which fails'
    return UNLIMITED, '; '.join(p for p in (problem, note) if p)
