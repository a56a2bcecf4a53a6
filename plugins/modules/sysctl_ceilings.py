#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sysctl_ceilings
short_description: Raise kernel ceilings (sysctl) through one sysctl.d drop-in, with guards
version_added: 0.2.0
description:
  - Writes kernel ceilings such as C(fs.file-max), C(fs.nr_open), C(vm.max_map_count),
    C(fs.inotify.max_user_instances), C(fs.inotify.max_user_watches), C(kernel.pid_max) and
    C(kernel.threads-max) into one C(sysctl.d) drop-in with one atomic write, and the live
    values into C(/proc/sys) (as C(sysctl -w) does) where it is writable - first, so that a
    value the kernel refuses fails naming the sysctl with nothing written (the live values
    written before it put back).
  - A plain value is a minimum. A minimum the node holds already, live and at boot (the line
    that decides it, or none - the kernel's default), writes no line (C(action=met)).
    Otherwise the value written is the highest of the minimum, the live value
    and the value the sysctl configuration sets now, so nothing is lowered unless asked with
    a mapping with C(value) and C(exact=true). RV(sysctl) reports each value kept above the minimum
    (C(action=kept), C(kept_from)) and each one lowered as asked (C(action=lowered)), with a
    warning.
  - Reads the configuration as systemd-sysctl does (C(/etc/sysctl.d), C(/run/sysctl.d),
    C(/usr/local/lib/sysctl.d), C(/usr/lib/sysctl.d), C(/lib/sysctl.d); a name in an earlier
    directory masks the same name in a later one; files in the order of their names, the later
    assignment winning; an explicit key wins over a glob), and C(/etc/sysctl.conf) last as
    procps C(sysctl --system) does unless a C(sysctl.d) link already reads it. A later line that
    sets a requested key to another value (or a C(-KEY) exclusion) is a conflict - C(fail)s by
    default with nothing written.
  - Refuses, with nothing written, names without a C(/proc/sys) entry on the node, patterns,
    values that are not one integer and values outside what the kernel accepts for the known
    ceilings; the message names the field.
  - Where C(/proc/sys) is read-only (containers) the file is written and the result says
    C(configured, not applied) (RV(not_applied), RV(configured_not_applied) and a warning);
    the value applies at the next boot of a host whose C(/proc/sys) is writable.
  - Lines the module does not own stay byte for byte; a requested key's line is replaced in
    place only when its value differs.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  sysctl:
    description:
      - The ceilings, sysctl name (C(fs.file-max) or C(fs/file-max)) to a minimum (an integer),
        or to C({value, exact}) where C(exact=true) writes the value as given, lower or not.
      - With O(state=absent) only the names count.
    type: dict
    required: true
  job_sysctl:
    description:
      - A training job's kernel needs (the C(gpufleet.tuning.job_sysctl) filter's output),
        minimums like O(sysctl). For a name in both the higher minimum wins;
        an C(exact) entry of O(sysctl) wins. Errors name C(job_sysctl.NAME).
    type: dict
    default: {}
  path:
    description:
      - The drop-in to manage, a C(*.conf) file in a directory systemd-sysctl reads (another
        path is refused). Lines for other keys and comments in it are kept.
    type: path
    default: /etc/sysctl.d/90-gpufleet-tuning.conf
  state:
    description:
      - C(present) writes the lines; C(absent) removes the requested keys' lines (and the file
        when nothing else is left). Removing a line does not change the live value; the
        kernel default returns at the next boot.
      - With C(absent), once the file is written, the backups of it that this undo can
        prove are the collection's go (all of them when the file is removed, else the one it
        made), listed in RV(backups).
    type: str
    choices: [present, absent]
    default: present
  apply:
    description: Write the live values into C(/proc/sys) where it is writable.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  - gpufleet.tuning.attributes.FILE_BACKUP
  - gpufleet.tuning.attributes.FILE_MODE
  - gpufleet.tuning.attributes.ON_CONFLICT
notes:
  - The drift watch and M(gpufleet.tuning.limits_audit) (option C(sysctl)) report the same
    ceilings; docs/limit-model.md lists what each one bounds.
  - The limits role calls it with its C(limits_sysctl) (and a job's kernel needs, C(limits_job))
    after the profile. Where the profile's hard C(nofile) is above the node's live
    C(fs.nr_open) and C(limits_sysctl) raises C(fs.nr_open) enough, M(gpufleet.tuning.limits_profile)
    writes this module's file first (C(fs.nr_open) applied live), and this call finds it written.
  - Debian's C(/etc/sysctl.d/99-sysctl.conf) (a link to C(/etc/sysctl.conf)) is read after
    C(90-gpufleet-tuning.conf), so a value in C(/etc/sysctl.conf) is reported as a conflict, never
    silently lost at the next boot. The name of the O(backup) copy does not end in C(.conf), so
    systemd-sysctl ignores it.
  - In check mode neither the file nor C(/proc/sys) is written; RV(apply) says what would be
    written.
seealso:
  - module: gpufleet.tuning.limits_audit
  - name: sysctl.d(5)
    description: The configuration files and their order.
    link: https://man7.org/linux/man-pages/man5/sysctl.d.5.html
'''

EXAMPLES = r'''
- name: Kernel ceilings for PyTorch data loading
  gpufleet.tuning.sysctl_ceilings:
    sysctl:
      fs.file-max: 2097152
      fs.nr_open: 1048576
      vm.max_map_count: 1048576
      fs.inotify.max_user_instances: 8192
      fs.inotify.max_user_watches: 524288
      kernel.pid_max: 4194304
      kernel.threads-max: 4194304

- name: Lower a ceiling on purpose
  gpufleet.tuning.sysctl_ceilings:
    sysctl:
      vm.max_map_count: {value: 262144, exact: true}

- name: Remove a line again
  gpufleet.tuning.sysctl_ceilings:
    state: absent
    sysctl:
      vm.max_map_count: null
'''

RETURN = r'''
path:
  description: The managed file.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-gpufleet-tuning.conf
sysctl:
  description:
    - One row per requested sysctl - C(name), C(asked), C(exact), C(live) (the value in
      C(/proc/sys) after the call), C(configured) (the line that decided it before, C(name),
      C(value), C(source) C(file:line), or null), C(value) (written), C(action) (C(met) - the
      node holds the minimum live and at boot, no line written and C(value) null; C(written),
      C(kept) with C(kept_from), or C(lowered)), C(source) and C(boot_value) (the line that
      decides it after the call and its value), C(applied) (the live value is the boot value)
      and C(not_applied) (why not).
  returned: success
  type: list
  elements: dict
  sample: [{name: vm.max_map_count, asked: 1048576, exact: false, live: 1048576,
            configured: null, value: 1048576, action: written, kept_from: null,
            source: /etc/sysctl.d/90-gpufleet-tuning.conf:3, boot_value: 1048576, applied: true}]
conflicts:
  description: Later lines that set a requested key to another value (C(name), C(source),
    C(value), C(ours), C(msg)).
  returned: always
  type: list
  elements: dict
invalid:
  description: Lines in any sysctl file that systemd-sysctl skips (C(path), C(line),
    C(problem)). Reported, not fatal.
  returned: success
  type: list
  elements: dict
apply:
  description: The live values this call writes (or would write in check mode) into C(/proc/sys).
  returned: success
  type: dict
  sample: {vm.max_map_count: 1048576}
applied:
  description: The live values written.
  returned: success
  type: dict
not_applied:
  description: Configured, not applied - each sysctl whose live value differs from the
    configured one and cannot be written here, with why (a read-only C(/proc/sys)).
  returned: success
  type: dict
  sample: {vm.max_map_count: /proc/sys is mounted read-only here (a container)}
configured_not_applied:
  description: The names of RV(not_applied), sorted.
  returned: success
  type: list
  elements: str
reboot_required:
  description:
    - Whether a value this call configured reaches the running kernel only at the next boot
      (or the next C(sysctl --system)), that is one of RV(configured_not_applied), or, with
      O(apply=false), a value that differs from the live one.
    - As linux-system-roles' kernel_settings' C(kernel_settings_reboot_required); the limits
      role returns it as C(limits_reboot_required).
  returned: success
  type: bool
backup_file:
  description: The backup's path, when one was made.
  returned: when O(backup=true) and the file changed
  type: str
backups:
  description:
    - With O(state=absent), the backups (C(NAME.PID.DATE~)) removed once the file was written
      (C(removed), all of the file's when it was removed, else the one this call made) and
      those kept (C(kept)), as M(gpufleet.tuning.limits_profile) with O(state=absent) does
      (docs/undo.md).
  returned: when O(state=absent), the file changed and not in check mode
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan as plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysctl=dict(type='dict', required=True),
            job_sysctl=dict(type='dict', default={}),
            path=dict(type='path', default=plan.PATH),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            apply=dict(type='bool', default=True),
            on_conflict=dict(type='str', choices=['fail', 'warn'], default='fail'),
            backup=dict(type='bool', default=False),
            mode=dict(type='raw', default='0644'),
        ),
        supports_check_mode=True,
    )
    change = changes.run_guarded(module, plan.plan_change, module.params)
    result = change.result
    result['reboot_required'] = plan.reboot_required(result, module.params['apply'])
    if not module.params['apply']:
        result['apply'] = {}
    written = change.new != change.current
    result['changed'] = written or bool(result['apply'])
    for message in change.warnings:
        changes.warn(module, message)
    if written and module._diff:
        result['diff'] = change.diff()
    if not module.check_mode:
        # the live values first: a value the kernel refuses fails before the file is written
        try:
            plan.apply_live(result)
            if written:
                change.apply(module.params['backup'])
        except changes.Failure as exc:
            module.fail_json(msg=exc.msg, **exc.result)
        if written and module.params['state'] == 'absent':
            # an undo takes its backups of what it took back (undo/undo_files.py)
            from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
            result['backups'] = undo_files.tidy_backups([('kernel', change)])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
