#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: docker_ulimits
short_description: Manage Docker's default-ulimits and default-shm-size in daemon.json
version_added: 0.1.0
description:
  - Sets C(default-ulimits) (the limits every new container gets unless C(docker run --ulimit)
    says otherwise) and, optionally, C(default-shm-size) in Docker's C(daemon.json).
  - Without C(default-ulimits), containers inherit containerd's limits; with containerd 2.x that
    is a soft C(nofile) of 1024. Docker's default C(/dev/shm) is 64 MB, on which PyTorch
    DataLoader workers die with "Bus error ... out of shared memory".
  - Merges into the existing file. Every other key (C(runtimes) such as nvidia, C(log-opts),
    C(registry-mirrors), ...) keeps its value and its position; entries of C(default-ulimits)
    for items not given are kept too unless O(purge=true). The file and its directory are created
    when missing. The write is atomic and keeps the file's owner and mode.
  - The file is rewritten (indent 2, trailing newline) only when its content changes; a file
    that already means the requested values is left as it is, byte for byte.
  - Refuses, leaving the file untouched, when the file is not valid JSON (the message names
    line and column), when an existing C(default-ulimits) entry that would be kept cannot be
    read (line and column), and when the docker unit's effective C(ExecStart) (including
    drop-ins and variables from C(Environment=)/C(EnvironmentFile=)) already passes
    C(--default-ulimit) or C(--default-shm-size) for a key the file would hold (dockerd refuses
    to start when an option is set both as a flag and in the file; the message names the unit
    file and line).
  - An unreadable existing entry for an item this task sets is replaced (with a warning).
  - C(default-ulimits) and C(default-shm-size) take effect after a dockerd restart (not a
    reload), and only for containers created afterwards. The module does not restart dockerd;
    it returns RV(restart_required) so that a handler can, and RV(running_containers) so that
    you know what a restart would stop (all running containers unless C(live-restore) is on).
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  ulimits:
    description:
      - Item -> value or C({soft, hard}) (or C({value})), in the forms every module of this
        collection takes. A bare number uses limits.conf units (KiB for size items such as
        C(memlock), minutes for C(cpu)); strings may carry units (C(64MiB), C(8G), C(90min));
        C(unlimited)/C(infinity)/C(-1) mean unlimited.
      - Written in Docker's units (bytes, seconds, counts; -1 for unlimited) as
        C({"Name", "Soft", "Hard"}).
      - A side left out is taken from the existing entry; with no existing entry both are needed.
      - Only resource limits (rlimits) are accepted, not C(maxlogins), C(priority) or
        C(nonewprivs).
    type: dict
  shm_size:
    description:
      - Default size of C(/dev/shm) for new containers, such as C(8G) or C(512MiB) (base 1024).
      - Written as the shortest exact form (C(8G)); an existing value that means the same size
        (C(8192M)) is kept as written.
    type: str
  purge:
    description:
      - Remove C(default-ulimits) entries for items not in O(ulimits) (and the key itself when
        nothing is left). With O(ulimits={}) and O(purge=true) the key is removed.
    type: bool
    default: false
  path:
    description:
      - Docker's daemon configuration file.
      - Left out, the file dockerd reads (RV(config_file)) - the C(--config-file) of the unit's
        effective C(ExecStart), with its drop-ins, else C(/etc/docker/daemon.json).
      - A path that is not the file a C(--config-file) flag names is refused before anything
        is written, naming the unit file and line of the flag and both paths.
      - Where only the docker snap's C(snap.docker.dockerd.service) runs dockerd, the task is
        refused with guidance (the snap reads C(/var/snap/docker/current/config/daemon.json)
        and is restarted with C(snap restart docker)).
    type: path
  unit:
    description:
      - The systemd unit that runs dockerd, whose C(ExecStart) is checked for conflicting flags.
    type: str
    default: docker.service
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  - gpufleet.tuning.attributes.FILE_BACKUP
  - gpufleet.tuning.attributes.RUNTIME_FORCE
notes:
  - Restart dockerd afterwards (a handler on RV(restart_required)); C(systemctl reload docker)
    does not apply C(default-ulimits).
  - For Kubernetes nodes (containerd or CRI-O, no dockerd), see docs/containerd-kubernetes.md.
  - C(default-ulimits) entries are written in Docker's units (bytes for memlock, stack, core and the
    other sizes, seconds for cpu, counts for the rest, C(-1) for unlimited), always with C(Name)
    (without it dockerd fails with C(wrong rlimit value)). Only rlimits are accepted (not
    C(maxlogins), C(priority), C(nonewprivs)); a side left out (only C(hard) given) is taken from
    the existing entry.
  - C(default-shm-size) is written in its shortest exact form (C(8G), C(1536M)); dockerd reads it
    base 1024. An existing value meaning the same size (C(8192M)) is kept as written; an existing
    JSON number (which stops dockerd with C(invalid size)) is replaced by the string.
  - The file is read as dockerd decodes it (C(name), C(soft), C(hard) in any letter case; a
    C(default-shm-size) string as go-units' C(RAMInBytes) reads it, C(1.5G), C(64 MB)). An entry
    whose C(Name) is not its key, that lacks C(Soft) or C(Hard), holds a value below -1 or is
    C(rttime) is refused with the reason (docs/limit-model.md).
seealso:
  - module: gpufleet.tuning.docker_ulimits_info
  - module: gpufleet.tuning.podman_ulimits
'''

EXAMPLES = r'''
- name: Give new containers enough open files and a large /dev/shm
  gpufleet.tuning.docker_ulimits:
    ulimits:
      nofile: {soft: 65536, hard: 65536}
      memlock: unlimited
      nproc: 65536
    shm_size: 8G
    backup: true
  notify: Restart dockerd

- name: Only ever these limits, nothing else in default-ulimits
  gpufleet.tuning.docker_ulimits:
    ulimits:
      nofile: 65536
    purge: true
  notify: Restart dockerd

# handlers:
- name: Restart dockerd
  ansible.builtin.systemd_service:
    name: docker.service
    state: restarted
  listen: Restart dockerd
'''

RETURN = r'''
path:
  description: The daemon.json managed.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
config_file:
  description:
    - The daemon.json dockerd reads and why (C(source)), as
      RV(gpufleet.tuning.docker_ulimits_info#module:config_file) has it.
  returned: always
  type: dict
  sample: {"path": "/etc/docker/other.json",
           "source": "/etc/systemd/system/docker.service.d/10-config.conf:3 (--config-file)"}
default_ulimits:
  description: C(default-ulimits) as the file holds it after the task, in Docker's form.
  returned: always
  type: dict
  sample: {"nofile": {"Name": "nofile", "Soft": 65536, "Hard": 65536}}
default_shm_size:
  description: C(default-shm-size) after the task, or null when not set.
  returned: always
  type: str
  sample: 8G
restart_required:
  description: True when the file changed, so dockerd must be restarted for new containers
    to get the values.
  returned: always
  type: bool
running_containers:
  description: What restarting dockerd would affect.
  returned: always
  type: dict
  contains:
    count:
      description: Containers running now (null when dockerd could not be asked).
      type: int
      sample: 3
    live_restore:
      description: Whether live-restore is on (running containers survive a restart). Taken
        from the running dockerd, or from daemon.json when dockerd could not be asked.
      type: bool
      sample: false
backup_file:
  description: The backup written when O(backup=true) and the file changed.
  returned: when a backup was written
  type: str
  sample: /etc/docker/daemon.json.1234.2024-01-01@12:00:00~
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import docker_plan


def main():
    spec = runtime_plan.argument_spec(path=dict(type='path'))
    spec.update(unit=dict(type='str', default='docker.service'))
    module = AnsibleModule(argument_spec=spec, required_one_of=runtime_plan.REQUIRED_ONE_OF,
                           supports_check_mode=True)
    runtime_plan.run_module(module, docker_plan.plan_docker)


if __name__ == '__main__':
    main()
