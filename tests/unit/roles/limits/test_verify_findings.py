# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the limits role's run ends (module_utils/reports/outcome.py through the limits_outcome
filter; vars/main.yml only passes data): a probe pending on a busy Slurm node or on a deferred
restart is not a failure, the failure's headline names the contexts that failed, each gap row
carries its cause, and the report says what was verified. The role decides none of it in
Jinja: checked on vars/main.yml and the tasks."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import yaml

from ansible_collections.gpufleet.tuning.plugins.filter.limits_failures import limits_outcome

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
BUSY = dict(context='slurm_job', kind='busy', msg='pending: node gpu2 runs jobs, so srun -w gpu2 '
            '--immediate=5 could not start the probe job (srun: "Requested nodes are busy"; '
            'waited 5.0 s); ... Configured: nofile 16384:16384 from /etc/x.conf:3')
GAP = dict(context='user_manager', item='nofile', sides=['soft'],
           expected=dict(soft=16384, hard=16384), actual=dict(soft=1024, hard=16384))
PROFILE = dict(actions=dict(deferred=[]), units=['slurmd.service'], contexts=['pam', 'slurm'],
               files=[dict(path='/etc/security/limits.d/90-gpufleet-tuning.conf', changed=True,
                           context='pam'),
                      dict(path='/etc/slurm/slurm.conf', changed=False, context='slurm')])


def run(deferred=(), errors=(), gaps=(), regressions=(), contexts=('login',), **kwargs):
    profile = dict(PROFILE, actions=dict(deferred=list(deferred)))
    after = dict(errors=list(errors), gaps=list(gaps), regressions=list(regressions),
                 contexts=dict((c, {}) for c in contexts))
    return limits_outcome(profile, after, user='trainer', **kwargs)


def test_a_busy_slurm_node_is_pending_not_failed():
    found = run(errors=[BUSY])
    assert found['errors'] == [] and found['failed_contexts'] == [] and found['busy'] == [BUSY]
    assert not found['verify_failed'] and found['failure'] == ''
    assert 'Pending, the probe could not start now: pending: node gpu2' in found['report']
    # with a real failure beside it, the failure message says the busy probe is not one
    found = run(errors=[BUSY], gaps=[GAP])
    assert found['verify_failed']
    assert 'Pending, the probe could not start now (not failures): pending: node gpu2' in \
        found['failure']


def test_the_headline_names_the_context_that_failed():
    # slurmd's restart deferred: the slurm_job probe's error is pending; user_manager failed
    deferred = [dict(unit='slurmd.service', context='slurm_job', reason='jobs run')]
    timeout = dict(context='slurm_job', kind='host', msg='srun failed (rc 124)')
    found = run(deferred=deferred, errors=[timeout], gaps=[GAP])
    assert found['pending'] == ['slurm_job', 'unit:slurmd.service']
    assert found['errors'] == [] and found['pending_errors'] == [timeout]
    assert found['failed_contexts'] == ['user_manager']
    assert found['failure'].startswith('The profile is not in effect in user_manager for trainer')
    assert 'Pending a restart by policy, not failures: slurm_job' in found['failure']
    assert re.search(r'user_manager +nofile +16384:16384 +1024:16384 +soft', found['failure']), \
        found['failure']
    assert found['failure'].endswith('Nothing was rolled back (limits_rollback=never).')


def test_a_probe_error_elsewhere_is_still_a_failure():
    broken = dict(context='docker', kind='host', msg='docker run failed (rc 125)')
    found = run(errors=[broken, BUSY])
    assert found['errors'] == [broken] and found['failed_contexts'] == ['docker']
    assert 'Probe docker failed: docker run failed (rc 125).' in found['failure']


def test_rollback_follows_the_policy():
    regression = dict(context='login', item='nofile', before=dict(soft=4096, hard=8192),
                      after=dict(soft=1024, hard=4096), expected=dict(soft=16384, hard=16384),
                      sides=['soft', 'hard'])
    assert not run(gaps=[GAP], rollback='regression')['rollback_now']
    found = run(regressions=[regression], rollback='regression')
    assert found['rollback_now'] and found['verify_failed']
    assert found['failure'].startswith('Login sessions of trainer get less than before')
    assert 'login nofile: before 4096:8192, now 1024:4096, expected 16384:16384;' in \
        found['failure']
    assert found['failure'].endswith('restored from their backups or removed: '
                                     '/etc/security/limits.d/90-gpufleet-tuning.conf')
    assert run(gaps=[GAP], rollback='failure')['rollback_now']
    assert not run(rollback='failure')['rollback_now']


def test_the_report_of_a_good_run_and_of_a_run_without_verification():
    found = run(contexts=('login', 'service', 'slurm_job'))
    assert found['report'] == (
        'Contexts: pam, slurm; units: slurmd.service; changed: '
        '/etc/security/limits.d/90-gpufleet-tuning.conf; restarts deferred by '
        'limits_docker_restart=when_idle: none. Verified in new processes: login, service, '
        'slurm_job.')
    unverified = limits_outcome(PROFILE, None, check_mode=True)
    assert 'Kept above the profile' not in unverified['report']
    assert unverified['report'].startswith('Contexts: pam, slurm; units: slurmd.service; '
                                           'would change: ')
    assert 'Verified' not in unverified['report'] and not unverified['verify_failed']


def test_a_deferred_restart_is_reported_pending_with_its_gaps():
    deferred = [dict(unit='docker.service', context='docker', reason='1 container runs')]
    gap = dict(GAP, context='docker')
    found = limits_outcome(dict(PROFILE, actions=dict(deferred=deferred),
                                running_containers=dict(count=1, live_restore=False)),
                           dict(gaps=[gap], errors=[], regressions=[], contexts={'docker': {}}))
    assert not found['verify_failed'] and found['pending_gaps'] == [gap]
    assert ('Pending: docker (limits_docker_restart=when_idle, running containers: 1, '
            'live-restore: False). Deferred: docker.service: 1 container runs; new processes '
            'there get the old limits until the restart: nofile.') in found['report']


def test_the_role_decides_nothing_in_jinja():
    """vars/main.yml and the tasks pass data to limits_outcome and act on its answer: no
    filtering of gaps or errors by context or kind is left in them."""
    texts = []
    for folder in ('vars', 'tasks', 'handlers'):
        directory = os.path.join(ROOT, 'roles', 'limits', folder)
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name)) as handle:
                texts.append((name, handle.read()))
    for name, text in texts:
        for pattern in (r"(gaps|errors)[^\n]*(select|reject)attr\('(context|kind)'",
                        r'regressions \| length'):
            assert not re.search(pattern, text), (name, pattern)
    with open(os.path.join(ROOT, 'roles', 'limits', 'vars', 'main.yml')) as handle:
        variables = yaml.safe_load(handle)
    for name in ('__limits_verify_failed', '__limits_rollback_now'):
        assert variables[name] == '{{ __limits_outcome.%s }}' % name[len('__limits_'):]


UNCHANGED = dict(PROFILE, changed=False, actions=dict(deferred=[], owed_now=False),
                 files=[dict(f, changed=False) for f in PROFILE['files']])


def test_a_failed_verification_of_an_unchanged_node_fails_it_and_changes_nothing():
    """Issue 39 item 6: a rerun whose probe (the profile call's, after a known gap) fails was
    reported changed, its report saying 'changed: nothing'. The outcome says unchanged and
    failed, one answer for the task's status and the report."""
    after = dict(errors=[], gaps=[GAP], regressions=[], contexts={'user_manager': {}})
    found = limits_outcome(UNCHANGED, after, user='trainer')
    assert found['changed'] is False and found['failed_unchanged'] is True
    assert found['verify_failed'] and 'changed: nothing;' in found['report']
    # a changed node's failure goes through the handlers: not 'failed_unchanged'
    found = limits_outcome(dict(PROFILE, changed=True), after, user='trainer')
    assert found['changed'] is True and found['failed_unchanged'] is False
    # a good unchanged node, and one the profile call did not probe
    assert not limits_outcome(UNCHANGED, dict(after, gaps=[]))['failed_unchanged']
    assert not limits_outcome(UNCHANGED, None)['failed_unchanged']
    # a gap pending a restart the policy deferred is no failure
    deferred = [dict(unit='user@1001.service', context='user_manager', reason='busy')]
    pending = dict(UNCHANGED, actions=dict(deferred=deferred, owed_now=False))
    assert not limits_outcome(pending, after)['failed_unchanged']


def test_a_run_changed_by_a_restart_alone_says_which():
    """The task is changed by a restart an earlier run owed: the report names it instead of
    'changed: nothing'."""
    owed = dict(UNCHANGED, actions=dict(deferred=[], owed_now=True, docker=True))
    found = limits_outcome(owed, None)
    assert found['changed'] is True
    assert 'changed: no file; restart docker.service;' in found['report'], found['report']
    # the profile call restarted itself: its own steps
    done = dict(owed, changed=True, restarted=dict(steps=['systemctl daemon-reexec']))
    assert 'changed: no file; systemctl daemon-reexec;' in limits_outcome(done, None)['report']


def test_the_profile_task_is_changed_as_the_outcome_says():
    """The profile task's changed_when is the outcome's `changed` (no second judgement in
    Jinja), and an unchanged node that failed its probe reaches verify.yml's report and
    failure, not the handlers."""
    with open(os.path.join(ROOT, 'roles', 'limits', 'tasks', 'main.yml')) as handle:
        tasks = yaml.safe_load(handle)
    profile = [t for t in tasks if 'gpufleet.tuning.limits_profile' in t][0]
    assert profile['changed_when'] == '__limits_call_outcome.changed'
    with open(os.path.join(ROOT, 'roles', 'limits', 'vars', 'main.yml')) as handle:
        variables = yaml.safe_load(handle)
    assert variables['__limits_failed_unchanged'] == \
        '{{ __limits_call_outcome.failed_unchanged }}'
    with open(os.path.join(ROOT, 'roles', 'limits', 'tasks', 'asked.yml')) as handle:
        verify = [t for t in yaml.safe_load(handle)
                  if t.get('ansible.builtin.include_tasks') == 'verify.yml'][0]
    assert '__limits_failed_unchanged' in verify['when']


def test_the_sides_kept_above_the_profile_are_one_count_in_the_report():
    """issue 39.3: 13 kept sides were 2,400 characters of warning a host on every run; the
    report counts them (the list is limits_kept), and a lowered or raised side is not kept."""
    kept = [dict(context='pam', item='nofile', side=side, action='kept') for side in
            ('soft', 'hard')] + [dict(context='pam', item='nproc', side='hard', action='lowered'),
                                 dict(context='pam', item='memlock', side='hard', action='raised')]
    report = limits_outcome(dict(PROFILE, limits_kept=kept), None)['report']
    assert ('. Kept above the profile (the node already has more; name the side in the profile '
            'to lower it): 2 sides, listed in limits_kept.') in report, report
    one = limits_outcome(dict(PROFILE, limits_kept=kept[1:]), None)['report']
    assert ': 1 side, listed in limits_kept.' in one, one
