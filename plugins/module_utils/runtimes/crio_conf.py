# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CRI-O's ``default_ulimits``: a ``/etc/crio/crio.conf.d`` drop-in of the collection's own.

CRI-O reads ``crio.conf`` then every file under ``crio.conf.d`` (cri-o ``pkg/config/config.go``
UpdateFromPath: ``filepath.Walk``, so lexical order, subdirectories descended in place, any file
name), each decoded over the configuration so far: a later file that sets ``default_ulimits``
replaces the whole list (a plain ``[]string``; Podman's ``{append=true}`` does not exist there).
``[crio.runtime] default_ulimits`` is a list of ``NAME=SOFT:HARD`` strings parsed by go-units
ParseUlimit at start (``internal/config/ulimits``: a bad one stops CRI-O); a change needs a CRI-O
restart (``docs/crio.conf.5.md``, ``docs/crio.conf.d.5.md``). Each file is checked with
containerd_cri_conf's TOML reader (a file CRI-O's decoder refuses stops CRI-O), and read and
edited with containers_conf's scanner (containers.conf has the same shape), which keeps every
other byte.
CRI-O is not packaged in Debian 12: this is tested against the documented syntax only.
Plain Python (no Ansible import), runs on Python 3.8 targets.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    containerd_cri_conf as toml)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import read_bytes

MAIN = runtime_paths.CRIO_MAIN
DROPIN_DIR = runtime_paths.CRIO_DROPIN_DIR
DROPIN = runtime_paths.CRIO_DROPIN
TABLE = 'crio.runtime'
KEY = 'default_ulimits'
HEADER = ('# Managed by gpufleet.tuning (crio_ulimits, the crio context of limits_profile): '
          'default ulimits of CRI-O containers.\n')


def _value(value):
    # go-units' ParseUlimit takes -1 for unlimited
    return '-1' if value == model.UNLIMITED else str(value)


def entries(limits):
    """{item: Limit} -> ['nofile=65536:65536', ...] for the rlimit items (sorted by name)."""
    result = []
    for name in sorted(limits):
        item = model.ITEMS[name]
        limit = limits[name]
        if item.docker_name is None or item.kind not in ('count', 'size', 'time'):
            continue
        soft = limit.soft if limit.soft is not None else limit.hard
        hard = limit.hard if limit.hard is not None else limit.soft
        result.append('%s=%s:%s' % (name, _value(soft), _value(hard)))
    return result


def render(limits):
    """The drop-in's text."""
    return '%s[crio.runtime]\ndefault_ulimits = [\n%s]\n' % (
        HEADER, ''.join('  %s,\n' % json.dumps(e) for e in entries(limits)))


def render_value(limits):
    """{item: Limit} -> the ``default_ulimits`` array, one string a line (CRI-O's template)."""
    lines = ['  %s,\n' % json.dumps(model.to_ulimit_string(name, limit))
             for name, limit in limits.items()]
    return '[\n%s]' % ''.join(lines)


def config_files(main=MAIN, dropin_dir=DROPIN_DIR):
    """The files CRI-O reads, in its order: ``main`` when it exists, then every file under
    ``dropin_dir`` as filepath.Walk visits them (names sorted, directories descended where
    they sort)."""
    files = [main] if os.path.isfile(main) else []

    def walk(directory):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isdir(path):
                walk(path)
            elif os.path.isfile(path):
                files.append(path)
    walk(dropin_dir)
    return files


def read(path, text=None):
    """One file -> (Document, OrderedDict {item: Limit} or None when it sets no
    default_ulimits, file:line:col of the setting or None). Raises cc.TomlError naming
    file:line[:col] for what CRI-O would refuse."""
    if text is None:
        raw = read_bytes(path)
        text = raw if raw is not None else b''
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise cc.TomlError('%s: not UTF-8 text (byte %d)' % (path, exc.start))
    try:
        data = toml.parse(text, path)[0]
    except toml.ConfigError as exc:
        raise cc.TomlError('%s (CRI-O would not start)' % exc, kind=exc.kind)
    doc = cc.scan(text, path)
    value = data.get('crio')
    value = value.get('runtime') if isinstance(value, dict) else None
    value = value.get(KEY) if isinstance(value, dict) else None
    entry = doc.get(TABLE, KEY)
    if entry is None:
        if value is not None:   # written some way the scanner does not place (inline table)
            raise cc.TomlError('%s: default_ulimits is set in a form this module does not edit; '
                               'write it as a key under [crio.runtime]' % path)
        return doc, None, None
    items, append = doc.read_strings(entry)
    if append is not None:
        raise cc.TomlError('%s: {append=...} is Podman\'s; CRI-O reads default_ulimits as a '
                           'plain list of strings and would not start'
                           % doc.place(entry.value_start))
    limits = OrderedDict()
    for value, pos in items:
        try:
            item, limit = model.from_ulimit_string(value, KEY)
        except model.LimitError as exc:
            raise cc.TomlError('%s: %s (CRI-O would not start)' % (doc.place(pos), exc))
        limits[item.name] = limit
    return doc, limits, doc.place(entry.start)


def effective(files, own=None, own_text=None):
    """[(file:line:col, {item: Limit})] of every file in ``files`` that sets default_ulimits,
    in CRI-O's order (the last one wins); ``own`` is read from ``own_text`` (the planned text)
    instead of the disk when given."""
    found = []
    for path in files:
        if path == own and own_text is not None:
            limits, place = read(path, own_text)[1:]
        else:
            limits, place = read(path)[1:]
        if limits is not None:
            found.append((place, limits))
    return found
