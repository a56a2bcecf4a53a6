#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: systemd_limits
short_description: Manage systemd's DefaultLimit*= manager defaults or a unit's Limit*= settings
version_added: 0.1.0
description:
  - Services never see C(limits.conf). What a service (a training job, dockerd, containerd,
    slurmd, kubelet) starts with comes from the unit's C(Limit*=) settings or, when it has none,
    from the manager's C(DefaultLimit*=) defaults. This module writes either into a drop-in.
  - With O(scope=system) or O(scope=user) it manages the system or user managers' defaults in
    C(/etc/systemd/system.conf.d/90-gpufleet-tuning.conf) or
    C(/etc/systemd/user.conf.d/90-gpufleet-tuning.conf), section C([Manager]).
  - With O(unit) it manages that unit's limits in
    C(/etc/systemd/system/UNIT.d/90-gpufleet-tuning.conf), section C([Service]) (C([Socket]),
    C([Mount]) or C([Swap]) for those unit types).
  - Values use the same item names and forms as M(gpufleet.tuning.pam_limits) (C(64MiB),
    C(unlimited), a bare number for size items in KiB) and are written in systemd's syntax
    (C(SOFT:HARD), C(infinity), C(8M)).
  - Lines the module does not own are kept byte for byte. An assignment is rewritten only when
    it does not already express the requested value, so C(8M) stays when C(8192) KiB is asked.
  - Reads every file systemd reads for the same settings (the main file or unit file, then the
    drop-ins of /etc, /run, /usr/local/lib and /usr/lib sorted by file name) and reports as
    RV(conflicts) the assignments that would win over the requested values.
  - Nothing is applied to running processes. RV(reexec_required) and RV(restart_required) say
    what to do (C(systemctl daemon-reexec), restarting units or C(user@UID.service)); notify
    handlers on change.
  - Refuses, with nothing written, C(nofile) C(unlimited), a hard C(nofile) above
    C(fs.nr_open), items systemd cannot set (maxlogins, priority, nonewprivs), unknown items,
    a missing soft or hard side, soft above hard, and, unless O(force=true), a hard value above
    what the host lets systemd set (PID 1's hard limit when it lacks CAP_SYS_RESOURCE, as in a
    container), where services would fail to start.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  scope:
    description:
      - Manage the defaults of the C(system) manager or of C(user) managers.
      - Exactly one of O(scope) and O(unit) is required.
    type: str
    choices: [system, user]
  unit:
    description:
      - Manage this unit's limits. A name without a type gets C(.service).
    type: str
  limits:
    description:
      - Item name -> value, or a mapping with C(soft) and C(hard) (or C(value)).
      - Items are core, data, fsize, memlock, nofile, rss, stack, cpu, nproc, as, locks,
        sigpending, msgqueue, nice and rtprio. Size items take C(64MiB)-style sizes (a bare
        number is KiB, as in limits.conf); cpu takes C(90min)-style durations (a bare number is
        minutes); C(unlimited) is accepted except for nofile and nice.
      - With O(state=absent) only the keys matter; without O(limits) every C(Limit*) setting of
        the drop-in is removed.
    type: dict
  state:
    description:
      - C(present) sets the limits, C(absent) removes them from the drop-in (the file is removed
        when no assignment is left in it).
    type: str
    choices: [present, absent]
    default: present
  dropin:
    description: File name of the drop-in to manage (it must end with C(.conf)).
    type: str
    default: 90-gpufleet-tuning.conf
  on_conflict:
    description:
      - What to do when a file systemd reads after the drop-in sets a requested item to another
        value. C(fail) fails naming file and line and writes nothing; C(warn) writes and warns.
    type: str
    choices: [fail, warn]
    default: fail
  force:
    description:
      - Write hard values above what the host lets systemd set (see description). Never
        overrides the C(fs.nr_open) and C(unlimited) nofile guards.
    type: bool
    default: false
  backup:
    description: Keep a timestamped copy of the drop-in when it changes.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.tuning.attributes
notes:
  - A service started before a manager default changed keeps its old limits; C(systemctl
    daemon-reexec) makes the system manager read its defaults again, and services must then be
    restarted. User managers read theirs when C(user@UID.service) restarts (or the user logs in
    again after all sessions ended).
  - A user service cannot get limits above its user manager's, which come from the system
    manager's defaults (or a drop-in for C(user@.service)).
  - C(~/.config/systemd/user.conf) is not read by this module.
seealso:
  - module: gpufleet.tuning.systemd_limits_info
  - module: gpufleet.tuning.pam_limits
  - name: systemd-system.conf(5)
    description: The manager defaults.
    link: https://www.freedesktop.org/software/systemd/man/latest/systemd-system.conf.html
  - name: systemd.exec(5)
    description: Limit*= in units.
    link: https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html
'''

EXAMPLES = r'''
- name: Give every system service enough file descriptors by default
  gpufleet.tuning.systemd_limits:
    scope: system
    limits:
      nofile: {soft: 65536, hard: 524288}
      memlock: unlimited
  notify: Re-execute the system manager

- name: Raise the user managers' defaults for user services
  gpufleet.tuning.systemd_limits:
    scope: user
    limits:
      nofile: 65536
  notify: Restart user managers

- name: Let containerd (and so every container without default-ulimits) open many files
  gpufleet.tuning.systemd_limits:
    unit: containerd
    limits:
      nofile: 1048576
      memlock: unlimited
  register: containerd_limits
  notify: Restart containerd

- name: Remove one setting again
  gpufleet.tuning.systemd_limits:
    unit: containerd
    state: absent
    limits:
      memlock:
'''

RETURN = r'''
path:
  description: The managed drop-in.
  returned: always
  type: str
  sample: /etc/systemd/system.conf.d/90-gpufleet-tuning.conf
limits:
  description: The requested limits in the kernel's units (bytes for size items, seconds for
    cpu) or C(unlimited).
  returned: always
  type: dict
  sample: {nofile: {soft: 65536, hard: 524288}}
configured:
  description: What systemd will use after the change for every item any file sets, with
    source file and line (see M(gpufleet.tuning.systemd_limits_info)).
  returned: always
  type: dict
conflicts:
  description: Assignments in files read after the drop-in that override a requested value,
    each with item, path, line, value and reason.
  returned: always
  type: list
  elements: dict
invalid:
  description: Assignments or lines systemd ignores in any file read (garbage, soft above hard,
    broken section headers), with path, line and problem. Reported, not fatal.
  returned: always
  type: list
  elements: dict
reexec_required:
  description: For O(scope=system) or O(scope=user), true when the drop-in changed or a
    running manager does not use the requested values yet.
  returned: always
  type: bool
daemon_reload_required:
  description: For O(unit), true when the drop-in changed or systemd has not loaded the
    configured values yet.
  returned: always
  type: bool
restart_required:
  description: Running units whose processes do not run with the requested values yet; for
    O(scope=user), the running C(user@UID.service) units whose manager does not use them yet.
  returned: always
  type: list
  elements: str
  sample: [containerd.service]
backup_file:
  description: The backup's path, when one was made.
  returned: when O(backup=true) and the file changed
  type: str
'''

import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.tuning.plugins.module_utils import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_conf as sdconf


def parse_request(limits, state):
    """limits option -> {item: Limit} (present) or [item] / None (absent). Raises LimitError."""
    if state == 'absent':
        if limits is None:
            return None
        names = []
        for name in limits:
            item = model.get_item(name, 'limits.%s' % name)
            model.systemd_key(item)
            names.append(item.name)
        return names
    if not limits:
        raise model.LimitError('limits: required with state=present')
    request = model.parse_profile(limits)
    for name, limit in request.items():
        item = model.ITEMS[name]
        try:
            model.systemd_key(item)
        except model.LimitError as exc:
            raise model.LimitError('limits.%s: %s' % (name, exc))
        if limit.soft is None or limit.hard is None:
            raise model.LimitError('limits.%s: systemd needs both soft and hard' % name)
    return request


def check_guards(request, ceiling, force):
    """(errors, warnings) for values that would not work on this host."""
    errors, warnings = [], []
    for name, limit in sorted((request or {}).items()):
        item = model.ITEMS[name]
        if name == 'nofile' and (limit.hard == model.UNLIMITED or limit.soft == model.UNLIMITED):
            errors.append('limits.nofile: unlimited is not possible for nofile; the kernel caps '
                          'it at fs.nr_open (%s)' % (ceiling.nr_open or 'unknown'))
            continue
        if name == 'nofile' and ceiling.nr_open and model.exceeds(limit.hard, ceiling.nr_open):
            errors.append('limits.nofile: hard %s is above fs.nr_open (%d)'
                          % (limit.hard, ceiling.nr_open))
            continue
        top, reason = ceiling.hard_ceiling(item)
        if top is not None and model.exceeds(limit.hard, top):
            message = ('limits.%s: hard %s is above what this host lets systemd set: %s; '
                       'services would fail to start' % (name, model.format_human(item, limit.hard),
                                                         reason))
            if force:
                warnings.append(message + ' (written because force=true)')
            else:
                errors.append(message + ' (set force=true to write it anyway)')
    return errors, warnings


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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            scope=dict(type='str', choices=['system', 'user']),
            unit=dict(type='str'),
            limits=dict(type='dict'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            dropin=dict(type='str', default=sdconf.DROPIN_NAME),
            on_conflict=dict(type='str', choices=['fail', 'warn'], default='fail'),
            force=dict(type='bool', default=False),
            backup=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('scope', 'unit')],
        required_one_of=[('scope', 'unit')],
        required_if=[('state', 'present', ('limits',))],
        supports_check_mode=True,
    )
    params = module.params
    scope, unit, state = params['scope'], params['unit'], params['state']
    result = dict(changed=False, path=None, limits={}, configured={}, conflicts=[], invalid=[],
                  reexec_required=False, daemon_reload_required=False, restart_required=[])

    dropin = params['dropin']
    if '/' in dropin or not dropin.endswith('.conf') or dropin.startswith('.'):
        module.fail_json(msg='dropin: %r must be a file name ending with .conf' % dropin, **result)
    try:
        if unit:
            unit = sdconf.normalize_unit(unit)
            section, prefix = sdconf.unit_section(unit), sdconf.UNIT_PREFIX
        else:
            section, prefix = sdconf.MANAGER_SECTION, sdconf.MANAGER_PREFIX
        path = sdconf.dropin_path(scope, unit, dropin)
        result['path'] = path
        request = parse_request(params['limits'], state)
    except (model.LimitError, sdconf.ConfError) as exc:
        module.fail_json(msg=to_native(exc), **result)
    if state == 'present':
        result['limits'] = sdconf.limits_dict(request)

    errors, warnings = check_guards(request if state == 'present' else None,
                                    host_limits.Ceiling(), params['force'])
    if errors:
        module.fail_json(msg='; '.join(errors), errors=errors, **result)
    for message in warnings:
        module.warn(message)

    try:
        current = safe_file.read_bytes(path)
        current_text = None if current is None else sdconf.decode_bytes(current)
        new_text = sdconf.plan_edit(current_text, section, prefix, request, state, path)
        overlay = {path: new_text}
        if unit:
            resolution = sdconf.resolve_unit(unit, overlay=overlay, extra=path)
        else:
            resolution = sdconf.resolve_manager(scope, overlay=overlay, extra=path)
    except (safe_file.FileError, sdconf.ConfError, model.LimitError) as exc:
        module.fail_json(msg=to_native(exc), **result)
    result['configured'] = resolution.configured()
    result['invalid'] = resolution.invalid
    for record in resolution.invalid:
        module.warn('%s:%s: %s' % (record['path'], record['line'], record['problem']))

    if state == 'present':
        result['conflicts'] = find_conflicts(request, resolution, path)
        if result['conflicts']:
            message = ('requested limits are overridden by files systemd reads later: '
                       + '; '.join(c['reason'] for c in result['conflicts']))
            if params['on_conflict'] == 'fail':
                module.fail_json(msg=message + ' (nothing written; fix those files or set '
                                               'on_conflict=warn)', **result)
            module.warn(message)

    changed = new_text != current_text
    result['changed'] = changed
    live_check(module, result, scope, unit, expected_values(request, resolution), changed)

    if changed and module._diff:
        result['diff'] = dict(before=current_text or '', after=new_text or '',
                              before_header=path if current_text is not None else '/dev/null',
                              after_header=path if new_text is not None else '/dev/null')
    if not changed or module.check_mode:
        module.exit_json(**result)

    try:
        if new_text is None:
            backup_file = safe_file.remove(path, backup=params['backup'])
        else:
            backup_file = safe_file.write_atomic(path, sdconf.encode_text(new_text),
                                                 mode=0o644, backup=params['backup'])
    except (safe_file.FileError, IOError, OSError) as exc:
        module.fail_json(msg=to_native(exc), **result)
    if backup_file:
        result['backup_file'] = backup_file
    module.exit_json(**result)


def live_check(module, result, scope, unit, expected, changed):
    """Fill reexec_required, daemon_reload_required and restart_required from the live system."""
    def run(args):
        return module.run_command(args, environ_update=sdconf.live_env())

    running = sdconf.systemd_running()
    if scope == sdconf.SYSTEM:
        live = None
        if running:
            live, _error = sdconf.manager_live(run)
        result['reexec_required'] = changed or bool(
            live is not None and sdconf.differing(expected, live))
    elif scope == sdconf.USER:
        stale = []
        if running:
            for unit_name, uid in sdconf.running_user_managers(run):
                user = _user_name(uid)
                live, _error = sdconf.manager_live(run, sdconf.USER, user, uid)
                if changed or live is None or sdconf.differing(expected, live):
                    stale.append(unit_name)
        result['restart_required'] = stale
        result['reexec_required'] = changed or bool(stale)
    else:
        state = sdconf.unit_live(run, unit) if running else {}
        loaded = state.get('limits') if state else None
        result['daemon_reload_required'] = changed or bool(
            state and (state.get('need_daemon_reload')
                       or (loaded is not None and sdconf.differing(expected, loaded))))
        process = state.get('process') if state else None
        if sdconf.is_active(state) and (changed or (
                process is not None and sdconf.differing(expected, process))):
            result['restart_required'] = [unit]


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


if __name__ == '__main__':
    main()
