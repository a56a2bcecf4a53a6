#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: limits_restart
short_description: Do the restarts a limits change owes, with their checks, in one call
version_added: 0.1.0
description:
  - Does, in this order, the restarts that RV(gpufleet.tuning.limits_profile#module:actions)
    asks for, so that new processes get the profile. M(gpufleet.tuning.limits_profile)'s
    own O(gpufleet.tuning.limits_profile#module:restart) does the same steps in the same
    call as the writes, through the same engine; the limits role restarts only there, and
    calls this module only to roll a run back (O(rollback)).
  - O(reexec) runs C(systemctl daemon-reexec); O(daemon_reload) C(systemctl daemon-reload).
  - Each unit of O(units), then dockerd when O(docker) is set, is restarted and must be active
    O(settle) seconds later (a C(Type=simple) unit such as C(slurmd.service) can report a good
    restart and then die on its new limits). The first one that fails stops the run and is
    returned in RV(failed_unit) with systemctl's error and the unit's last journal lines;
    nothing after it is restarted.
  - With O(written) (the files the change wrote, as M(gpufleet.tuning.limits_profile)'s
    RV(gpufleet.tuning.limits_profile#module:files) lists them), any failed step puts those
    files back from their backups (or removes the ones the change created), does again with
    them what this call had done and the step that failed (each unit checked as before), and
    fails saying both outcomes (RV(put_back)). Without O(written) a failed unit does not fail
    the module, the caller repairs it.
  - The units of O(user_managers) (C(user@UID.service)) are restarted by one C(systemctl
    restart) (systemd runs the jobs at the same time); a failure fails the module.
  - A user manager starts in a PAM session, so on a node where every session that runs pam_limits
    already fails (a C(limits.d/*.conf) entry it cannot open, such as a dangling link before
    Linux-PAM 1.5.3), O(user_managers) is refused before any step, naming the file, instead of
    leaving the managers down.
  - The steps run through the collection's restart engine, as the restarts of
    M(gpufleet.tuning.limits_profile), M(gpufleet.tuning.containerd_base_spec) and
    M(gpufleet.tuning.crio_ulimits) do.
  - With O(docker), waits up to O(docker_wait) seconds for dockerd to answer C(docker info)
    after its restart; no answer fails the module.
  - A failed re-exec or reload fails the module before any restart.
  - With O(verify), once every restart succeeded, probes the contexts as
    M(gpufleet.tuning.effective_limits) does with those options and returns its result in
    RV(verified). With nothing to restart (a change of PAM files only) it only probes. Nothing is probed after a failed restart or in check mode.
  - With O(rollback), rolls back one M(gpufleet.tuning.limits_profile) call from its
    registered result instead (the limits role's rollback after a failed verification). It
    puts back the files that call changed and does again, with them, exactly the restarts that
    call did; never one its restart policy deferred.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  reexec:
    description: Re-execute the system manager first (new services get the new defaults).
    type: bool
    default: false
  daemon_reload:
    description: Reload unit files (after their drop-ins changed).
    type: bool
    default: false
  units:
    description: Units to restart, each checked to be active O(settle) seconds later.
    type: list
    elements: str
    default: []
  user_managers:
    description: User managers (C(user@UID.service)) to restart.
    type: list
    elements: str
    default: []
  docker:
    description: Restart C(docker.service) last (checked like O(units)) and wait for dockerd
      to answer.
    type: bool
    default: false
  written:
    description:
      - The files the change wrote, each with C(path) and C(backup_file) (a changed file) or
        C(created=true) (a file the change created); other keys are ignored. The limits role
        passes limits_profile's changed RV(gpufleet.tuning.limits_profile#module:files).
      - Given, a failed restart puts them back and fails the module after doing again, with
        them, what was done (see the description).
    type: list
    elements: dict
  verify:
    description:
      - The options of M(gpufleet.tuning.effective_limits) (C(contexts), C(user),
        C(docker_image), C(expect), C(baseline) ...), checked before anything is restarted; an
        unknown or ill-typed one fails the module naming C(verify).
      - The probes run after the last restart and its checks, in the same call.
    type: dict
  rollback:
    description:
      - The registered result of one M(gpufleet.tuning.limits_profile) call with
        O(gpufleet.tuning.limits_profile#module:restart) to roll back (the limits role passes
        it after a verification that fails as C(limits_rollback) says). Its
        RV(gpufleet.tuning.limits_profile#module:files),
        RV(gpufleet.tuning.limits_profile#module:actions) and
        RV(gpufleet.tuning.limits_profile#module:restarted) are read; other keys are ignored.
      - Every file that call changed is put back from its backup (or removed when the call
        created it), the last written first; then the restarts that call did (C(done) of its
        RV(gpufleet.tuning.limits_profile#module:restarted), the steps
        RV(gpufleet.tuning.limits_profile#module:actions) owes less its C(deferred) ones) are
        done again in the same order and with the same checks (O(settle), O(docker_wait)), so
        that what it restarted runs on the restored files. A restart the restart policy
        deferred was not done and is not done now, so the workload it protects keeps running. A
        result without C(restarted) has only its files put back.
      - A C(done) that is not the start of the steps C(actions) owes (not one call's result)
        fails the module before anything is put back. A file that cannot be put back, or a
        unit that fails its restart with the restored files, fails the module after the rest
        was done, naming them (RV(put_back)).
      - Give it alone, not with O(reexec), O(daemon_reload), O(units), O(user_managers),
        O(docker), O(written) or O(verify).
    type: dict
  # BEGIN GENERATED options by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  # END GENERATED options
extends_documentation_fragment:
  - gpufleet.tuning.attributes
  # BEGIN GENERATED fragments by make docs-gen from module_utils/core/options.py and contexts/: do not edit
  - gpufleet.tuning.options.RESTART_CHECKS
  # END GENERATED fragments
notes:
  - Not idempotent by design, like M(ansible.builtin.systemd_service) with C(state=restarted);
    every call restarts what it is given. Call it only when a restart is owed (the limits role
    calls it from its handler only after a change or an owed restart).
  - Check mode restarts nothing and reports C(changed) when there is anything to do; diff mode
    lists the steps (with O(rollback), the files put back first).
seealso:
  - module: gpufleet.tuning.limits_profile
  - module: gpufleet.tuning.effective_limits
'''

EXAMPLES = r'''
- name: Apply the profile
  gpufleet.tuning.limits_profile:
    profile: {nofile: 65536, nproc: 32768, memlock: unlimited}
  register: limits

- name: Restart what the change owes (dockerd only when the restart policy allows it now)
  gpufleet.tuning.limits_restart:
    reexec: "{{ limits.actions.reexec }}"
    daemon_reload: "{{ limits.actions.daemon_reload }}"
    units: "{{ limits.actions.units | reject('in', limits.actions.deferred | map(attribute='unit')) }}"
    user_managers: "{{ limits.actions.user_managers | reject('in', limits.actions.deferred | map(attribute='unit')) }}"
    docker: "{{ limits.actions.docker and 'docker.service' not in limits.actions.deferred | map(attribute='unit') }}"
  register: restarts


- name: The same, putting this run's files back when a restart fails (and failing, saying both)
  gpufleet.tuning.limits_restart:
    daemon_reload: "{{ limits.actions.daemon_reload }}"
    units: "{{ limits.actions.units | reject('in', limits.actions.deferred | map(attribute='unit')) }}"
    written: "{{ limits.files | selectattr('changed') }}"

- name: Apply the profile, restart what it owes and probe every context it wrote
  gpufleet.tuning.limits_profile:
    profile: {nofile: 65536, nproc: 32768}
    backup: true
    restart: true
    verify: {user: trainer}
  register: applied

- name: Roll that call back when a context misses the profile (its files, then its restarts)
  gpufleet.tuning.limits_restart:
    rollback: "{{ applied }}"
  when: applied.restarted.verified.gaps | default([]) | length > 0
'''

RETURN = r'''
done:
  description: The steps done, in order.
  returned: always
  type: list
  elements: str
  sample: [systemctl daemon-reexec, restart user@0.service user@1001.service,
           restart docker.service, wait for dockerd to answer]
failed_unit:
  description:
    - The unit whose restart failed (nothing after it was done), or C({}).
    - C(unit), C(error) (C(systemctl restart failed (exit N) ...) or C(not active after N s
      ActiveState ..., Result ...)) and C(journal) (its last 3 journal lines).
  returned: always
  type: dict
  sample: {unit: slurmd.service, error: "not active after 2 s: ActiveState failed, Result signal",
           journal: ["slurmd.service: Main process exited, code=killed, status=25/XFSZ"]}
put_back:
  description:
    - With O(written), after a failed step, C(restored) (the files put back, in write order,
      each one that could not be with why) and C(outcome) (what was done again with them, a
      dict like this module's return, or why that failed).
    - With O(rollback), the same for the rollback, the files put back and the restarts done
      again with them (also in RV(done)).
  returned: when a step failed and O(written) was given, and with O(rollback) outside check mode
  type: dict
  sample: {restored: [/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf],
           outcome: {done: [systemctl daemon-reload, restart slurmd.service], failed_unit: {},
                     docker_version: null}}
docker_version:
  description: dockerd's version as it answered after its restart (null without O(docker)).
  returned: always
  type: str
  sample: 20.10.24+dfsg1
verified:
  description:
    - What M(gpufleet.tuning.effective_limits) returns for the options of O(verify) (its
      C(contexts), C(gaps), C(regressions), C(errors), C(table), C(ceilings)), probed after
      the restarts.
  returned: when O(verify) is given, every restart succeeded and not in check mode
  type: dict
  sample: {contexts: {login: {limits: {nofile: {soft: 65536, hard: 65536}}}}, gaps: [],
           regressions: [], errors: [], table: ''}
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import restarts

# The options limits_profile shares (its restart's checks), composed here and documented by
# scripts/gen_option_docs.py.
OPTIONS = (opts.RESTART_CHECKS,)


def session_errors(module):
    """The limits files that make every PAM session that runs pam_limits fail here (a user
    manager's among them): pam_limits_conf.session_failures, as the node's Linux-PAM reads."""
    if not os.path.isdir(os.path.dirname(conf.LIMITS_CONF)):
        return []
    return conf.session_failures(conf.LIMITS_CONF, conf.LIMITS_DIR, versions.pam_version(module))


STEP_OPTIONS = ('reexec', 'daemon_reload', 'units', 'user_managers', 'docker', 'written',
                'verify')


def rollback(module, result):
    """O(rollback): one limits_profile call put back by the restart engine; exits."""
    applied = module.params['rollback']
    given = [name for name in STEP_OPTIONS if module.params[name]]
    if given:
        module.fail_json(msg='rollback: give it alone, not with %s (nothing put back or '
                         'restarted)' % ', '.join(given), **result)
    for key, kind in (('files', list), ('actions', dict), ('restarted', dict)):
        if not isinstance(applied.get(key) or kind(), kind):
            module.fail_json(msg='rollback.%s: a %s as limits_profile returns it, not %r (nothing '
                             'put back or restarted)' % (key, kind.__name__, applied[key]),
                             **result)
    written = restarts.written_records(applied.get('files'), changed_only=True)
    try:
        again = restarts.done_steps(applied.get('actions'), applied.get('restarted'))
    except restarts.RestartError as exc:
        module.fail_json(msg='rollback: %s' % exc.msg, **result)
    result['changed'] = bool(written or again)
    if module._diff:
        result['diff'] = dict(before='', after=''.join(
            ['put back %s\n' % change.path for _context, change in reversed(written)]
            + ['%s\n' % restarts.describe(step) for step in again]))
    if module.check_mode:
        module.exit_json(**result)
    engine = restarts.Engine(restarts.Restarter(module, settle=module.params['settle'],
                                                docker_wait=module.params['docker_wait']))
    try:
        engine.rollback(written, again, result)
    except restarts.RestartFailure as exc:
        module.fail_json(msg=exc.msg, **result)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            reexec=dict(type='bool', default=False),
            daemon_reload=dict(type='bool', default=False),
            units=dict(type='list', elements='str', default=[]),
            user_managers=dict(type='list', elements='str', default=[]),
            docker=dict(type='bool', default=False),
            written=dict(type='list', elements='dict'),
            verify=dict(type='dict'),
            rollback=dict(type='dict'),
            **opts.spec(OPTIONS)
        ),
        supports_check_mode=True,
    )
    result = dict(changed=False, done=[], failed_unit={}, docker_version=None)
    if module.params['rollback'] is not None:
        rollback(module, result)
    planned = restarts.steps(module.params)
    result['changed'] = bool(planned)
    verify = None
    if module.params['verify'] is not None:
        try:
            verify = effective.validated(module.params['verify'], 'verify')
        except effective.ProbeFailure as exc:
            module.fail_json(msg=exc.msg, **result)
    if module.params['user_managers']:
        broken = session_errors(module)
        if broken:
            module.fail_json(msg='user_managers: %s (nothing restarted)'
                             % '; '.join(str(exc) for exc in broken), **result)
    if module._diff:
        steps_text = ''.join('%s\n' % restarts.describe(step) for step in planned)
        result['diff'] = dict(before='', after=steps_text)
    if module.check_mode:
        module.exit_json(**result)
    written = None
    if module.params['written'] is not None:
        written = restarts.written_records(module.params['written'])
    engine = restarts.Engine(restarts.Restarter(module, settle=module.params['settle'],
                                                docker_wait=module.params['docker_wait']))
    try:
        engine.run(planned, result, written, verify,
                   effective.probe if verify is not None else None)
    except (restarts.RestartError, restarts.RestartFailure) as exc:
        module.fail_json(msg=exc.msg, **result)
    except effective.ProbeFailure as exc:
        module.fail_json(msg='verify: %s' % exc.msg, verified=exc.result, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
