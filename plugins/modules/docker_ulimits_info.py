#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: docker_ulimits_info
short_description: Report the limits Docker gives new containers, configured and live
version_added: 0.1.0
description:
  - Reads C(default-ulimits), C(default-shm-size) and C(live-restore) from C(daemon.json), each
    with its source (C(file:line:column)), and the C(--default-ulimit)/C(--default-shm-size)
    flags the docker unit passes to dockerd (with the unit file and line).
  - Reports the limits of the running containerd, which containers inherit when
    C(default-ulimits) does not set an item.
  - With O(image), starts a throw-away container (C(docker run --rm IMAGE cat /proc/self/limits
    /proc/self/mounts)) and reports the limits and C(/dev/shm) size a new container really
    gets, in check mode too. The image needs C(cat); a busybox image is enough.
  - A daemon.json that cannot be read is reported in RV(problems), not as a failure.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  path:
    description:
      - Docker's daemon configuration file. Left out, the file dockerd reads (RV(config_file)).
        A path that is not that file is read, and RV(problems) says which file dockerd reads.
    type: path
  unit:
    description: The systemd unit that runs dockerd.
    type: str
    default: docker.service
  image:
    description:
      - An image (already present, or pullable) to start a probe container from. Without it no
        container is started.
    type: str
  run_options:
    description:
      - Extra options for C(docker run), such as C(--network=none) or C(--ulimit nofile=1:2)
        as separate list elements.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
'''

EXAMPLES = r'''
- name: Read what new containers get
  gpufleet.tuning.docker_ulimits_info:
    image: busybox
    run_options: [--network=none]
  register: docker_limits

- name: New containers must get 65536 open files
  ansible.builtin.assert:
    that:
      - docker_limits.live.limits.nofile.soft == 65536
      - docker_limits.live.shm_size >= 8 * 1024 * 1024 * 1024
'''

RETURN = r'''
path:
  description: The daemon.json read.
  returned: always
  type: str
config_file:
  description:
    - The daemon.json dockerd reads and why (C(source)) - the C(--config-file) flag of the
      unit's effective C(ExecStart) with its C(file:line), dockerd's default
      C(/etc/docker/daemon.json), or the docker snap's C($SNAP_DATA/config/daemon.json).
  returned: always
  type: dict
  sample: {"path": "/etc/docker/other.json",
           "source": "/etc/systemd/system/docker.service.d/10-config.conf:3 (--config-file)"}
config:
  description: What daemon.json sets.
  returned: always
  type: dict
  contains:
    exists:
      description: Whether the file exists.
      type: bool
    default_ulimits:
      description: Item -> soft, hard (kernel units; C(unlimited)), human and source
        (C(file:line:column)).
      type: dict
      sample: {"nofile": {"soft": 65536, "hard": 65536, "human": "65536:65536",
               "source": "/etc/docker/daemon.json:4:5"}}
    shm_size:
      description: C(default-shm-size) as written, in bytes, and its source; null when unset.
      type: dict
      sample: {"value": "8G", "bytes": 8589934592, "source": "/etc/docker/daemon.json:9:3"}
    live_restore:
      description: C(live-restore) from the file (false when unset).
      type: bool
unit_flags:
  description: C(--default-ulimit)/C(--default-shm-size) passed to dockerd by the unit.
  returned: always
  type: list
  elements: dict
  sample: [{"key": "default-ulimits", "flag": "--default-ulimit", "value": "nofile=1024:2048",
            "source": "/etc/systemd/system/docker.service.d/override.conf:3"}]
flag_conflicts:
  description:
    - The unit's flags that clash with a key of the daemon.json read (dockerd refuses to start
      when a directive is both a flag and in the file), with the unit C(file:line), dockerd's
      C(state) (C(running) - it would refuse at its next restart, C(refused) - docker.service
      failed, C(stopped) - it would refuse when started) and the message, also in RV(problems).
  returned: always
  type: list
  elements: dict
  sample: [{"key": "default-ulimits", "flag": "--default-ulimit", "state": "running",
            "source": "/etc/systemd/system/docker.service.d/override.conf:3",
            "msg": "/etc/systemd/system/docker.service.d/override.conf:3 passes --default-ulimit to
                    dockerd and /etc/docker/daemon.json sets \"default-ulimits\": dockerd would refuse
                    to start at its next restart (remove the flag or the key)"}]
containerd:
  description: Limits of the running containerd (what containers inherit for items
    C(default-ulimits) does not set); empty when containerd is not running.
  returned: always
  type: dict
  sample: {"pid": 712, "limits": {"nofile": {"soft": 1024, "hard": 524288, "human": "1024:524288"}}}
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
      sample: 8589934592
running_containers:
  description: Containers running now and whether live-restore is on in the running dockerd.
  returned: always
  type: dict
  sample: {"count": 2, "live_restore": false}
problems:
  description: Things that could not be read (a daemon.json that does not parse, ...), a
    path that is not the file dockerd reads, and the messages of RV(flag_conflicts).
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path'),
            unit=dict(type='str', default='docker.service'),
            image=dict(type='str'),
            run_options=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    result = info.docker_report(module, module.params['path'], module.params['unit'])
    if module.params['image']:
        result['live'] = ctl.live(module, 'docker', module.params['image'], result,
                                  run_options=module.params['run_options'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
