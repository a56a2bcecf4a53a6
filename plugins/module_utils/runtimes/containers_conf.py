# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containers.conf (Podman, Buildah; CRI-O's crio.conf has the same shape), read and edited
through the lossless TOML scanner of toml_text (whose names are reachable from here too).

Plain Python (no Ansible import), runs on Python 3.8 targets. Private to the collection.

* set_values(text, table, {key: rendered value or None}) edits or inserts keys in a table
  (created at the end when missing) and removes keys given None;
* effective(root) reads the files Podman reads, in its order, and says which file set a key.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import read_bytes
# pylint: disable-next=unused-import
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes.toml_text import (  # noqa: F401
    Document, Entry, Header, line_col, render_string, render_strings, scan, TomlError)

DROPIN = runtime_paths.CONTAINERS_DROPIN
TABLE = 'containers'
ULIMITS_KEY = 'default_ulimits'
SHM_KEY = 'shm_size'
# What Podman (containers/common pkg/config systemConfigs()) reads for root, in order; a later
# file overrides a key. Drop-ins are read from /etc/containers/containers.conf.d only: there is
# no /usr/share/containers/containers.conf.d. Podman before 3.3 reads no drop-in directory
# (versions.py). A user's own $HOME/.config/containers/containers.conf(.d) comes after them all
# (rootless; root's too from Podman 5): user_overrides reports them, the planners do not edit them.
MAIN_FILES = runtime_paths.CONTAINERS_MAIN_FILES
# The file written instead of a drop-in where Podman reads none (before 3.3).
ETC_MAIN = MAIN_FILES[1]
DROPIN_DIRS = (runtime_paths.CONTAINERS_DROPIN_DIR,)


def set_values(text, table, values, path=DROPIN):
    """Return ``text`` with ``values`` ({key: rendered TOML value, or None to remove the key})
    set in ``table``. Existing values are replaced in place (key spelling, indentation and
    trailing comments kept); new keys go right after the table header, which is appended at the
    end when missing. Everything else is kept byte for byte."""
    doc = scan(text, path)
    edits = []          # (start, end, replacement)
    missing = []
    for key, rendered in values.items():
        entry = doc.get(table, key)
        if entry is None:
            if rendered is not None:
                missing.append('%s = %s\n' % (key, rendered))
        elif rendered is None:
            edits.append((entry.start, entry.end, ''))
        elif doc.text[entry.value_start:entry.value_end] != rendered:
            edits.append((entry.value_start, entry.value_end, rendered))
    result = doc.text
    if missing:
        header = doc.header(table)
        if header is not None:
            insert_at = header.end
            prefix = '' if result[:insert_at].endswith('\n') else '\n'
            edits.append((insert_at, insert_at, prefix + ''.join(missing)))
        else:
            prefix = ''
            if result and not result.endswith('\n'):
                prefix = '\n'
            if result.strip():
                prefix += '\n'
            edits.append((len(result), len(result), '%s[%s]\n%s' % (prefix, table,
                                                                    ''.join(missing))))
    for start, end, replacement in sorted(edits, key=lambda e: e[0], reverse=True):
        result = result[:start] + replacement + result[end:]
    return result


def read_ulimits(doc, entry):
    """The ``default_ulimits`` entry -> (OrderedDict {item: (Limit, offset)}, append). An
    element the limit model refuses raises TomlError naming file:line:col."""
    items, append = doc.read_strings(entry)
    result = OrderedDict()
    for value, pos in items:
        try:
            item, limit = model.from_ulimit_string(value, entry.key)
        except model.LimitError as exc:
            raise TomlError('%s: %s' % (doc.place(pos), exc))
        result[item.name] = (limit, pos)
    return result, append


def parse_podman_size(text, where=SHM_KEY):
    """A containers.conf size -> bytes, as Podman reads it (go-units FromHumanSize): suffixes
    are powers of 1000 whatever follows them, so ``256m`` and ``256MiB`` are 256000000 bytes
    (checked with Podman 4.3: ``shm_size = "256m"`` gives a 250000 KiB /dev/shm). This differs
    from limits_model.parse_size (base 1024, as Docker and systemd read sizes) on purpose.
    The grammar is go-units' (limits_model.parse_go_size)."""
    try:
        return model.parse_go_size(text, False, where)
    except model.LimitError:
        raise model.LimitError('%s: %r is not a size Podman reads (a number of bytes, or one '
                               'with k, m, g, t, p as powers of 1000)' % (where, text))


def read_shm(doc, entry):
    """``shm_size`` -> bytes as Podman reads it; TomlError naming file:line:col otherwise."""
    value, pos = doc.read_string(entry)
    try:
        return parse_podman_size(value, entry.key)
    except model.LimitError as exc:
        raise TomlError('%s: %s' % (doc.place(pos), exc))


def format_shm_size(value):
    """bytes -> the ``shm_size`` string: plain bytes, the one form every Podman reads exactly
    (a suffix would be read as a power of 1000, see parse_podman_size)."""
    return str(int(value))


def config_files(root='', dropins=True):
    """The containers.conf files Podman reads for root, in order (existing ones only).

    CONTAINERS_CONF, when set, replaces them all, as in Podman. ``dropins``: False for a Podman
    that reads no drop-in directory (before 3.3, versions.podman_reads_dropins).
    """
    override = os.environ.get('CONTAINERS_CONF')
    if override:
        return [override] if os.path.isfile(root + override) else []
    files = [path for path in MAIN_FILES if os.path.isfile(root + path)]
    for directory in DROPIN_DIRS if dropins else ():
        files.extend(_dropins(root, directory))
    return files


def _dropins(root, directory):
    names = [os.path.basename(path) for path in glob.glob(root + os.path.join(directory, '*.conf'))
             if not os.path.isdir(path)]
    # os.ReadDir order: by file name, bytewise.
    return [os.path.join(directory, name)
            for name in sorted(names, key=lambda n: n.encode('utf-8', 'surrogateescape'))]


def ignored_dropins(root=''):
    """The drop-ins a Podman before 3.3 does not read (there are none to ignore from 3.3 on)."""
    if os.environ.get('CONTAINERS_CONF'):
        return []
    return [path for directory in DROPIN_DIRS for path in _dropins(root, directory)]


def effective(root='', dropins=True):
    """What Podman will use: {'default_ulimits': {item: (Limit, 'file:line:col')},
    'default_ulimits_append': True, False or None, 'shm_size': (bytes, 'file:line:col') or None,
    'files': [...], 'problems': [...]}.

    ``default_ulimits_append`` is attributedstring.Slice's ``Attributes.Append`` once every file
    is read (containers/common internal/attributedstring slice_test.go TestSliceLoading): the
    last ``{append=...}`` any file gave, None when none did. True means a file read after these
    (a user's own containers.conf) adds to the list instead of replacing it.

    A file that cannot be read is reported in problems (Podman itself would refuse it)."""
    result = {'default_ulimits': OrderedDict(), 'default_ulimits_append': None, 'shm_size': None,
              'files': [], 'problems': []}
    # attributedstring.Slice keeps its append attribute from one file to the next: once a file
    # says {append=true}, later files append too until one says {append=false}.
    sticky_append = None
    for path in config_files(root, dropins):
        raw = read_bytes(root + path)
        if raw is None:
            continue
        result['files'].append(path)
        try:
            doc = scan(raw, path)
            entry = doc.get(TABLE, ULIMITS_KEY)
            if entry is not None:
                limits, append = read_ulimits(doc, entry)
                if append is not None:
                    sticky_append = append
                if not sticky_append:
                    result['default_ulimits'] = OrderedDict()
                for name, (limit, pos) in limits.items():
                    result['default_ulimits'][name] = (limit, doc.place(pos))
            entry = doc.get(TABLE, SHM_KEY)
            if entry is not None:
                result['shm_size'] = (read_shm(doc, entry), doc.place(entry.value_start))
        except TomlError as exc:
            result['problems'].append(str(exc))
    result['default_ulimits_append'] = sticky_append
    return result


def current_ulimits(doc, requested=None, purge=False):
    """The ``default_ulimits`` of our drop-in -> (OrderedDict {item: Limit}, append, warnings).

    An element that cannot be read is an error naming file:line:col when it would be kept; when
    the request replaces it (same item) or purge drops it, it becomes a warning."""
    entry = doc.get(TABLE, ULIMITS_KEY)
    result = OrderedDict()
    warnings = []
    if entry is None:
        return result, None, warnings
    items, append = doc.read_strings(entry)
    for value, pos in items:
        try:
            item, limit = model.from_ulimit_string(value, ULIMITS_KEY)
        except model.LimitError as exc:
            match = re.match(r'^\s*([A-Za-z]+)', value)
            name = match.group(1).lower() if match else None
            if requested is None or (name not in requested and not purge):
                raise TomlError('%s: %s' % (doc.place(pos), exc))
            warnings.append('%s: replacing the unreadable entry %r (%s)'
                            % (doc.place(pos), value, exc))
            continue
        result[item.name] = limit
    return result, append, warnings


def merge_ulimits(current, requested, purge=False):
    """{item: Limit} in our drop-in's order: current entries updated in place, new ones at the
    end, those not requested dropped when ``purge``."""
    result = OrderedDict()
    for name, limit in current.items():
        if name in requested:
            result[name] = requested[name]
        elif not purge:
            result[name] = limit
    for name, limit in requested.items():
        if name not in result:
            result[name] = limit
    return result


def render_ulimits(limits, append=None):
    """``default_ulimits`` value; ``append`` True/False keeps an ``{append=true}`` or
    ``{append=false}`` attribute (None writes none). An explicit false is kept, not dropped:
    the attribute is sticky across files in Podman 5, so without it an earlier file's
    ``{append=true}`` would make this list append instead of replace."""
    values = [model.to_ulimit_string(name, limit) for name, limit in limits.items()]
    rendered = render_strings(values)
    if append is not None:
        rendered = rendered[:-1] + (', ' if values else '') + \
            ('{append=true}]' if append else '{append=false}]')
    return rendered


APPEND_NOTE = ('Podman before 5.0 (containers/common before 0.58) refuses a containers.conf '
               'whose default_ulimits holds an {append=...} attribute ("incompatible types")')


def overriding_files(path, keys, root='', dropins=True, text=None):
    """[(file, key)] of config files Podman reads after ``path`` that set one of ``keys`` in
    [containers] and so replace what ``path`` sets.

    A later ``default_ulimits`` read while attributedstring.Slice's append attribute is true
    (its own ``{append=true}``, or one given before and not turned off by ``{append=false}``:
    the attribute is sticky, slice_test.go) adds to the list and replaces nothing: it is left
    out. ``text``: ``path``'s content as planned (None: the file as it is)."""
    files = config_files(root, dropins)
    if path in files:
        earlier, later = files[:files.index(path)], files[files.index(path) + 1:]
    else:
        later = [f for f in files if os.path.dirname(f) == os.path.dirname(path)
                 and os.path.basename(f) > os.path.basename(path)]
        earlier = [f for f in files if f not in later]
    found = _setting(later, keys, root)
    if ULIMITS_KEY not in keys:
        return found
    sticky = _ulimits_attribute(path, root, ulimits_append(earlier, root), text)[0]
    appending = set()
    for other in later:
        sticky, place = _ulimits_attribute(other, root, sticky)
        if place is not None and sticky:
            appending.add(place)
    return [(place, key) for place, key in found
            if not (key == ULIMITS_KEY and place in appending)]


def _ulimits_attribute(path, root, sticky, text=None):
    """(the append attribute after reading ``path`` (or ``text`` as its content), 'file:line:col'
    of its default_ulimits or None when it sets none or cannot be read)."""
    raw = read_bytes(root + path) if text is None else text
    if raw is None:
        return sticky, None
    try:
        doc = scan(raw, path)
        entry = doc.get(TABLE, ULIMITS_KEY)
        if entry is None:
            return sticky, None
        append = doc.read_strings(entry)[1]
    except TomlError:
        return sticky, None
    return (append if append is not None else sticky), doc.place(entry.start)


def ulimits_append(paths, root='', sticky=None):
    """attributedstring.Slice's append attribute after reading ``paths`` in order, from
    ``sticky``: True, False or None (no file gave one)."""
    for path in paths:
        sticky = _ulimits_attribute(path, root, sticky)[0]
    return sticky


def _documents(paths, root=''):
    """(path, scanned document) of each of ``paths`` that exists and parses, in order (a file
    that does not parse is refused elsewhere)."""
    for path in paths:
        raw = read_bytes(root + path)
        if raw is None:
            continue
        try:
            yield path, scan(raw, path)
        except TomlError:
            continue


def _setting(paths, keys, root=''):
    """[(file:line:col, key)] of ``paths`` that set one of ``keys`` in [containers]."""
    found = []
    for _path, doc in _documents(paths, root):
        for key in keys:
            entry = doc.get(TABLE, key)
            if entry is not None:
                found.append((doc.place(entry.start), key))
    return found


def user_files(home, root=''):
    """A user's own containers.conf files, in the order Podman reads them after the system's
    (containers/common pkg/config, since pull request #615): ``$HOME/.config/containers/
    containers.conf``, then ``containers.conf.d/*.conf`` by name. Rootless Podman reads them
    (from 3.3 on); root's Podman too from Podman 5 (containers/common 0.58).
    ``$XDG_CONFIG_HOME``, when a user sets it, moves them; it is not known here."""
    base = os.path.join(home, '.config', 'containers')
    files = [path for path in [os.path.join(base, 'containers.conf')] if os.path.isfile(root + path)]
    return files + _dropins(root, os.path.join(base, 'containers.conf.d'))


def user_overrides(users, root='', keys=(ULIMITS_KEY, SHM_KEY), append=None):
    """[{user, source, key, append}]: users whose own containers.conf sets ``keys`` for their
    Podman. ``append`` in each: True where that ``default_ulimits`` is read while the append
    attribute is true (its own ``{append=true}``, or ``append``, the system files' attribute,
    effective()['default_ulimits_append'], not turned off), so it adds to the system default;
    False where it replaces it. ``users``: [(name, home)]."""
    found = []
    for name, home in users:
        if not home or home == '/':
            continue
        files = user_files(home, root)
        appending = set()
        sticky = append
        for path in files:
            sticky, place = _ulimits_attribute(path, root, sticky)
            if place is not None and sticky:
                appending.add(place)
        for place, key in _setting(files, keys, root):
            found.append({'user': name, 'source': place, 'key': key,
                          'append': key == ULIMITS_KEY and place in appending})
    return found


#: Podman's own pids_limit where no containers.conf sets one (the commented default of
#: /usr/share/containers/containers.conf, Podman 4.3.1 on Debian 12)
PODMAN_PIDS_DEFAULT = 2048


def pids_limit(root=''):
    """(value, 'file:line:col') of the last containers.conf ``pids_limit`` Podman reads, or
    (None, None)."""
    found = (None, None)
    for _path, doc in _documents(config_files(root), root):
        entry = doc.get(TABLE, 'pids_limit')
        if entry is not None:
            text = doc.text[entry.value_start:].split('\n', 1)[0].split('#', 1)[0].strip()
            found = (text, doc.place(entry.value_start))
    return found
