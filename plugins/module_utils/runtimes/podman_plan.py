# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning Podman's containers.conf drop-in (default_ulimits, shm_size). Nothing is written
here; podman_ulimits and limits_profile (the podman context) write the returned Change.

A Podman before 3.3 (Debian 11's 3.0.1) reads no drop-in: there the plan edits
/etc/containers/containers.conf instead, losslessly, and says so (versions.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import FileError, read_bytes


def plan_podman(req, host, ceiling=None):
    """The plan of Podman's file. ``req``: a runtime_plan.RuntimeRequest (limits parsed
    once)."""
    path, dropins, notes = target(req.path, versions.podman_version(host))
    result = dict(changed=False, path=path, restart_required=False, overridden_by=[])
    requested, shm_size = req.limits, req.shm_size

    try:
        raw = read_bytes(path)
        doc = cc.scan(raw if raw is not None else b'', path)
        values = OrderedDict()
        current, append, warnings = cc.current_ulimits(doc, requested, req.purge)
        if append is not None:
            warnings.append('%s: keeping its {append=%s}; %s' % (path, str(append).lower(),
                                                                 cc.APPEND_NOTE))
        final = current
        if requested is not None:
            requested = ctl.complete_limits(requested, current, req.field)
            runtime_plan.guard(req, result, ceiling, warnings, requested)
            final = cc.merge_ulimits(current, requested, req.purge)
            warnings.extend(filled_warnings(final, ceiling, req.field))
            entry = doc.get(cc.TABLE, cc.ULIMITS_KEY)
            if final != current or (entry is None and final) or warnings:
                values[cc.ULIMITS_KEY] = cc.render_ulimits(final, append) if final else None
        shm_entry = doc.get(cc.TABLE, cc.SHM_KEY)
        current_shm = None
        if shm_entry is not None:
            try:
                current_shm = cc.read_shm(doc, shm_entry)
            except cc.TomlError as exc:
                if shm_size is None:
                    raise
                warnings.append('%s; replacing it' % exc)
        if shm_size is not None and current_shm != shm_size:
            values[cc.SHM_KEY] = cc.render_string(cc.format_shm_size(shm_size))
        new_text = cc.set_values(doc.text, cc.TABLE, values, path) if values else doc.text
    except (cc.TomlError, model.LimitError, FileError) as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))

    new_doc = cc.scan(new_text, path)
    shm_entry = new_doc.get(cc.TABLE, cc.SHM_KEY)
    result['default_ulimits'] = [model.to_ulimit_string(name, limit)
                                 for name, limit in final.items()]
    result['shm_size'] = new_doc.read_string(shm_entry)[0] if shm_entry is not None else None
    changed = new_text != doc.text
    keys = [key for key, present in ((cc.ULIMITS_KEY, final), (cc.SHM_KEY, shm_entry))
            if present]
    for place, key in cc.overriding_files(path, keys, dropins=dropins, text=new_text):
        result['overridden_by'].append(place)
        warnings.append('%s sets %s too and is read after %s, so it replaces this value'
                        % (place, key, path))

    result['running_containers'] = {'count': runtime_live.container_count(host, 'podman'),
                                    'live_restore': None}
    change = changes.Change(path, result, doc.text if raw is not None else None,
                            new_text, changed=changed)
    change.warnings = notes + warnings
    return change


# Podman gives a rootful container nofile and nproc of 1048576 each when its ulimits
# (default_ulimits, --ulimit) set other items and leave these out (containers/podman
# docs/source/markdown/options/ulimit.md; seen here with Podman 4.3: with no ulimits at all the
# container inherits Podman's own limits instead).
PODMAN_FILLS = ('nofile', 'nproc')
PODMAN_FILLED = 1048576


def filled_warnings(final, ceiling, field):
    """Warnings for the items Podman fills in with 1048576 where this host cannot set that hard
    value (no CAP_SYS_RESOURCE, as in a container): every new container then fails to start
    with runc's ``error setting rlimit type 6: operation not permitted``."""
    if not final:
        return []
    ceiling = ceiling or host_limits.Ceiling()
    warnings = []
    for name in PODMAN_FILLS:
        if name in final:
            continue
        top, reason = ceiling.hard_ceiling(name)
        if top is not None and model.exceeds(PODMAN_FILLED, top):
            warnings.append(
                '%s sets default_ulimits without %s, so Podman gives rootful containers %s '
                '%d, above what this host lets the container runtime set (%s): new containers '
                'would fail to start; give %s.%s too'
                % (field, name, name, PODMAN_FILLED, reason, field, name))
    return warnings


def target(path, version):
    """(the file to write, whether Podman reads drop-ins, [notes]) for the requested ``path``
    and Podman's ``version`` (None: unknown, taken to read drop-ins)."""
    dropins = versions.podman_reads_dropins(version)
    if dropins or os.path.dirname(os.path.abspath(path)) not in cc.DROPIN_DIRS:
        return path, dropins, []
    return cc.ETC_MAIN, dropins, [
        'Podman %s reads no containers.conf.d drop-in (Podman 3.3 and later do): editing %s '
        'instead of %s' % (versions.format_version(version), cc.ETC_MAIN, path)]


def add_pids_limit(change, value, kernel_max, root=''):
    """The Podman drop-in ``change`` with ``pids_limit`` when what Podman gives a new
    container now (the last containers.conf that sets it, else its built-in 2048) is below
    ``value`` (a pids TasksMax). A percentage is resolved on this node (``kernel_max``);
    infinity is -1 (no limit, as ``podman run --pids-limit=-1``). Podman reads it at each
    container start: nothing to restart."""
    if change.new is None and change.current is not None:
        return change
    wanted = value.resolve(kernel_max)
    text, where = cc.pids_limit(root)
    now = cc.PODMAN_PIDS_DEFAULT
    if where:
        try:
            number = int(text)
        except ValueError:
            raise changes.Failure('%s: pids_limit = %s is no number (Podman refuses the '
                                  'file)' % (where, text))
        now = pids_model.UNLIMITED if number <= 0 else number
    info = dict(key='pids_limit', wanted=pids_model.human(wanted),
                before=pids_model.human(now), source=where)
    if wanted is not None and pids_model.below(now, wanted):
        rendered = '-1' if wanted == pids_model.UNLIMITED else str(wanted)
        try:
            new = cc.set_values(change.new or '', cc.TABLE, {'pids_limit': rendered},
                                change.path)
        except cc.TomlError as exc:
            raise changes.Failure(str(exc))
        info['written'] = rendered
        change.new = new
        change.changed = change.new != change.current
    change.result['pids'] = info
    return change
