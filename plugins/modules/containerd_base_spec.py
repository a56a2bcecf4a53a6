#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_base_spec
short_description: Put a limits profile into the base runtime spec of containerd's CRI handlers
version_added: 0.2.0
description:
  - Kubernetes pods on containerd take their rlimits from the C(base_runtime_spec) of their
    runtime handler when it has one (then C(containerd.service)'s C(Limit*=) do not reach them),
    and from containerd's own process when it has none.
  - For every handler of O(handlers) that has a base spec, patches every rlimit of O(limits)
    into C(process.rlimits) of that file, keeping every other key, the other rlimits and the
    file's indentation.
  - For a handler with no base spec and O(create=true), creates O(spec_path) from the node's own
    default spec (C(ctr oci spec)), patched (never its C(RLIMIT_NOFILE 1024:1024) as is), and
    references it in C(config.toml) by inserting one C(base_runtime_spec) line into the
    handler's table (or appending the handler's table); every other byte of C(config.toml) is
    kept. Config version 2 (containerd 1.6/1.7) and 3 (2.x) are both handled.
  - Refuses, with nothing written, a C(config.toml) that does not parse (naming C(file:line)),
    a base spec that is not JSON or not an OCI spec, a base spec path that does not exist and a
    handler that is neither configured nor C(runc).
  - Restarts containerd when a file changed, under O(restart) (C(when_idle) leaves it to a
    later run while pod sandboxes run). Running pods keep their old spec either way. The restart
    is checked (systemctl's exit status, and containerd active 2 seconds later); one that fails
    puts the previous files back, starts containerd with them (checked the same way) and fails,
    saying both.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  limits:
    description:
      - Item -> value or C({soft, hard}), as in M(gpufleet.tuning.limits_profile)'s C(profile).
      - Items that are not rlimits with an OCI counterpart (C(priority), C(nice),
        C(maxlogins)...) are left out and returned in RV(skipped_items).
    type: dict
    required: true
  handlers:
    description:
      - The CRI runtime handlers to manage. Default, every handler C(config.toml) configures
        plus C(runc) (C(nvidia) is included where configured).
    type: list
    elements: str
  create:
    description: Create and reference a base spec for handlers that have none.
    type: bool
    default: false
  spec_path:
    description: The base spec file created when O(create=true).
    type: path
    default: /etc/containerd/gpufleet-base-spec.json
  config:
    description: containerd's configuration file.
    type: path
    default: /etc/containerd/config.toml
  restart:
    description:
      - C(when_idle) restarts containerd only when no pod sandbox runs (C(ctr -n k8s.io
        containers ls) is empty), else reports the restart in RV(deferred); C(always) restarts;
        C(never) only reports it.
    type: str
    choices: [when_idle, always, never]
    default: when_idle
  backup:
    description: Keep a timestamped copy of each file that changes.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.tuning.attributes
notes:
  - CRI-O has C(default_ulimits) in C(crio.conf.d) instead; see docs/containerd-kubernetes.md.
seealso:
  - module: gpufleet.tuning.systemd_limits
'''

EXAMPLES = r'''
- name: Give every pod container the training profile, also on kubespray nodes
  gpufleet.tuning.containerd_base_spec:
    limits:
      nofile: 1048576
      memlock: unlimited
    create: true
'''

RETURN = r'''
version:
  description: The version of config.toml.
  returned: always
  type: int
  sample: 2
handlers:
  description: Handler -> the base spec it uses after the task (null, it inherits containerd's limits).
  returned: always
  type: dict
  sample: {"runc": "/etc/containerd/gpufleet-base-spec.json"}
files:
  description: The files changed (or that would change in check mode).
  returned: always
  type: list
  elements: str
skipped_items:
  description:
    - Items of O(limits) that have no OCI rlimit.
    - Named C(skipped) up to 0.2.0; C(skipped) is a result key of Ansible's own (the task was
      skipped), which ansible-core 2.20 and newer turn into a boolean.
  returned: always
  type: list
  elements: str
restarted:
  description: Whether containerd was restarted.
  returned: always
  type: bool
deferred:
  description: Why a needed restart was not done (running pods keep their old spec), or null.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    containerd_cri_conf as cc)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    containerd_spec_plan as csp)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import oci_base_spec as oci
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import restarts


UNIT = 'containerd.service'


def main():
    module = AnsibleModule(
        argument_spec=dict(
            limits=dict(type='dict', required=True),
            handlers=dict(type='list', elements='str'),
            create=dict(type='bool', default=False),
            spec_path=dict(type='path', default=oci.DEFAULT_PATH),
            config=dict(type='path', default=cc.CONFIG),
            restart=dict(type='str', default='when_idle', choices=['when_idle', 'always', 'never']),
            backup=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params

    def pods_busy(_unit):
        why = runtime_live.containerd_pods_busy(module)
        return why and ('%s: containerd not restarted (when_idle); running pods keep their old '
                        'spec, new pods get it after a restart' % why)
    try:
        planned = csp.plan(module.run_command, model.parse_profile(params['limits'], 'limits'),
                           config=params['config'], handlers=params['handlers'],
                           create=params['create'], spec_path=params['spec_path'])
    except errors.Error as exc:
        module.fail_json(msg=exc.msg, kind=exc.kind, where=exc.where)
    writes = planned.writes
    result = dict(changed=bool(writes), version=planned.version, handlers=planned.handlers,
                  skipped_items=planned.skipped,
                  files=[w[0] for w in writes], restarted=False, deferred=None)
    if module._diff:
        result['diff'] = [dict(before_header=p, after_header=p, before=o or '', after=n)
                          for p, o, n in writes]
    if module.check_mode or not writes:
        module.exit_json(**result)
    planned_changes = [('containerd_cri', changes.Change(path, {}, current=old, new=new))
                       for path, old, new in writes]
    try:
        written = restarts.write_all(planned_changes, params['backup'])
    except changes.Failure as exc:
        module.fail_json(msg=exc.msg, kind=exc.kind, files_restored=exc.result['files_restored'])
    # the restart engine: when_idle asks for pods (runtime_live.containerd_pods_busy); a failed
    # or unsettled restart puts the files back, starts containerd again with them and fails
    engine = restarts.Engine(
        restarts.Restarter(module), policy=params['restart'], busy=pods_busy,
        never='restart: never; containerd reads the base spec when it starts')
    try:
        engine.run([('unit', UNIT)], {}, written)
    except restarts.RestartFailure as exc:
        module.fail_json(msg=exc.msg, kind=exc.kind,
                         files_restored=exc.result['files_restored'], **result)
    if engine.deferred:
        result['deferred'] = engine.deferred[0]['reason']
    else:
        result['restarted'] = True
    module.exit_json(**result)


if __name__ == '__main__':
    main()
