# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a systemd drop-in edit (manager defaults or a unit's Limit*=): request, guards,
conflicts with files read later, what must be reloaded or restarted. Nothing is written here;
systemd_limits and limits_profile write the returned Change."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sdconf
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_precedence as sdprec)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec


class SystemdRequest(object):
    """What plan_change plans, as plain values: ``scope`` ('system'/'user') or ``unit``;
    ``limits``: {item: Limit} parsed once by the caller (state present), or [item] / None
    (absent); ``field``: the option the user wrote the limits in, for messages
    (``limits`` for systemd_limits, ``profile`` for limits_profile)."""

    def __init__(self, limits, scope=None, unit=None, state='present', dropin=None,
                 on_conflict='fail', force=False, field='limits', prune=False):
        self.limits = limits
        self.scope = scope
        self.unit = unit
        self.state = state
        self.dropin = dropin or sdpaths.DROPIN_NAME
        self.on_conflict = on_conflict
        self.force = force
        self.field = field
        self.prune = prune      # the drop-in holds exactly ``limits`` (limits_profile's own)


def parse_request(limits, state, field='limits'):
    """limits option -> {item: Limit} (present) or [item] / None (absent). Raises LimitError."""
    if state == 'absent':
        if limits is None:
            return None
        names = []
        for name in limits:
            item = model.get_item(name, '%s.%s' % (field, name))
            names.append(item.name)
        return check_request(names, state, field)
    if not limits:
        raise model.LimitError('%s: required with state=present' % field)
    return check_request(model.parse_profile(limits, field), state, field)


def check_request(limits, state, field='limits'):
    """``limits`` (parsed) as systemd can take them, or LimitError naming ``field.ITEM``."""
    for name in (limits or ()):
        item = model.ITEMS[name]
        try:
            model.systemd_key(item)
        except model.LimitError as exc:
            raise model.LimitError('%s.%s: %s' % (field, name, exc))
        if state == 'present':
            limit = limits[name]
            if limit.soft is None or limit.hard is None:
                raise model.LimitError('%s.%s: systemd needs both soft and hard' % (field, name))
    return limits


def module_request(params):
    """systemd_limits' options -> a SystemdRequest: the module's one mapping. Raises
    LimitError naming ``limits.ITEM``."""
    return SystemdRequest(parse_request(params['limits'], params['state']),
                          scope=params.get('scope'), unit=params.get('unit'),
                          state=params['state'], dropin=params['dropin'],
                          on_conflict=params['on_conflict'], force=params['force'])


def plan_module(params, run, ceiling=None):
    """systemd_limits' plan: its options mapped once (module_request), then plan_change."""
    try:
        request = module_request(params)
    except model.LimitError as exc:
        raise changes.Failure(str(exc), _empty_result(), kind=errors.kind_of(exc))
    return plan_change(request, run, ceiling)


def _empty_result():
    return dict(changed=False, path=None, limits={}, configured={}, conflicts=[], invalid=[],
                reexec_required=False, daemon_reload_required=False, restart_required=[])


def check_guards(request, ceiling, force):
    """(errors, warnings) for values that would not work on this host."""
    return host_limits.check_request(request, ceiling, force)


def find_conflicts(request, resolution, path):
    """Requested items that systemd will not take from ``path``."""
    conflicts = []
    for name, limit in sorted((request or {}).items()):
        item = model.ITEMS[name]
        winner = resolution.settings.get(name)
        if winner is not None and winner.limit == limit:
            continue
        if winner is None or winner.path == path:
            conflicts.append({'item': name, 'path': None, 'line': None, 'value': None,
                              'reason': '%s: systemd does not read %s (see invalid)'
                                        % (name, path)})
            continue
        conflicts.append({'item': name, 'path': winner.path, 'line': winner.line,
                          'value': winner.text,
                          'reason': '%s:%d: %s overrides the requested %s %s'
                                    % (winner.path, winner.line, winner.text, name,
                                       model.to_systemd(item, limit))})
    return conflicts


def expected_values(request, resolution):
    """{item: Limit} systemd should use for the requested items after the change."""
    if request is None:
        return {}
    names = request if isinstance(request, list) else list(request)
    return dict((name, resolution.settings[name].limit) for name in names
                if name in resolution.settings)


def live_check(run, result, scope, unit, expected, changed):
    """Fill reexec_required, daemon_reload_required and restart_required from the live system."""
    def run_live(args):
        return run(args, environ_update=commands.live_env())

    running = sdlive.systemd_running()
    if scope == sdpaths.SYSTEM:
        live = None
        if running:
            live, _error = sdlive.manager_live(run_live)
        result['reexec_required'] = changed or bool(
            live is not None and sdlive.differing(expected, live))
    elif scope == sdpaths.USER:
        stale = []
        if running:
            for unit_name, uid in sdlive.running_user_managers(run_live):
                user = _user_name(uid)
                live, _error = sdlive.manager_live(run_live, sdpaths.USER, user, uid)
                # a manager whose limits cannot be read (``systemctl --user`` runs through
                # runuser's PAM session, which a broken limits.d fails) is not owed a restart:
                # only a change or its own word that it runs other values is
                if changed or (live is not None and sdlive.differing(expected, live)):
                    stale.append(unit_name)
        result['restart_required'] = stale
        result['reexec_required'] = changed or bool(stale)
    elif sdpaths.is_template(unit):
        # a template's drop-in reaches every instance; the running ones keep their limits
        # until they restart, which is left to the user (they run jobs): reported pending
        result['daemon_reload_required'] = changed
        result['instances'] = sdlive.running_instances(run_live, unit) if running else []
    else:
        state = sdlive.unit_live(run_live, unit) if running else {}
        loaded = state.get('limits') if state else None
        result['daemon_reload_required'] = changed or bool(
            state and (state.get('need_daemon_reload')
                       or (loaded is not None and sdlive.differing(expected, loaded))))
        process = state.get('process') if state else None
        if sdlive.is_active(state) and (changed or (
                process is not None and sdlive.stale_in_process(expected, process))):
            result['restart_required'] = [unit]


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def check_unit(unit):
    """ConfError unless ``unit`` has a unit file systemd loads (a drop-in would do nothing)."""
    fragment, _dropins = sdpaths.unit_files(unit)
    if fragment is not None:
        return
    for directory in sdpaths.UNIT_DIRS:
        path = '%s/%s' % (directory, unit)
        if os.path.islink(path) and os.path.realpath(path) == '/dev/null':
            raise sdconf.ConfError('unit: %s is masked (%s -> /dev/null); its limits would never '
                                   'apply' % (unit, path))
    raise sdconf.ConfError('unit: %s has no unit file in %s; systemd would ignore its drop-in '
                           '(install the unit first)' % (unit, ', '.join(
                               d for d in sdpaths.UNIT_DIRS if not d.endswith('.control'))))


def plan_change(req, run, ceiling=None):
    """The plan of one drop-in. ``req``: a SystemdRequest (limits already parsed);
    ``run(args, environ_update)`` -> (rc, out, err) for the live checks.
    Returns a changes.Change; raises changes.Failure."""
    scope, unit, state = req.scope, req.unit, req.state
    result = _empty_result()

    dropin = req.dropin
    if '/' in dropin or not dropin.endswith('.conf') or dropin.startswith('.'):
        raise changes.Failure('dropin: %r must be a file name ending with .conf' % dropin, result)
    try:
        if unit:
            unit = sdpaths.normalize_unit(unit)
            section, prefix = sdpaths.unit_section(unit), sdpaths.UNIT_PREFIX
        else:
            section, prefix = sdpaths.MANAGER_SECTION, sdpaths.MANAGER_PREFIX
        path = sdpaths.dropin_path(scope, unit, dropin)
        result['path'] = path
        if unit and state == 'present':
            check_unit(unit)
        request = check_request(req.limits, state, req.field)
    except (model.LimitError, sdconf.ConfError) as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))
    if state == 'present':
        result['limits'] = sdlive.limits_dict(request)

    refused, warnings = check_guards(request if state == 'present' else None,
                                     ceiling or host_limits.Ceiling(), req.force)
    if refused:
        raise changes.Failure('; '.join(refused), result, errors=refused)

    try:
        current = safe_file.read_bytes(path)
        current_text = text_codec.decode_bytes(current)
        new_text = sdconf.plan_edit(current_text, section, prefix, request, state, path,
                                    req.prune)
        overlay = {path: new_text}
        if unit:
            resolution = sdprec.resolve_unit(unit, overlay=overlay, extra=path)
        else:
            resolution = sdprec.resolve_manager(scope, overlay=overlay, extra=path)
    except (safe_file.FileError, sdconf.ConfError, model.LimitError) as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))
    result['configured'] = resolution.configured()
    result['invalid'] = resolution.invalid
    warnings.extend('%s:%s: %s' % (r['path'], r['line'], r['problem']) for r in resolution.invalid)

    if state == 'present':
        result['conflicts'] = find_conflicts(request, resolution, path)
        if result['conflicts']:
            message = ('requested limits are overridden by files systemd reads later: '
                       + '; '.join(c['reason'] for c in result['conflicts']))
            if req.on_conflict == 'fail':
                raise changes.Failure(message + ' (nothing written; fix those files or set '
                                                'on_conflict=warn; limits role: '
                                                'limits_on_conflict: warn)', result)
            warnings.append(message)

    changed = new_text != current_text
    result['changed'] = changed
    live_check(run, result, scope, unit, expected_values(request, resolution), changed)
    change = changes.Change(path, result, current_text, new_text, changed=changed)
    change.warnings = warnings
    return change
