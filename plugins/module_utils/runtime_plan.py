# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning the container runtimes' defaults: Docker's daemon.json and Podman's
containers.conf drop-in. Nothing is written here; docker_ulimits, podman_ulimits and
limits_profile write the returned Change."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils import docker_daemon_json as dj
from ansible_collections.gpufleet.tuning.plugins.module_utils import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.safe_file import FileError, read_bytes

C_ENV = {'LANG': 'C', 'LC_ALL': 'C'}


def _text(raw):
    return raw.decode('utf-8', 'surrogateescape') if raw is not None else None


def container_count(host, runtime):
    """How many containers ``runtime`` (docker, podman) runs; None when it cannot say."""
    binary = host.get_bin_path(runtime)
    if not binary:
        return None
    rc, out, _err = host.run_command([binary, 'ps', '-q'], environ_update=C_ENV)
    if rc != 0:
        return None
    return len([line for line in out.splitlines() if line.strip()])


def running_containers(host, config):
    """{count, live_restore} from the docker CLI, falling back to daemon.json for live_restore.

    ``host``: the AnsibleModule (run_command, get_bin_path)."""
    count = container_count(host, 'docker')
    live_restore = None
    docker = host.get_bin_path('docker')
    if docker:
        rc, out, _err = host.run_command(
            [docker, 'info', '--format', '{{json .LiveRestoreEnabled}}'], environ_update=C_ENV)
        if rc == 0 and out.strip() in ('true', 'false'):
            live_restore = out.strip() == 'true'
    if live_restore is None:
        live_restore = bool(config.get(dj.LIVE_RESTORE_KEY, False))
    return {'count': count, 'live_restore': live_restore}


def guard(requested, params, result, ceiling, warnings):
    """Refuse (changes.Failure) values no new container could start with."""
    errors, forced = host_limits.check_request(
        requested, ceiling or host_limits.Ceiling(), params.get('force', False), 'ulimits',
        'the container runtime', 'new containers would fail to start')
    if errors:
        raise changes.Failure('; '.join(errors), result, errors=errors)
    warnings.extend(forced)


def plan_docker(params, host, ceiling=None):
    """The docker_ulimits plan. ``params``: ulimits, shm_size, purge, path, unit, force."""
    path = params['path']
    result = dict(changed=False, path=path, restart_required=False)

    # 1. The request, in kernel units.
    try:
        requested, shm_size = model.parse_runtime_request(params['ulimits'], params['shm_size'])
    except model.LimitError as exc:
        raise changes.Failure(str(exc), result)

    # 2. The file as it is.
    try:
        raw, data = dj.read(path)
    except (dj.DaemonJsonError, FileError) as exc:
        raise changes.Failure(str(exc), result)
    text = _text(raw) or ''

    # 3. The plan.
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
                if requested is None or (name not in requested and not params['purge']):
                    raise dj.DaemonJsonError('%s: %s' % (place, exc))
                warnings.append('%s: replacing the unreadable default-ulimits entry %r (%s)'
                                % (place, name, exc))
                continue
            current[item.name] = limit
        if requested is not None:
            requested = dj.complete_limits(requested, current, 'ulimits')
    except (dj.DaemonJsonError, model.LimitError) as exc:
        raise changes.Failure(str(exc), result)
    guard(requested, params, result, ceiling, warnings)

    new = dj.merge(data, requested, shm_size, params['purge'])

    written = []
    if requested is not None and new.get(dj.ULIMITS_KEY):
        written.append(dj.ULIMITS_KEY)
    if shm_size is not None:
        written.append(dj.SHM_KEY)
    conflicts = dj.unit_flag_conflicts(written, params['unit'])
    if conflicts:
        raise changes.Failure(dj.conflict_message(conflicts, path), result, conflicts=[
            {'key': key, 'flag': flag, 'source': source} for key, flag, source in conflicts])

    changed = new != data
    new_text = _text(dj.render(new)) if changed else _text(raw)
    result['default_ulimits'] = new.get(dj.ULIMITS_KEY, {})
    result['default_shm_size'] = new.get(dj.SHM_KEY)
    result['restart_required'] = changed
    change = changes.Change(path, result, _text(raw), new_text, changed=changed)
    change.warnings = warnings
    change.config = new
    if params.get('probe_containers', True):
        probe_containers(change, host)
    return change


def probe_containers(change, host, policy='always'):
    """Add running_containers to a docker Change's result (and the warning a restart needs).

    ``policy``: the restart policy the caller follows (``when_idle`` and ``never`` defer the
    restart instead of stopping containers, and the warning says so)."""
    result = change.result
    result['running_containers'] = running_containers(host, change.config)
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


def plan_podman(params, host, ceiling=None):
    """The podman_ulimits plan. ``params``: ulimits, shm_size, purge, path, force."""
    path = params['path']
    result = dict(changed=False, path=path, restart_required=False, overridden_by=[])

    try:
        requested, shm_size = model.parse_runtime_request(params['ulimits'], params['shm_size'])
    except model.LimitError as exc:
        raise changes.Failure(str(exc), result)

    try:
        raw = read_bytes(path)
        doc = cc.scan(raw if raw is not None else b'', path)
        values = OrderedDict()
        current, append, warnings = cc.current_ulimits(doc, requested, params['purge'])
        if append is not None:
            warnings.append('%s: keeping its {append=%s}; %s' % (path, str(append).lower(),
                                                                 cc.APPEND_NOTE))
        final = current
        if requested is not None:
            requested = dj.complete_limits(requested, current, 'ulimits')
            guard(requested, params, result, ceiling, warnings)
            final = cc.merge_ulimits(current, requested, params['purge'])
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
        raise changes.Failure(str(exc), result)

    new_doc = cc.scan(new_text, path)
    shm_entry = new_doc.get(cc.TABLE, cc.SHM_KEY)
    result['default_ulimits'] = [model.to_ulimit_string(name, limit)
                                 for name, limit in final.items()]
    result['shm_size'] = new_doc.read_string(shm_entry)[0] if shm_entry is not None else None
    changed = new_text != doc.text
    keys = [key for key, present in ((cc.ULIMITS_KEY, final), (cc.SHM_KEY, shm_entry))
            if present]
    for place, key in cc.overriding_files(path, keys):
        result['overridden_by'].append(place)
        warnings.append('%s sets %s too and is read after %s, so it replaces this value'
                        % (place, key, path))

    result['running_containers'] = {'count': container_count(host, 'podman'),
                                    'live_restore': None}
    change = changes.Change(path, result, doc.text if raw is not None else None,
                            new_text, changed=changed)
    change.warnings = warnings
    return change
