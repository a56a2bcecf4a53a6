#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: podman_ulimits
short_description: Manage Podman's default_ulimits and shm_size in a containers.conf drop-in
version_added: 0.1.0
description:
  - Sets C(default_ulimits = ["nofile=SOFT:HARD", ...]) and, optionally, C(shm_size) under
    C([containers]) in a containers.conf drop-in, by default
    C(/etc/containers/containers.conf.d/90-gpufleet-tuning.conf). Podman (and Buildah) read it
    for every new container; no daemon needs a restart.
  - Edits only those two values. Every other line of the file (other tables, other keys,
    comments) is kept byte for byte; an existing value is replaced in place. Entries of
    C(default_ulimits) for items not given are kept unless O(purge=true). The file and its
    directory are created when missing; the write is atomic and keeps the file's owner and mode.
  - Refuses, leaving the file untouched and naming C(file:line:column), when the value of
    C(default_ulimits) or C(shm_size) in the file cannot be read, or an element that would be
    kept is not C(NAME=SOFT:HARD) with a known item. An unreadable element for an item this task
    sets is replaced (with a warning).
  - A list in a later containers.conf file replaces this one (Podman does not merge lists unless
    C({append=true}) is used); the module warns when a drop-in read after this one sets the same
    key and so replaces it (not when that list is read with C({append=true}) in force, its own or
    a sticky one from an earlier file, and only adds to this one).
  - Podman before 3.3 (Debian 11's 3.0.1) reads no C(containers.conf.d) drop-in (containers/common
    pull request 615). There, a O(path) in C(/etc/containers/containers.conf.d) is replaced by
    C(/etc/containers/containers.conf), edited the same lossless way, with a warning; the version is
    read from dpkg's status file, else asked with C(podman --version).
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  ulimits:
    description:
      - Item -> value or C({soft, hard}) (or C({value})), as for
        M(gpufleet.tuning.docker_ulimits); bare numbers in limits.conf units (KiB for sizes),
        strings with units (C(64MiB)), C(unlimited) for unlimited.
      - Written as C(name=SOFT:HARD) in kernel units (bytes, seconds, counts; -1 for unlimited).
      - A side left out is taken from the existing entry; with no existing entry both are needed.
    type: dict
  shm_size:
    description:
      - Size of C(/dev/shm) for new containers, such as C(8G) (base 1024, as everywhere in this
        collection).
      - Written as a plain number of bytes (C(8589934592)), because Podman reads a suffix in
        containers.conf as a power of 1000 (C(shm_size = "256m") gives 256000000 bytes). An
        existing value is compared the way Podman reads it.
    type: str
  path:
    description: The drop-in file to manage.
    type: path
    default: /etc/containers/containers.conf.d/90-gpufleet-tuning.conf
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  - gpufleet.tuning.attributes.FILE_BACKUP
  - gpufleet.tuning.attributes.RUNTIME_FORCE
  - gpufleet.tuning.attributes.CONF_PURGE
notes:
  - Applies to containers created afterwards; running containers keep their limits. Rootless
    Podman also reads C(~/.config/containers/containers.conf), which overrides this file.
  - CRI-O uses the same C(default_ulimits) syntax under C([crio.runtime]) in crio.conf; see
    docs/containerd-kubernetes.md.
  - C(shm_size) is written as a plain number of bytes. Podman reads a suffix in containers.conf as a
    power of 1000 whatever follows it (measured with Podman 4.3, C(256m) and C(256MiB) both give a
    250000 KiB C(/dev/shm)), while this collection's sizes are base 1024; bytes are the one form
    every Podman reads exactly. An existing value is compared the way Podman reads it.
  - An C({append=true}) or C({append=false}) attribute of C(default_ulimits) is kept as written,
    with a warning; Podman before 5.0 refuses any such attribute, and in Podman 5 it is sticky from
    file to file (docs/limit-model.md). M(gpufleet.tuning.podman_ulimits_info) and
    M(gpufleet.tuning.limits_audit) name the users whose own containers.conf sets one of the keys.
  - No daemon is involved; RV(restart_required) is always false.
seealso:
  - module: gpufleet.tuning.podman_ulimits_info
  - module: gpufleet.tuning.docker_ulimits
'''

EXAMPLES = r'''
- name: Give new Podman containers enough open files and a large /dev/shm
  gpufleet.tuning.podman_ulimits:
    ulimits:
      nofile: {soft: 65536, hard: 65536}
      memlock: unlimited
    shm_size: 8G
'''

RETURN = r'''
path:
  description: The file managed (C(/etc/containers/containers.conf) instead of a drop-in where Podman reads none, before 3.3).
  returned: always
  type: str
  sample: /etc/containers/containers.conf.d/90-gpufleet-tuning.conf
default_ulimits:
  description: C(default_ulimits) of the drop-in after the task.
  returned: always
  type: list
  elements: str
  sample: ["nofile=65536:65536", "memlock=-1:-1"]
shm_size:
  description: C(shm_size) of the drop-in after the task (bytes, as written), or null.
  returned: always
  type: str
  sample: '8589934592'
restart_required:
  description: Always false; Podman has no daemon and reads the file for each new container.
  returned: always
  type: bool
running_containers:
  description: Containers running now (they keep their old limits).
  returned: always
  type: dict
  sample: {"count": 0, "live_restore": null}
overridden_by:
  description: >-
    Later configuration files that set the same keys and so replace them (C(file:line:column)); a C(default_ulimits)
    read with C({append=true}) in force adds to the list and is not one of them.
  returned: always
  type: list
  elements: str
backup_file:
  description: The backup written when O(backup=true) and the file changed.
  returned: when a backup was written
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import podman_plan


def main():
    module = AnsibleModule(
        argument_spec=runtime_plan.argument_spec(path=dict(type='path', default=cc.DROPIN)),
        required_one_of=runtime_plan.REQUIRED_ONE_OF, supports_check_mode=True)
    runtime_plan.run_module(module, podman_plan.plan_podman)


if __name__ == '__main__':
    main()
