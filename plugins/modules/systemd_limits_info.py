#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: systemd_limits_info
short_description: Report systemd's configured and live resource limits, and what is pending
version_added: 0.1.0
description:
  - Resolves C(DefaultLimit*=) of the system or user manager with systemd's own precedence. The
    main file (C(/etc/systemd/system.conf) or C(user.conf)), then C(*.conf) drop-ins from
    C(/etc/systemd), C(/run/systemd), C(/usr/local/lib/systemd) and C(/usr/lib/systemd) sorted by
    file name, the last valid assignment winning; a drop-in in /etc masks the same name in the
    other directories. Assignments systemd ignores (garbage, soft above hard) leave the earlier
    value in place and are listed in RV(manager.invalid).
  - Reads the running manager's values with C(systemctl show) when systemd runs.
  - For each unit in O(units), resolves its C(Limit*=) settings (unit file, then drop-ins) and
    reads what systemd loaded (C(systemctl show)) and what the main process runs with
    (C(/proc/MAINPID/limits)).
  - RV(pending) lists what is configured but not in effect yet, with the action that applies it.
  - Values are in the kernel's units (bytes for size items, seconds for cpu, raw 20-nice for
    nice) or C(unlimited).
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  scope:
    description: Report the C(system) manager's or the C(user) managers' defaults.
    type: str
    choices: [system, user]
    default: system
  user:
    description:
      - With O(scope=user), the user whose user manager's live values go into RV(manager.live).
        Without it every running C(user@UID.service) is read into RV(user_managers) and
        RV(manager.live) is null.
    type: str
  units:
    description: Units to report (a name without a type gets C(.service)).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
notes:
  - Without a running systemd (a chroot, a container without systemd), only the configured
    values are reported and RV(manager.live) is null.
seealso:
  - module: gpufleet.tuning.systemd_limits
'''

EXAMPLES = r'''
- name: Read the manager defaults and two units' limits
  gpufleet.tuning.systemd_limits_info:
    units: [containerd, docker]
  register: sd_limits

- name: Fail when something is configured but not applied
  ansible.builtin.assert:
    that: sd_limits.pending | length == 0
    fail_msg: "{{ sd_limits.pending }}"

- name: Read a user's user manager
  gpufleet.tuning.systemd_limits_info:
    scope: user
    user: alice
'''

RETURN = r'''
manager:
  description: The manager of O(scope).
  returned: always
  type: dict
  contains:
    scope:
      description: C(system) or C(user).
      type: str
    files:
      description: The files systemd reads, in reading order (main file first).
      type: list
      elements: str
    configured:
      description: For each item any file sets, the value systemd uses, C(source) (path),
        C(line) and the assignment as written (C(value)).
      type: dict
      sample: {nofile: {soft: 4096, hard: 16384, source: /etc/systemd/system.conf.d/90-gpufleet-tuning.conf,
               line: 3, value: DefaultLimitNOFILE=4096:16384}}
    live:
      description: The running manager's values (C(systemctl show)) for every item, or null.
      type: dict
    invalid:
      description: Lines systemd ignores, with path, line, key, value and problem.
      type: list
      elements: dict
    skipped:
      description: Files systemd does not read because an earlier file had a broken section
        header.
      type: list
      elements: str
user_managers:
  description: With O(scope=user), the live values of each running user manager, by user name.
  returned: always
  type: dict
units:
  description: For each unit of O(units), C(files), C(configured), C(invalid), C(live) (what
    systemd has loaded), C(process) (the main process's limits), C(active_state), C(main_pid),
    C(need_daemon_reload).
  returned: always
  type: dict
pending:
  description: Items configured but not in effect, each with C(target) (C(manager),
    C(user@UID.service) or a unit), C(item), C(configured), C(live) and C(action).
  returned: always
  type: list
  elements: dict
systemd_running:
  description: Whether systemd is PID 1.
  returned: always
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info


def main():
    module = AnsibleModule(
        argument_spec=dict(
            scope=dict(type='str', choices=['system', 'user'], default='system'),
            user=dict(type='str'),
            units=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params

    def run(args):
        return module.run_command(args, environ_update=commands.live_env())

    try:
        result, errors = info.systemd_report(run, params['scope'], params['user'], params['units'])
    except info.InfoError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    for error in errors:
        changes.warn(module, error)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
