#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
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
  force:
    description:
      - Write hard values above what the host lets systemd set (see description). Never
        overrides the C(fs.nr_open) and C(unlimited) nofile guards.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  - gpufleet.tuning.attributes.FILE_BACKUP
  - gpufleet.tuning.attributes.ON_CONFLICT
notes:
  - A service started before a manager default changed keeps its old limits; C(systemctl
    daemon-reexec) makes the system manager read its defaults again, and services must then be
    restarted. User managers read theirs when C(user@UID.service) restarts (or the user logs in
    again after all sessions ended).
  - A user service cannot get limits above its user manager's, which come from the system
    manager's defaults (or a drop-in for C(user@.service)).
  - C(~/.config/systemd/user.conf) is not read by this module.
  - Restarting C(user@UID.service) stops that user's services.
  - A default below the container's hard limit makes pam_limits in the C(systemd-user) PAM stack log
    C(Could not set limit ... Operation not permitted) when a user manager starts. That is harmless;
    the manager still starts.
  - Precedence and value grammar are systemd 252's (Debian 12). An invalid assignment is ignored and
    the earlier value stays (reported in RV(invalid)); C(/etc) masks a drop-in of the same name in
    C(/run), C(/usr/local/lib) and C(/usr/lib). The name of the O(backup) copy
    (C(NAME.conf.PID.DATE~)) is one systemd ignores.
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan as plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            scope=dict(type='str', choices=['system', 'user']),
            unit=dict(type='str'),
            limits=dict(type='dict'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            dropin=dict(type='str', default=sdpaths.DROPIN_NAME),
            on_conflict=dict(type='str', choices=['fail', 'warn'], default='fail'),
            force=dict(type='bool', default=False),
            backup=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('scope', 'unit')],
        required_one_of=[('scope', 'unit')],
        required_if=[('state', 'present', ('limits',))],
        supports_check_mode=True,
    )
    change = changes.run_guarded(module, plan.plan_module, module.params, module.run_command)
    changes.finish(module, change, backup=module.params['backup'])


if __name__ == '__main__':
    main()
