#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
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
    C(service) a transient system service running as the user (C(systemd-run --wait --pipe
    -p User=USER)), which gets the system manager's defaults; C(user_manager) a transient
    service of the user's user manager (C(user@UID.service) must be running, for example with
    C(loginctl enable-linger USER)); C(docker) and C(podman) a new container of an image
    (C(run --rm --network=none IMAGE cat /proc/self/limits)).
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
  contexts:
    description: The contexts to probe.
    type: list
    elements: str
    choices: [login, service, user_manager, docker, podman]
    default: [login, service]
  user:
    description: The user the login, service and user manager probes run as.
    type: str
    default: root
  docker_image:
    description: The image of the C(docker) probe; required when O(contexts) has C(docker).
      It must be present or pullable.
    type: str
  podman_image:
    description: The image of the C(podman) probe; required when O(contexts) has C(podman).
    type: str
  run_options:
    description: Extra options for C(docker run) and C(podman run), as separate elements.
    type: list
    elements: str
    default: []
  units:
    description: Running units whose main process's limits to read (a name without a type
      gets C(.service)); each becomes the context C(unit:NAME).
    type: list
    elements: str
    default: []
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
  timeout:
    description: Seconds each probe may run.
    type: int
    default: 60
extends_documentation_fragment:
  - gpufleet.tuning.attributes.INFO
notes:
  - The probes start processes (a login session, a transient service, a container removed
    afterwards) but change no configuration, also in check mode.
  - The login probe goes through C(runuser)'s PAM stack; sshd or su use their own stacks in
    C(/etc/pam.d), which normally include pam_limits the same way.
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
  description: Probes that could not run, each with C(context) and C(msg).
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

import os
import pwd
import shlex

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.tuning.plugins.module_utils import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model

ENV = {'LANG': 'C', 'LC_ALL': 'C'}
CEILINGS = ('fs.nr_open', 'fs.file-max', 'kernel.pid_max', 'kernel.threads-max')


class ProbeError(Exception):
    pass


class Prober(object):
    def __init__(self, module):
        self.module = module
        self.timeout = module.params['timeout']
        self.timeout_bin = module.get_bin_path('timeout')

    def run(self, command):
        """stdout of ``command``; ProbeError with its output when it fails."""
        full = list(command)
        if self.timeout_bin:
            full = [self.timeout_bin, str(self.timeout)] + full
        binary = self.module.get_bin_path(command[0])
        if not binary:
            raise ProbeError('%s is not installed' % command[0])
        rc, out, err = self.module.run_command(full, environ_update=ENV)
        if rc != 0:
            raise ProbeError('%s failed (rc %d): %s' % (' '.join(shlex.quote(c) for c in command),
                                                        rc, (err or out).strip()[:500]))
        return out

    def proc(self, command, where):
        out = self.run(command)
        try:
            return effective.parse_probe(out, where)
        except model.LimitError as exc:
            raise ProbeError(str(exc))

    def pid_limits(self, pid, where):
        try:
            with open('/proc/%s/limits' % pid) as handle:
                return effective.parse_probe(handle.read(), where)
        except (IOError, OSError) as exc:
            raise ProbeError('%s: cannot read /proc/%s/limits: %s' % (where, pid, to_native(exc)))

    def user_manager(self, user, uid):
        manager = 'user@%d.service' % uid
        try:
            self.run(['systemctl', 'is-active', '--quiet', manager])
        except ProbeError:
            raise ProbeError('%s is not running, so no user service of %s can start; keep it '
                             'running with `loginctl enable-linger %s`' % (manager, user, user))
        unit = '%s-%d.service' % (effective.PROBE_UNIT, os.getpid())
        start, show, stop = effective.user_probe_commands(user, uid, unit)
        self.run(start)
        try:
            pid = self.run(show).strip()
            if not pid.isdigit() or pid == '0':
                raise ProbeError('the probe service %s of %s has no main process' % (unit, user))
            return self.pid_limits(pid, 'user_manager')
        finally:
            self.module.run_command(stop, environ_update=ENV)

    def unit(self, unit):
        pid = self.run(['systemctl', 'show', '-p', 'MainPID', '--value', unit]).strip()
        if not pid.isdigit() or pid == '0':
            raise ProbeError('%s is not running' % unit)
        return self.pid_limits(pid, effective.unit_context(unit))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            contexts=dict(type='list', elements='str', default=['login', 'service'],
                          choices=effective.CONTEXTS),
            user=dict(type='str', default='root'),
            docker_image=dict(type='str'),
            podman_image=dict(type='str'),
            run_options=dict(type='list', elements='str', default=[]),
            units=dict(type='list', elements='str', default=[]),
            expect=dict(type='dict'),
            baseline=dict(type='dict'),
            timeout=dict(type='int', default=60),
        ),
        required_if=[
            ('contexts', 'docker', ('docker_image',)),
            ('contexts', 'podman', ('podman_image',)),
        ],
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False, contexts={}, errors=[], gaps=[], regressions=[], table='',
                  ceilings=dict((name, host_limits.sysctl(name)) for name in CEILINGS))
    for context, image in (('docker', 'docker_image'), ('podman', 'podman_image')):
        if context in params['contexts'] and not params[image]:
            module.fail_json(msg='contexts has %s, so %s is required' % (context, image), **result)

    expected = None
    if params['expect'] is not None:
        try:
            expected = model.parse_profile(params['expect'], 'expect')
        except model.LimitError as exc:
            module.fail_json(msg=str(exc), **result)
        result['expected'] = effective.public_limits(expected)

    user = params['user']
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        module.fail_json(msg='user: %s does not exist on this host' % user, **result)

    prober = Prober(module)
    observed = {}
    plan = []
    for context in effective.CONTEXTS:
        if context not in params['contexts']:
            continue
        if context == 'login':
            command = effective.login_command(user)
            plan.append((context, command, lambda c=command: prober.proc(c, 'login')))
        elif context == 'service':
            command = effective.service_command(user)
            plan.append((context, command, lambda c=command: prober.proc(c, 'service')))
        elif context == 'user_manager':
            command = effective.user_probe_commands(user, uid, effective.PROBE_UNIT)[0]
            plan.append((context, command, lambda: prober.user_manager(user, uid)))
        else:
            command = effective.container_command(context, params[context + '_image'],
                                                  params['run_options'])
            plan.append((context, command, lambda c=command, x=context: prober.proc(c, x)))
    for unit in params['units']:
        unit = effective.normalize_unit(unit)
        command = ['systemctl', 'show', '-p', 'MainPID', '--value', unit]
        plan.append((effective.unit_context(unit), command, lambda u=unit: prober.unit(u)))

    for context, command, probe in plan:
        entry = dict(command=' '.join(shlex.quote(c) for c in command), limits={})
        try:
            limits = probe()
        except ProbeError as exc:
            result['errors'].append(dict(context=context, msg=to_native(exc)))
        else:
            observed[context] = limits
            entry['limits'] = effective.public_limits(limits)
        result['contexts'][context] = entry

    if expected is not None:
        result['gaps'] = effective.gaps(expected, observed)
        result['table'] = effective.gap_table(result['gaps']) if result['gaps'] else ''
        for context, entry in sorted((params['baseline'] or {}).items()):
            if context in observed and isinstance(entry, dict):
                before = effective.from_public(entry.get('limits'))
                for found in effective.regressions(before, observed[context], expected):
                    found['context'] = context
                    result['regressions'].append(found)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
