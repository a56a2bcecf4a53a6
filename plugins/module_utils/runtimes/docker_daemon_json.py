# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker's daemon.json and docker.service: read, merge, render, detect conflicting flags.

Plain Python (no Ansible import), runs on Python 3.8 targets.

* daemon.json is read keeping key order (``OrderedDict``); a file that does not parse raises
  DaemonJsonError naming ``path:line:column``; entries of ``default-ulimits`` are located in the
  text so that an entry the limit model refuses is reported with its line and column too.
* merge() changes only ``default-ulimits`` (per item) and ``default-shm-size``; every other key
  keeps its value and position. render() writes the file's own indentation (detect_indent():
  a number of spaces or a tab, 2 for a new, empty or one-line file) and a trailing newline, so
  that a rewrite of a 4-space or tab-indented file (the NVIDIA container toolkit writes 4
  spaces) changes only the lines it has to.
* unit_flag_conflicts() and clashes() (the one check the tune, the audit and the watch make)
  read docker.service with its drop-ins the way systemd does (the first
  unit file found, then drop-ins ordered by file name, ``/etc`` shadowing ``/run`` shadowing
  ``/usr/lib``; an empty ``ExecStart=`` resets) and reports ``--default-ulimit`` /
  ``--default-shm-size`` in the effective ExecStart (also through ``$VAR`` from ``Environment=``
  or ``EnvironmentFile=``), naming the file and line: dockerd refuses to start when an option is
  given both as a flag and in daemon.json.

Every function that touches the file system takes ``root`` (a path prefix) for unit tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import read_bytes

DAEMON_JSON = '/etc/docker/daemon.json'
ULIMITS_KEY = 'default-ulimits'
SHM_KEY = 'default-shm-size'
LIVE_RESTORE_KEY = 'live-restore'
FLAGS = {ULIMITS_KEY: '--default-ulimit', SHM_KEY: '--default-shm-size'}

# systemd's unit search path for system units, highest precedence first.


class DaemonJsonError(errors.Error, ValueError):
    """daemon.json content or a unit file we refuse to act on. The message names the place."""

    kind = errors.UNPARSABLE


# --- daemon.json ----------------------------------------------------------------------------

def parse(text, path=DAEMON_JSON):
    """daemon.json text -> OrderedDict. Empty or blank text is an empty object (dockerd agrees)."""
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise DaemonJsonError('%s: not UTF-8 text (byte %d): %s' % (path, exc.start, exc.reason))
    if text.startswith(u'\ufeff'):
        text = text[1:]
    if not text.strip():
        return OrderedDict()
    try:
        data = json.loads(text, object_pairs_hook=OrderedDict)
    except ValueError as exc:
        # json.JSONDecodeError carries lineno/colno (Python 3.5+).
        lineno = getattr(exc, 'lineno', None)
        colno = getattr(exc, 'colno', None)
        msg = getattr(exc, 'msg', str(exc))
        if lineno is None or colno is None:
            raise DaemonJsonError('%s: invalid JSON: %s' % (path, exc))
        raise DaemonJsonError('%s:%s:%s: invalid JSON: %s' % (path, lineno, colno, msg))
    if not isinstance(data, dict):
        raise DaemonJsonError('%s:1:1: the top level must be a JSON object, got %s'
                              % (path, type(data).__name__))
    return DaemonJson(data, indent=detect_indent(text))


DEFAULT_INDENT = 2
_INDENTED_LINE = re.compile(r'\n([ \t]+)\S')


class DaemonJson(OrderedDict):
    """The top-level object of a daemon.json that was read: an OrderedDict that also remembers
    the file's indentation (``indent``), so that render() writes it back the same way."""

    def __init__(self, *args, **kwargs):
        indent = kwargs.pop('indent', DEFAULT_INDENT)
        super(DaemonJson, self).__init__(*args, **kwargs)
        self.indent = indent


def detect_indent(text):
    """The indentation daemon.json ``text`` uses: a number of spaces, or ``'\\t'``.

    Taken from the first indented line after the first one (a JSON string cannot span lines, so
    that is the first member of the top-level object or array). A new, empty or one-line file,
    or one without indentation, gives DEFAULT_INDENT (2).
    """
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not text:
        return DEFAULT_INDENT
    match = _INDENTED_LINE.search(text)
    if match is None:
        return DEFAULT_INDENT
    leading = match.group(1)
    if leading.startswith('\t'):
        return '\t'
    spaces = len(leading) - len(leading.lstrip(' '))
    return spaces or DEFAULT_INDENT


def render(data, indent=None):
    """OrderedDict -> bytes: keys in their order, non-ASCII kept, trailing newline.

    indent: spaces (int) or a string such as ``'\\t'``; None takes the indentation of the file
    ``data`` was parsed from (see DaemonJson), else DEFAULT_INDENT (2).
    """
    if indent is None:
        indent = getattr(data, 'indent', None)
    if indent is None:
        indent = DEFAULT_INDENT
    return (json.dumps(data, indent=indent, separators=(',', ': '), ensure_ascii=False) + '\n') \
        .encode('utf-8')


_WS = re.compile(r'[ \t\n\r]*')
_NUMBER = re.compile(r'-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?')


def key_positions(text):
    """{(key, key, ...): offset} of every object key in valid JSON ``text`` (offset of its quote).

    Array elements are addressed by their index. Used only to name line and column in messages.
    """
    positions = {}

    def skip(pos):
        return _WS.match(text, pos).end()

    def value(pos, path):
        pos = skip(pos)
        char = text[pos]
        if char == '{':
            pos = skip(pos + 1)
            if text[pos] == '}':
                return pos + 1
            while True:
                pos = skip(pos)
                key, end = json.decoder.scanstring(text, pos + 1)
                positions[path + (key,)] = pos
                pos = skip(end)
                pos = value(pos + 1, path + (key,))   # after ':'
                pos = skip(pos)
                if text[pos] == ',':
                    pos += 1
                    continue
                return pos + 1                          # '}'
        if char == '[':
            pos = skip(pos + 1)
            if text[pos] == ']':
                return pos + 1
            index = 0
            while True:
                positions[path + (index,)] = skip(pos)
                pos = skip(value(pos, path + (index,)))
                index += 1
                if text[pos] == ',':
                    pos += 1
                    continue
                return pos + 1
        if char == '"':
            return json.decoder.scanstring(text, pos + 1)[1]
        for word in ('true', 'false', 'null'):
            if text.startswith(word, pos):
                return pos + len(word)
        match = _NUMBER.match(text, pos)
        return match.end()

    if text.startswith(u'\ufeff'):
        text = u' ' + text[1:]
    if text.strip():
        value(0, ())
    return positions


def where(text, keys, path=DAEMON_JSON):
    """``path:line:col`` of the key path ``keys`` in ``text``, or ``path`` when not found."""
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    pos = key_positions(text).get(tuple(keys)) if text else None
    if pos is None:
        return path
    return text_codec.place(path, text, pos)


def read(path=DAEMON_JSON, root=''):
    """(raw bytes or None, OrderedDict) of daemon.json; a missing file is an empty object."""
    raw = read_bytes(root + path)
    if raw is None:
        return None, OrderedDict()
    return raw, parse(raw, path)


def read_ulimits(data, text=None, path=DAEMON_JSON):
    """``default-ulimits`` of parsed daemon.json -> OrderedDict {item: Limit}.

    An entry the limit model refuses raises DaemonJsonError naming path:line:column (when the
    text is given) and what is wrong.
    """
    result = OrderedDict()
    section = data.get(ULIMITS_KEY)
    if section is None:
        return result
    if not isinstance(section, dict):
        raise DaemonJsonError('%s: "%s" must be an object of name -> {"Name", "Soft", "Hard"}, '
                              'got %s' % (where(text, (ULIMITS_KEY,), path), ULIMITS_KEY,
                                          type(section).__name__))
    for name, entry in section.items():
        try:
            item, limit = model.from_docker(name, entry)
        except model.LimitError as exc:
            raise DaemonJsonError('%s: %s' % (where(text, (ULIMITS_KEY, name), path), exc))
        result[item.name] = limit
    return result


def read_shm_size(data, text=None, path=DAEMON_JSON):
    """``default-shm-size`` -> bytes, or None when absent. Unreadable -> DaemonJsonError.

    As dockerd reads it (opts.MemBytes.UnmarshalJSON): a JSON string, which go-units'
    RAMInBytes reads (``1G``, ``512m``, ``1.5GiB``, ``64 MB``; base 1024). A JSON number stops
    dockerd ("invalid size"), so it is refused here too."""
    value = data.get(SHM_KEY)
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise model.LimitError('%s: must be a JSON string such as "8G" (dockerd refuses to '
                                   'start with %r, a %s)' % (SHM_KEY, value,
                                                             type(value).__name__))
        if not value:
            raise model.LimitError('%s: an empty string stops dockerd ("invalid size")' % SHM_KEY)
        return model.parse_go_size(value, True, SHM_KEY)
    except model.LimitError as exc:
        raise DaemonJsonError('%s: %s' % (where(text, (SHM_KEY,), path), exc))


def format_shm_size(value):
    """bytes -> the shortest exact size string dockerd reads (``8G``, ``512M``, ``65536``)."""
    return model.format_size(value, short=True)


def merge(data, ulimits=None, shm_size=None, purge=False):
    """A new OrderedDict: ``data`` with the given limits and shm size, nothing else touched.

    ulimits: {item_name: Limit} (both sides set); each replaces its entry in place or is added
    at the end of ``default-ulimits`` (created after the last key when missing). purge: drop the
    entries not in ``ulimits`` (and the whole key when that leaves it empty). shm_size: bytes.
    An existing value that already means the same (``1024M`` for ``1G``) is kept as written.
    """
    result = DaemonJson(data, indent=getattr(data, 'indent', DEFAULT_INDENT))
    if ulimits is not None:
        old = data.get(ULIMITS_KEY)
        section = OrderedDict(old) if isinstance(old, dict) else OrderedDict()
        if purge:
            for name in list(section):
                if name not in ulimits:
                    del section[name]
        for name, limit in ulimits.items():
            entry = model.to_docker(name, limit)
            current = section.get(name)
            try:
                same = current is not None and model.from_docker(name, current)[1] == limit
            except model.LimitError:
                same = False
            if not same:
                section[name] = OrderedDict([('Name', entry['Name']), ('Soft', entry['Soft']),
                                             ('Hard', entry['Hard'])])
        if section:
            result[ULIMITS_KEY] = section
        elif ULIMITS_KEY in result:
            del result[ULIMITS_KEY]
    if shm_size is not None:
        current = data.get(SHM_KEY)
        try:
            same = current is not None and read_shm_size(data) == shm_size
        except DaemonJsonError:
            same = False
        if not same:
            result[SHM_KEY] = format_shm_size(shm_size)
    return result


# --- docker.service --------------------------------------------------------------------------

def unit_files(unit='docker.service', root=''):
    """The unit file (or None) and its drop-ins, in the order systemd reads them: systemd's
    own unit search path (systemd_conf.unit_files), so that every unit directory counts."""
    fragment, dropins = sdpaths.unit_files(unit, root)
    return ([fragment] if fragment else []) + dropins


def _logical_lines(text):
    """(line number, text) of a unit file, joining backslash continuations, without comments."""
    lines = []
    buffer = None
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if buffer is None:
            if not stripped or stripped[0] in '#;':
                continue
            start = number
            buffer = ''
        elif stripped and stripped[0] in '#;':
            continue          # comment lines inside a continuation are skipped
        if line.rstrip().endswith('\\'):
            buffer += line.rstrip()[:-1] + ' '
            continue
        buffer += line
        lines.append((start, buffer.strip()))
        buffer = None
    if buffer is not None:
        lines.append((start, buffer.strip()))
    return lines


def _read_text(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return None


def _env_file_vars(path, root):
    """{VAR: (value, 'file:line')} from an EnvironmentFile (shell-like KEY=value lines)."""
    result = {}
    text = _read_text(root + path)
    if text is None:
        return result
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('export '):
            line = line[len('export '):].strip()
        match = re.match(r'^([A-Za-z_][A-Za-z0-9_]*)=(.*)$', line)
        if match:
            value = match.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
                value = value[1:-1]
            result[match.group(1)] = (value, '%s:%d' % (path, number))
    return result


def _split_assignments(text):
    """``Environment=`` value -> [(VAR, value)] (quoted assignments allowed)."""
    result = []
    for token in re.findall(r'"[^"]*"|\'[^\']*\'|\S+', text):
        if token[0] in '"\'':
            token = token[1:-1]
        if '=' in token:
            name, value = token.split('=', 1)
            result.append((name, value))
    return result


def _flag_in(text, flag):
    return re.search(r'(?:^|\s)%s(?:[=\s]|$)' % re.escape(flag), text) is not None


def effective_exec_start(unit='docker.service', root=''):
    """The effective ExecStart lines and environment of ``unit``.

    Returns (exec_starts, env): exec_starts is [(command, 'file:line')], env is
    {VAR: (value, 'file:line')} from Environment= and EnvironmentFile= (later wins).
    """
    exec_starts = []
    env = {}
    env_files = []
    for path in unit_files(unit, root):
        text = _read_text(root + path)
        if text is None:
            continue
        section = None
        for number, line in _logical_lines(text):
            if line.startswith('['):
                section = line.strip('[] ')
                continue
            if section != 'Service' or '=' not in line:
                continue
            key, value = line.split('=', 1)
            key = key.strip()
            value = value.strip()
            place = '%s:%d' % (path, number)
            if key == 'ExecStart':
                if not value:
                    exec_starts = []
                else:
                    exec_starts.append((value, place))
            elif key == 'Environment':
                if not value:
                    env = {}
                for name, val in _split_assignments(value):
                    env[name] = (val, place)
            elif key == 'EnvironmentFile':
                if not value:
                    env_files = []
                else:
                    env_files.append(value.lstrip('-'))
    for env_file in env_files:
        env.update(_env_file_vars(env_file, root))
    return exec_starts, env


def _flag_values(text, flag):
    """Values given to ``flag`` in a command line (``--flag=v`` or ``--flag v``)."""
    return re.findall(r'(?:^|\s)%s(?:=|\s+)(?:"([^"]*)"|\'([^\']*)\'|(\S+))' % re.escape(flag), text)


def command_texts(unit='docker.service', root=''):
    """[(text, 'file:line')]: each effective ExecStart command line of ``unit`` and the value
    of each ``$VAR`` it uses (Environment= or EnvironmentFile=), where dockerd's flags are
    looked for (unit_flags, dockerd_config.config_file)."""
    exec_starts, env = effective_exec_start(unit, root)
    texts = []
    for command, place in exec_starts:
        texts.append((command, place))
        for name in re.findall(r'\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?', command):
            if name in env:
                texts.append((env[name][0], '%s (via $%s from %s)' % (place, name, env[name][1])))
    return texts


def unit_flags(unit='docker.service', root=''):
    """[{'key', 'flag', 'value', 'source'}] for every ``--default-ulimit`` /
    ``--default-shm-size`` the effective ExecStart of ``unit`` passes to dockerd, directly or
    through a ``$VAR`` set by Environment= or EnvironmentFile=. ``source`` is 'file:line'."""
    texts = command_texts(unit, root)
    found = []
    for key in (ULIMITS_KEY, SHM_KEY):
        flag = FLAGS[key]
        for text, source in texts:
            if not _flag_in(text, flag):
                continue
            values = [''.join(groups) for groups in _flag_values(text, flag)] or ['']
            for value in values:
                found.append({'key': key, 'flag': flag, 'value': value, 'source': source})
    return found


def unit_flag_conflicts(keys, unit='docker.service', root=''):
    """[(key, flag, source)] for each daemon.json key in ``keys`` whose dockerd flag the
    effective ExecStart of ``unit`` passes (see unit_flags)."""
    return [(found['key'], found['flag'], found['source'])
            for found in unit_flags(unit, root) if found['key'] in keys]


def clashes(data, unit='docker.service', root=''):
    """The one check of a flag that clashes with daemon.json, for the tune (the file it would
    write), the audit and the drift watch (the file dockerd reads): [(key, flag, source)] for
    each key of ``data`` (parsed daemon.json) that ``unit`` also passes as a flag. dockerd
    refuses to start when a directive is given both ways, whatever the values."""
    return unit_flag_conflicts([key for key in FLAGS if key in (data or {})], unit, root)


# What dockerd does with a clash (conflict_message ``state``): None, the tune's refusal.
WOULD_REFUSE = 'running'      # dockerd runs: it would refuse at its next restart
HAS_REFUSED = 'refused'       # docker.service failed or stopped with an error
STOPPED = 'stopped'           # stopped cleanly: it would refuse when started


def conflict_message(conflicts, path=DAEMON_JSON, state=None):
    """One sentence per clash naming the unit file:line, the flag, the key and the file."""
    if state is None:
        return '; '.join('%s passes %s to dockerd, so "%s" in %s would make dockerd refuse to '
                         'start (remove the flag or manage it there)' % (place, flag, key, path)
                         for key, flag, place in conflicts)
    what = {WOULD_REFUSE: 'dockerd would refuse to start at its next restart',
            HAS_REFUSED: 'dockerd has refused to start (journalctl -u docker.service: "the '
                         'following directives are specified both as a flag and in the '
                         'configuration file")',
            STOPPED: 'dockerd would refuse to start when it is next started'}[state]
    return '; '.join('%s passes %s to dockerd and %s sets "%s": %s (remove the flag or the '
                     'key)' % (place, flag, path, key, what) for key, flag, place in conflicts)
