#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: effective_limits
short_description: Probe the limits new processes really get, per context, and compare with a profile
version_added: 0.1.0
description:
  - Starts real processes in each selected context and reads their C(/proc/self/limits).
    C(login) is a login session (C(runuser -l USER), through PAM and pam_limits);
    C(ssh) an SSH session through the node's sshd configuration and C(/etc/pam.d/sshd), served
    by a temporary second sshd on 127.0.0.1 (C(systemd-run), with the running sshd's limits)
    that takes a throwaway key from a root-owned directory under C(/run), so that nothing is
    written in the user's files; it is stopped and its directory removed afterwards;
    C(service) a transient system service running as the user (C(systemd-run --wait --pipe
    -p User=USER)), which gets the system manager's defaults; C(user_manager) a transient
    service of the user's user manager (C(user@UID.service) must be running, for example with
    C(loginctl enable-linger USER)); C(docker) and C(podman) a new container of an image
    (C(run --rm --network=none IMAGE cat /proc/self/limits)); C(slurm_job) a job step
    (C(srun -w NODENAME --immediate=5), on this host's node, never queued; a node running jobs
    gives a C(busy) error, pending) submitted from a login session of the user whose soft
    limits are the distribution's defaults (nofile 1024, memlock and stack 8 MiB), so that
    limits a job takes from the submit shell show (docs/slurm.md); C(k8s_pod) a pod container started through
    containerd's CRI by O(cri_client), as the kubelet starts one (docs/containerd-kubernetes.md).
  - With O(units), also reads the limits of each running unit's main process (what the
    processes it starts, such as containerd's containers, inherit).
  - Reads the kernel ceilings C(fs.nr_open), C(fs.file-max), C(kernel.pid_max) and
    C(kernel.threads-max).
  - With O(expect) (a profile, as the other modules of the collection take it), returns
    RV(gaps), every context and item where a side is below the profile.
  - A probe that cannot run is reported in RV(errors), not fatal, so that one missing runtime
    does not hide the other contexts.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  expect:
    description:
      - A profile, item -> value or C({soft, hard}), with the value forms of
        M(gpufleet.tuning.pam_limits) (C(65536), C(unlimited), C(8MiB); a bare number for a
        size item is KiB). Each probed context is compared with it.
    type: dict
  baseline:
    description:
      - RV(contexts) of an earlier run (before a change). With O(expect), RV(regressions)
        lists the items where a context now gets less than it got then and less than
        O(expect), which is what the silent pam_limits fallback (every limit of the session back to its
        default) looks like. A profile that lowers a limit on purpose is not a regression.
    type: dict
  parallel:
    description:
      - Run the probes at the same time (one thread each, every probe a new process of its
        own), so that the call takes about as long as its slowest probe. C(false) runs them one
        after another; the results are the same.
    type: bool
    default: true
  # BEGIN GENERATED options by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  contexts:
    description:
      - The contexts to probe. C(docker) needs O(docker_image); C(k8s_pod) needs O(pod_image);
        C(podman) needs O(podman_image); C(enroot) needs O(enroot_image).
    type: list
    elements: str
    choices: [login, ssh, service, user_manager, docker, k8s_pod, podman, enroot, slurm_job]
    default: [login, service]
  run_options:
    description:
      - Extra options for C(docker run) and C(podman run), as separate elements.
    type: list
    elements: str
    default: []
  # END GENERATED options
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
  # BEGIN GENERATED fragments by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  - gpufleet.tuning.options.PROBES
  # END GENERATED fragments
notes:
  - The probes start processes (a login session, a transient service, a container removed
    afterwards) but change no configuration, also in check mode.
  - The login probe goes through C(runuser)'s PAM stack; su uses its own stack in
    C(/etc/pam.d). The C(ssh) probe goes through sshd's (C(/etc/pam.d/sshd), when sshd_config
    has C(UsePAM yes)) and starts from sshd's own limits, which can differ from C(login).
seealso:
  - module: gpufleet.tuning.pam_limits_info
  - module: gpufleet.tuning.systemd_limits_info
  - module: gpufleet.tuning.docker_ulimits_info
'''

EXAMPLES = r'''
- name: What do a login, a service, the user manager and a container of trainer get?
  gpufleet.tuning.effective_limits:
    user: trainer
    contexts: [login, service, user_manager, docker]
    docker_image: busybox:latest
    units: [containerd]
    expect:
      nofile: 65536
      nproc: {soft: 32768, hard: 32768}
      memlock: unlimited
  register: effective

- name: Fail when a context misses the profile
  ansible.builtin.assert:
    that: effective.gaps | length == 0
    fail_msg: "{{ effective.table }}"
'''

RETURN = r'''
contexts:
  description: For each probed context, C(limits) (item -> C(soft), C(hard) in kernel units
    or C(unlimited), and C(human)) and the C(command) that produced them.
  returned: always
  type: dict
  sample: {login: {command: "runuser -l trainer -c 'cat /proc/self/limits'",
                   limits: {nofile: {soft: 16384, hard: 16384, human: "16384:16384"}}}}
errors:
  description:
    - Probes that could not run, each with C(context), C(msg) and C(kind).
    - C(kind) is C(not_running) when the context's service does not run (a stopped unit, a
      user manager without lingering) and C(host) when a command failed or printed no limits.
    - C(kind) is C(busy) when the probe could not start now and is pending, not failed, as a
      C(slurm_job) probe (C(srun -w NODENAME --immediate=5)) on a node that runs jobs or is
      drained; then C(node), C(reason) (C(busy) or C(unavailable)), C(waited_s) and
      C(configured) (item -> C(soft), C(hard), C(source) file:line) come with it.
  returned: always
  type: list
  elements: dict
ceilings:
  description: The kernel ceilings C(fs.nr_open), C(fs.file-max), C(kernel.pid_max),
    C(kernel.threads-max) (null when unreadable).
  returned: always
  type: dict
  sample: {fs.nr_open: 1048576, fs.file-max: 9223372036854775807, kernel.pid_max: 4194304,
           kernel.threads-max: 1029364}
expected:
  description: O(expect) in kernel units, item -> C(soft), C(hard), C(human).
  returned: when O(expect) is given
  type: dict
gaps:
  description: Every context and item where a side is below O(expect), with C(context),
    C(item), C(expected) and C(actual) (C({soft, hard}); C(actual) is null when the probe did
    not show the item) and C(sides) (which sides are below).
  returned: always
  type: list
  elements: dict
  sample: [{context: docker, item: nofile, expected: {soft: 65536, hard: 65536},
            actual: {soft: 1024, hard: 524288}, sides: [soft]}]
regressions:
  description: With O(baseline) and O(expect), items below both their O(baseline) value and
    O(expect), each with C(context), C(item), C(before), C(after), C(expected), C(sides).
  returned: always
  type: list
  elements: dict
table:
  description: RV(gaps) as a plain-text table context x item -> expected / actual.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

# The options declared elsewhere (the contexts' choices and their probes' options, those
# limits_audit shares), composed by effective.argument_spec() and documented by
# scripts/gen_option_docs.py.
OPTIONS = effective.OPTIONS


def main():
    # an image may come by its own name or in probe_options: effective.checked() requires it
    module = AnsibleModule(
        argument_spec=effective.argument_spec(),
        supports_check_mode=True,
    )
    try:
        result = effective.probe(module, module.params)
    except effective.ProbeFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
