# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limit model: the one place that knows resource-limit items, their units and syntaxes.

Plain Python (no Ansible import), runs on Python 3.8 targets.

Internally every value is held in the *kernel's* units, the ones /proc/PID/limits shows:
bytes for size items, seconds for cpu, a count for the rest, the raw RLIMIT_NICE value
(20 - nice) for nice, or the UNLIMITED marker. Each configuration format converts to and from
that representation here and nowhere else:

* profile values (what users write in playbooks): ints, ``unlimited``, human sizes such as
  ``64MiB``/``8G`` (base 1024, as systemd and Docker read them), durations such as ``90min``;
  a bare number uses limits.conf units (KiB for size items, minutes for cpu);
* limits.conf (pam_limits): KiB, minutes, nice value, ``unlimited``;
* systemd (``LimitNOFILE=``/``DefaultLimitNOFILE=``): ``SOFT:HARD``, ``infinity``, bytes with
  K/M/G/... suffixes, seconds, nice value with a sign or raw value;
* Docker daemon.json ``default-ulimits``: ``{"Name", "Soft", "Hard"}`` in kernel units, -1 for
  unlimited; Podman/CRI-O ``default_ulimits``: ``"name=SOFT:HARD"``;
* /proc/PID/limits rows.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils import errors

UNLIMITED = 'unlimited'
# The kernel's RLIM_INFINITY, as systemd and prlimit print it on 64-bit Linux.
RLIM_INFINITY = 2 ** 64 - 1


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
        return self.name if self.is_rlimit else None

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
_BY_PROC_ROW = dict((i.proc_row, i) for i in _ITEM_LIST if i.proc_row)
_BY_RLIMIT = dict((i.rlimit, i) for i in _ITEM_LIST if i.rlimit)

_UNLIMITED_WORDS = ('unlimited', 'infinity', '-1')
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


def get_item(name, where='item'):
    """The Item called ``name``; LimitError naming ``where`` when there is none."""
    if not isinstance(name, str) or name.lower() not in ITEMS:
        raise LimitError('%s: unknown limit item %r (known: %s)'
                         % (where, name, ', '.join(ITEM_NAMES)))
    return ITEMS[name.lower()]


def is_unlimited(value):
    return value == UNLIMITED


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


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
    if _is_int(value):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip().lower()
    else:
        raise LimitError('%s: %s needs a number or "unlimited", got %r' % (where, item.name, value))

    if text in _UNLIMITED_WORDS:
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


def parse_limit(item, spec, where='value'):
    """A profile entry -> Limit. ``spec`` is a value (soft = hard) or a dict with ``soft``/``hard``
    (either may be missing: the missing side is None) or ``value``."""
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
            return Limit(value, value)
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
    return limit


def check_pair(item, limit, where='value'):
    """Soft above hard is refused: systemd rejects it and pam_limits silently clamps it."""
    if limit.soft is not None and limit.hard is not None and exceeds(limit.soft, limit.hard):
        raise LimitError('%s: soft %s is above hard %s for %s'
                         % (where, format_human(item, limit.soft), format_human(item, limit.hard),
                            item.name))


def parse_profile(profile, where='limits'):
    """{item: value or {soft, hard}} -> {item_name: Limit}."""
    if not isinstance(profile, dict):
        raise LimitError('%s: must be a mapping of item -> value or {soft, hard}' % where)
    result = {}
    for name, spec in profile.items():
        item = get_item(name, '%s.%s' % (where, name))
        result[item.name] = parse_limit(item, spec, '%s.%s' % (where, name))
    return result


def parse_runtime_request(ulimits, shm_size):
    """A container runtime module's request -> ({item: Limit} or None, shm bytes or None)."""
    requested = parse_profile(ulimits, 'ulimits') if ulimits is not None else None
    size = None
    if shm_size is not None:
        size = parse_size(shm_size, 'shm_size')
        if size <= 0:
            raise LimitError('shm_size: must be larger than 0')
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


# --- limits.conf (pam_limits) -------------------------------------------------------------

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


# --- systemd ------------------------------------------------------------------------------

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
    return _BY_RLIMIT.get(match.group(1))


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
    if text == 'infinity':
        return UNLIMITED
    if item.kind == 'size' or item.name == 'msgqueue':
        value = _sd_size(text)
    elif item.kind == 'time':
        usec = _sd_time_usec(text)
        if usec is None:
            return UNLIMITED
        value = (usec + 10 ** 6 - 1) // 10 ** 6
    elif item.kind == 'nice':
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
    sizes, suffixed msgqueue sizes, ``1h30min`` and ``1500ms`` (rounded up) for cpu.
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


# --- Docker and Podman ---------------------------------------------------------------------

def _docker_side(value):
    return -1 if value == UNLIMITED else value


def to_docker(item, limit):
    item = ITEMS[item] if isinstance(item, str) else item
    if not item.is_rlimit:
        raise LimitError('%s is not a resource limit Docker can set' % item.name)
    if limit.soft is None or limit.hard is None:
        raise LimitError('%s: Docker needs both soft and hard' % item.name)
    return {'Name': item.name, 'Soft': _docker_side(limit.soft), 'Hard': _docker_side(limit.hard)}


_INT64_MAX = 2 ** 63 - 1


def _go_json_field(entry, field):
    """The value Go's encoding/json puts in struct field ``field`` from a JSON object: an exact
    key match, else any key equal to it case-insensitively; of several, the last one read."""
    found = None
    for key, value in entry.items():
        if key == field or key.casefold() == field.casefold():
            found = (key, value)
    return found


def from_docker(name, entry, where='default-ulimits'):
    """A daemon.json ``default-ulimits`` entry -> (Item, Limit), as dockerd decodes it.

    dockerd decodes the entry into go-units' Ulimit with Go's encoding/json: the keys ``Name``,
    ``Soft`` and ``Hard`` match in any letter case (``name``, ``SOFT``); the rlimit is
    ``RLIMIT_`` + the upper-cased Name (``NOFILE`` is nofile); Soft and Hard are JSON integers
    that fit an int64. Refused on purpose although dockerd starts with them: a Name that is not
    the entry's key (dockerd sets the rlimit Name says but merges container ulimits by the key),
    a missing or null Soft/Hard (dockerd uses 0), values below -1 (the kernel receives them as
    huge unsigned numbers) and rttime (not managed by this collection).
    """
    if not isinstance(entry, dict):
        raise LimitError('%s.%s: must be an object with Name, Soft and Hard' % (where, name))
    found = _go_json_field(entry, 'Name')
    if found is None or not isinstance(found[1], str) or not found[1]:
        raise LimitError('%s.%s: "Name" must be %r (without it dockerd fails with "wrong '
                         'rlimit value")' % (where, name, str(name).lower()))
    entry_name = found[1]
    if entry_name.lower() != str(name).lower():
        raise LimitError('%s.%s: "Name" is %r: dockerd would set the %s limit Name gives while '
                         'merging by the key %r; make them the same'
                         % (where, name, entry_name, entry_name, name))
    if entry_name.lower() == 'rttime':
        raise LimitError('%s.%s: rttime is a limit dockerd knows but gpufleet.tuning does not '
                         'manage' % (where, name))
    item = get_item(entry_name.lower(), where)
    if not item.is_rlimit:
        raise LimitError('%s: %s is not a resource limit Docker can set' % (where, name))
    sides = []
    for key in ('Soft', 'Hard'):
        found = _go_json_field(entry, key)
        value = found[1] if found else None
        if not _is_int(value) or value < -1 or value > _INT64_MAX:
            raise LimitError('%s.%s.%s: must be an integer (-1 for unlimited), got %r'
                             % (where, name, key, value))
        sides.append(UNLIMITED if value == -1 else value)
    limit = Limit(sides[0], sides[1])
    check_pair(item, limit, '%s.%s' % (where, name))
    return item, limit


def to_ulimit_string(item, limit):
    """Limit -> ``nofile=SOFT:HARD`` (Podman/CRI-O default_ulimits, docker --ulimit)."""
    item = ITEMS[item] if isinstance(item, str) else item
    entry = to_docker(item, limit)
    return '%s=%d:%d' % (item.name, entry['Soft'], entry['Hard'])


def from_ulimit_string(text, where='default_ulimits'):
    """``NAME=SOFT[:HARD]`` -> (Item, Limit), as go-units ParseUlimit reads it (Podman's
    default_ulimits, CRI-O, docker --ulimit): the name in lower case exactly, no blanks, Go
    integers (a ``+`` sign is fine), a soft -1 only with a hard -1."""
    match = re.match(r'^([a-z]+)=([+-]?[0-9]+)(?::([+-]?[0-9]+))?$', str(text))
    if not match:
        raise LimitError('%s: %r is not NAME=SOFT[:HARD] as Podman reads it (lower-case name, '
                         'no blanks)' % (where, text))
    hard = match.group(3) if match.group(3) is not None else match.group(2)
    return from_docker(match.group(1), {'Name': match.group(1), 'Soft': int(match.group(2)),
                                        'Hard': int(hard)}, where)


# --- /proc/PID/limits -------------------------------------------------------------------

def parse_proc_limits(text):
    """/proc/PID/limits content -> {item_name: Limit} in kernel units."""
    result = {}
    for line in text.splitlines()[1:]:
        for row, item in _BY_PROC_ROW.items():
            if line.startswith(row + ' '):
                fields = line[len(row):].split()
                result[item.name] = Limit(_proc_side(fields[0]), _proc_side(fields[1]))
    return result


def _proc_side(text):
    return UNLIMITED if text == 'unlimited' else int(text)
