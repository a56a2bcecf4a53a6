#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
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
  limits_conf:
    description: The main limits file.
    type: path
    default: /etc/security/limits.conf
  limits_dir:
    description: The drop-in directory.
    type: path
    default: /etc/security/limits.d
  root_wildcards:
    description:
      - Whether C(*) and C(@name) lines apply to root. C(auto) is false on Debian-family hosts
        and true elsewhere.
    type: str
    choices: [auto, 'true', 'false']
    default: auto
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
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
'''

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.tuning.plugins.module_utils import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils import pam_limits_conf as conf


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
    params = module.params
    if params['root_wildcards'] == 'auto':
        root_wildcards = not debian_family()
    else:
        root_wildcards = params['root_wildcards'] == 'true'
    result = dict(changed=False, files=[], invalid=[], root_wildcards=root_wildcards)
    files = []
    try:
        for path in conf.pam_order(params['limits_conf'], params['limits_dir']):
            parsed = conf.read_file(path)
            if parsed is not None:
                files.append(parsed)
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot read limits files: %s' % to_native(exc), **result)
    for limits_file in files:
        result['files'].append(dict(path=limits_file.path, entries=[
            dict((k, v) for k, v in line.as_dict().items() if k not in ('path', 'text'))
            for line in limits_file.lines if line.kind in ('entry', 'nolimit')]))
        result['invalid'].extend(line.as_dict() for line in limits_file.invalid())

    if params['user']:
        try:
            user = lookup_user(params['user'])
        except KeyError:
            module.fail_json(msg='user: %s does not exist on this host' % params['user'],
                             **result)
        resolved = conf.resolve(files, user, nr_open=host_limits.sysctl('fs.nr_open'),
                                root_wildcards=root_wildcards)
        result['effective'] = resolved['effective']
        result['other'] = conf.public_other(resolved['other'])
        result['no_limits'] = resolved['no_limits']
    module.exit_json(**result)


if __name__ == '__main__':
    main()
