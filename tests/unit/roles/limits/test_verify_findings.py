# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the limits role sorts the verification's findings (vars/main.yml, tasks/failed.yml),
rendered with Ansible's templar: a probe pending on a busy Slurm node or on a deferred restart
is not a failure, and the failure's headline names the contexts that failed."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible.release import __version__ as ANSIBLE_VERSION

if tuple(int(p) for p in ANSIBLE_VERSION.split('.')[:2]) < (2, 19):
    # the Python 3.8 run has an older ansible-core, without trust_as_template; importing its
    # templar here would also install its collection loader for the tests that follow
    pytest.skip('the role is templated by ansible-core 2.19 and later', allow_module_level=True)

from ansible.parsing.dataloader import DataLoader  # noqa: E402 pylint: disable=wrong-import-position
from ansible.template import Templar, trust_as_template  # noqa: E402 pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
BUSY = dict(context='slurm_job', kind='busy', msg='pending: node gpu2 runs jobs, so srun -w gpu2 '
            '--immediate=5 could not start the probe job (srun: "Requested nodes are busy"; '
            'waited 5.0 s); ... Configured: nofile 16384:16384 from /etc/x.conf:3')
GAP = dict(context='user_manager', item='nofile', sides=['soft'],
           expected=dict(soft=16384, hard=16384), actual=dict(soft=1024, hard=16384))


def _load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def render(names, deferred=(), errors=(), gaps=()):
    variables = dict(_load('roles', 'limits', 'vars', 'main.yml'))
    failed = [t for t in _load('roles', 'limits', 'tasks', 'failed.yml') if 'vars' in t][0]
    variables.update(failed['vars'])
    variables = dict((k, trust_as_template(v) if isinstance(v, str) else v)
                     for k, v in variables.items())
    variables.update(
        __limits=dict(actions=dict(deferred=list(deferred)), units=['slurmd.service']),
        __limits_probe=dict(errors=list(errors), gaps=list(gaps), regressions=[], table=''),
        __limits_verified=True, limits_verify_user='trainer')
    templar = Templar(loader=DataLoader(), variables=variables)
    return dict((name, templar.template(trust_as_template('{{ %s }}' % name))) for name in names)


def test_a_busy_slurm_node_is_pending_not_failed():
    found = render(['__limits_errors', '__limits_busy', '__contexts', '__pending_note'],
                   errors=[BUSY])
    assert found['__limits_errors'] == [] and found['__contexts'] == []
    assert found['__limits_busy'] == [BUSY]
    assert 'Pending, the probe could not start now (not failures): pending: node gpu2' in \
        found['__pending_note']


def test_the_headline_names_the_context_that_failed():
    # slurmd's restart deferred: the slurm_job probe's error is pending; user_manager failed
    deferred = [dict(unit='slurmd.service', context='slurm_job', reason='jobs run')]
    timeout = dict(context='slurm_job', kind='host', msg='srun failed (rc 124)')
    found = render(['__limits_errors', '__limits_pending_errors', '__contexts'],
                   deferred=deferred, errors=[timeout], gaps=[GAP])
    assert found['__limits_errors'] == []
    assert found['__limits_pending_errors'] == [timeout]
    assert found['__contexts'] == ['user_manager']


def test_a_probe_error_elsewhere_is_still_a_failure():
    broken = dict(context='docker', kind='host', msg='docker run failed (rc 125)')
    found = render(['__limits_errors', '__contexts'], errors=[broken, BUSY])
    assert found['__limits_errors'] == [broken] and found['__contexts'] == ['docker']
