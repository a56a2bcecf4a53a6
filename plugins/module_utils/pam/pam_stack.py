# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A service's PAM stack (``/etc/pam.d/SERVICE``, else ``/usr/lib/pam.d``), read as Linux-PAM
reads it: logical lines (backslash continuations), bracket controls, ``include`` and
``substack`` followed (``@include`` too), commented lines kept apart so a report can say which
pam_limits line is commented out. Control jumps such as ``success=1`` are not followed. Used by
the ssh context (is pam_limits in sshd's session stack). Private to the collection; plain
Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

PAM_DIRS = ('/etc/pam.d', '/usr/lib/pam.d')


class PamLine(object):
    """One line of a PAM stack as pam_limits' caller reads it: ``where`` is file:line."""

    def __init__(self, where, ptype, control, module, args):
        self.where = where
        self.ptype = ptype
        self.control = control
        self.module = module
        self.args = args

    def is_limits(self):
        return os.path.basename(self.module) == 'pam_limits.so'

    def conf(self):
        """pam_limits' ``conf=`` argument (limits.d is then not read), or None."""
        for arg in self.args:
            if arg.startswith('conf='):
                return arg[len('conf='):]
        return None


def pam_file(name, dirs=PAM_DIRS):
    """The file Linux-PAM reads for service or include ``name`` (/etc/pam.d first)."""
    if name.startswith('/'):
        return name
    for directory in dirs:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return os.path.join(dirs[0], name)


def _logical_lines(text):
    """(line number, text) as Linux-PAM assembles them (libpam_internal/pam_line.c): anything
    from ``#`` on is dropped, and a trailing backslash joins the next line, only on a line
    with no ``#`` (a backslash before a comment joins nothing)."""
    found, buffer, start = [], '', None
    for number, raw in enumerate(text.splitlines(), 1):
        if start is None:
            start = number
        body = raw.split('#', 1)[0].rstrip()
        if '#' not in raw and body.endswith('\\'):
            buffer += body[:-1] + ' '
            continue
        buffer += body
        found.append((start, buffer.strip()))
        buffer, start = '', None
    if buffer:
        found.append((start, buffer.strip()))
    return found


def _commented(raw, ptype):
    """Is ``raw`` a commented-out ``ptype`` line that runs pam_limits (``#session required
    pam_limits.so``, not a remark that names the module)?"""
    body = raw.strip()
    if not body.startswith('#'):
        return False
    fields = _split(body.lstrip('#').strip())
    return (len(fields) > 2 and fields[0].lstrip('-').lower() == ptype
            and fields[1] not in ('include', 'substack')
            and os.path.basename(fields[2]) == 'pam_limits.so')


def _split(body):
    """PAM fields: a bracketed control ``[a=b c=d]`` is one field."""
    fields, rest = [], body.strip()
    while rest:
        if rest.startswith('[') and not fields[1:]:
            end = rest.find(']')
            end = len(rest) if end < 0 else end + 1
            fields.append(rest[:end])
            rest = rest[end:].strip()
            continue
        part = rest.split(None, 1)
        fields.append(part[0])
        rest = part[1] if len(part) > 1 else ''
    return fields


def pam_stack(service, ptype='session', read=None, dirs=PAM_DIRS, depth=0, seen=None):
    """(lines, commented): the ``ptype`` lines of ``service``'s stack in order, with its
    ``@include`` and ``include``/``substack`` files followed (PamLine); and the file:line of
    every commented-out line that names pam_limits (why it is not there). ``read(path)``
    returns a file's text (None: missing)."""
    read = read or _read_text
    seen = seen if seen is not None else set()
    path = pam_file(service, dirs)
    text = read(path)
    if text is None or path in seen or depth > 10:
        return [], []
    seen = seen | set([path])
    lines, commented = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        if _commented(raw, ptype):
            commented.append('%s:%d' % (path, number))
    for number, body in _logical_lines(text):
        if not body:
            continue
        where = '%s:%d' % (path, number)
        if body.startswith('@include'):
            sub = body.split()[1:2]
            if sub:
                more, off = pam_stack(sub[0], ptype, read, dirs, depth + 1, seen)
                lines.extend(more)
                commented.extend(off)
            continue
        fields = _split(body)
        if len(fields) < 2:
            continue
        kind = fields[0].lstrip('-').lower()
        if kind != ptype:
            continue
        if fields[1] in ('include', 'substack') and len(fields) > 2:
            more, off = pam_stack(fields[2], ptype, read, dirs, depth + 1, seen)
            lines.extend(more)
            commented.extend(off)
            continue
        if len(fields) < 3:
            continue
        lines.append(PamLine(where, kind, fields[1], fields[2], fields[3:]))
    return lines, commented


def _read_text(path):
    try:
        with open(path, 'r') as handle:
            return handle.read()
    except (IOError, OSError):
        return None
