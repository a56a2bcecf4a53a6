# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm context: its slurm.conf plan (edit, or only a warning), the restart it owes and
what the audit says a job from a default submit shell gets, with its sources."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request

SITE = 'ClusterName=gpu\nSlurmctldHost=n1\n'


def request(path, edit=True, profile=None):
    profile = profile or {'nofile': 16384, 'nice': 0}
    return Request(profile, model.parse_profile(profile, 'profile'), ['slurm'],
                   paths={'slurm_conf': str(path)}, slurm_conf_edit=edit)


def plan(path, **kwargs):
    [(label, planner)] = slurm.CONTEXT.plans(request(path, **kwargs), None, None)
    assert label == 'slurm'
    return planner()


def test_the_plan_appends_the_setting_and_keeps_the_mode(tmp_path):
    conf = tmp_path / 'slurm.conf'
    conf.write_text(SITE)
    os.chmod(str(conf), 0o640)
    change = plan(conf)
    assert change.changed and change.mode == 0o640
    assert change.new.startswith(SITE) and change.new.endswith(
        'PropagateResourceLimitsExcept=NOFILE\n')
    assert change.result['propagated'] == ['nofile']
    assert conf.read_text() == SITE            # a plan writes nothing


def test_with_edit_off_nothing_changes_and_the_warning_names_the_gap(tmp_path):
    conf = tmp_path / 'slurm.conf'
    conf.write_text(SITE + 'PropagateResourceLimits=ALL\n')
    change = plan(conf, edit=False)
    assert not change.changed
    assert change.warnings == [
        '%s:3 (PropagateResourceLimits=ALL): jobs take nofile from the submitting shell, not '
        'from slurmd: a job submitted from a shell with the default soft limits (nofile 1024) '
        'gets those, whatever slurmd has; PropagateResourceLimitsExcept=NOFILE fixes it '
        '(slurm_conf_edit is off: slurm.conf left as it is)' % conf]


def test_nothing_to_do_when_slurm_conf_already_keeps_the_items(tmp_path):
    conf = tmp_path / 'slurm.conf'
    conf.write_text(SITE + 'PropagateResourceLimitsExcept=NOFILE,MEMLOCK\n')
    change = plan(conf)
    assert not change.changed and change.warnings == []


@pytest.mark.parametrize('text,where', [
    (SITE + 'oops\n', ':3: cannot read'),
    (SITE + 'Include nothere.conf\n', ':3: Include '),
])
def test_bad_slurm_conf_is_a_failure_naming_the_line(tmp_path, text, where):
    conf = tmp_path / 'slurm.conf'
    conf.write_text(text)
    with pytest.raises(changes.Failure) as info:
        plan(conf)
    assert info.value.msg.startswith(str(conf) + where)
    assert info.value.msg.endswith('(nothing written)')
    assert conf.read_text() == text


def test_a_changed_slurm_conf_owes_a_slurmd_restart():
    actions = dict(units=[])
    change = changes.Change('/etc/slurm/slurm.conf', {}, 'a', 'b')
    slurm.CONTEXT.act(change, actions, {}, None)
    slurm.CONTEXT.act(change, actions, {}, None)
    assert actions['units'] == ['slurmd.service']
    unchanged = dict(units=[])
    slurm.CONTEXT.act(changes.Change('/x', {}, 'a', 'a'), unchanged, {}, None)
    assert unchanged['units'] == []


def test_configured_is_what_a_job_from_a_default_shell_gets():
    report = dict(
        slurm_conf='/etc/slurm/slurm.conf', error=None,
        propagated={'nofile': True, 'nproc': False},
        decided_by=dict(where='/etc/slurm/slurm.conf:7',
                        setting='PropagateResourceLimitsExcept=NPROC'),
        slurmd={'nofile': {'soft': 16384, 'hard': 16384}, 'nproc': {'soft': 8192, 'hard': 8192}},
        slurmd_configured={'nofile': {'source': '/etc/systemd/system/slurmd.service.d/x.conf',
                                      'line': 4}})
    found = slurm.CONTEXT.configured(report)
    assert (found['nofile']['soft'], found['nofile']['hard']) == (1024, 16384)
    assert found['nofile']['source'] == (
        "the submit shell's soft nofile (propagated: /etc/slurm/slurm.conf:7 "
        "PropagateResourceLimitsExcept=NPROC), hard from /etc/systemd/system/slurmd.service.d/"
        "x.conf:4")
    assert (found['nproc']['soft'], found['nproc']['hard']) == (8192, 8192)
    assert found['nproc']['source'] == (
        'slurmd.service (not propagated: /etc/slurm/slurm.conf:7 '
        'PropagateResourceLimitsExcept=NPROC)')


def test_the_probe_submits_from_a_login_with_default_soft_limits():
    command = slurm.CONTEXT.probe_command('trainer', 1001, {})
    assert command[:4] == ['runuser', '-l', 'trainer', '-c']
    assert command[4].startswith('ulimit -S -n 1024 2>/dev/null; ')
    assert command[4].endswith('exec srun --quiet --ntasks=1 --job-name=gpufleet-probe '
                               'cat /proc/self/limits')
