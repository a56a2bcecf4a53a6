# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sysctl configuration as systemd-sysctl reads it, and the live values in /proc/sys.
Plain Python; runs on Python 3.8 targets.

Reading (systemd src/sysctl/sysctl.c, sysctl.d(5)): ``*.conf`` files of the directories in
:data:`DIRS`, a name in an earlier directory masking the same name in a later one (a link to
/dev/null or an empty file masks and sets nothing); the files in the lexical order of their
names; per line: blanks stripped, ``#`` and ``;`` start a comment, ``KEY = VALUE`` (the first
``=``), ``-KEY = VALUE`` (a write that may fail), ``-KEY`` alone (no glob sets KEY); a later
assignment of a key replaces an earlier one; an explicit key wins over every glob that matches
it, and among globs the last one wins. Keys are normalised as sysctl_normalize() does
(:func:`normalize`): ``a.b/c`` and ``a/b.c`` are the same key. procps ``sysctl --system``
reads ``/etc/sysctl.conf`` after the directories; Debian, Ubuntu and RHEL link
``/etc/sysctl.d/99-sysctl.conf`` to it, which systemd-sysctl reads in its place. The resolver
reads it last unless such a link already brought it in, so a value there counts as later.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings

DIRS = ('/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d', '/usr/lib/sysctl.d',
        '/lib/sysctl.d')
SYSCTL_CONF = '/etc/sysctl.conf'
PROC_SYS = '/proc/sys'
COMMENTS = '#;'
WHITESPACE = ' \t\n\r'
GLOB_CHARS = '*?['

READ_ONLY = '/proc/sys is mounted read-only here (a container)'
INT_MAX = ceilings.INT_MAX
LONG_MAX = ceilings.LONG_MAX

#: The kernel ceilings the collection audits and sets: (lowest, highest) the kernel accepts
#: (its proc_handler's extra1/extra2 on 64-bit Linux), what the value bounds, the default;
#: declared once in model/ceilings.py. docs/limit-model.md's table lists the same keys (a unit
#: test compares).
KNOWN = dict((c.name, (c.low, c.high, c.what, c.default)) for c in ceilings.KERNEL)


class ConfError(ValueError):
    """A sysctl name or value that cannot be used; the message names the field."""


def normalize(key):
    """A key as systemd's sysctl_normalize() writes it (the /proc/sys path below
    /proc/sys, without leading or doubled slashes): when the first separator is a dot, dots
    and slashes swap (``net.ipv4.conf.eth0/100.x`` -> ``net/ipv4/conf/eth0.100/x``)."""
    key = key.lstrip('/.')
    for char in key:
        if char in './':
            if char == '.':
                key = key.translate({ord('.'): '/', ord('/'): '.'})
            break
    parts = [part for part in key.split('/') if part]
    return '/'.join(parts)


def dotted(key):
    """The sysctl(8) name of a normalised key (``fs/inotify/max_user_watches`` ->
    ``fs.inotify.max_user_watches``; a dot inside a component becomes a slash)."""
    return '.'.join(part.replace('.', '/') for part in key.split('/'))


def is_glob(key):
    return any(char in key for char in GLOB_CHARS)


def glob_matches(pattern, key):
    """Does a glob key match a normalised key, as glob(3) does on /proc/sys paths (a
    wildcard never crosses a slash)?"""
    left, right = pattern.split('/'), key.split('/')
    return len(left) == len(right) and all(
        fnmatch.fnmatchcase(name, part) for part, name in zip(left, right))


class Assignment(object):
    """One line: ``key`` (normalised), ``value`` (None for a ``-KEY`` exclusion), ``path``,
    ``line`` (1-based), ``ignore_failure`` (the ``-`` prefix), ``glob``."""

    def __init__(self, path, line, key, value, ignore_failure, text):
        self.path = path
        self.line = line
        self.key = key
        self.value = value
        self.ignore_failure = ignore_failure
        self.glob = is_glob(key)
        self.text = text

    @property
    def where(self):
        return '%s:%d' % (self.path, self.line)

    def as_dict(self):
        return dict(name=dotted(self.key), value=self.value, source=self.where,
                    ignore_failure=self.ignore_failure, glob=self.glob)


def parse_line(text):
    """(key, value, ignore_failure) of one line, None for a blank or comment line; ConfError
    for a line systemd-sysctl skips ("Line is not an assignment")."""
    stripped = text.strip(WHITESPACE)
    if not stripped or stripped[0] in COMMENTS:
        return None
    ignore = False
    if '=' in stripped:
        key, value = stripped.split('=', 1)
        if key.startswith('-'):
            ignore, key = True, key[1:]
        value = value.strip(WHITESPACE)
    elif stripped.startswith('-'):
        key, value, ignore = stripped[1:], None, True
    else:
        raise ConfError('line is not an assignment: %s' % stripped)
    key = normalize(key.strip(WHITESPACE))
    if not key:
        raise ConfError('no key: %s' % stripped)
    return key, value, ignore


def parse_text(text, path='<text>'):
    """([Assignment], [problem dicts {path, line, problem}]) of one file's text."""
    found, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            parsed = parse_line(line)
        except ConfError as exc:
            problems.append(dict(path=path, line=number, problem=str(exc)))
            continue
        if parsed is not None:
            key, value, ignore = parsed
            found.append(Assignment(path, number, key, value, ignore, line))
    return found, problems


def read_text(path):
    """A file's text (undecodable bytes kept as surrogates), or None when it is not there."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError):
        return None
    return data.decode('utf-8', 'surrogateescape')


def config_files(root='', dirs=DIRS, sysctl_conf=SYSCTL_CONF, overlay=None):
    """The files systemd-sysctl reads, in order, then /etc/sysctl.conf when no sysctl.d link
    brings it in. ``overlay``: {path: text or None} read instead of the disk (a planned
    file; None: the file would not exist). Returns [(path, text)], masked files left out."""
    overlay = overlay or {}
    chosen = {}
    for directory in dirs:
        names = set()
        try:
            names.update(n for n in os.listdir(root + directory) if n.endswith('.conf'))
        except OSError:
            pass
        names.update(os.path.basename(p) for p in overlay
                     if os.path.dirname(p) == directory and p.endswith('.conf'))
        for name in names:
            chosen.setdefault(name, os.path.join(directory, name))
    result = []
    conf_real = os.path.realpath(root + sysctl_conf) if sysctl_conf else None
    included = False
    for name in sorted(chosen):
        path = chosen[name]
        if path in overlay:
            text = overlay[path]
        else:
            if os.path.realpath(root + path) == '/dev/null':
                continue
            text = read_text(root + path)
            if conf_real and os.path.realpath(root + path) == conf_real:
                included = True
        if text:
            result.append((path, text))
    if sysctl_conf and not included:
        text = overlay[sysctl_conf] if sysctl_conf in overlay else read_text(root + sysctl_conf)
        if text:
            result.append((sysctl_conf, text))
    return result


def parse_files(files):
    """([Assignment] in reading order, [problems]) of config_files()'s list."""
    found, problems = [], []
    for path, text in files:
        more, bad = parse_text(text, path)
        found.extend(more)
        problems.extend(bad)
    return found, problems


def resolve(assignments, key):
    """What decides normalised ``key``: {winner: Assignment or None (nothing sets it; an
    exclusion line also yields None), overridden: [earlier Assignments with another value]}.
    An explicit line wins over any glob; among the lines of one kind the last wins."""
    explicit = [a for a in assignments if not a.glob and a.key == key]
    if explicit:
        chain = explicit
    else:
        chain = [a for a in assignments if a.glob and a.value is not None
                 and glob_matches(a.key, key)]
    winner = chain[-1] if chain else None
    overridden = [a for a in chain[:-1] if winner is None or a.value != winner.value]
    if winner is not None and winner.value is None:
        winner = None
    return dict(winner=winner, overridden=overridden)


def proc_path(key, root=''):
    return '%s%s/%s' % (root, PROC_SYS, key)


def live(key, root=''):
    """The value in /proc/sys (stripped text) or None when it cannot be read."""
    try:
        with open(proc_path(key, root)) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def exists(key, root=''):
    return os.path.isfile(proc_path(key, root))


def writable(key, root=''):
    """None when the kernel entry can be written here, else why not (a read-only /proc/sys
    in a container, no permission)."""
    path = proc_path(key, root)
    if os.access(path, os.W_OK):
        return None
    try:
        stats = os.statvfs(path)
        if stats.f_flag & getattr(os, 'ST_RDONLY', 1):
            return READ_ONLY
    except OSError:
        pass
    return '%s is not writable by this user' % path


def as_int(text):
    """An integer value (one decimal number) or None."""
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def check_name(field, name, root=''):
    """The normalised key of a requested sysctl name; ConfError naming ``field`` when it is a
    glob or has no /proc/sys entry on this node."""
    if not isinstance(name, str) or not name.strip():
        raise ConfError('%s: a sysctl name is a non-empty string' % field)
    key = normalize(name.strip())
    if is_glob(key) or name.strip().startswith('-'):
        raise ConfError('%s: %r is a pattern; name one sysctl' % (field, name))
    if not exists(key, root):
        raise ConfError('%s: unknown sysctl %r (no %s on this node)'
                        % (field, name, proc_path(key)))
    return key


def check_value(field, key, value):
    """An integer the kernel accepts for ``key``; ConfError naming ``field`` otherwise."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        number = int(text) if text.lstrip('-').isdigit() else None
    if number is None:
        raise ConfError('%s: %r is not an integer' % (field, value))
    bounds = KNOWN.get(dotted(key))
    if bounds and not bounds[0] <= number <= bounds[1]:
        raise ConfError('%s: %d is outside what the kernel accepts for %s (%d to %d)'
                        % (field, number, dotted(key), bounds[0], bounds[1]))
    if number < 0:
        raise ConfError('%s: %d is below 0' % (field, number))
    return number


def file_nr(root=''):
    """(allocated, maximum) file handles from /proc/sys/fs/file-nr, or (None, None)."""
    text = live('fs/file-nr', root) or ''
    fields = text.split()
    if len(fields) == 3 and all(f.isdigit() for f in fields):
        return int(fields[0]), int(fields[2])
    return None, None
