#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: podman_ulimits_info
short_description: Report the limits Podman gives new containers, configured and live
version_added: 0.1.0
description:
  - Reads C(default_ulimits) and C(shm_size) of C([containers]) from the containers.conf files
    Podman reads as root, in its order (C(/usr/share/containers/containers.conf),
    C(/etc/containers/containers.conf), then the C(containers.conf.d/*.conf) drop-ins by file
    name; C(CONTAINERS_CONF) replaces them all), and reports the value that wins with its source
    (C(file:line:column)).
  - With O(image), starts a throw-away container (C(podman run --rm IMAGE cat /proc/self/limits
    /proc/self/mounts)) and reports the limits and C(/dev/shm) size it really gets, in check
    mode too.
  - Files that cannot be read are reported in RV(problems), not as a failure.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  image:
    description: An image to start a probe container from. Without it no container is started.
    type: str
  run_options:
    description:
      - Extra options for C(podman run), as separate list elements (C(--network=none),
        C(--cgroup-manager=cgroupfs) goes into O(global_options)).
    type: list
    elements: str
    default: []
  global_options:
    description: Options given to C(podman) before C(run), such as C(--storage-driver=vfs).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
'''

EXAMPLES = r'''
- name: Read what new Podman containers get
  gpufleet.tuning.podman_ulimits_info:
    image: localhost/tiny
    run_options: [--network=none]
  register: podman_limits

- name: New containers must get 65536 open files
  ansible.builtin.assert:
    that: podman_limits.live.limits.nofile.soft == 65536
'''

RETURN = r'''
files:
  description: The containers.conf files read, in order (without drop-ins where Podman reads none, before Podman 3.3).
  returned: always
  type: list
  elements: str
podman_version:
  description: Podman's version (C(podman --version)); null without podman.
  returned: always
  type: str
  sample: "3.0.1"
ignored:
  description: Drop-ins in C(/etc/containers/containers.conf.d) this Podman does not read (Podman before 3.3 reads none).
  returned: always
  type: list
  elements: str
user_overrides:
  description: >-
    Users whose own C($HOME/.config/containers/containers.conf) or C(containers.conf.d/*.conf) sets
    C(default_ulimits) or C(shm_size) for their Podman (rootless; root too from Podman 5). Each has C(user),
    C(source) (file:line:col), C(key) and C(append): false where the value replaces the system default, true where
    that C(default_ulimits) is read with Podman's C({append=true}) attribute in force (its own, or one given before
    and not turned off by C({append=false})), so it adds to the system default.
  returned: always
  type: list
  elements: dict
notes:
  description: One line for each ignored drop-in and each user override (also given as warnings).
  returned: always
  type: list
  elements: str
config:
  description: The values that win.
  returned: always
  type: dict
  contains:
    default_ulimits:
      description: Item -> soft, hard (kernel units; C(unlimited)), human and source.
      type: dict
      sample: {"nofile": {"soft": 65536, "hard": 65536, "human": "65536:65536",
               "source": "/etc/containers/containers.conf.d/90-gpufleet-tuning.conf:2:20"}}
    default_ulimits_append:
      description: >-
        Podman's C({append=...}) attribute of C(default_ulimits) once every file is read (containers/common
        attributedstring.Slice C(Attributes.Append)): the last one any file gave (it is sticky from file to
        file), null when none did. True: a user's own C(default_ulimits) adds to these instead of replacing them.
      type: bool
      sample: null
    shm_size:
      description: C(shm_size) in bytes and its source; null when no file sets it.
      type: dict
      sample: {"bytes": 8589934592, "source": "/etc/containers/containers.conf.d/90-gpufleet-tuning.conf:3:12"}
live:
  description: What a new container got.
  returned: when O(image) is given
  type: dict
  contains:
    image:
      description: The image used.
      type: str
    limits:
      description: Item -> soft, hard, human, from the container's C(/proc/self/limits).
      type: dict
    shm_size:
      description: Size of the container's C(/dev/shm) in bytes.
      type: int
problems:
  description: Files or values that could not be read.
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type='str'),
            run_options=dict(type='list', elements='str', default=[]),
            global_options=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    result = info.podman_report(module)
    for note in result['notes']:
        changes.warn(module, note)
    if module.params['image']:
        result['live'] = ctl.live(module, 'podman', module.params['image'], result,
                                  module.params['global_options'], module.params['run_options'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
