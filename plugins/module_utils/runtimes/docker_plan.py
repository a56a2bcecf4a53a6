# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning Docker's daemon.json (default-ulimits, default-shm-size). Nothing is written here;
docker_ulimits and limits_profile (the docker context) write the returned Change."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import dockerd_config
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import FileError


def plan_docker(req, host, ceiling=None, probe=True, root=''):
    """The plan of the daemon.json dockerd reads (dockerd_config.target). ``req``: a
    runtime_plan.RuntimeRequest (limits parsed once; ``path`` None: the file dockerd reads).
    ``probe``: ask dockerd for its running containers now (limits_profile asks only when a
    restart is due). ``root``: a prefix of the unit search path (unit tests)."""
    unit = req.unit or dockerd_config.UNIT
    result = dict(changed=False, path=req.path, restart_required=False)
    requested, shm_size = req.limits, req.shm_size

    # 1. The file dockerd reads (req.path None: that one; another path named: refused), as it is.
    try:
        path, found = dockerd_config.target(req.path, unit, root)
        result.update(path=path, config_file=dockerd_config.public(found))
        raw, data = dj.read(path)
    except (dj.DaemonJsonError, FileError) as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))
    text = text_codec.decode_bytes(raw) or ''

    # 2. The plan.
    warnings = []
    current = {}
    section = data.get(dj.ULIMITS_KEY)
    try:
        if section is not None and not isinstance(section, dict):
            dj.read_ulimits(data, text, path)          # raises, naming line and column
        for name, entry in (section or {}).items():
            try:
                item, limit = model.from_docker(name, entry)
            except model.LimitError as exc:
                place = dj.where(text, (dj.ULIMITS_KEY, name), path)
                if requested is None or (name not in requested and not req.purge):
                    raise dj.DaemonJsonError('%s: %s' % (place, exc))
                warnings.append('%s: replacing the unreadable default-ulimits entry %r (%s)'
                                % (place, name, exc))
                continue
            current[item.name] = limit
        if requested is not None:
            requested = ctl.complete_limits(requested, current, req.field)
    except (dj.DaemonJsonError, model.LimitError) as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))
    runtime_plan.guard(req, result, ceiling, warnings, requested)

    new = dj.merge(data, requested, shm_size, req.purge)

    # the file as it would be written: a key it keeps clashes as much as one it writes
    conflicts = dj.clashes(new, unit, root)
    if conflicts:
        raise changes.Failure(dj.conflict_message(conflicts, path), result, conflicts=[
            {'key': key, 'flag': flag, 'source': source} for key, flag, source in conflicts])

    changed = new != data
    new_text = text_codec.decode_bytes(dj.render(new)) if changed else text_codec.decode_bytes(raw)
    result['default_ulimits'] = new.get(dj.ULIMITS_KEY, {})
    result['default_shm_size'] = new.get(dj.SHM_KEY)
    result['restart_required'] = changed
    change = changes.Change(path, result, text_codec.decode_bytes(raw), new_text, changed=changed)
    change.warnings = warnings
    change.config = new
    if probe:
        probe_containers(change, host)
    return change


def probe_containers(change, host, policy='always'):
    """Add running_containers to a docker Change's result (and the warning a restart needs).

    ``policy``: the restart policy the caller follows (``when_idle`` and ``never`` defer the
    restart instead of stopping containers, and the warning says so)."""
    result = change.result
    result['running_containers'] = runtime_live.running_containers(
        host, change.config.get(dj.LIVE_RESTORE_KEY, False))
    count = result['running_containers']['count']
    if not change.changed or not count or result['running_containers']['live_restore']:
        return
    if policy == 'always':
        change.warnings.append(
            'restarting dockerd to apply %s stops the %d running container(s); live-restore is '
            'off' % (os.path.basename(change.path), count))
    else:
        change.warnings.append(
            'dockerd is not restarted while %d container(s) run (restart policy %s): new '
            'containers get the old limits until it restarts' % (count, policy))
