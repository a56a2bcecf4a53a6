# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's rows of a context whose probe is pending (a Slurm node running jobs): how
``pending``, with the configured value, its source and the seconds the probe waited; and
effective.probe's error carries the probe's detail."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors

BUSY = dict(context='slurm_job', kind='busy', node='gpu2', reason='busy', waited_s=5.1,
            msg='pending: node gpu2 runs jobs ...',
            configured={'nofile': {'soft': 16384, 'hard': 16384,
                                   'source': '/etc/systemd/system/slurmd.service.d/x.conf:3 '
                                             '(not propagated: /etc/slurm/slurm.conf:12 '
                                             'PropagateResourceLimitsExcept=NOFILE)'}})
EXPECTED = {'nofile': {'soft': 16384, 'hard': 16384, 'human': '16384:16384'}}


def test_a_pending_probe_is_a_pending_row_with_the_configured_value():
    [row] = audit.rows({'slurm_job': {'command': 'runuser ...', 'limits': {}}}, EXPECTED, [],
                       {}, ['nofile'], pending={'slurm_job': BUSY})
    assert row == dict(context='slurm_job', item='nofile', actual='(pending: busy)',
                       expected='16384:16384', configured='16384:16384', gap='', how='pending',
                       waited_s=5.1, source=BUSY['configured']['nofile']['source'], places={})


class Host(object):
    check_mode = False

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/bin/' + name


def test_effective_reports_a_busy_probe_with_its_detail(monkeypatch):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm

    def busy(self, prober, user, uid, command):
        assert prober.items == ['nofile']
        error = effective.ProbeError('pending: node gpu2 runs jobs', kind=errors.BUSY)
        error.detail = dict(node='gpu2', waited_s=5.0, configured={})
        raise error
    monkeypatch.setattr(slurm.Slurm, 'probe_command', lambda self, u, i, p: ['srun'])
    monkeypatch.setattr(slurm.Slurm, 'run_probe', busy)
    result = effective.probe(Host(), dict(
        contexts=['slurm_job'], user='root', docker_image=None, podman_image=None, units=[],
        expect={'nofile': 16384}, baseline=None, timeout=5))
    assert result['errors'] == [dict(context='slurm_job', kind='busy', node='gpu2', waited_s=5.0,
                                     configured={}, msg='pending: node gpu2 runs jobs')]
    assert result['gaps'] == []


def test_every_record_answers_the_audit_s_not_applied_question():
    # issue 40: a hook the audit calls on every record must have one signature on all of them
    # (a record's own method of the same name once crashed limits_audit on a real node)
    from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry

    class NoHost(object):
        def run_command(self, *_args, **_kwargs):
            return 1, '', 'no host here'
    reports = dict((r.probe, {}) for r in registry.REGISTRY if r.probe)
    found = audit.pending_actions(reports, NoHost())
    assert isinstance(found, dict)
