# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``pids`` item: the cgroup pids controller's ``pids.max``, the number of tasks (processes
and threads) a cgroup and everything below it may hold. It is no rlimit: limits.conf, Docker's
and Podman's ulimits and systemd's ``Limit*=`` never get it. It is set by systemd's
``TasksMax=`` (units, slices) and ``DefaultTasksMax=`` (the managers), Podman's containers.conf
``pids_limit``, CRI-O's ``pids_limit`` (deprecated) and the kubelet's ``podPidsLimit``.

A value is a ``TasksMax``: a count, ``infinity``, or a fraction of the kernel's limit (systemd's
``N%``, ``N‰``, ``N‱``), which :func:`system_tasks_max` gives on a node. Read exactly as systemd
reads ``TasksMax=`` (src/core/load-fragment.c config_parse_tasks_max, src/basic/percent-util.c
parse_permyriad; the cases of src/test/test-percent-util.c are ported in
tests/unit/plugins/module_utils/test_pids.py).

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    UNLIMITED, LimitError, is_int)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.systemd import _sd_u64

NAME = 'pids'
#: the lowest pids.max the collection writes (with or without force)
FLOOR = (1024, 'it counts every process and thread of the cgroup: a login session, a user '
               'service or a container below it cannot start the programs and threads a shell, '
               'a DataLoader and NCCL need')
#: systemd's built-in DefaultTasksMax= (since v231: 15% of the kernel's limit)
SYSTEMD_DEFAULT_PERMYRIAD = 1500
_U64_MAX = 2 ** 64 - 1
_INT_MAX = 2 ** 31 - 1
_WS = ' \t\n\r'


class TasksMax(object):
    """A pids limit: ``count`` tasks, ``permyriad`` ten-thousandths of the kernel's limit, or
    neither (``infinity``)."""

    __slots__ = ('count', 'permyriad')

    def __init__(self, count=None, permyriad=None):
        self.count = count
        self.permyriad = permyriad

    @property
    def infinite(self):
        return self.count is None and self.permyriad is None

    def resolve(self, kernel_max):
        """The number of tasks (or UNLIMITED) on a node whose kernel limit is ``kernel_max``
        (system_tasks_max_scale: the fraction of it, rounded down; None: unknown)."""
        if self.infinite:
            return UNLIMITED
        if self.count is not None:
            return self.count
        if self.permyriad == 0:
            return 0
        if kernel_max is None:
            return None
        if self.permyriad == 10000:
            return kernel_max
        return kernel_max * self.permyriad // 10000

    def systemd(self):
        """The ``TasksMax=`` text."""
        if self.infinite:
            return 'infinity'
        if self.count is not None:
            return str(self.count)
        whole, part = divmod(self.permyriad, 100)
        return '%d%%' % whole if not part else '%d.%02d%%' % (whole, part)

    def __eq__(self, other):
        return isinstance(other, TasksMax) and (self.count, self.permyriad) == (
            other.count, other.permyriad)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self.count, self.permyriad))

    def __repr__(self):
        return 'TasksMax(%s)' % self.systemd()


INFINITY = TasksMax()


def _whole(text):
    """safe_atoi of the number before a symbol (strtol with base 0 after mangle_base: ``0x``,
    ``0o``, ``0b`` and a leading ``0`` choose the base): the int, or ValueError (EINVAL,
    ERANGE)."""
    match = re.match(r'^[' + _WS + r']*([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|'
                     r'[1-9][0-9]*)$', text)
    if not match:
        raise ValueError('EINVAL')
    digits = match.group(2)
    if digits[:2].lower() in ('0x', '0o', '0b'):
        value = int(digits[2:], {'x': 16, 'o': 8, 'b': 2}[digits[1].lower()])
    else:
        value = int(digits, 8 if digits.startswith('0') else 10)
    if match.group(1) == '-':
        value = -value
    if value > _INT_MAX or value < -_INT_MAX - 1:
        raise ValueError('ERANGE')
    return value


def _parts(text, symbol, places):
    """parse_parts_value_whole (places 0), _with_tenths_place (1), _with_hundredths_place (2)."""
    if not text.endswith(symbol):
        raise ValueError('EINVAL')
    body = text[:-len(symbol)]
    fraction = 0
    if places and '.' in body:
        number, digits = body.split('.', 1)
        if not 1 <= len(digits) <= places or not all('0' <= d <= '9' for d in digits):
            raise ValueError('EINVAL')
        fraction = int(digits.ljust(places, '0'))
        body = number
    value = _whole(body)
    if value < 0:
        raise ValueError('ERANGE')
    if value > (_INT_MAX - fraction) // (10 ** places):
        raise ValueError('ERANGE')
    return value * 10 ** places + fraction


def parse_permyriad_unbounded(text):
    """systemd's parse_permyriad_unbounded: ``N‱``, ``N[.N]‰``, ``N[.NN]%`` -> ‱ (ValueError
    with EINVAL or ERANGE otherwise)."""
    if text.endswith(u'\u2031'):
        return _parts(text, u'\u2031', 0)
    if text.endswith(u'\u2030'):
        return _parts(text, u'\u2030', 1)
    return _parts(text, '%', 2)


def parse_permyriad(text):
    """systemd's parse_permyriad: as unbounded, at most 100%."""
    value = parse_permyriad_unbounded(text)
    if value > 10000:
        raise ValueError('ERANGE')
    return value


def from_systemd(text, where='TasksMax'):
    """A ``TasksMax=``/``DefaultTasksMax=`` value as systemd (v249 on) reads it -> TasksMax, or
    None for an empty assignment (a unit goes back to the manager's DefaultTasksMax=, the
    manager to infinity). LimitError naming ``where`` where systemd logs "Invalid maximum tasks
    value" or "out of range" and keeps the earlier value."""
    text = text.strip(_WS)
    if not text:
        return None
    if text == 'infinity':
        return INFINITY
    try:
        return TasksMax(permyriad=parse_permyriad(text))
    except ValueError:
        pass
    try:
        value = _sd_u64(text)
    except ValueError:
        raise LimitError('%s: systemd cannot parse %r as a number of tasks, a percentage or '
                         'infinity; systemd ignores it' % (where, text))
    if value <= 0 or value >= _U64_MAX:
        raise LimitError('%s: %r is out of range (1 and up); systemd ignores it' % (where, text))
    return TasksMax(count=value)


def parse_profile_value(value, where='profile.pids', floor=True):
    """What a profile says for ``pids`` -> TasksMax: a whole number, ``infinity`` (or
    ``unlimited``), or a percentage of the kernel's limit as systemd writes it (``25%``,
    ``12.5%``, ``125‰``); never below the floor (``floor``: an expectation that is only
    compared passes False)."""
    if isinstance(value, bool) or value is None:
        raise LimitError('%s: needs a number of tasks, a percentage or "infinity", got %r'
                         % (where, value))
    if isinstance(value, float) and value == int(value):
        value = int(value)
    if is_int(value):
        result = TasksMax(count=value)
        if value < 1:
            raise LimitError('%s: %d is not a number of tasks (1 and up, or "infinity")'
                             % (where, value))
    elif isinstance(value, str):
        text = value.strip()
        if text.lower() in ('infinity', 'unlimited', 'max'):
            return INFINITY
        if re.match(r'^[0-9]+$', text):
            return parse_profile_value(int(text), where, floor)
        try:
            result = TasksMax(permyriad=parse_permyriad(text))
        except ValueError as exc:
            raise LimitError('%s: %r is not a number of tasks, a percentage of the kernel\'s '
                             'limit (systemd\'s grammar: "25%%", "12.5%%", at most 100%%) or '
                             '"infinity"%s' % (where, value, ' (over 100%)' if str(exc) == 'ERANGE'
                                               else ''))
        if result.permyriad == 0:
            raise LimitError('%s: %r allows no task at all' % (where, value))
    else:
        raise LimitError('%s: needs a number of tasks, a percentage or "infinity", got %r'
                         % (where, value))
    if floor and result.count is not None and result.count < FLOOR[0]:
        raise LimitError('%s: %d is below the floor %d, which is never written, with or without '
                         'force: %s' % (where, result.count, FLOOR[0], FLOOR[1]))
    return result


def split_profile(profile):
    """(the profile without ``pids``, what it says for pids or None): pids goes its own way
    (cgroups), every other item to the rlimit planners."""
    if not isinstance(profile, dict) or NAME not in profile:
        return profile, None
    rest = dict((k, v) for k, v in profile.items() if k != NAME)
    return rest, profile[NAME]


def system_tasks_max(threads_max, pid_max, root_pids_max=None):
    """systemd's system_tasks_max(): the smallest of kernel.threads-max, kernel.pid_max - 1
    and the pids.max of the root cgroup of a cgroup namespace (None where unknown)."""
    found = [v for v in (threads_max, pid_max - 1 if pid_max else None, root_pids_max)
             if is_int(v) and v > 0]
    return min(found) if found else None


def parse_pids_max(text, where='pids.max'):
    """A cgroup's ``pids.max`` file (``max`` or a number) -> int or UNLIMITED."""
    text = text.strip()
    if text == 'max':
        return UNLIMITED
    if not re.match(r'^[0-9]+$', text):
        raise LimitError('%s: %r is not a pids.max value' % (where, text))
    return int(text)


def minimum(values):
    """The smallest of ints and UNLIMITED (UNLIMITED when all are, None when empty)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    numbers = [v for v in values if v != UNLIMITED]
    return min(numbers) if numbers else UNLIMITED


def below(actual, wanted):
    """Is pids limit ``actual`` (int or UNLIMITED) below ``wanted``?"""
    if actual is None or wanted is None or wanted == 0:
        return False
    if wanted == UNLIMITED:
        return actual != UNLIMITED
    return actual != UNLIMITED and actual < wanted


def human(value):
    return 'max' if value == UNLIMITED else ('(unknown)' if value is None else str(value))
