#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pam_limits
short_description: Manage many pam_limits entries in one limits.d file, with guards
version_added: 0.1.0
description:
  - Writes resource limits for login sessions (C(su -), C(runuser -l), sshd, login, sudo) into a
    limits.d drop-in, many entries per call and one atomic write.
  - Every entry is written as two lines, a C(soft) and a C(hard) line, even when both are
    equal. A single C(-) line is avoided because pam_limits, when a more specific domain
    already set the soft side, returns early and skips the hard side too.
  - Lines the module does not own (comments, tabs, other domains or items, a last line without
    newline) are kept byte for byte. Lines for a requested domain and item are replaced only
    when they do not already express the requested values.
  - Reads C(limits.conf) and every C(limits.d/*.conf) file and reports C(conflicts), entries
    with the same domain and item later in pam_limits order that would make a requested entry
    never apply, and C(overrides), narrower user or group lines that win over a requested
    wildcard or group entry for the users they match.
  - Refuses, with nothing written, values that would lock users out or silently not apply.
    C(nofile) set to C(unlimited) or C(-1); a hard C(nofile) above C(fs.nr_open); unknown
    items; malformed domains; soft above hard; and, unless O(force=true), a hard value above
    what login services can set on this host (above PID 1's hard limit when the host lacks
    CAP_SYS_RESOURCE, as in containers). Upstream PAM then refuses the login, Debian and Ubuntu
    PAM silently drop every limit of the session.
  - Size items (memlock, stack, data, as, core, fsize, rss) accept human sizes such as C(64MiB)
    or C(8G) (base 1024); a bare number is in limits.conf units, KiB. C(cpu) accepts durations
    such as C(90min); a bare number is minutes.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  limits:
    description:
      - The entries. Each has O(limits[].domain), O(limits[].item) and either
        O(limits[].value) (soft and hard) or both O(limits[].soft) and O(limits[].hard).
      - With O(state=absent) only domain and item are needed.
    type: list
    elements: dict
    required: true
    suboptions:
      domain:
        description:
          - A user name, C(@group), C(*), a uid range (C(1000:2000), C(1000:), C(:1000)), a gid
            range (C(@100:200), C(@:100)), or C(%group)/C(%) (maxlogins only).
        type: str
        required: true
      item:
        description:
          - One of core, data, fsize, memlock, nofile, rss, stack, cpu, nproc, as, maxlogins,
            maxsyslogins, priority, locks, sigpending, msgqueue, nice, rtprio, nonewprivs.
        type: str
        required: true
      value:
        description: Soft and hard value. C(unlimited) is accepted except for nofile, nice,
          priority and nonewprivs.
        type: raw
      soft:
        description: Soft value.
        type: raw
      hard:
        description: Hard value.
        type: raw
  path:
    description:
      - The file to manage. pam_limits reads only C(/etc/security/limits.conf) and
        C(*.conf) files in O(limits_dir); another path gets a warning.
    type: path
    default: /etc/security/limits.d/90-gpufleet-tuning.conf
  state:
    description: Whether the entries are present or absent in O(path).
    type: str
    choices: [present, absent]
    default: present
  exclusive:
    description:
      - With O(state=present), the file ends up holding exactly these entries; other entry
        lines (and invalid lines) are removed, comments and blank lines stay.
    type: bool
    default: false
  force:
    description:
      - Write hard values above what login services can set on this host (see description).
        Never overrides the C(fs.nr_open) and C(unlimited) nofile guards.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  - gpufleet.tuning.attributes.FILE_BACKUP
  - gpufleet.tuning.attributes.FILE_MODE
  - gpufleet.tuning.attributes.ON_CONFLICT
  - gpufleet.tuning.attributes.PAM_FILES
notes:
  - pam_limits applies only to sessions whose PAM stack calls it (Debian and Ubuntu list
    C(session required pam_limits.so) per service, RHEL in system-auth and password-auth).
    systemd services and containers never read these files; use
    M(gpufleet.tuning.systemd_limits) and M(gpufleet.tuning.docker_ulimits) for them.
  - On Debian and Ubuntu, C(*) and C(@group) lines do not apply to root; add C(root) entries.
  - pam_limits reads C(/etc/security/limits.conf) first, then C(limits.d/*.conf) sorted by name (C
    locale); a O(path) it does not read gets a warning. The name of the O(backup) copy does not end
    in C(.conf), so pam_limits ignores it.
  - A C(%) or C(%group) domain is refused for every item but C(maxlogins) (pam_limits ignores such a
    line, C(maxsyslogins) included). Any other domain text is a user name to pam_limits
    (C(alice@example.com)) and is accepted. Each refusal names the field, C(limits[N].FIELD).
seealso:
  - module: gpufleet.tuning.pam_limits_info
  - name: limits.conf(5)
    description: The file format.
    link: https://man7.org/linux/man-pages/man5/limits.conf.5.html
'''

EXAMPLES = r'''
- name: Give training users and root enough file descriptors and processes
  gpufleet.tuning.pam_limits:
    limits:
      - {domain: '*', item: nofile, value: 65536}
      - {domain: root, item: nofile, value: 65536}
      - {domain: '*', item: nproc, soft: 32768, hard: 65536}
      - {domain: '@ml', item: memlock, value: unlimited}
      - {domain: '@ml', item: stack, value: 64MiB}
    backup: true

- name: Own the whole drop-in, warn about later files instead of failing
  gpufleet.tuning.pam_limits:
    path: /etc/security/limits.d/90-gpufleet-tuning.conf
    exclusive: true
    on_conflict: warn
    limits:
      - {domain: '*', item: nofile, value: 65536}

- name: Remove an entry
  gpufleet.tuning.pam_limits:
    state: absent
    limits:
      - {domain: '@ml', item: stack}
'''

RETURN = r'''
path:
  description: The managed file.
  returned: always
  type: str
  sample: /etc/security/limits.d/90-gpufleet-tuning.conf
entries:
  description: The requested entries, normalised; soft and hard in the kernel's units (bytes
    for size items, seconds for cpu) or C(unlimited).
  returned: always
  type: list
  elements: dict
  sample: [{domain: '*', item: nofile, soft: 65536, hard: 65536}]
conflicts:
  description: Lines later in pam_limits order that set a requested domain and item to another
    value, with path, line, text, the entry and the reason.
  returned: always
  type: list
  elements: dict
overrides:
  description: Narrower lines (user, uid range, @group) that win over a requested wildcard or
    group entry for the users they match.
  returned: always
  type: list
  elements: dict
invalid:
  description: Lines in any limits file that pam_limits skips or reads differently, with path,
    line and problem. Reported, not fatal.
  returned: always
  type: list
  elements: dict
backup_file:
  description: The backup's path, when one was made.
  returned: when O(backup=true) and the file changed
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan as plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions


def main():
    module = AnsibleModule(
        argument_spec=dict(
            limits=dict(type='list', elements='dict', required=True, options=dict(
                domain=dict(type='str', required=True),
                item=dict(type='str', required=True),
                value=dict(type='raw'),
                soft=dict(type='raw'),
                hard=dict(type='raw'),
            )),
            path=dict(type='path', default='/etc/security/limits.d/90-gpufleet-tuning.conf'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            exclusive=dict(type='bool', default=False),
            on_conflict=dict(type='str', choices=['fail', 'warn'], default='fail'),
            force=dict(type='bool', default=False),
            backup=dict(type='bool', default=False),
            mode=dict(type='raw', default='0644'),
            limits_conf=dict(type='path', default=conf.LIMITS_CONF),
            limits_dir=dict(type='path', default=conf.LIMITS_DIR),
        ),
        supports_check_mode=True,
    )
    change = changes.run_guarded(module, plan.plan_change, module.params, None,
                                 versions.pam_version(module))
    changes.finish(module, change, backup=module.params['backup'])


if __name__ == '__main__':
    main()
