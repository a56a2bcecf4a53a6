# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Just enough TOML for containers.conf and crio.conf, lossless: the one scanner of their
text (containerd_cri_conf reads containerd's config.toml into values for its own rules).

Not a TOML library: it finds tables and ``key = value`` entries (arrays may span lines and hold
comments) and reads string and array-of-string values; every byte outside a value an editor
changes is kept, so foreign lines, comments and formatting survive.

* scan(text) -> Document with table headers and entries (offsets into the text);
* Document.get(table, key) / read_strings() / read_string() read values, naming file:line:col
  when a value is not what containers.conf allows;
* render_string(s) / render_strings(list): TOML basic strings.

Private to the collection; plain Python (no Ansible import), runs on Python 3.8 targets.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from collections import namedtuple

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec
# pylint: disable-next=unused-import
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.text_codec import (  # noqa: F401
    line_col)
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths

DROPIN = runtime_paths.CONTAINERS_DROPIN


class TomlError(errors.Error, ValueError):
    """A value or structure we cannot read; the message names file:line:column."""

    kind = errors.UNPARSABLE


_place = text_codec.place


_HEADER_RE = re.compile(r'^[ \t]*(\[\[?)[ \t]*([^\]\n#]*?)[ \t]*(\]\]?)[ \t]*(?:#.*)?$')
_KEY_RE = re.compile(r'^[ \t]*((?:[A-Za-z0-9_-]+|"[^"\n]*"|\'[^\'\n]*\')'
                     r'(?:[ \t]*\.[ \t]*(?:[A-Za-z0-9_-]+|"[^"\n]*"|\'[^\'\n]*\'))*)[ \t]*=[ \t]*')


def _dotted(text):
    parts = re.findall(r'"[^"\n]*"|\'[^\'\n]*\'|[A-Za-z0-9_-]+', text)
    return '.'.join(p[1:-1] if p[0] in '"\'' else p for p in parts)


#: one ``key = value``: table, key, and offsets (line start, value start/end, line end)
Entry = namedtuple('Entry', 'table key start value_start value_end end')
#: one table header: its table, offsets and whether it is an array of tables (``[[...]]``)
Header = namedtuple('Header', 'table start end array')


class Document(object):
    def __init__(self, text, path):
        self.text = text
        self.path = path
        self.entries = []
        self.headers = []

    def get(self, table, key):
        """The last Entry for table.key (TOML forbids duplicates; Podman would refuse them)."""
        found = None
        for entry in self.entries:
            if entry.table == table and entry.key == key:
                found = entry
        return found

    def header(self, table):
        for header in self.headers:
            if header.table == table and not header.array:
                return header
        return None

    def place(self, pos):
        return _place(self.path, self.text, pos)

    def read_string(self, entry):
        """A string value -> (string, offset)."""
        value, end = _read_scalar_string(self.text, entry.value_start, self.path)
        return value, entry.value_start

    def read_strings(self, entry):
        """An array of strings -> ([(string, offset)], append); append is Podman's
        ``{append=true}`` attribute (the list is added to the earlier files' list): True, False
        (``{append=false}``) or None (not given), as containers/common's attributedstring.Slice
        reads it; another key or a non-boolean value is an error there too."""
        text = self.text
        pos = entry.value_start
        if text[pos:pos + 1] != '[':
            raise TomlError('%s: %s must be an array of strings such as ["nofile=65536:65536"]'
                            % (self.place(pos), entry.key))
        pos += 1
        items = []
        append = None
        expect_value = True
        while True:
            pos = _skip_blank(text, pos)
            if pos >= len(text):
                raise TomlError('%s: unterminated array' % self.place(entry.value_start))
            char = text[pos]
            if char == ']':
                return items, append
            if char == ',':
                if expect_value:
                    raise TomlError('%s: unexpected ","' % self.place(pos))
                expect_value = True
                pos += 1
                continue
            if not expect_value:
                raise TomlError('%s: expected "," or "]"' % self.place(pos))
            if char in '"\'':
                value, end = _read_scalar_string(text, pos, self.path)
                items.append((value, pos))
                pos = end
            elif char == '{':
                end = _value_end(text, pos, self.path)
                body = text[pos + 1:end - 1].strip()
                for pair in (body.split(',') if body else []):
                    key, _eq, value = pair.partition('=')
                    key = key.strip().strip('"\'')
                    if key != 'append':
                        raise TomlError('%s: unsupported key %r in %s (Podman knows append only)'
                                        % (self.place(pos), key, entry.key))
                    if value.strip() not in ('true', 'false'):
                        raise TomlError('%s: append must be true or false, found %r'
                                        % (self.place(pos), value.strip()))
                    append = value.strip() == 'true'
                pos = end
            else:
                raise TomlError('%s: %s holds strings only, found %r'
                                % (self.place(pos), entry.key, text[pos:pos + 20].split('\n')[0]))
            expect_value = False


def _skip_blank(text, pos):
    """Skip whitespace, newlines and comments."""
    while pos < len(text):
        char = text[pos]
        if char in ' \t\r\n':
            pos += 1
        elif char == '#':
            end = text.find('\n', pos)
            pos = len(text) if end == -1 else end
        else:
            break
    return pos


def _read_scalar_string(text, pos, path):
    """A TOML string at ``pos`` -> (value, end offset). Basic, literal and multi-line forms."""
    for quote in ('"""', "'''"):
        if text.startswith(quote, pos):
            end = text.find(quote, pos + 3)
            if end == -1:
                raise TomlError('%s: unterminated string' % _place(path, text, pos))
            body = text[pos + 3:end]
            if body.startswith('\n'):
                body = body[1:]
            if quote == '"""':
                body = _unescape(body, path, text, pos)
            return body, end + 3
    if text.startswith("'", pos):
        end = text.find("'", pos + 1)
        newline = text.find('\n', pos + 1)
        if end == -1 or (newline != -1 and newline < end):
            raise TomlError('%s: unterminated string' % _place(path, text, pos))
        return text[pos + 1:end], end + 1
    if text.startswith('"', pos):
        index = pos + 1
        while index < len(text):
            char = text[index]
            if char == '\\':
                index += 2
                continue
            if char == '\n':
                break
            if char == '"':
                return _unescape(text[pos + 1:index], path, text, pos), index + 1
            index += 1
        raise TomlError('%s: unterminated string' % _place(path, text, pos))
    raise TomlError('%s: expected a string' % _place(path, text, pos))


def _unescape(body, path, text, pos):
    if '\\' not in body:
        return body
    body = re.sub(r'\\U([0-9A-Fa-f]{8})', lambda m: chr(int(m.group(1), 16)), body)
    try:
        return json.loads('"%s"' % body.replace('\n', '\\n').replace('\t', '\\t'))
    except ValueError:
        raise TomlError('%s: invalid escape in string' % _place(path, text, pos))


def _value_end(text, pos, path):
    """End offset of the value starting at ``pos`` (arrays and inline tables may span lines)."""
    depth = 0
    start = pos
    while pos < len(text):
        char = text[pos]
        if char in '"\'':
            pos = _read_scalar_string(text, pos, path)[1]
            if depth == 0:
                return pos
            continue
        if char in '[{':
            depth += 1
        elif char in ']}':
            depth -= 1
            if depth == 0:
                return pos + 1
            if depth < 0:
                raise TomlError('%s: unbalanced %r' % (_place(path, text, pos), char))
        elif char == '#':
            if depth == 0:
                break
            end = text.find('\n', pos)
            pos = len(text) if end == -1 else end
            continue
        elif char == '\n' and depth == 0:
            break
        pos += 1
    if depth:
        raise TomlError('%s: unterminated array or inline table' % _place(path, text, start))
    return len(text[:pos].rstrip(' \t\r')) if pos <= len(text) else pos


def scan(text, path=DROPIN):
    """Find table headers and entries. Lines that are neither are left alone (kept as they are);
    only a value we need to read is checked."""
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise TomlError('%s: not UTF-8 text (byte %d)' % (path, exc.start))
    doc = Document(text, path)
    table = ''
    pos = 0
    length = len(text)
    while pos < length:
        eol = text.find('\n', pos)
        eol = length if eol == -1 else eol
        line = text[pos:eol]
        header = _HEADER_RE.match(line)
        if header and len(header.group(1)) == len(header.group(3)):
            table = _dotted(header.group(2))
            doc.headers.append(Header(table, pos, min(eol + 1, length), header.group(1) == '[['))
            pos = eol + 1
            continue
        key = _KEY_RE.match(line)
        if key:
            full = _dotted(key.group(1))
            if table:
                full = table + '.' + full
            entry_table, _dot, name = full.rpartition('.')
            value_start = pos + key.end()
            value_end = _value_end(text, value_start, path)
            end = text.find('\n', value_end)
            end = length if end == -1 else end + 1
            doc.entries.append(Entry(entry_table, name, pos, value_start, value_end, end))
            pos = end
            continue
        pos = eol + 1
    return doc


def render_strings(values):
    """['nofile=1:2', ...] -> '["nofile=1:2", ...]' (TOML basic strings)."""
    return '[%s]' % ', '.join(json.dumps(value) for value in values)


def render_string(value):
    return json.dumps(value)
