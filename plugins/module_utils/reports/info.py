# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read-only reports of where limits come from: PAM, systemd managers and units, Docker's
daemon.json, Podman's containers.conf. The _info modules return them one at a time;
limits_audit returns them all from one call."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import dockerd_config
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sdconf
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_precedence as sdprec)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import FileError


class InfoError(changes.Failure):
    """A report that cannot be made: ``msg`` and the result so far."""


def lookup_user(name):
    entry = pwd.getpwnam(name)
    groups = set()
    gids = set([entry.pw_gid])
    for group in grp.getgrall():
        if group.gr_gid == entry.pw_gid or name in group.gr_mem:
            groups.add(group.gr_name)
            gids.add(group.gr_gid)
    return conf.User(name, entry.pw_uid, entry.pw_gid, groups, gids)


def debian_family():
    if os.path.exists('/etc/debian_version'):
        return True
    try:
        with open('/etc/os-release') as handle:
            text = handle.read()
    except (IOError, OSError):
        return False
    for line in text.splitlines():
        if line.startswith('ID=') or line.startswith('ID_LIKE='):
            if 'debian' in line or 'ubuntu' in line:
                return True
    return False


def pam_report(params, host=None):
    """pam_limits_info's result: the files in pam_limits order and, for params['user'], what a
    login session gets from them. params: user, limits_conf, limits_dir, root_wildcards.
    The files are read as the node's Linux-PAM reads them (versions.pam_version; ``host``, the
    AnsibleModule, asks rpm where there is no dpkg)."""
    pam_version = versions.pam_version(host)
    if params['root_wildcards'] == 'auto':
        root_wildcards = not debian_family()
    else:
        root_wildcards = params['root_wildcards'] == 'true'
    result = dict(changed=False, files=[], invalid=[], root_wildcards=root_wildcards,
                  pam_version=versions.format_version(pam_version) if pam_version else None)
    files = []
    # the files that make every session fail are reported (the audit's problems), the
    # others read as pam_limits reads them
    broken = conf.session_failures(params['limits_conf'], params['limits_dir'], pam_version)
    result['session_errors'] = [dict(path=exc.path, msg=str(exc), fix=exc.fix) for exc in broken]
    try:
        for path in conf.pam_order(params['limits_conf'], params['limits_dir']):
            if path in [exc.path for exc in broken]:
                continue
            parsed = conf.read_file(path, pam_version)
            if parsed is not None:
                files.append(parsed)
    except (IOError, OSError) as exc:
        raise InfoError('cannot read limits files: %s' % exc, result)
    result['unread'] = [dict(path=f.path, msg='%s %s' % (f.path, f.problem))
                        for f in files if f.problem]
    result['ignored'] = ignored_limits_files(params['limits_dir'])
    for limits_file in files:
        result['files'].append(dict(path=limits_file.path, entries=[
            dict((k, v) for k, v in line.as_dict().items() if k not in ('path', 'text'))
            for line in limits_file.lines if line.kind in ('entry', 'nolimit')]))
        result['invalid'].extend(line.as_dict() for line in limits_file.invalid())

    if params['user']:
        try:
            user = lookup_user(params['user'])
        except KeyError:
            raise InfoError('user: %s does not exist on this host' % params['user'], result)
        resolved = conf.resolve(files, user, nr_open=host_limits.sysctl('fs.nr_open'),
                                root_wildcards=root_wildcards)
        result['effective'] = resolved['effective']
        result['other'] = conf.public_other(resolved['other'])
        result['no_limits'] = resolved['no_limits']
    return result


def ignored_limits_files(limits_dir):
    """Files in ``limits_dir`` that pam_limits never reads (it reads ``*.conf`` only): a
    ``README`` or ``99-old.conf.disabled`` whose lines look like limits but apply to nobody.
    The collection's own backups (``NAME.PID.DATE~``) are left out."""
    import re
    try:
        names = sorted(os.listdir(limits_dir))
    except OSError:
        return []
    backup = re.compile(r'\.conf\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~$')
    return [os.path.join(limits_dir, name) for name in names
            if not name.endswith('.conf') and not backup.search(name)
            and os.path.isfile(os.path.join(limits_dir, name))]


def configured_limits(resolution):
    return dict((name, setting.limit) for name, setting in resolution.settings.items())


def pending_entries(target, configured, live, action, differ=sdlive.differing):
    entries = []
    for name in differ(configured, live):
        current = (live or {}).get(name)
        entries.append({'target': target, 'item': name,
                        'configured': configured[name].as_dict(),
                        'live': current.as_dict() if current is not None else None,
                        'action': action})
    return entries


def manager_report(run, scope, user, running):
    resolution = sdprec.resolve_manager(scope)
    configured = configured_limits(resolution)
    report = {'scope': scope, 'files': resolution.files, 'configured': resolution.configured(),
              'invalid': resolution.invalid, 'skipped': resolution.skipped, 'live': None}
    pending, user_managers, errors = [], {}, []
    if not running:
        return report, pending, user_managers, errors
    if scope == sdpaths.SYSTEM:
        live, error = sdlive.manager_live(run)
        if error:
            errors.append('systemctl show: %s' % error)
        else:
            report['live'] = sdlive.limits_dict(live)
            pending.extend(pending_entries('manager', configured, live, 'systemctl daemon-reexec'))
        return report, pending, user_managers, errors
    for unit_name, uid in sdlive.running_user_managers(run):
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            continue
        live, error = sdlive.manager_live(run, sdpaths.USER, name, uid)
        if error:
            errors.append('%s: %s' % (unit_name, error))
            continue
        user_managers[name] = sdlive.limits_dict(live)
        if user is None or user == name:
            pending.extend(pending_entries(unit_name, configured, live,
                                           'systemctl restart %s' % unit_name))
        if user == name:
            report['live'] = user_managers[name]
    return report, pending, user_managers, errors


def unit_report(run, unit, running):
    resolution = sdprec.resolve_unit(unit)
    configured = configured_limits(resolution)
    report = {'files': resolution.files, 'configured': resolution.configured(),
              'invalid': resolution.invalid, 'live': None, 'process': None,
              'active_state': None, 'main_pid': None, 'need_daemon_reload': None}
    pending = []
    if not running:
        return report, pending, None
    state = sdlive.unit_live(run, unit)
    if 'error' in state:
        return report, pending, '%s: %s' % (unit, state['error'])
    report.update({'live': sdlive.limits_dict(state['limits']),
                   'process': (sdlive.limits_dict(state['process'])
                               if state['process'] is not None else None),
                   'active_state': state['active_state'], 'main_pid': state['main_pid'],
                   'need_daemon_reload': state['need_daemon_reload'],
                   'load_state': state['load_state']})
    stale = sdlive.differing(configured, state['limits'])
    pending.extend(pending_entries(unit, dict((n, configured[n]) for n in stale),
                                   state['limits'], 'systemctl daemon-reload; systemctl restart %s'
                                   % unit))
    if sdlive.is_active(state) and state['process'] is not None:
        loaded = dict((n, configured[n]) for n in configured if n not in stale)
        pending.extend(pending_entries(unit, loaded, state['process'],
                                       'systemctl restart %s' % unit, sdlive.stale_in_process))
    return report, pending, None


def systemd_report(run, scope, user=None, units=()):
    """systemd_limits_info's result and its warnings. ``run(args)`` -> (rc, out, err)."""
    running = sdlive.systemd_running()
    result = dict(changed=False, systemd_running=running, manager={}, user_managers={},
                  units={}, pending=[])
    try:
        units = [sdpaths.normalize_unit(u) for u in units]
        manager, pending, user_managers, errors = manager_report(run, scope, user, running)
        result.update(manager=manager, user_managers=user_managers, pending=pending)
        for unit in units:
            report, unit_pending, error = unit_report(run, unit, running)
            result['units'][unit] = report
            result['pending'].extend(unit_pending)
            if error:
                errors.append(error)
    except (sdconf.ConfError, model.LimitError) as exc:
        raise InfoError(str(exc), result)
    return result, errors


def containerd_limits():
    for pid in sorted((p for p in os.listdir('/proc') if p.isdigit()), key=int):
        try:
            with open('/proc/%s/comm' % pid) as handle:
                comm = handle.read().strip()
        except (IOError, OSError):
            continue
        if comm == 'containerd':
            limits = host_limits.proc_limits(pid)
            if limits:
                return {'pid': int(pid), 'limits': ctl.limits_result(limits)}
    return {}


def docker_report(host, path=None, unit='docker.service', running=True, root=''):
    """docker_ulimits_info's result without the probe: the daemon.json dockerd reads
    (``config_file``, dockerd_config.config_file; ``path`` None: that one) with its defaults and
    their file:line:column, the unit's flags and those that clash with the file
    (``flag_conflicts``: dockerd refuses to start), containerd's limits and (``running``) the
    containers. ``root``: a prefix of the unit search path (unit tests)."""
    found = dockerd_config.config_file(unit, root)
    path = found['path'] if path is None else path
    problems = [p for p in (dockerd_config.mismatch(path, found),) if p]
    config = {'exists': False, 'default_ulimits': {}, 'shm_size': None, 'live_restore': False}
    data = {}
    try:
        raw, data = dj.read(path)
        config['exists'] = raw is not None
        text = text_codec.decode_bytes(raw) or ''
        config['live_restore'] = bool(data.get(dj.LIVE_RESTORE_KEY, False))
        limits = dj.read_ulimits(data, text, path)
        sources = dict((name, dj.where(text, (dj.ULIMITS_KEY, name), path)) for name in limits)
        config['default_ulimits'] = ctl.limits_result(limits, sources)
        shm = dj.read_shm_size(data, text, path)
        if shm is not None:
            config['shm_size'] = {'value': data[dj.SHM_KEY], 'bytes': shm,
                                  'source': dj.where(text, (dj.SHM_KEY,), path)}
    except (dj.DaemonJsonError, FileError) as exc:
        problems.append(str(exc))
    conflicts = dockerd_config.clash_report(data, path, found['unit'],
                                            dockerd_config.host_runner(host), root)
    problems.extend(c['msg'] for c in conflicts)
    result = dict(changed=False, path=path, config_file=dockerd_config.public(found),
                  config=config, problems=problems, unit_flags=dj.unit_flags(found['unit'], root),
                  flag_conflicts=conflicts, containerd=containerd_limits())
    if running:
        result['running_containers'] = runtime_live.running_containers(host, config['live_restore'])
    return result


def podman_report(host=None):
    """podman_ulimits_info's result without the probe. ``host`` (the AnsibleModule), when
    given, asks Podman its version: a Podman before 3.3 reads no drop-in, so drop-ins are left
    out of what it uses and listed in ``ignored``. ``user_overrides``: users whose own
    containers.conf replaces the system default for their Podman."""
    version = versions.podman_version(host) if host is not None else None
    dropins = versions.podman_reads_dropins(version)
    found = cc.effective(dropins=dropins)
    limits = dict((name, limit) for name, (limit, _src) in found['default_ulimits'].items())
    sources = dict((name, src) for name, (_limit, src) in found['default_ulimits'].items())
    config = {'default_ulimits': ctl.limits_result(limits, sources),
              'default_ulimits_append': found['default_ulimits_append'], 'shm_size': None}
    if found['shm_size'] is not None:
        config['shm_size'] = {'bytes': found['shm_size'][0], 'source': found['shm_size'][1]}
    ignored = [] if dropins else cc.ignored_dropins()
    notes = ['%s: Podman %s reads no containers.conf.d drop-in (Podman 3.3 and later do), so '
             'this file does not apply' % (path, versions.format_version(version))
             for path in ignored]
    overrides = cc.user_overrides(_users(), append=found['default_ulimits_append'])
    notes.extend('%s: %s sets %s for its own Podman (rootless; root too from Podman 5), which '
                 '%s the system default for that user'
                 % (o['source'], o['user'], o['key'],
                    'adds to ({append=true})' if o['append'] else 'replaces')
                 for o in overrides)
    return dict(changed=False, files=found['files'], config=config, problems=found['problems'],
                podman_version=versions.format_version(version) if version else None,
                ignored=ignored, user_overrides=overrides, notes=notes)


def _users():
    """[(name, home)] of the accounts that can log in and run Podman of their own: root and
    the users with a uid from 1000 on (the Debian and RHEL range), nobody (65534) left out."""
    return [(entry.pw_name, entry.pw_dir) for entry in pwd.getpwall()
            if entry.pw_uid == 0 or 1000 <= entry.pw_uid < 65534]
