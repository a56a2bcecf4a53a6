# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd configuration files: a lossless parser and editor. systemd's precedence over them is
in systemd_precedence, the names and search paths in systemd_paths, what the running systemd
says in systemd_live. Private to the collection.

Plain Python (no Ansible import), runs on Python 3.8 targets. Every function that touches the
file system takes ``root``, a prefix put in front of every absolute path (``''`` on a host, a
temporary directory in unit tests); paths in results are always the host's paths.

The parser follows systemd 252's ``config_parse()`` (src/shared/conf-parser.c):

* lines end with ``\\n``; a line whose first non-blank character is ``#`` or ``;`` is a comment,
  skipped even in the middle of a continuation;
* a line ending in an unescaped backslash continues on the next line (the backslash becomes a
  space);
* ``[Section]`` starts a section; a header without the closing ``]`` is an error that makes
  systemd abandon the rest of the file (and, for manager configuration, every later file);
* ``Key=Value``: key and value stripped of blanks; an assignment outside a section or in a
  section systemd does not know for that file is ignored.

Every physical line is kept as it was: ``ConfFile.parse(text).render() == text`` for any text,
and edits only touch the statements they change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as paths
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec

WHITESPACE = ' \t\n\r'
COMMENTS = '#;'
BOM = u'\ufeff'

ConfError = paths.ConfError

HEADER = ('# Managed by gpufleet.tuning.systemd_limits. Lines the module does not own are kept.\n')


# --- text --------------------------------------------------------------------------------------

def _strip(text):
    return text.strip(WHITESPACE)


def _physical_lines(text):
    """Split on \\n only, keeping the line ends (str.splitlines also splits on \\r, \\x0c...)."""
    if not text:
        return []
    parts = text.split('\n')
    lines = [part + '\n' for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _ends_escaped(text):
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == '\\':
            escaped = True
    return escaped


class Statement(namedtuple('Statement', 'first last kind section key value text',
                           defaults=(None, None, None, ''))):
    """One logical line: physical lines [first, last] (0-based), what systemd makes of it.

    kind: 'blank', 'comment', 'section', 'assignment', 'bad-section' (fatal for the file),
    'no-equals', 'outside' (assignment before any section).
    """

    __slots__ = ()

    @property
    def line(self):
        """1-based number of the first physical line, as systemd's messages count."""
        return self.first + 1

    def __repr__(self):
        return 'Statement(%d-%d %s %r=%r in %r)' % (self.first, self.last, self.kind, self.key,
                                                    self.value, self.section)


class ConfFile(object):
    """A parsed systemd configuration file that renders back to the same text."""

    def __init__(self, lines, path=None):
        self.lines = list(lines)
        self.path = path
        self.statements = []
        self._parse()

    @classmethod
    def parse(cls, text, path=None):
        return cls(_physical_lines(text or ''), path)

    def render(self):
        return ''.join(self.lines)

    def _parse(self):
        section = None
        continuation = None     # (first line index, accumulated text)
        for index, raw in enumerate(self.lines):
            body = raw[:-1] if raw.endswith('\n') else raw
            if body.endswith('\r'):
                body = body[:-1]    # systemd's read_line() takes \r\n as one line end
            if index == 0 and body.startswith(BOM):
                body = body[len(BOM):]
            stripped = _strip(body)
            if stripped and stripped[0] in COMMENTS:
                if continuation is None:
                    self.statements.append(Statement(index, index, 'comment', section,
                                                     text=stripped))
                continue
            if continuation is not None:
                first, text = continuation
                text = text + body
            else:
                first, text = index, body
            if _ends_escaped(text):
                continuation = (first, text[:-1] + ' ')
                continue
            continuation = None
            statement, section = self._statement(first, index, text, section)
            self.statements.append(statement)
        if continuation is not None:
            # systemd parses what it has at end of file.
            first, text = continuation
            statement, section = self._statement(first, len(self.lines) - 1, text, section)
            self.statements.append(statement)

    @staticmethod
    def _statement(first, last, text, section):
        line = _strip(text)
        if not line:
            return Statement(first, last, 'blank', section, text=line), section
        if line[0] == '[':
            if line[-1] != ']':
                return Statement(first, last, 'bad-section', section, text=line), section
            name = line[1:-1]
            return Statement(first, last, 'section', name, text=line), name
        if '=' not in line:
            return Statement(first, last, 'no-equals', section, text=line), section
        key, value = line.split('=', 1)
        kind = 'assignment' if section is not None else 'outside'
        return (Statement(first, last, kind, section, _strip(key), _strip(value), text=line),
                section)

    # -- queries --

    def assignments(self, section=None, key=None):
        """Assignments systemd reads, in order, stopping at a bad section header."""
        result = []
        for statement in self.statements:
            if statement.kind == 'bad-section':
                break
            if statement.kind != 'assignment':
                continue
            if section is not None and statement.section != section:
                continue
            if key is not None and statement.key != key:
                continue
            result.append(statement)
        return result

    def bad_section(self):
        for statement in self.statements:
            if statement.kind == 'bad-section':
                return statement
        return None

    def has_assignments(self):
        return any(s.kind in ('assignment', 'outside', 'no-equals', 'bad-section')
                   for s in self.statements)

    # -- edits --

    def _replace(self, first, last, new_lines):
        self.lines[first:last + 1] = new_lines
        self.statements = []
        self._parse()

    def set(self, section, key, value):
        """Make the last ``key`` assignment of ``section`` read ``key=value``; add it if missing.
        Returns True when the text changed."""
        new_line = '%s=%s\n' % (key, value)
        existing = self.assignments(section, key)
        if existing:
            last = existing[-1]
            old = self.lines[last.first:last.last + 1]
            if not old[-1].endswith('\n'):
                new_line = new_line[:-1]
            if old == [new_line]:
                return False
            self._replace(last.first, last.last, [new_line])
            return True
        bad = self.bad_section()
        if bad is not None:
            raise ConfError('%s:%d: invalid section header %r; systemd ignores the rest of the '
                            'file, fix it first' % (self.path, bad.line, bad.text))
        position = self._section_end(section)
        if position is None:
            prefix = []
            if self.lines and not self.lines[-1].endswith('\n'):
                self.lines[-1] += '\n'
            if self.lines and _strip(self.lines[-1]):
                prefix.append('\n')
            position = len(self.lines)
            insert = prefix + ['[%s]\n' % section, new_line]
        else:
            if position > 0 and not self.lines[position - 1].endswith('\n'):
                self.lines[position - 1] += '\n'
            insert = [new_line]
        saved = list(self.lines)
        self.lines[position:position] = insert
        self.statements = []
        self._parse()
        if not self._starts_assignment(position + len(insert) - 1, key):
            # The line before ends inside a continuation (a trailing backslash): an empty line
            # ends it without changing its value, then ours stands on its own.
            self.lines = saved
            self.lines[position:position] = ['\n'] + insert
            self.statements = []
            self._parse()
            if not self._starts_assignment(position + len(insert), key):
                raise ConfError('%s: cannot add %s after line %d' % (self.path, key, position))
        return True

    def _starts_assignment(self, index, key):
        return any(s.first == index and s.kind == 'assignment' and s.key == key
                   for s in self.statements)

    def _section_end(self, section):
        """Index after the last non-blank statement of the last ``section`` block, or None."""
        end = None
        current = None
        for statement in self.statements:
            if statement.kind == 'section':
                current = statement.section
                if current == section:
                    end = statement.last + 1
            elif current == section and statement.kind != 'blank':
                end = statement.last + 1
        return end

    def unset(self, section, key):
        """Remove every ``key`` assignment of ``section``. Returns True when the text changed."""
        existing = self.assignments(section, key)
        for statement in reversed(existing):
            del self.lines[statement.first:statement.last + 1]
        if existing:
            self.statements = []
            self._parse()
        return bool(existing)


def read_conf(path, root=''):
    """ConfFile of a host path, or None when it does not exist. Raises ConfError."""
    try:
        with open(root + path, 'rb') as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        if getattr(exc, 'errno', None) == 2:
            return None
        raise ConfError('%s: cannot read: %s' % (path, getattr(exc, 'strerror', None) or exc))
    return ConfFile.parse(text_codec.decode_bytes(data), path)


# --- planning an edit --------------------------------------------------------------------

def plan_edit(text, section, prefix, limits, state, path=None, prune=False):
    """New text of a drop-in: ``limits`` {item: Limit} (or, for absent, item names or None
    for every Limit key) applied to ``text`` (None: no file). Returns the new text, or None when
    the file should be removed (absent and no assignments left). ``prune``: the drop-in is the
    collection's own, and holds exactly ``limits``: other ``Limit*=`` keys go."""
    conf = ConfFile.parse(text or '', path)
    if state == 'present':
        if not text:
            conf = ConfFile.parse(HEADER + '[%s]\n' % section, path)
        if prune:
            for name in model.RLIMIT_ITEMS:
                if name not in limits and conf.assignments(
                        section, model.systemd_key(model.ITEMS[name], prefix)):
                    conf.unset(section, model.systemd_key(model.ITEMS[name], prefix))
        for name in sorted(limits):
            item = model.ITEMS[name]
            key = model.systemd_key(item, prefix)
            existing = conf.assignments(section, key)
            if existing:
                try:
                    current = model.from_systemd_config(item, existing[-1].value)
                except model.LimitError:
                    current = None
                if current == limits[name]:
                    continue
            conf.set(section, key, model.to_systemd(item, limits[name]))
        return conf.render()
    if text is None:
        return None
    names = limits if limits is not None else model.RLIMIT_ITEMS
    for name in sorted(names):
        conf.unset(section, model.systemd_key(model.ITEMS[name], prefix))
    if not conf.has_assignments():
        return None
    return conf.render()
