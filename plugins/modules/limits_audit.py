#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: limits_audit
short_description: Audit one node's resource limits in every context, with their sources, in one call
version_added: 0.2.0
description:
  - Read-only. It changes no configuration, restarts nothing and writes no file on the node,
    in check mode or not. The proof of its Docker probe is returned (RV(proofs)) for the
    controller to keep and pass back (O(probe_proofs)); C(playbooks/audit_limits.yml) does.
  - Starts a new process in each context where a workload can start (a login
    session through PAM, a system service, a service of the user's user manager, a new Docker
    and Podman container, listed units' main processes), reads the limits each gets, and
    compares them with O(profile).
  - For each context and item, names the file and line the value comes from (limits.conf or a
    limits.d file, a system.conf or user.conf drop-in, a unit drop-in, daemon.json with line
    and column, a containers.conf file) or why none does.
  - What M(gpufleet.tuning.effective_limits), M(gpufleet.tuning.pam_limits_info),
    M(gpufleet.tuning.systemd_limits_info), M(gpufleet.tuning.docker_ulimits_info) and
    M(gpufleet.tuning.podman_ulimits_info) report one by one, from one module call, for
    C(playbooks/audit_limits.yml) on large fleets.
  - Contexts are chosen on the node. C(login) and C(service) always; C(user_manager) when
    O(user)'s user manager runs; C(docker) and C(podman) when the runtime is installed and an
    image is given; C(slurm_job) (a job submitted with C(srun) from a login with default soft
    limits) when C(slurmd.service) and the slurm.conf slurmd reads exist (its C(-f), its
    C(SLURM_CONF), the configless cache, /etc/slurm-llnl, /etc/slurm; a warning when slurmd
    runs and none is found), with each value's source
    (slurmd's drop-in line, the slurm.conf line that propagates it or not) and a warning
    naming the items jobs take from the submit shell; C(k8s_pod) when containerd runs with its
    CRI plugin on, a pod started through the CRI with O(pod_image) and O(cri_client), else the
    value a new pod would get, predicted from the handler's base runtime spec (the file and its
    C(process.rlimits) entry) or from containerd's own limits and the unit drop-in that set
    them. Each row's RV(rows) C(how) says C(probed) or C(predicted), and its source says it too.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  profile:
    description:
      - Item -> a value, or a dictionary with C(soft) and C(hard); the profile the contexts are compared with, in the
        forms of M(gpufleet.tuning.limits_profile).
      - C(pids) (the cgroup C(pids.max), a number, C(infinity) or a percentage as systemd writes it) adds one row per
        context (C(login), C(service), C(user_manager), C(docker), C(podman) and the units) with the C(pids.max) that
        governs a new process there (the smallest over its cgroup and every ancestor; RV(rows) C(cgroup) is the one
        that decides, C(pids) the chain), the file:line that sets it and the gap; RV(pids) sums them up.
    type: dict
    required: true
  probe_max_age:
    description:
      - Seconds for which the C(docker) probe's result may be reused instead of starting a new
        container; V(0) starts one every time.
      - A result is reused only while nothing that decides a new container's limits has
        changed since it was made (the running dockerd and containerd (process, start time
        and their own limits), daemon.json, the image tags, the runtime binaries (runc, the
        shim, dockerd, containerd), the kernel's ceilings, the probe command and the boot).
      - The earlier result comes from O(probe_proofs) (what an earlier call returned as
        RV(proofs), kept by the controller); nothing is kept on the node.
      - The rows of a reused probe say C(how=reused) with the time it was made (RV(rows)); a
        new container costs each node about as much CPU as an C(ansible -m ping) of it
        (docs/fleet-scale.md). The limits role's verification never reuses one.
    type: int
    default: 0
    version_added: 0.2.0
  probe_proofs:
    description:
      - The proofs an earlier call returned as RV(proofs), context -> C(key), C(output) and
        C(proved_at) (epoch seconds); only C(docker) is used.
      - One is reused only with O(probe_max_age) above 0, when its C(key) equals the key
        computed now and it was made less than O(probe_max_age) seconds ago; otherwise (or
        when it is malformed) a new container is started.
      - C(playbooks/audit_limits.yml) keeps them per host on the controller
        (C(audit_proofs_dir)).
    type: dict
    default: {}
    version_added: 0.2.0
  job:
    description:
      - A training job's shape (the keys of the C(job_demand) filter and docs/job-shape.md, such as C(num_workers),
        C(batch_size), C(tensors_per_batch), C(bytes_per_batch), C(sharing_strategy)). When given, C(job_fit) says in
        which probed context the job does not fit, which item, its demand against the soft limit and by how much.
      - Checked before anything is probed; a bad field fails the audit naming C(job.FIELD).
    type: dict
  sysctl:
    description:
      - Kernel ceilings to compare, sysctl name -> minimum, in the forms of
        M(gpufleet.tuning.sysctl_ceilings) (an C(exact) value is compared as a minimum).
        RV(kernel) gets a row per name besides the ceilings it always shows.
      - Checked before anything is probed; an unknown name or a value that is not an integer
        fails naming C(sysctl.NAME).
    type: dict
    default: {}
    version_added: 0.2.0
  # BEGIN GENERATED options by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  # END GENERATED options
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
  # BEGIN GENERATED fragments by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  - gpufleet.tuning.options.PROBES
  # END GENERATED fragments
seealso:
  - module: gpufleet.tuning.effective_limits
  - module: gpufleet.tuning.limits_profile
'''

EXAMPLES = r'''
- name: Audit a node against the fleet's profile
  gpufleet.tuning.limits_audit:
    profile: {nofile: 65536, nproc: 32768, memlock: unlimited}
    user: trainer
    docker_image: busybox:latest
  register: audit

- name: Audit again, reusing the Docker probe while nothing that decides it changed
  gpufleet.tuning.limits_audit:
    profile: {nofile: 65536, nproc: 32768, memlock: unlimited}
    user: trainer
    docker_image: busybox:latest
    probe_max_age: 3600
    probe_proofs: "{{ audit.proofs }}"
  register: audit

- name: Show the gaps
  ansible.builtin.debug:
    msg: "{{ audit.table or 'no gaps' }}"
'''

RETURN = r'''
rows:
  description:
    - One row per probed context and profile item (values soft:hard).
    - C(how) is C(probed) (a new process showed the value), C(reused) (a new container showed
      it at C(proved_at), within O(probe_max_age), and nothing that decides it has changed
      since) or C(predicted) (worked out from the files without starting one, the C(k8s_pod)
      rows without O(cri_client)), or C(pending) (the probe could not start now, on a Slurm node
      that runs jobs; the row has C(configured), its C(source) and C(waited_s)).
    - A row with a C(gap) has C(advice), what would close it, said only where the evidence points
      at it (the action that applies a setting not applied yet, the line that sets the value a new
      process gets, or the tune's own file where no file sets it); empty where a file sets other
      values than the process gets and nothing says why.
    - A C(memlock) row of a container context whose non-root process was probed has C(note), the
      memlock that process gets and whether CAP_IPC_LOCK is in its effective set (without it that
      memlock is all it can lock).
  returned: success
  type: list
  elements: dict
  sample:
    - {context: login, item: nofile, actual: "1024:20000", expected: "16384:16384",
       gap: soft+hard, source: no limits line (inherited from the login service), how: probed,
       advice: "run limits_profile with contexts: [pam] (it writes
       /etc/security/limits.d/90-gpufleet-tuning.conf)"}
    - {context: k8s_pod, item: nofile, actual: "1024:1024", expected: "16384:16384", gap: soft+hard,
       source: "predicted (no pod started): /etc/containerd/cri-base.json process.rlimits[2]
       RLIMIT_NOFILE (handler runc)", how: predicted}
contexts:
  description:
    - Per context, the probe command and the limits it got (effective_limits' form); a reused
      probe (O(probe_max_age)) has C(reused) with C(proved_at) and C(age_s).
    - C(docker) and C(podman) have C(nonroot) when a new container was started, one more container
      of the same image as C(--user 65534:65534) and what its process gets (C(command), C(uid),
      C(memlock), C(caps) (CapEff and the other sets of /proc/self/status), C(ipc_lock)
      (CAP_IPC_LOCK effective), C(ipc_lock_bounding) and C(seconds)), or C(error) when it failed.
  returned: success
  type: dict
  sample: {login: {command: "runuser -l trainer -c 'cat /proc/self/limits'", limits: {}}}
gaps:
  description: Context and item pairs below the profile, with the sides below.
  returned: success
  type: list
  elements: dict
  sample: [{context: login, item: nofile, sides: [soft], expected: {soft: 16384, hard: 16384},
            actual: {soft: 1024, hard: 20000}}]
errors:
  description:
    - Contexts whose probe failed, with the reason (a stopped user manager, a missing image).
    - C(kind) C(busy) is a probe that is pending, not failed (a Slurm node that runs jobs), with
      C(node), C(reason), C(waited_s) and C(configured), as in M(gpufleet.tuning.effective_limits).
  returned: success
  type: list
  elements: dict
  sample: [{context: docker, msg: "docker run failed (rc 125): ..."}]
table:
  description: The gaps as a text table, empty when there are none.
  returned: success
  type: str
  sample: ''
expected:
  description: The profile in kernel units with a human form per item.
  returned: success
  type: dict
  sample: {nofile: {soft: 16384, hard: 16384, human: "16384:16384"}}
ceilings:
  description: The kernel's ceilings (fs.nr_open, fs.file-max, kernel.pid_max, kernel.threads-max).
  returned: success
  type: dict
  sample: {fs.nr_open: 1048576}
kernel:
  description:
    - One row per kernel ceiling (fs.file-max, fs.nr_open, vm.max_map_count,
      fs.inotify.max_user_instances, fs.inotify.max_user_watches, kernel.pid_max,
      kernel.threads-max, and each name of O(sysctl)) - C(live) (/proc/sys), C(configured) and
      its C(source) (the sysctl.d C(file:line) that wins at boot, as systemd-sysctl reads
      them), C(minimum) and C(gap) (O(sysctl)), C(in_use) (fs.file-max - the allocated
      handles of /proc/sys/fs/file-nr), C(node_exporter) (the metric name node_exporter gives
      the live value), C(state) and C(reason).
    - C(state) is C(ok), C(below) (the live value is under the minimum), C(unreadable) or
      C(configured_not_applied) (a file sets another value than the kernel has - with a
      read-only /proc/sys, a container, the host decides; else systemd-sysctl applies it). A
      row with a C(gap) is also a warning.
  returned: success
  type: list
  elements: dict
  sample:
    - {name: vm.max_map_count, live: 65530, configured: 1048576,
       source: /etc/sysctl.d/90-gpufleet-tuning.conf:3, minimum: 1048576, gap: 983046,
       state: configured_not_applied, node_exporter: node_sysctl_vm_max_map_count,
       reason: "/etc/sysctl.d/90-gpufleet-tuning.conf:3 sets 1048576, the kernel has 65530:
                /proc/sys is mounted read-only here (a container), so the host decides; it
                applies where /proc/sys is writable at boot"}
pam_invalid:
  description: limits.conf and limits.d lines pam_limits ignores, with file, line and reason.
  returned: success
  type: list
  elements: dict
  sample: []
systemd_pending:
  description: Settings the running system manager or listed units have not applied yet.
  returned: success
  type: list
  elements: dict
  sample: []
unwritable:
  description:
    - Files the limits role writes whose directory cannot be written (a read-only mount), so
      tuning this node fails there.
  returned: success
  type: list
  elements: dict
  sample: [{context: pam, path: /etc/security/limits.d/90-gpufleet-tuning.conf,
            msg: "/etc/security/limits.d/90-gpufleet-tuning.conf: cannot write: directory /etc/security/limits.d is not writable (read-only?)"}]
job_fit:
  description:
    - With O(job), the job's predicted peaks (C(demand)), each probed context's shortfall (C(shortfalls), the soft
      limit C(have) below the job's C(need) by C(short_by); the pids part's thread shortfalls too), the contexts that
      hold the job (C(fits)), those that do not (C(short), also a context where no session opens) and those whose
      probe gave nothing to compare (C(unknown)); C(beyond_kernel) is a sentence when one process needs more
      descriptors than fs.nr_open. Decided from the findings (the job fit's row of the outlet table).
  returned: success, when O(job) is given
  type: dict
  sample:
    demand: {nofile: 20080, threads: 109, fds_main: 20080, fds_worker: 8064, processes: 9, shm_bytes: 1355415552,
             pinned_bytes: 0}
    shortfalls: [{context: login, item: nofile, need: 20080, have: 1024, short_by: 19056}]
    fits: [service]
    short: [login]
    unknown: []
    beyond_kernel: null
pids:
  description:
    - With C(pids) in O(profile), the profile's value (C(expected), as systemd writes it), the kernel's limit the
      percentages resolve against (C(kernel_tasks_max), systemd's system_tasks_max), the contexts whose C(pids.max)
      is below it (C(gaps), with their source), the probed contexts the pids probe does not cover (C(not_covered), such as
      ssh, k8s_pod) and, with O(job) whose demand has C(pids), C(shortfalls).
  returned: success, when O(profile) has pids
  type: dict
  sample:
    expected: "8192"
    kernel_tasks_max: 192724
    gaps: [{context: login, actual: "300", expected: "8192",
            source: "/etc/systemd/system/user-1001.slice.d/50-site.conf:2 (TasksMax=300 of user-1001.slice)"}]
    not_covered: [ssh]
problems:
  description:
    - What stops a context, or will at its next restart, with its C(file:line) in C(msg) and
      C(source) - a flag of docker.service that clashes with a key of the daemon.json dockerd
      reads (the check M(gpufleet.tuning.limits_profile) refuses with); C(state) C(running)
      (dockerd would refuse to start at its next restart), C(refused) (it has refused to start)
      or C(stopped). Each is also a warning.
  returned: success
  type: list
  elements: dict
  sample: [{context: docker, state: running,
            source: /etc/systemd/system/docker.service.d/override.conf:3,
            msg: "/etc/systemd/system/docker.service.d/override.conf:3 passes --default-ulimit to
                  dockerd and /etc/docker/daemon.json sets \"default-ulimits\": dockerd would refuse
                  to start at its next restart (remove the flag or the key)"}]
findings:
  description:
    - The one evaluation every report renders (docs/audit.md, "One finding, one verdict") - one
      finding per probed context and item, kernel ceiling (context C(kernel)) and, with a
      C(core) in the profile, where cores go. C(status) is C(ok), C(gap), C(pending) (a file sets
      enough, what applies it has not run), C(unverified) (the probe could not start now),
      C(not_covered), C(probe_error) or C(node_broken) (no session opens there).
    - C(places) is what decides each side (C(soft), C(hard), or C(value)) as C({path, line}),
      from that side's own evidence; C(place) the first short side's; C(advice) C({action, path,
      line}) what, acted on, changes the value; C(cause) the text, and C(msg) where a probe's error says it.
  returned: success
  type: list
  elements: dict
  sample: [{context: login, item: nofile, kind: rlimit, status: gap, expected: '16384:16384',
            actual: '1024:1048576', short: [soft],
            places: {soft: {path: /etc/security/limits.d/80-site.conf, line: 3}},
            place: {path: /etc/security/limits.d/80-site.conf, line: 3},
            cause: /etc/security/limits.d/80-site.conf:3, how: probed,
            advice: {action: 'raise or remove /etc/security/limits.d/80-site.conf:3 (it sets
                     1024:1048576); limits_profile does not edit files it does not own',
                     path: /etc/security/limits.d/80-site.conf, line: 3}}]
proofs:
  description:
    - The proof of this call's Docker probe, for the controller to keep and pass back as
      O(probe_proofs) (the node keeps nothing); per context, C(key) (what decides a new
      container's limits, digested), C(output) (the probe's output) and C(proved_at) (epoch
      seconds, on the node's clock). A reused proof is returned as it was passed.
    - Empty when no Docker probe ran, or when something that decides it changed while it ran.
  returned: success
  type: dict
  sample:
    docker:
      key: 3f1c0a9e5b7d4c2a8f6e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a
      output: "Limit                     Soft Limit           Hard Limit           Units\n..."
      proved_at: 1767225600.5
core:
  description:
    - Where a crashing process's core goes (C(kernel.core_pattern)), C(kind) C(pipe), C(path),
      C(relative) (in the crashing process's working directory), C(empty) or C(unknown); C(handler)
      (C(systemd-coredump), C(apport) or the pipe's program); C(store), the filesystem the cores are
      written to (C(mount), C(fstype), C(on_root), C(size_bytes), C(free_bytes)) where it is known;
      C(coredump), systemd-coredump's C(storage), its coredump.conf C(settings) with C(file:line) and
      the C(cap) its store is kept under (C(MaxUse=), set or its default); C(lands), a sentence.
    - C(core_limit) is the profile's C(core) and C(warning) says when it lets cores fill the root
      filesystem (soft above 1 GiB or unlimited, and a path pattern on C(/) or a relative one), the
      same judgement as the warning of M(gpufleet.tuning.limits_profile); it is also a warning.
  returned: success
  type: dict
  sample:
    pattern: "|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h"
    kind: pipe
    handler: systemd-coredump
    store: {path: /var/lib/systemd/coredump, mount: /, fstype: ext4, on_root: true}
    coredump: {storage: external, settings: {}, store: /var/lib/systemd/coredump,
               cap: {bytes: 4294967296, source: "the default MaxUse= (10% of /, at most 4G)"}}
    lands: systemd-coredump stores cores in /var/lib/systemd/coredump (on /, ext4), old ones removed above 4GiB
    core_limit: "0:unlimited"
    warning: ''
present:
  description: The contexts present on the node (as limits_profile finds them).
  returned: success
  type: list
  elements: str
  sample: [pam, systemd_system, systemd_user, docker]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

# The options declared elsewhere (the probes' options effective_limits takes too, the
# contexts' among them), composed here and documented by scripts/gen_option_docs.py.
OPTIONS = (effective.PROBES,)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            profile=dict(type='dict', required=True),
            probe_max_age=dict(type='int', default=0),
            probe_proofs=dict(type='dict', default={}),
            job=dict(type='dict'),
            sysctl=dict(type='dict', default={}),
            **opts.spec(OPTIONS)
        ),
        supports_check_mode=True,
    )
    try:
        result, warnings = audit.audit(module, module.params)
    except audit.AuditError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    for message in warnings:
        changes.warn(module, message)
    for problem in result['problems']:
        changes.warn(module, '%s: %s' % (problem['context'], problem['msg']))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
