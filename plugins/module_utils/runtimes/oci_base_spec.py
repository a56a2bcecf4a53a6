# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd's ``base_runtime_spec``: a whole OCI runtime spec (JSON) per runtime handler.

When a CRI runtime handler has a base spec, a pod container takes ``process.rlimits`` from it
(containerd's unit limits do not reach it); a spec taken unedited from ``ctr oci spec`` carries
``RLIMIT_NOFILE 1024:1024``. This module reads such a file, checks that it is an OCI spec,
patches every rlimit of the profile into ``process.rlimits`` (keeping every other key, its
order, the other rlimits and the file's indentation) and renders it.

Plain Python (no Ansible import), runs on Python 3.8 targets. Writes nothing.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import BY_RLIMIT
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes.docker_daemon_json import detect_indent

#: the file the collection creates when a handler has no base spec and the user asks for one
DEFAULT_PATH = '/etc/containerd/gpufleet-base-spec.json'
#: item kinds whose kernel value is what an OCI rlimit holds
_OCI_KINDS = ('count', 'size', 'time')


class SpecError(errors.Error, ValueError):
    """A base spec we refuse to act on: not JSON, not an OCI spec. The message names the file."""

    kind = errors.UNPARSABLE


def oci_type(item_name):
    """'nofile' -> 'RLIMIT_NOFILE'."""
    return 'RLIMIT_' + model.ITEMS[item_name].rlimit


def parse(text, path):
    """The text of a base spec -> OrderedDict, checked to be an OCI runtime spec."""
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise SpecError('%s: not UTF-8 text (byte %d): %s' % (path, exc.start, exc.reason),
                            where=path)
    try:
        data = json.loads(text, object_pairs_hook=OrderedDict)
    except ValueError as exc:
        lineno = getattr(exc, 'lineno', None)
        if lineno is None:
            raise SpecError('%s: not valid JSON: %s' % (path, exc), where=path)
        where = '%s:%s:%s' % (path, lineno, getattr(exc, 'colno', 0))
        raise SpecError('%s: not valid JSON: %s' % (where, exc.msg), where=where)
    if not isinstance(data, dict):
        raise SpecError('%s: not an OCI runtime spec (the top level is not an object)' % path,
                        where=path)
    if not isinstance(data.get('ociVersion'), str):
        raise SpecError('%s: not an OCI runtime spec (no "ociVersion" string)' % path, where=path)
    process = data.get('process', OrderedDict())
    if not isinstance(process, dict):
        raise SpecError('%s: not an OCI runtime spec ("process" is not an object)' % path,
                        where=path)
    rlimits = process.get('rlimits', [])
    if not isinstance(rlimits, list):
        raise SpecError('%s: "process.rlimits" is not a list' % path, where=path)
    for index, entry in enumerate(rlimits):
        here = '%s: process.rlimits[%d]' % (path, index)
        if not isinstance(entry, dict) or not isinstance(entry.get('type'), str):
            raise SpecError('%s: not an object with a "type"' % here, where=path)
        for side in ('soft', 'hard'):
            value = entry.get(side)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SpecError('%s: "%s" is not a non-negative integer' % (here, side),
                                where=path)
    return data


def kernel(value):
    """A profile value (int or UNLIMITED) -> the integer an OCI rlimit holds."""
    return model.RLIM_INFINITY if value == model.UNLIMITED else value


def rlimits_of(spec):
    """{item name: Limit} the spec's process.rlimits set (unknown types are left out)."""
    result = {}
    for entry in spec.get('process', {}).get('rlimits', []):
        name = entry['type'][len('RLIMIT_'):].upper() if entry['type'].startswith('RLIMIT_') else None
        item = BY_RLIMIT.get(name)
        if item is None:
            continue
        result[item.name] = model.Limit(
            *[model.UNLIMITED if entry[s] == model.RLIM_INFINITY else entry[s]
              for s in ('soft', 'hard')])
    return result


def patch(spec, limits, path):
    """Patch ``limits`` ({item: Limit}) into a copy of ``spec``: (new spec, [items changed],
    [items left out: not an OCI rlimit]). A side the profile leaves open keeps the spec's value
    (or takes the other side when the spec has no entry)."""
    new = json.loads(json.dumps(spec), object_pairs_hook=OrderedDict)
    process = new.setdefault('process', OrderedDict())
    rlimits = process.setdefault('rlimits', [])
    by_type = dict((e['type'], e) for e in rlimits)
    changed, skipped = [], []
    for name in sorted(limits):
        item = model.ITEMS[name]
        if not item.is_rlimit or item.kind not in _OCI_KINDS:
            skipped.append(name)
            continue
        limit = limits[name]
        entry = by_type.get(oci_type(name))
        soft, hard = limit.soft, limit.hard
        if soft is None:
            soft = entry['soft'] if entry else hard
        if hard is None:
            hard = entry['hard'] if entry else soft
        soft, hard = kernel(soft), kernel(hard)
        if soft > hard:
            raise model.LimitError('%s: process.rlimits %s: soft %d would be above hard %d'
                                   % (path, oci_type(name), soft, hard))
        if entry is None:
            entry = OrderedDict([('type', oci_type(name)), ('hard', hard), ('soft', soft)])
            rlimits.append(entry)
            by_type[entry['type']] = entry
            changed.append(name)
        elif (entry['soft'], entry['hard']) != (soft, hard):
            entry['soft'], entry['hard'] = soft, hard
            changed.append(name)
    return new, changed, skipped


def render(spec, original_text=None):
    """JSON text with the original file's indentation and a trailing newline."""
    indent = detect_indent(original_text) if original_text else 4
    return json.dumps(spec, indent=indent, separators=(',', ': ')) + '\n'
