#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: limits_profile
short_description: Apply one limits profile to PAM, systemd and the container runtimes in one call
version_added: 0.2.0
description:
  - Writes one profile of resource limits everywhere a training process can start, in one module
    call, through the same planners as M(gpufleet.tuning.pam_limits),
    M(gpufleet.tuning.systemd_limits), M(gpufleet.tuning.docker_ulimits) and
    M(gpufleet.tuning.podman_ulimits), for login sessions (a limits.d file), the system and user
    managers' C(DefaultLimit*=) (C(system.conf.d) and C(user.conf.d) drop-ins), units'
    C(Limit*=) (containerd and O(units)), Docker's C(default-ulimits) and Podman's
    C(containers.conf) drop-in.
  - All or nothing. Every context is planned first, with every guard of the single-format
    modules (unlimited C(nofile), values above C(fs.nr_open) or above what the host can set,
    soft above hard, unknown items, conflicting files read later, malformed files, a
    read-only target directory); the first refusal fails the task, naming the context and the
    field or C(file:line), with no file changed. A failed write puts back those before it.
  - Each file is written atomically (a temporary file in the same directory, then a rename)
    with its owner and mode kept; lines the module does not own stay byte for byte.
  - RV(actions) says what to re-execute, reload or restart, from the change and from the live
    system, so a restart that an earlier run left pending (a running manager with old
    defaults, a dockerd older than C(daemon.json)) is reported on an unchanged node too.
    Without O(restart) the module applies nothing to running processes.
  - With O(restart) the same call does those restarts after the writes (those
    O(restart_policy) allows, as M(gpufleet.tuning.limits_restart) does them) and, with
    O(verify), probes every context it wrote (M(gpufleet.tuning.effective_limits)) into
    RV(restarted). That makes a first converge of the limits role one module call per node.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  profile:
    description:
      - Item -> a value, or a dictionary with C(soft) and C(hard) (or C(value)); see EXAMPLES.
      - Sizes take C(64MiB), C(8G) (base 1024); a bare number is in limits.conf units (KiB for
        size items, minutes for C(cpu)); C(unlimited)/C(infinity)/C(-1) mean unlimited.
      - Every context gets every item; an item a context cannot express (C(maxlogins) for
        systemd or Docker) is refused, naming the context.
      - C(pids) is the cgroup C(pids.max), no rlimit (docs/limit-model.md), a number of tasks
        (never below 1024), C(infinity), or a percentage of the kernel's limit as systemd
        writes it (C(25%)). Written as C(DefaultTasksMax=) (C(systemd_system), C(systemd_user)),
        C(TasksMax=) (units), a C(user-.slice) drop-in (C(pam), C(systemd_user)) and Podman's
        C(pids_limit), each only where the node gives less.
      - A plain value (or C(value)) is a minimum. Each context gets at least that soft and
        hard limit, and keeps any higher soft or hard limit it has now (the limits lines and
        the hard limit logins inherit, the managers' files or running defaults, a unit's
        C(Limit*=) or loaded values, C(daemon.json) or containerd's own limits). A kept value
        above the node's hard ceiling is capped there. RV(limits_kept) reports each one, with
        no warning (the limits role's report counts them).
      - A side named in C(soft)/C(hard) is written as given, lower or not (a lowered side is warned).
      - No value below an item's floor is ever written, with or without O(force). The floors
        are nofile and nproc 1024, stack 8MiB, memlock 64KiB, as, data and fsize 1GiB, cpu 1
        hour, sigpending 1024, maxlogins and maxsyslogins 4 (docs/limit-model.md says why).
      - Required with O(state=present); ignored with O(state=absent).
    type: dict
  state:
    description:
      - C(absent) takes back what the collection wrote (docs/undo.md). Its drop-ins and
        files go (the PAM file keeps other domains' lines); daemon.json's C(default-ulimits)
        and C(default-shm-size) get their value in the oldest backup (C(NAME.PID.DATE~)),
        else go; slurm.conf loses the lines it added; containerd's base specs and config.toml
        come back from their oldest backup when only the collection's part differs, else are
        reported in RV(undone). The same O(restart_policy), O(restart), O(backup) and check
        mode apply. O(contexts) empty means every context.
    type: str
    choices: [present, absent]
    default: present
  domains:
    description:
      - pam_limits domains the profile is written for. On Debian and Ubuntu C(*) does not
        apply to root, hence C(root) in the default.
    type: list
    elements: str
    default: ['*', 'root']
  units:
    description:
      - Further units that get the profile as C(Limit*=) in a drop-in (C(slurmd.service),
        C(kubelet.service)). C(containerd.service) is added for the C(containerd) context.
    type: list
    elements: str
    default: []
  on_conflict:
    description:
      - C(fail) refuses a profile that a file read later (a later limits.d file, a later
        drop-in) would override; C(warn) writes it and warns.
    type: str
    choices: [fail, warn]
    default: fail
  on_override:
    description:
      - What to do when a line in another limits file that pam_limits applies to some users
        instead of the profile's wildcard or group line (a C(trainer hard nofile 8192), a
        C(@gpu) line) keeps those users below the profile. Both show every such line with its
        C(file:line) and the value the users get, on every run, changed or not, and return them
        in RV(overrides). C(warn) writes the profile; C(fail) refuses before anything is
        written, so an unchanged node whose users are below the profile fails instead of
        passing as ok.
    type: str
    choices: [warn, fail]
    default: warn
  force:
    description:
      - Write hard values above what this host lets PAM or systemd set (PID 1's hard limit
        without CAP_SYS_RESOURCE) with a warning instead of refusing them.
    type: bool
    default: false
  backup:
    description:
      - Keep a timestamped copy of each file that changes; RV(files) names it (the limits
        role restores from it when verification fails).
    type: bool
    default: false
  restart:
    description:
      - After the writes (not in check mode), when a file changed or RV(actions) owes a
        restart, do the restarts RV(actions) owes except the C(deferred) ones, in
        M(gpufleet.tuning.limits_restart)'s order and with its checks (O(settle),
        O(docker_wait)), then probe as O(verify) says. RV(restarted) says what was done.
      - A restart that fails (the re-exec, a user manager, dockerd never answering, or a unit
        that fails its restart or dies within O(settle), named in RV(restarted) C(failed_unit))
        stops there, and nothing after it is restarted or probed. The files this call wrote are put
        back, what it had restarted and the step that failed are done again with them, and the
        task fails saying both outcomes (RV(restarted) C(put_back)).
    type: bool
    default: false
  verify:
    description:
      - With O(restart), after the restarts, probe every context written that can be probed
        (RV(probes); one whose image option is unset here is left out) with
        M(gpufleet.tuning.effective_limits), expecting O(profile), with the O(units) and the
        RV(baseline). The result is RV(restarted) C(verified).
      - The options of M(gpufleet.tuning.effective_limits) other than C(contexts), C(units),
        C(expect) and C(baseline), which this module sets. They are checked before the first
        write, or before the first restart where no file changes; a call that changes
        nothing and owes no restart does not check them (it probes nothing).
      - Ignored without O(restart); nothing is probed in check mode.
    type: dict
  baseline_user:
    description:
      - When the login-session file is about to change (not in check mode), read the limits
        a login session of this user gets before the write and return them as RV(baseline),
        the O(gpufleet.tuning.effective_limits#module:baseline) that detects the silent
        pam_limits fallback after the change. Nothing is probed when that file is unchanged.
    type: str
  sysctl:
    description: >-
      The kernel ceilings (O(job_sysctl): a job's) the limits role then writes with
      M(gpufleet.tuning.sysctl_ceilings), checked here (O(on_conflict)): a refusal fails before
      any write. Where the hard C(nofile) is above the live C(fs.nr_open) and this C(fs.nr_open)
      covers it, the call writes it live, then the kernel drop-in (RV(files) context
      C(kernel)), before any other file, and checks the guards against that value.
    type: dict
    default: {}
  job_sysctl: {description: "A training job's kernel needs, checked as O(sysctl).", type: dict, default: {}}
  # BEGIN GENERATED options by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  contexts:
    description:
      - The contexts to write. An empty list means every context present on the node
        (C(/etc/security), a running systemd, C(user@.service), C(docker.service),
        C(containerd.service), a C(podman) binary, C(slurmd.service) with C(/etc/slurm/slurm.conf),
        C(/etc/crio/crio.conf) or C(crio.conf.d)). C(slurm) writes the profile into
        C(slurmd.service)'s drop-in and stops slurm.conf from propagating the profile's items from
        the submit shell (O(slurm_conf_edit)); see docs/slurm.md. C(containerd_cri) (present when
        O(containerd_config) leaves the CRI plugin on and the node has C(kubelet.service) or a
        handler with a base spec) patches the profile into the base runtime spec of every CRI
        handler that has one, keeps C(containerd.service)'s drop-in, and restarts containerd under
        O(restart_policy) (C(when_idle) waits while pod sandboxes run, and running pods keep their
        old spec); see docs/containerd-kubernetes.md. C(crio) writes CRI-O's C(default_ulimits)
        (O(crio_dropin)), never run against a real CRI-O.
    type: list
    elements: str
    choices: [pam, systemd_system, systemd_user, docker, containerd, containerd_cri, podman, slurm, crio]
    default: []
  restart_policy:
    description:
      - How the restarts that units running workloads need are reported in RV(actions)
        (C(docker.service), C(containerd.service), C(crio.service), C(slurmd.service) and the user
        managers C(user@UID.service)). C(when_idle) defers a restart that would stop a running
        container (dockerd without live-restore), running user services (a user manager) or other
        processes in the unit's cgroup; C(never) defers all of them; C(always) defers none.
        C(deferred) in RV(actions) says what a caller (or O(restart)) should leave running and
        report as pending.
    type: str
    choices: [when_idle, always, never]
    default: when_idle
  pam_path:
    description:
      - The limits.d file for login sessions.
    type: path
    default: /etc/security/limits.d/90-gpufleet-tuning.conf
  dropin:
    description:
      - File name of the systemd drop-ins (the managers' C(system.conf.d) and C(user.conf.d), and
        the units').
    type: str
    default: 90-gpufleet-tuning.conf
  docker_daemon_json:
    description:
      - Docker's daemon configuration file; left out, the one dockerd reads (docker.service's
        C(--config-file), else C(/etc/docker/daemon.json)). A path a C(--config-file) flag
        contradicts is refused naming the flag's C(file:line).
    type: path
  docker_shm_size:
    description:
      - Docker's C(default-shm-size) for new containers (C(8G)); unset leaves it alone.
    type: str
  containerd_config:
    description:
      - containerd's configuration file (the C(containerd_cri) context). A file that does not parse,
        a handler's base spec that is missing or not an OCI spec is refused, naming the file (and
        C(file:line)), before anything is written.
    type: path
    default: /etc/containerd/config.toml
  containerd_create_spec:
    description:
      - With the C(containerd_cri) context, create C(/etc/containerd/gpufleet-base-spec.json) from
        the node's default spec (C(ctr oci spec)) with the profile, and reference it in
        O(containerd_config) for C(runc) and every configured handler that has no base spec.
        C(false) leaves such handlers on containerd's own limits (the unit drop-in), with a warning.
    type: bool
    default: false
  podman_dropin:
    description:
      - The containers.conf drop-in for Podman.
    type: path
    default: /etc/containers/containers.conf.d/90-gpufleet-tuning.conf
  podman_shm_size:
    description:
      - Podman's C(shm_size) in the C(podman) context's containers.conf drop-in, the C(/dev/shm) of
        new Podman containers (C(8G), base 1024; Podman's default is 64 MB); unset leaves it alone.
        An unparsable size fails naming this option before anything is written.
    type: str
  slurm_conf:
    description:
      - Slurm's configuration file (the C(slurm) context); default, the file slurmd reads (C(-f),
        C(SLURM_CONF), its configless cache under C(/run/slurm/conf), C(/etc/slurm-llnl), then
        C(/etc/slurm/slurm.conf)). It is read with its C(Include) files as Slurm reads it; an
        unreadable line, a missing include or both C(PropagateResourceLimits) and
        C(PropagateResourceLimitsExcept) set is refused, naming C(file:line), before anything is
        written; a configless cache is read, never edited (edit slurm.conf on slurmctld's host).
    type: path
  slurm_conf_edit:
    description:
      - With the C(slurm) context, edit O(slurm_conf) so that the profile's items are not propagated
        from the submitting shell (the line that decides is edited in place, in the file that holds
        it; with none, C(PropagateResourceLimitsExcept) is added), and restart C(slurmd.service)
        under O(restart_policy). C(false) leaves slurm.conf alone and warns which items jobs take
        from the submit shell instead.
    type: bool
    default: true
  crio_dropin:
    description:
      - The crio.conf.d drop-in for CRI-O's C(default_ulimits) (the C(crio) context), as
        M(gpufleet.tuning.crio_ulimits) writes it. C(/etc/crio/crio.conf) and every file under
        C(/etc/crio/crio.conf.d) are read in CRI-O's order first. A file CRI-O would not start with,
        or a later file that sets C(default_ulimits), is refused (unless O(force)), naming
        C(file:line), before anything is written. A change restarts C(crio.service) under
        O(restart_policy).
    type: path
    default: /etc/crio/crio.conf.d/90-gpufleet-tuning.conf
  # END GENERATED options
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  # BEGIN GENERATED fragments by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  - gpufleet.tuning.options.RESTART_CHECKS
  # END GENERATED fragments
notes:
  - Check mode plans every context and reports C(changed), C(diff) and RV(actions) without
    writing; diff mode shows one diff per changed file.
  - The single-format modules stay available for one context at a time, with their extra
    options (C(exclusive), C(state=absent), C(purge)).
seealso:
  - module: gpufleet.tuning.pam_limits
  - module: gpufleet.tuning.systemd_limits
  - module: gpufleet.tuning.docker_ulimits
  - module: gpufleet.tuning.podman_ulimits
  - module: gpufleet.tuning.effective_limits
'''

EXAMPLES = r'''
- name: One profile for login sessions, services, user services and containers
  gpufleet.tuning.limits_profile:
    profile:
      nofile: 65536
      nproc: 32768
      memlock: unlimited
    backup: true
  register: limits
  notify: restart what the limits need

- name: Only PAM and the system manager, with a soft/hard pair and Slurm's unit
  gpufleet.tuning.limits_profile:
    profile:
      nofile: {soft: 65536, hard: 131072}
    contexts: [pam, systemd_system]
    units: [slurmd.service]

- name: Write, restart what the change owes (not busy units), and prove it in one call
  gpufleet.tuning.limits_profile:
    profile:
      nofile: 65536
    backup: true
    baseline_user: trainer
    restart: true
    verify:
      user: trainer
      docker_image: busybox:latest
  register: applied
  failed_when: >-
    applied.failed | default(false)
    or (applied.restarted.verified.gaps | default([]) | length > 0)

- name: Take the collection's limits back off the node (playbooks/undo_limits.yml)
  gpufleet.tuning.limits_profile:
    state: absent
    backup: true
    restart: true
'''

RETURN = r'''
contexts:
  description: The contexts the profile was planned for (given or found on the node).
  returned: success
  type: list
  elements: str
  sample: [pam, systemd_system, systemd_user, docker]
units:
  description: The units that got C(Limit*=) drop-ins.
  returned: success
  type: list
  elements: str
  sample: [containerd.service]
per_context:
  description: Per context (C(unit:NAME) for units), the single-format module's result (C(path), C(changed), C(conflicts), ...).
  returned: success
  type: dict
  sample: {pam: {path: /etc/security/limits.d/90-gpufleet-tuning.conf, changed: true}}
files:
  description:
    - Each file of the profile, with C(changed), C(created) (it did not exist) and
      C(backup_file) when one was written; what a rollback restores or removes.
  returned: success
  type: list
  elements: dict
  sample:
    - {context: docker, path: /etc/docker/daemon.json, changed: true, created: false,
       backup_file: "/etc/docker/daemon.json.4242.2026-12-02@10:00:00~"}
actions:
  description:
    - What running processes need before new processes get the profile.
    - C(reexec) re-execute the system manager; C(user_managers) restart these
      C(user@UID.service) units; C(daemon_reload) and C(units) reload unit files and restart
      these units; C(docker) restart dockerd (C(docker_pending) when the file was already
      right but the running dockerd started before it was written; a C(docker.service) in
      O(units) is restarted through C(docker) too, never through C(units)).
    - C(deferred) lists the restarts among those that O(restart_policy) does not allow now,
      each with C(unit) and C(reason); C(policy) is O(restart_policy).
    - C(owed_now) is true when a restart the policy allows now is owed (the deferred left out).
  returned: success
  type: dict
  sample: {reexec: true, user_managers: [user@1001.service], daemon_reload: false, units: [],
           docker: true, docker_pending: false, policy: when_idle,
           deferred: [{unit: docker.service, reason: "1 running container(s) would be stopped"}]}
overrides:
  description:
    - The limits lines that give some users other values than the profile (O(on_override)),
      each with C(path), C(line), C(kind) (C(narrower) a user, uid or group line that wins over
      the profile's wildcard or group line; C(replaced) a line earlier in pam_limits order that
      the profile's line now replaces) and C(reason), the text shown as a warning.
  returned: when the pam context is managed
  type: list
  elements: dict
  sample: [{path: /etc/security/limits.d/80-site.conf, line: 1, kind: narrower,
            reason: "/etc/security/limits.d/80-site.conf:1 (user) overrides * for the users it
              matches: trainer gets hard nofile 8192 instead of 65536"}]
running_containers:
  description: Docker's running containers and live-restore (C(count) null when unknown).
  returned: when the docker context is managed or dockerd owes a restart
  type: dict
  sample: {count: 0, live_restore: false}
baseline:
  description:
    - The limits of a login session of O(baseline_user) before the write, in
      M(gpufleet.tuning.effective_limits)'s C(contexts) form.
  returned: when O(baseline_user) is set and the login-session file changed
  type: dict
  sample: {login: {command: "runuser -l trainer -c 'cat /proc/self/limits'",
                   limits: {nofile: {soft: 1024, hard: 20000, human: "1024:20000"}}}}
probes:
  description:
    - For each context in RV(contexts) that effective_limits can probe, the name it is
      probed as (C(pam) -> C(login), C(systemd_system) -> C(service), C(systemd_user) ->
      C(user_manager), C(docker), C(containerd_cri) -> C(k8s_pod), C(podman), C(slurm) ->
      C(slurm_job)) and the effective_limits option its probe needs (C(image), or null).
      Units are probed as C(unit:NAME) (RV(units)). The limits role verifies from it;
      docs/contexts.md has the table.
    - Then C(ssh), where what it writes decides SSH sessions (C(gap), C(cause), docs/contexts.md).
  returned: success
  type: list
  elements: dict
  sample: [{context: pam, probe: login, image: null}, {context: pam, probe: ssh, image: null},
           {context: docker, probe: docker, image: docker_image}]
restarted:
  description:
    - With O(restart), what was restarted (C(done), in order), the unit that failed its
      restart (C(failed_unit), with C(unit), C(error) and C(journal); empty when none),
      dockerd's version after its restart (C(docker_version)) and, with O(verify), the
      probes' result (C(verified), M(gpufleet.tuning.effective_limits)' return). C(steps)
      lists the restarts planned (in check mode those that would be done).
    - After a failed restart, C(put_back) has C(restored) (the files put back, in write
      order) and C(outcome) (what was restarted again with them, or why that failed).
  returned: when O(restart) is true
  type: dict
  sample: {steps: [systemctl daemon-reexec, restart docker.service,
                   wait for dockerd to answer],
           done: [systemctl daemon-reexec, restart docker.service, wait for dockerd to answer],
           failed_unit: {}, docker_version: 20.10.24+dfsg1,
           verified: {gaps: [], regressions: [], errors: []}}
known_gaps:
  description:
    - What the node's files already keep below the profile, with file:line (a PAM line that
      gives users less, with O(on_override=warn); a later file that overrides a systemd
      drop-in or a C(user@.service) cap, with O(on_conflict=warn)). With O(restart) and
      O(verify) an unchanged node that has any is probed, so that the gap shows.
  returned: always
  type: list
  elements: str
  sample: ["/etc/security/limits.d/10-site.conf:1 (trainer soft nofile 2048) is more specific: trainer gets soft nofile 2048 instead of 16384"]
probe_units:
  description:
    - The units of RV(units) that can be probed. A template such as C(train@.service) cannot
      be; its running instances are listed in RV(actions) C(deferred), pending their restart.
  returned: success
  type: list
  elements: str
limits_kept:
  description:
    - Each side of an item not simply written as the profile asks, per context. C(action) is
      C(kept) (the context had more and keeps it), C(raised) (a hard value above what the
      context had) or C(lowered) (the profile names the side; the context had more). C(asked),
      C(before) and C(after) are in kernel units; C(source) is the line or setting that gives
      this side C(before); C(message) says it in words. Only C(lowered) is also a warning.
  returned: always
  type: list
  elements: dict
  sample: [{context: systemd_system, item: nofile, side: hard, asked: 65536, before: 524288,
            after: 524288, action: kept, source: "the running system manager's default",
            message: "hard nofile 524288 kept: the node already has 524288 (...), above ..."}]
undone:
  description: With O(state=absent), per file, C(action) (C(removed), C(edited), C(restored),
    C(not_undone)), C(detail) and C(backup) (the backup restored from). The result's C(backups)
    has the backups it then removed and kept, C(removed) and C(kept) (docs/undo.md).
  returned: when O(state=absent)
  type: list
  elements: dict
context:
  description: The context whose guard or write failed.
  returned: failure
  type: str
  sample: docker
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_run as run
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)

# The options declared elsewhere (the contexts' own from the registry, those limits_restart
# shares), composed here and documented by scripts/gen_option_docs.py.
OPTIONS = (registry.CONFIGURED_OPTION, opts.RESTART_POLICY) + registry.OPTIONS \
    + (opts.RESTART_CHECKS,)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            profile=dict(type='dict'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            domains=dict(type='list', elements='str', default=['*', 'root']),
            units=dict(type='list', elements='str', default=[]),
            on_conflict=dict(type='str', choices=['fail', 'warn'], default='fail'),
            on_override=dict(type='str', choices=['warn', 'fail'], default='warn'),
            force=dict(type='bool', default=False),
            backup=dict(type='bool', default=False),
            baseline_user=dict(type='str'),
            restart=dict(type='bool', default=False),
            verify=dict(type='dict'),
            sysctl=dict(type='dict', default={}),
            job_sysctl=dict(type='dict', default={}),
            **opts.spec(OPTIONS)
        ),
        required_if=[('state', 'present', ['profile'])],
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False, contexts=[], units=[], per_context={}, files=[], actions={}, probes=[])
    if params['state'] == 'absent':
        from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_undo
        profile_undo.absent(module, params, result)  # imported here: other runs compile less
    run.check_baseline_user(module, params, result)
    try:
        contexts, planned = pp.plan_profile(params, module)
    except changes.Failure as exc:
        module.fail_json(msg=exc.msg, **dict(result, **exc.result))
    result['contexts'] = contexts
    result['units'] = [c[len(registry.UNIT_PREFIX):] for c, _change in planned
                       if c.startswith(registry.UNIT_PREFIX)]
    result['probes'] = registry.probe_map(contexts, result['units'], module)
    # not a template (train@.service: its instances are pending) nor a slice (no main process)
    result['probe_units'] = [u for u in result['units'] if not sdpaths.is_template(u)
                             and not u.endswith('.slice')]
    pam = run.check_overrides(module, params, result, planned)
    changed = [change for _context, change in planned if change.changed]
    result['changed'] = bool(changed)
    # checked before the first write; an unchanged node checks it only where a restart is owed
    # (restart()), so that a rerun does not load the probes' code
    verify = run.verify_request(module, params, result) if changed else None
    if changed and module._diff:
        result['diff'] = [change.diff() for change in changed]
    if (params['baseline_user'] and pam is not None and pam.changed
            and not module.check_mode):
        result['baseline'] = run.login_baseline(module, params['baseline_user'])

    written = run.write(module, params, result, planned, changed)
    result['files'] = [pp.file_record(context, change) for context, change in planned]
    result['limits_kept'] = [dict(record, context=context) for context, change in planned
                             for record in change.result.get('limits_kept') or []]
    result['known_gaps'] = run.known_gaps(result, planned)
    run.report_actions(module, params, result, planned)
    if params['restart']:
        run.restart(module, params, result, verify, written)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
