# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm context: its slurm.conf plan (edit, or only a warning), the restart it owes and
what the audit says a job from a default submit shell gets, with its sources."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shlex

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
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


DROPIN = '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf'
# slurmd as the variants below run it: its drop-in's LimitNOFILE (line 3) and LimitNPROC
# (line 4), nproc with a soft value below its hard one
SLURMD = {'nofile': {'soft': 20000, 'hard': 20000}, 'nproc': {'soft': 4000, 'hard': 6000}}
SLURMD_CONFIGURED = {'nofile': {'source': DROPIN, 'line': 3, 'soft': 20000, 'hard': 20000},
                     'nproc': {'source': DROPIN, 'line': 4, 'soft': 4000, 'hard': 6000}}
# issue 39.5: the submit shell of `ulimit -Sn 1500; ulimit -Su 3000`, given by the caller
SUBMIT = {'nofile': 1500, 'nproc': 3000}


def variant_report(tmp_path, line, submit=None):
    """The slurm context's report for slurm.conf with ``line`` (None: no Propagate line), slurmd
    as SLURMD and the caller's submit side (slurm_submit_limits)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
    conf = tmp_path / 'slurm.conf'
    conf.write_text(SITE + (line + '\n' if line else ''))
    flags, entry = sc.propagated(sc.parse(str(conf)))
    # what submit_side makes of slurm_submit_limits (kernel units; the other items left out)
    return dict(slurm_conf=str(conf), error=None, submit=dict(SUBMIT, **(submit or {})),
                submit_is='slurm_submit_limits',
                propagated=dict((item, flags[name]) for name, item in sc.RLIMITS),
                decided_by=entry and dict(where=entry.where,
                                          setting='%s=%s' % (entry.name, entry.value)),
                slurmd=SLURMD, slurmd_configured=SLURMD_CONFIGURED)


# issue 39.5: one rule for every item. The values were checked against `srun -w NODE` from a
# shell at `ulimit -Sn 1500; ulimit -Su 3000` on slurm-wlm 22.05.8 (molecule/slurm
# tests/test_slurm_propagation.py runs the same five variants on a real slurmd).
@pytest.mark.parametrize('line,nofile,nproc', [
    ('PropagateResourceLimits=ALL', (1500, 20000), (3000, 6000)),
    (None, (1500, 20000), (3000, 6000)),
    ('PropagateResourceLimits=NONE', (20000, 20000), (4000, 6000)),
    ('PropagateResourceLimits=NOFILE', (1500, 20000), (4000, 6000)),
    ('PropagateResourceLimitsExcept=NPROC', (1500, 20000), (4000, 6000)),
    ('PropagateResourceLimitsExcept=NOFILE,NPROC', (20000, 20000), (4000, 6000)),
])
def test_a_job_is_predicted_by_one_rule_for_nofile_and_nproc(tmp_path, line, nofile, nproc):
    report = variant_report(tmp_path, line)
    found = slurm.CONTEXT.configured(report)
    assert (found['nofile']['soft'], found['nofile']['hard']) == nofile
    assert (found['nproc']['soft'], found['nproc']['hard']) == nproc
    predicted = slurm.CONTEXT.predict(report)
    assert predicted['nofile'] == model.Limit(*nofile)
    assert predicted['nproc'] == model.Limit(*nproc)
    conf = report['slurm_conf']
    decided = ('%s:3 %s' % (conf, line) if line
               else '%s (no PropagateResourceLimits line: ALL)' % conf)
    for item, number, (soft, _hard) in (('nofile', 3, nofile), ('nproc', 4, nproc)):
        entry = found[item]
        if report['propagated'][item]:
            # the soft side from slurm.conf's line, the hard side from slurmd's drop-in
            assert entry['soft_source'] == (
                "%s propagates the submit shell's soft %s %d (slurm_submit_limits)"
                % (decided, item, soft))
            assert entry['hard_source'] == '%s:%d' % (DROPIN, number)
            assert entry['source'] == 'soft: %s; hard: %s' % (
                entry['soft_source'], entry['hard_source'])
        else:
            assert entry['source'] == entry['soft_source'] == entry['hard_source'] == (
                '%s:%d (not propagated: %s)' % (DROPIN, number, decided))


def test_a_propagated_value_above_slurmds_hard_is_capped_at_it(tmp_path):
    # measured on slurm-wlm 22.05.8: slurmd at nproc 4000:6000, a shell at ulimit -Su 7000
    # runs jobs at 6000:6000
    report = variant_report(tmp_path, 'PropagateResourceLimits=ALL', {'nproc': 7000})
    found = slurm.CONTEXT.configured(report)
    assert (found['nproc']['soft'], found['nproc']['hard']) == (6000, 6000)
    assert (found['nofile']['soft'], found['nofile']['hard']) == (1500, 20000)
    assert found['nproc']['soft_source'] == (
        "%s:4 (slurmd's hard: the submit shell's soft nproc 7000 (slurm_submit_limits), "
        'propagated by %s:3 PropagateResourceLimits=ALL, is capped at it)'
        % (DROPIN, report['slurm_conf']))


def test_the_default_submit_side_is_the_kernels_for_every_item(tmp_path):
    threads = tmp_path / 'threads-max'
    threads.write_text('192735\n')
    side, what = slurm.submit_side(None, threads_max=str(threads))
    assert what == "the kernel's defaults"
    assert side == {'cpu': 'unlimited', 'fsize': 'unlimited', 'data': 'unlimited',
                    'stack': 8388608, 'core': 0, 'rss': 'unlimited', 'nproc': 96367,
                    'nofile': 1024, 'memlock': 8388608, 'as': 'unlimited'}
    given, what = slurm.submit_side({'nofile': 1500, 'memlock': '64MiB'},
                                    threads_max=str(threads))
    assert what == 'slurm_submit_limits'
    # the items the caller does not give keep the kernel's defaults
    assert given == dict(side, nofile=1500, memlock=64 * 1024 * 1024)


@pytest.mark.parametrize('given,said', [
    ({'pids': 10}, 'slurm_submit_limits.pids: Slurm propagates only cpu, fsize,'),
    ({'nice': 10}, 'slurm_submit_limits.nice: Slurm propagates only'),
    ({'nofile': 'lots'}, 'slurm_submit_limits.nofile'),
    (['nofile'], 'slurm_submit_limits: must be a mapping'),
])
def test_a_submit_side_that_cannot_be_read_is_refused_naming_the_field(given, said):
    with pytest.raises(model.LimitError) as info:
        slurm.CONTEXT.check_probe_params({'slurm_submit_limits': given})
    assert info.value.msg.startswith(said), info.value.msg


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
        "soft: /etc/slurm/slurm.conf:7 PropagateResourceLimitsExcept=NPROC propagates the submit "
        "shell's soft nofile 1024 (the kernel's defaults); hard: "
        "/etc/systemd/system/slurmd.service.d/x.conf:4")
    assert (found['nproc']['soft'], found['nproc']['hard']) == (8192, 8192)
    assert found['nproc']['source'] == (
        'slurmd.service (the unit file or the manager default) (not propagated: '
        '/etc/slurm/slurm.conf:7 PropagateResourceLimitsExcept=NPROC)')


def test_slurmds_soft_nofile_raised_to_its_hard_is_not_put_on_its_drop_in():
    # slurmd raises its soft nofile to its hard one at start: a drop-in's 1200:1400 runs
    # slurmd (and a job it does not propagate nofile to) at 1400:1400
    report = dict(slurm_conf='/etc/slurm/slurm.conf', error=None, propagated={'nofile': False},
                  decided_by=dict(where='/etc/slurm/slurm.conf:12',
                                  setting='PropagateResourceLimitsExcept=NOFILE'),
                  slurmd={'nofile': {'soft': 1400, 'hard': 1400}},
                  slurmd_configured={'nofile': {'source': DROPIN, 'line': 3, 'soft': 1200,
                                                'hard': 1400}})
    found = slurm.CONTEXT.configured(report)['nofile']
    assert (found['soft'], found['hard']) == (1400, 1400)
    assert found['soft_source'].startswith(
        '%s:3 (its hard: slurmd raises its soft nofile to it) (not propagated' % DROPIN)
    # a drop-in slurmd does not run with yet (its restart owed: 20000 written, 1024 running)
    # is no sign of that raise
    report['slurmd'] = {'nofile': {'soft': 1024, 'hard': 1024}}
    report['slurmd_configured']['nofile'].update(soft=20000, hard=20000)
    found = slurm.CONTEXT.configured(report)['nofile']
    assert found['source'] == ('%s:3 (not propagated: /etc/slurm/slurm.conf:12 '
                               'PropagateResourceLimitsExcept=NOFILE)' % DROPIN)


def test_the_probe_submits_from_a_login_with_default_soft_limits_to_this_node_only(
        monkeypatch):
    monkeypatch.setattr(slurm.sn, 'find_conf', lambda: 'found')
    monkeypatch.setattr(slurm.sn, 'this_node', lambda found: 'gpu2' if found == 'found' else None)
    monkeypatch.setattr(slurm, 'submit_defaults',
                        lambda threads_max=None: dict(slurm.KERNEL_SOFT, nproc=96367))
    command = slurm.CONTEXT.probe_command('trainer', 1001, {})
    assert command[:4] == ['runuser', '-l', 'trainer', '-c']
    assert command[4].startswith(
        'ulimit -S -v unlimited 2>/dev/null; ulimit -S -c 0 2>/dev/null; ulimit -S -t '
        'unlimited 2>/dev/null; ulimit -S -d unlimited 2>/dev/null; ulimit -S -f unlimited '
        '2>/dev/null; ulimit -S -l 8192 2>/dev/null; ulimit -S -n 1024 2>/dev/null; ulimit -S -u '
        '96367 2>/dev/null; ulimit -S -m unlimited 2>/dev/null; ulimit -S -s 8192 2>/dev/null; ')
    assert command[4].endswith('exec srun --quiet --ntasks=1 -w gpu2 --immediate=5 '
                               '--job-name=gpufleet-probe cat /proc/self/limits')
    assert shlex.split(command[4])[-9:-1] == [
        'srun', '--quiet', '--ntasks=1', '-w', 'gpu2', '--immediate=5',
        '--job-name=gpufleet-probe', 'cat']
    # the caller's submit side, every item alike
    given = slurm.CONTEXT.probe_command('trainer', 1001, {'slurm_submit_limits': SUBMIT})
    assert 'ulimit -S -n 1500 2>/dev/null; ' in given[4]
    assert 'ulimit -S -u 3000 2>/dev/null; ' in given[4]


class FakeProber(object):
    """A prober whose srun says ``srun_says`` (rc 1), or prints limits when it is None."""

    module = None
    items = ['nofile']

    def __init__(self, srun_says=None):
        self.srun_says = srun_says
        self.commands = []

    def run(self, command):
        self.commands.append(command)
        return ''

    def proc(self, command, where):
        self.commands.append(command)
        if self.srun_says is None:
            return {'nofile': model.Limit(16384, 16384)}
        raise effective.ProbeError('runuser ... failed (rc 1): %s' % self.srun_says)


def pinned(node='gpu2'):
    return ['runuser', '-l', 'trainer', '-c', slurm.submit_shell(node)]


REPORT = dict(slurm_conf='/etc/slurm/slurm.conf', error=None, propagated={'nofile': False},
              decided_by=dict(where='/etc/slurm/slurm.conf:12',
                              setting='PropagateResourceLimitsExcept=NOFILE'),
              slurmd={'nofile': {'soft': 16384, 'hard': 16384}},
              slurmd_configured={'nofile': {
                  'source': '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf',
                  'line': 3}})


@pytest.mark.parametrize('said,reason,what', [
    ('srun: error: Unable to allocate resources: Requested nodes are busy', 'busy', 'runs jobs'),
    ('srun: error: Unable to allocate resources: Required node not available (down, drained '
     'or reserved)', 'unavailable', 'is down, drained or reserved'),
])
def test_a_busy_node_is_pending_with_the_configured_value_and_its_source(monkeypatch, said,
                                                                         reason, what):
    monkeypatch.setattr(slurm.Slurm, 'report', lambda self, auditor: (REPORT, []))
    prober = FakeProber(said)
    with pytest.raises(effective.ProbeError) as info:
        slurm.CONTEXT.run_probe(prober, 'trainer', 1001, pinned())
    error = info.value
    assert error.kind == errors.BUSY == 'busy'
    assert error.msg.startswith('pending: node gpu2 %s, so srun -w gpu2 --immediate=5 could not '
                                'start the probe job (srun: "' % what)
    assert error.msg.endswith(
        'verified once a job can start there. Configured: nofile 16384:16384 from /etc/systemd/'
        'system/slurmd.service.d/90-gpufleet-tuning.conf:3 (not propagated: '
        '/etc/slurm/slurm.conf:12 PropagateResourceLimitsExcept=NOFILE)')
    assert error.detail['node'] == 'gpu2' and error.detail['reason'] == reason
    assert 0 <= error.detail['waited_s'] < 5
    assert error.detail['configured']['nofile']['soft'] == 16384
    assert prober.commands[0] == ['systemctl', 'is-active', '--quiet', 'slurmd.service']


def test_other_srun_failures_stay_failures():
    prober = FakeProber('srun: error: Unable to allocate resources: Invalid node name specified')
    with pytest.raises(effective.ProbeError) as info:
        slurm.CONTEXT.run_probe(prober, 'trainer', 1001, pinned())
    assert info.value.kind == errors.HOST


def test_an_idle_node_is_probed():
    assert slurm.CONTEXT.run_probe(FakeProber(), 'trainer', 1001, pinned())['nofile'].soft == 16384


def test_an_unresolved_node_is_not_probed_and_says_why(monkeypatch):
    def no_node(found):
        raise slurm.sn.NodeError('/etc/slurm/slurm.conf: no NodeName is this host: ...')
    monkeypatch.setattr(slurm.sn, 'find_conf', lambda: None)
    monkeypatch.setattr(slurm.sn, 'this_node', no_node)
    command = slurm.CONTEXT.probe_command('trainer', 1001, {})
    assert "-w '(unresolved)'" in command[4]
    prober = FakeProber()
    with pytest.raises(effective.ProbeError) as info:
        slurm.CONTEXT.run_probe(prober, 'trainer', 1001, command)
    assert info.value.msg == ('no job can be pinned to this node: /etc/slurm/slurm.conf: no '
                              'NodeName is this host: ...')
    assert len(prober.commands) == 1      # only systemctl is-active: srun never ran


def test_a_configless_cache_is_read_but_not_edited(tmp_path, monkeypatch):
    cache = tmp_path / 'run' / 'slurm' / 'conf'
    cache.mkdir(parents=True)
    conf = cache / 'slurm.conf'
    conf.write_text(SITE)
    monkeypatch.setattr(slurm.sn, 'CONFIGLESS_CACHES', (str(conf),))
    with pytest.raises(changes.Failure) as info:
        plan(conf)
    assert info.value.kind == errors.REFUSED
    assert info.value.msg.endswith(
        "; %s is slurmd's configless cache (slurmd --conf-server): slurmd rewrites it from "
        "slurmctld, so it is not edited here: change slurm.conf on the slurmctld host "
        "(SlurmctldHost) and run `scontrol reconfigure`, or set slurm_conf_edit: false" % conf)
    assert conf.read_text() == SITE
    change = plan(conf, edit=False)              # read, and only warned about
    assert not change.changed and 'jobs take nofile' in change.warnings[0]


def test_the_plan_reads_the_file_slurmd_reads_when_none_is_given(tmp_path, monkeypatch):
    conf = tmp_path / 'slurm.conf'
    conf.write_text(SITE)
    found = slurm.sn.Found(None)
    found.path = str(conf)
    monkeypatch.setattr(slurm.sn, 'find_conf', lambda: found)
    req = request(conf)
    req.paths = {}
    change = slurm.CONTEXT.plan(req)
    assert change.path == str(conf) and change.changed
    found.path = None
    found.looked = ['/run/slurm/conf/slurm.conf (slurmd\'s configless cache)']
    with pytest.raises(changes.Failure) as info:
        slurm.CONTEXT.plan(req)
    assert info.value.msg == ("no slurm.conf found (looked at: /run/slurm/conf/slurm.conf "
                              "(slurmd's configless cache)); set slurm_conf")


def test_the_audit_warns_when_slurmd_runs_without_a_config(monkeypatch):
    found = slurm.sn.Found(slurm.sn.Slurmd(812, ['slurmd', '--conf-server', 'ctl']))
    found.looked = ['/run/slurm/conf/slurm.conf (slurmd\'s configless cache)']
    monkeypatch.setattr(slurm.sn, 'find_conf', lambda: found)
    monkeypatch.setattr(slurm.sdpaths, 'unit_exists', lambda unit, root='': True)

    class Auditor(object):
        present = []

    report, warnings = slurm.CONTEXT.report(Auditor())
    assert report is None
    assert warnings == [found.warning()]
    assert warnings[0].startswith('slurmd runs (pid 812: slurmd --conf-server ctl) but no '
                                  'slurm.conf it reads was found')
