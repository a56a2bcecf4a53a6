#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: crio_ulimits
short_description: Manage CRI-O's default_ulimits in a crio.conf.d drop-in
version_added: 0.2.0
description:
  - Sets C(default_ulimits = ["nofile=SOFT:HARD", ...]) under C([crio.runtime]) in a CRI-O
    drop-in, by default C(/etc/crio/crio.conf.d/90-gpufleet-tuning.conf). CRI-O gives these
    rlimits to every new container (Kubernetes pods included); containers inherit
    C(crio.service)'s own limits when no file sets them.
  - Reads every file CRI-O reads, in its order (C(/etc/crio/crio.conf), then every file under
    C(/etc/crio/crio.conf.d) in lexical order, subdirectories included), and returns the list
    CRI-O will use and the file that sets it (RV(configured), RV(decided_by)).
  - Refuses, with nothing written and naming C(file:line[:column]), what CRI-O would refuse at
    start in any of those files (a line that is not TOML, a C(default_ulimits) element go-units
    cannot parse, Podman's C({append=true})), values no container could start with, a O(path)
    CRI-O does not read, and a file read after O(path) that sets C(default_ulimits) (its list
    would replace this one whole) unless O(force=true).
  - Edits only C(default_ulimits); every other line of the drop-in is kept byte for byte. Entries
    for items not given are kept unless O(purge=true). The write is atomic and keeps the file's
    owner and mode.
  - A change needs a CRI-O restart, done under O(restart) and checked (systemctl's exit status,
    and C(crio.service) active 2 seconds later). A restart that fails puts the previous file
    back, starts CRI-O with it (checked the same way) and fails, saying both.
  - CRI-O is not packaged in Debian 12, where this collection is tested; the module is tested
    against CRI-O's documented syntax and a hand-made C(/etc/crio) tree, never against a running
    CRI-O (docs/containerd-kubernetes.md).
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  ulimits:
    description:
      - Item -> value or C({soft, hard}), as for M(gpufleet.tuning.podman_ulimits); bare
        numbers in limits.conf units (KiB for sizes), strings with units (C(64MiB)),
        C(unlimited).
      - Written as C(name=SOFT:HARD) in kernel units (bytes, seconds, counts; -1 for unlimited).
      - A side left out is taken from the existing entry; with no existing entry both are needed.
    type: dict
    required: true
  path:
    description: The drop-in to manage (C(/etc/crio/crio.conf) or a file under O(config_dir)).
    type: path
    default: /etc/crio/crio.conf.d/90-gpufleet-tuning.conf
  config:
    description: CRI-O's main configuration file (its C(--config)).
    type: path
    default: /etc/crio/crio.conf
  config_dir:
    description: CRI-O's drop-in directory (its C(--config-dir)).
    type: path
    default: /etc/crio/crio.conf.d
  restart:
    description:
      - C(when_idle) restarts C(crio.service) only when no pod sandbox runs (C(crictl pods -q)
        is empty; when it cannot be asked, the restart is deferred), else reports it in
        RV(deferred); C(always) restarts; C(never) only reports it in RV(restart_required).
    type: str
    choices: [when_idle, always, never]
    default: when_idle
  force:
    description:
      - Write when a file read later sets C(default_ulimits) too (with a warning), and hard
        values above what this host lets the container runtime set (PID 1's hard limit when root
        lacks CAP_SYS_RESOURCE). C(nofile) C(unlimited) or above C(fs.nr_open) is always
        refused.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  - gpufleet.tuning.attributes.FILE_BACKUP
  - gpufleet.tuning.attributes.CONF_PURGE
notes:
  - Applies to containers created after the restart; running containers keep their limits.
  - Kubernetes has no released pod field for ulimits; see docs/containerd-kubernetes.md for the
    NRI ulimit-adjuster plugin and KEP-5758.
  - CRI-O reads every file under C(/etc/crio/crio.conf.d), of any name (not only C(*.conf)) and in
    subdirectories too (cri-o C(UpdateFromPath), C(pkg/config/config.go)); C(default_ulimits) is a
    plain list, so the last file that sets it wins whole (no merging, no C({append=true})).
seealso:
  - module: gpufleet.tuning.podman_ulimits
  - module: gpufleet.tuning.containerd_base_spec
'''

EXAMPLES = r'''
- name: Give every CRI-O container (pods included) the training profile
  gpufleet.tuning.crio_ulimits:
    ulimits:
      nofile: 1048576
      memlock: unlimited

- name: Write it now, restart CRI-O in a maintenance window
  gpufleet.tuning.crio_ulimits:
    ulimits:
      nofile: {soft: 65536, hard: 1048576}
    restart: never
'''

RETURN = r'''
path:
  description: The drop-in managed.
  returned: always
  type: str
  sample: /etc/crio/crio.conf.d/90-gpufleet-tuning.conf
default_ulimits:
  description: C(default_ulimits) of the drop-in after the task.
  returned: always
  type: list
  elements: str
  sample: ["memlock=-1:-1", "nofile=1048576:1048576"]
files:
  description: The files CRI-O reads after the task, in its order.
  returned: always
  type: list
  elements: str
configured:
  description: Item -> C({soft, hard, source}) of the list CRI-O uses after the task (kernel units, C(unlimited)); empty when no file sets one.
  returned: always
  type: dict
  sample: {"nofile": {"soft": 1048576, "hard": 1048576, "source": "/etc/crio/crio.conf.d/90-gpufleet-tuning.conf:3:1"}}
decided_by:
  description: C(file:line:column) of the C(default_ulimits) CRI-O uses after the task, or null.
  returned: always
  type: str
overridden_by:
  description: Settings of C(default_ulimits) read after O(path) (written only with O(force=true)).
  returned: always
  type: list
  elements: str
restart_required:
  description: Whether the file changed (CRI-O reads it at start only).
  returned: always
  type: bool
restarted:
  description: Whether C(crio.service) was restarted.
  returned: always
  type: bool
deferred:
  description: Why a needed restart was not done, or null.
  returned: always
  type: str
backup_file:
  description: The backup written when O(backup=true) and the file changed.
  returned: when a backup was written
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import restarts

UNIT = 'crio.service'


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ulimits=dict(type='dict', required=True),
            purge=dict(type='bool', default=False),
            path=dict(type='path', default=crio_conf.DROPIN),
            config=dict(type='path', default=crio_conf.MAIN),
            config_dir=dict(type='path', default=crio_conf.DROPIN_DIR),
            restart=dict(type='str', default='when_idle', choices=['when_idle', 'always', 'never']),
            backup=dict(type='bool', default=False),
            force=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params, shm_size=None)

    def planner(request, host, ceiling):
        return crio_plan.plan_crio(request, params['config'], params['config_dir'], ceiling)
    change = changes.run_guarded(module, runtime_plan.plan_module, planner, params, module)
    change.result.update(restarted=False, deferred=None)

    def restart_owed(result):
        # the restart engine: when_idle asks for pod sandboxes (runtime_live.crio_pods_busy); a
        # failed or unsettled restart puts the file back, starts CRI-O with it and fails
        engine = restarts.Engine(restarts.Restarter(module), policy=params['restart'],
                                 busy=lambda _unit: runtime_live.crio_pods_busy(module),
                                 never='restart: never')
        try:
            engine.run([('unit', UNIT)], {}, [('crio', change)])
        except restarts.RestartFailure as exc:
            module.fail_json(msg=exc.msg, kind=exc.kind,
                             files_restored=exc.result['files_restored'], **change.result)
        if engine.deferred:
            result['deferred'] = engine.deferred[0]['reason']
        else:
            result['restarted'] = True
    changes.finish(module, change, params['backup'], after_write=restart_owed)


if __name__ == '__main__':
    main()
