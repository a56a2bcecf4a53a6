# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan for containerd's CRI handlers' base runtime specs, shared by the
containerd_base_spec module and the ``containerd_cri`` context of limits_profile: which base
spec files get the profile, which handlers of config.toml get a ``base_runtime_spec`` line
(only with ``create``), and whether pods run now (what a containerd restart would meet).

Also the read-only side for the audit: the spec a handler's pods start from and its rlimits.
Plain Python (no Ansible import), runs on Python 3.8 targets. Writes nothing.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    containerd_cri_conf as cc)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import oci_base_spec as oci
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file

UNIT = 'containerd.service'


class Plan(object):
    """``writes``: [(path, old text or None, new text)], base specs first, config.toml last;
    ``handlers``: {handler: base spec path or None (inherits containerd's limits)};
    ``skipped``: profile items with no OCI rlimit; ``version``: config.toml's version."""

    def __init__(self, writes, handlers, skipped, version):
        self.writes = writes
        self.handlers = handlers
        self.skipped = skipped
        self.version = version


def read_text(path):
    data = safe_file.read_bytes(path)
    return None if data is None else data.decode('utf-8', 'surrogateescape')


def read_config(config):
    """(text, data, version) of config.toml; errors.Error when it is missing or unparsable."""
    text = read_text(config)
    if text is None:
        raise errors.Error('%s: does not exist (write it with `containerd config default`)'
                           % config, where=config, kind=errors.HOST)
    data = cc.parse(text, config)[0]
    return text, data, cc.version_of(data, config)


def default_spec(run_command):
    """The node's default OCI spec (``ctr oci spec``): what a created base spec starts from."""
    rc, out, err = run_command(['ctr', 'oci', 'spec'], environ_update=commands.c_env())
    if rc != 0:
        raise errors.Error('ctr oci spec failed: %s' % (err or out).strip(), kind=errors.HOST)
    return out


def plan(run_command, limits, config=cc.CONFIG, handlers=None, create=False,
         spec_path=oci.DEFAULT_PATH, field='handlers'):
    """The Plan for ``limits`` ({item: Limit}, or a function of a base spec's path, its
    parsed content and whether it is created here, that returns them: what each spec's pods
    get depends on what it lists now); raises errors.Error naming the file or ``field`` (the user's
    option naming the handlers). Writes nothing."""
    text, data, version = read_config(config)
    present = cc.handlers(data, version)
    wanted = handlers or sorted(set(present) | set(['runc']))
    for name in wanted:
        if name not in present and name != 'runc':
            raise errors.Error('%s: %r is not a runtime handler of %s (configured: %s)'
                               % (field, name, config, ', '.join(sorted(present)) or 'none'),
                               where=field, kind=errors.BAD_INPUT)
    writes, result, skipped, seen = [], {}, [], {}
    new_config = text
    for name in wanted:
        path = present.get(name)
        if path is None and not create:
            result[name] = None
            continue
        if path is None:
            path = spec_path
            new_config = cc.reference(new_config, config, name, path)
        result[name] = path
        if path in seen:
            continue
        old = read_text(path)
        if old is None and path != spec_path:
            raise errors.Error('%s: handler %s: base_runtime_spec %s does not exist'
                               % (config, name, path), where=config, kind=errors.BAD_INPUT)
        source = old if old is not None else default_spec(run_command)
        spec = oci.parse(source, path if old is not None else 'ctr oci spec')
        wanted = limits(path, spec, old is None) if callable(limits) else limits
        new_spec, skipped = oci.patch(spec, wanted, path)[0::2]
        new = oci.render(new_spec, source)
        seen[path] = True
        if new != old:
            writes.append((path, old, new))
    if new_config != text:
        writes.append((config, text, new_config))
    return Plan(writes, result, skipped, version)


# --- read-only: what the audit predicts --------------------------------------------------------

def pod_spec(config=cc.CONFIG, handler=''):
    """(handler, base spec path or None, {OCI type: (soft, hard, index)}) for the pods of
    ``handler`` ('' : the CRI's default runtime, runc unless config.toml names another).
    Raises errors.Error for a config.toml or base spec we cannot read."""
    _text, data, version = read_config(config)
    if not handler:
        table = data
        for part in cc.runtimes_key(version)[:-1]:
            table = table.get(part, {}) if isinstance(table, dict) else {}
        handler = (table.get('default_runtime_name') if isinstance(table, dict) else None) \
            or 'runc'
    path = cc.handlers(data, version).get(handler)
    if path is None:
        return handler, None, {}
    text = read_text(path)
    if text is None:
        raise errors.Error('%s: handler %s: base_runtime_spec %s does not exist (pods of this '
                           'handler fail to start)' % (config, handler, path), where=config,
                           kind=errors.BAD_INPUT)
    spec = oci.parse(text, path)
    rlimits = (spec.get('process') or {}).get('rlimits') or []
    return handler, path, dict((entry['type'], (entry['soft'], entry['hard'], index))
                               for index, entry in enumerate(rlimits))
