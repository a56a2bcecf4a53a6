#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pam_limits_info
short_description: Read limits.conf and limits.d, and resolve what a user gets at login
version_added: 0.1.0
description:
  - Parses C(/etc/security/limits.conf) and every C(limits.d/*.conf) in pam_limits order and
    returns each file's entries and the lines pam_limits skips or misreads.
  - With O(user), returns what pam_limits applies to that user at login, item by item, with
    the line each side comes from, using pam_limits' own precedence. User names and uid
    ranges win over C(@group) and gid ranges, which win over C(*); within a class the later
    line wins. For type C(-), a soft side already set by a more specific class makes
    pam_limits skip the hard side too. Soft is clamped to hard. C(@gid_min:gid_max) ranges
    match the primary group only, C(@name) and C(@:gid) supplementary groups too. An
    applicable C(<domain> -) line means no limits at all.
  - On Debian and Ubuntu (libpam-modules 1.5.2), C(*) and C(@name) lines do not apply to root;
    uid ranges and gid forms do. Elsewhere they apply, as in upstream's code. O(root_wildcards)
    overrides the detection.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  user:
    description: Resolve the effective limits of this user (must exist on the host).
    type: str
  root_wildcards:
    description:
      - Whether C(*) and C(@name) lines apply to root. C(auto) is false on Debian-family hosts
        and true elsewhere.
    type: str
    choices: [auto, 'true', 'false']
    default: auto
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
  - gpufleet.tuning.attributes.PAM_FILES
notes:
  - The files are read as the installed Linux-PAM reads them (RV(pam_version), from dpkg's status
    file or C(rpm -q pam)); docs/limit-model.md lists what changed between versions (the value field
    from 1.6, C(rttime) from 1.7.1).
seealso:
  - module: gpufleet.tuning.pam_limits
'''

EXAMPLES = r'''
- name: What does alice get at login?
  gpufleet.tuning.pam_limits_info:
    user: alice
  register: pam

- name: Show where her nofile comes from
  ansible.builtin.debug:
    msg: "{{ pam.effective.nofile }}"
'''

RETURN = r'''
pam_version:
  description: The installed Linux-PAM (dpkg's status file, else C(rpm -q pam)); null when unknown. The files are read as it reads them.
  returned: always
  type: str
  sample: "1.5.2"
files:
  description: Each file pam_limits reads, in its order, with its entries.
  returned: always
  type: list
  elements: dict
  sample:
    - path: /etc/security/limits.conf
      entries: [{line: 3, domain: '*', type: soft, item: nofile, value: '65536'}]
invalid:
  description: Lines pam_limits skips or reads differently, with path, line and problem.
  returned: always
  type: list
  elements: dict
ignored:
  description:
    - Files in O(limits_dir) that pam_limits never reads (not C(*.conf)), such as a C(README)
      or C(99-old.conf.disabled); the collection's own backups are left out.
  returned: always
  type: list
  elements: str
  sample: [/etc/security/limits.d/99-old.conf.disabled]
effective:
  description:
    - For each resource-limit item some line sets for O(user), what pam_limits applies at
      login. C(soft) and C(hard) in the kernel's units (bytes for size items, seconds for cpu,
      as /proc/PID/limits shows) or C(unlimited); C(soft_source) and C(hard_source) as
      C(path:line). A side no line sets is null; the session inherits it.
  returned: when O(user) is given
  type: dict
  sample: {nofile: {soft: 65536, hard: 65536, soft_source: '/etc/security/limits.d/90-gpufleet-tuning.conf:3',
                    hard_source: '/etc/security/limits.d/90-gpufleet-tuning.conf:4'}}
other:
  description: maxlogins, maxsyslogins, priority and nonewprivs that apply to O(user), as
    value and source.
  returned: when O(user) is given
  type: dict
no_limits:
  description: The C(path:line) of an applicable C(<domain> -) line (no limits at all), or null.
  returned: when O(user) is given
  type: str
root_wildcards:
  description: Whether C(*) and C(@name) lines were applied to root.
  returned: always
  type: bool
session_errors:
  description:
    - The entries pam_limits reads that it cannot open, so that every session that runs
      pam_limits (su, sudo, runuser, ssh, a user manager's start) already fails to open, with
      C(path) and C(msg) (what it is and how to fix it), such as a dangling symbolic link named
      C(*.conf) in O(limits_dir) (Linux-PAM before 1.5.3), a link loop, a FIFO or a socket,
      or a missing O(limits_conf) (before 1.5.3). Each is also a warning; their lines are not
      in RV(files).
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/security/limits.d/50-site.conf,
            msg: "/etc/security/limits.d/50-site.conf is a symbolic link to /nonexistent, which
                  does not exist: pam_limits cannot open it, and Linux-PAM 1.5.2 fails the
                  session then (1.5.3 and later skip it), so every session that runs pam_limits
                  already fails to open (...). Remove the link (rm ...) or point it at a limits
                  file"}]
unread:
  description:
    - The C(*.conf) entries pam_limits opens and reads no line from (a directory), with C(path)
      and C(msg); each is also a warning.
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf


def main():
    module = AnsibleModule(
        argument_spec=dict(
            user=dict(type='str'),
            limits_conf=dict(type='path', default=conf.LIMITS_CONF),
            limits_dir=dict(type='path', default=conf.LIMITS_DIR),
            root_wildcards=dict(type='str', choices=['auto', 'true', 'false'], default='auto'),
        ),
        supports_check_mode=True,
    )
    try:
        result = info.pam_report(module.params, module)
    except info.InfoError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    for found in result['session_errors'] + result['unread']:
        module.warn(found['msg'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
