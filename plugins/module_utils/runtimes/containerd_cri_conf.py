# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd's config.toml, as far as the CRI runtime handlers' ``base_runtime_spec`` goes:
read it (the config version, ``imports``, the handlers and their base spec) and reference a
base spec for a handler by a line edit that keeps every other byte of the file.

Why a line edit and not containerd's ``imports`` drop-in: containerd 1.6/1.7 (config version 2)
merges an imported file by *replacing* each plugin section it names ("Replace entire sections
instead of merging map's values", ``services/server/config/config.go`` ``mergeConfig``), so a
drop-in that sets ``base_runtime_spec`` for ``runc`` would drop the rest of the main file's
CRI section (snapshotter, sandbox image, the other handlers). A ``base_runtime_spec = "..."``
line inserted into (or a handler table appended to) the user's own file works the same for
version 2 and version 3 and keeps the user's lines byte-for-byte.

The reader is a small TOML reader for what containerd's config uses: tables, arrays of tables,
``key = value`` with strings, integers, floats, booleans, arrays and inline tables, dotted and
quoted keys, comments. What it cannot read is refused with ``path:line`` before anything is
written. Plain Python (no Ansible import), runs on Python 3.8 targets.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors

CONFIG = '/etc/containerd/config.toml'
#: the CRI plugin section holding ``containerd.runtimes``, by config version
CRI_RUNTIME_PLUGIN = {2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime'}
#: the runtime_type a handler table the collection appends gets (containerd's default for runc)
RUNC_TYPE = 'io.containerd.runc.v2'


class ConfigError(errors.Error, ValueError):
    """config.toml content we refuse to act on; the message names ``path:line``."""

    kind = errors.UNPARSABLE


# --- a small TOML reader ----------------------------------------------------------------------

_BARE = re.compile(r'[A-Za-z0-9_-]+')
_WS = ' \t'


class _Reader(object):
    def __init__(self, text, path):
        self.text = text
        self.path = path
        self.pos = 0

    def line(self):
        return self.text.count('\n', 0, self.pos) + 1

    def fail(self, what):
        where = '%s:%d' % (self.path, self.line())
        raise ConfigError('%s: not valid TOML: %s' % (where, what), where=where)

    def peek(self):
        return self.text[self.pos:self.pos + 1]

    def skip_ws(self, newlines=False):
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in _WS or (newlines and c in '\r\n'):
                self.pos += 1
            elif newlines and c == '#':
                self.skip_comment()
            else:
                break

    def skip_comment(self):
        end = self.text.find('\n', self.pos)
        self.pos = len(self.text) if end < 0 else end

    def end_of_line(self):
        self.skip_ws()
        if self.peek() == '#':
            self.skip_comment()
        if self.peek() == '\r':
            self.pos += 1
        if self.peek() not in ('', '\n'):
            self.fail('unexpected %r after the value' % self.peek())
        self.pos += 1

    def key(self):
        parts = []
        while True:
            self.skip_ws()
            c = self.peek()
            if c == '"':
                parts.append(self.basic_string())
            elif c == "'":
                parts.append(self.literal_string())
            else:
                m = _BARE.match(self.text, self.pos)
                if not m:
                    self.fail('expected a key')
                parts.append(m.group(0))
                self.pos = m.end()
            self.skip_ws()
            if self.peek() != '.':
                return parts
            self.pos += 1

    def basic_string(self):
        if self.text.startswith('"""', self.pos):
            self.fail('multi-line strings are not supported here')
        m = re.compile(r'"((?:[^"\\\n]|\\.)*)"').match(self.text, self.pos)
        if not m:
            self.fail('unterminated string')
        self.pos = m.end()
        try:
            return json.loads('"%s"' % m.group(1))
        except ValueError:
            self.fail('bad escape in string')

    def literal_string(self):
        if self.text.startswith("'''", self.pos):
            self.fail('multi-line strings are not supported here')
        end = self.text.find("'", self.pos + 1)
        nl = self.text.find('\n', self.pos + 1)
        if end < 0 or (0 <= nl < end):
            self.fail('unterminated string')
        value = self.text[self.pos + 1:end]
        self.pos = end + 1
        return value

    def value(self):
        self.skip_ws()
        c = self.peek()
        if c == '"':
            return self.basic_string()
        if c == "'":
            return self.literal_string()
        if c == '[':
            self.pos += 1
            items = []
            while True:
                self.skip_ws(newlines=True)
                if self.peek() == ']':
                    self.pos += 1
                    return items
                items.append(self.value())
                self.skip_ws(newlines=True)
                if self.peek() == ',':
                    self.pos += 1
                elif self.peek() != ']':
                    self.fail('expected , or ] in an array')
        if c == '{':
            self.pos += 1
            table = {}
            self.skip_ws()
            if self.peek() == '}':
                self.pos += 1
                return table
            while True:
                parts = self.key()
                if self.peek() != '=':
                    self.fail('expected = in an inline table')
                self.pos += 1
                _put(table, parts, self.value(), self)
                self.skip_ws()
                if self.peek() == ',':
                    self.pos += 1
                elif self.peek() == '}':
                    self.pos += 1
                    return table
                else:
                    self.fail('expected , or } in an inline table')
        m = re.compile(r'(true|false)(?![A-Za-z0-9_])').match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return m.group(1) == 'true'
        m = re.compile(r'[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|[0-9_]+(?:\.[0-9_]+)?'
                       r'(?:[eE][+-]?[0-9_]+)?|inf|nan)').match(self.text, self.pos)
        if m and m.group(0) not in ('', '+', '-'):
            self.pos = m.end()
            text = m.group(0).replace('_', '')
            try:
                if text.lstrip('+-')[:2] in ('0x', '0o', '0b'):
                    return int(text, 0)
                return int(text) if re.match(r'^[+-]?[0-9]+$', text) else float(text)
            except ValueError:
                self.fail('bad number %r' % m.group(0))
        self.fail('expected a value')


def _put(table, parts, value, reader):
    for part in parts[:-1]:
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            reader.fail('key %s is not a table' % '.'.join(parts))
    if parts[-1] in table:
        reader.fail('key %s defined twice' % '.'.join(parts))
    table[parts[-1]] = value


def parse(text, path=CONFIG):
    """config.toml text -> (data, tables): data is the nested dict, tables maps each table
    header (a tuple of key parts) to its 1-based line and the line of its last key."""
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise ConfigError('%s: not UTF-8 text (byte %d)' % (path, exc.start), where=path)
    reader = _Reader(text, path)
    data = {}
    current = data
    header = ()
    tables = {(): [0, 0]}
    while True:
        reader.skip_ws(newlines=True)
        if reader.pos >= len(text):
            break
        if reader.peek() == '[':
            array = text.startswith('[[', reader.pos)
            reader.pos += 2 if array else 1
            parts = reader.key()
            closing = ']]' if array else ']'
            if not text.startswith(closing, reader.pos):
                reader.fail('expected %s' % closing)
            reader.pos += len(closing)
            line = reader.line()
            header = tuple(parts)
            if not array and header in tables and header != ():
                reader.fail('table [%s] defined twice' % '.'.join(parts))
            reader.end_of_line()
            target = data
            for part in parts[:-1]:
                target = target.setdefault(part, {})
                if isinstance(target, list):
                    target = target[-1]
                if not isinstance(target, dict):
                    reader.fail('%s is not a table' % '.'.join(parts))
            if array:
                current = {}
                target.setdefault(parts[-1], []).append(current)
            else:
                current = target.setdefault(parts[-1], {})
                if not isinstance(current, dict):
                    reader.fail('%s is not a table' % '.'.join(parts))
            tables[header] = [line, line]
            continue
        parts = reader.key()
        if reader.peek() != '=':
            reader.fail('expected = after the key')
        reader.pos += 1
        value = reader.value()
        line = reader.line()
        _put(current, parts, value, reader)
        reader.end_of_line()
        tables[header][1] = line
    return data, tables


# --- containerd's view ----------------------------------------------------------------------

def version_of(data, path=CONFIG):
    """The config version containerd reads: 1 when absent (containerd 2.x refuses 1)."""
    version = data.get('version', 1)
    if isinstance(version, bool) or not isinstance(version, int) or version not in (1, 2, 3):
        raise ConfigError('%s: version = %r: containerd knows config versions 1, 2 and 3'
                          % (path, version), where=path)
    return version


def runtimes_key(version):
    """The key parts of the CRI runtimes table for a config version (1 is read as 2)."""
    plugin = CRI_RUNTIME_PLUGIN[3 if version == 3 else 2]
    return ('plugins', plugin, 'containerd', 'runtimes')


def cri_disabled(data, version):
    """Is the CRI plugin disabled (docker.io's config: ``disabled_plugins = ["cri"]``)?"""
    names = data.get('disabled_plugins', []) or []
    plugin = CRI_RUNTIME_PLUGIN[3 if version == 3 else 2]
    return 'cri' in names or plugin in names


def handlers(data, version):
    """{handler: base_runtime_spec path or None} of the handlers the file configures."""
    table = data
    for part in runtimes_key(version):
        table = table.get(part, {}) if isinstance(table, dict) else {}
    return dict((name, (conf or {}).get('base_runtime_spec') or None)
                for name, conf in table.items() if isinstance(conf, dict))


def _quote_key(part):
    return part if _BARE.fullmatch(part) else json.dumps(part)


def header_text(parts):
    return '[%s]' % '.'.join(_quote_key(p) for p in parts)


def reference(text, path, handler, spec_path, known_handlers=None):
    """config.toml text with ``base_runtime_spec = spec_path`` for ``handler``: the key's line
    replaced when it is set, a line appended to the handler's table when the table exists, else
    the table appended at the end (with ``runtime_type`` for a new table). Returns the new text;
    every other line is kept byte-for-byte. ``known_handlers``: the handler names the caller
    accepts (an unknown handler is refused, naming the file)."""
    data, tables = parse(text, path)
    version = version_of(data, path)
    present = handlers(data, version)
    if known_handlers is not None and handler not in present and handler not in known_handlers:
        raise errors.Error('%s: no runtime handler %r (configured: %s)'
                           % (path, handler, ', '.join(sorted(present)) or 'none'),
                           where=path, kind=errors.BAD_INPUT)
    if present.get(handler) == spec_path:
        return text
    key = runtimes_key(version) + (handler,)
    line = 'base_runtime_spec = %s' % json.dumps(spec_path)
    lines = text.splitlines(True)
    if key in tables:
        first, last = tables[key]
        pattern = re.compile(r'^(\s*)base_runtime_spec\s*=.*?(\r?\n)?$')
        for index in range(first, last):
            m = pattern.match(lines[index])
            if m:
                lines[index] = m.group(1) + line + (m.group(2) or '')
                return ''.join(lines)
        indent = re.match(r'\s*', lines[first - 1]).group(0) + '  '
        if last and not lines[last - 1].endswith('\n'):
            lines[last - 1] += '\n'
        lines.insert(last, indent + line + '\n')
        return ''.join(lines)
    inline = data
    for part in key[:-1]:
        inline = inline.get(part, {})
    if handler in inline:
        raise ConfigError('%s: the %s handler is written as an inline table; give it a table '
                          'of its own (%s) to let the collection add base_runtime_spec'
                          % (path, handler, header_text(key)), where=path)
    tail = '' if not text or text.endswith('\n') else '\n'
    table = '\n%s\n  runtime_type = %s\n  %s\n' % (header_text(key), json.dumps(RUNC_TYPE), line)
    return text + tail + table
