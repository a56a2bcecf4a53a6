# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm jobs: a job step's tasks start under slurmd (through slurmstepd) and keep slurmd's
limits, except the ones slurm.conf propagates from the submitting shell
(``PropagateResourceLimits``, default ALL): those take the submit shell's *soft* value,
capped at slurmd's hard one (SchedMD/slurm ``src/slurmd/slurmstepd/ulimits.c``). So the
profile goes into ``slurmd.service``'s ``Limit*=`` (the units context) and slurm.conf stops
propagating the profile's items (``PropagateResourceLimitsExcept``, edited in place or
added; plugins/module_utils/slurm_conf.py). Configured as ``slurm``, probed as
``slurm_job``: ``srun`` from a login session whose soft limits are the distribution's
defaults. docs/slurm.md."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils import runtime_paths as rtpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_paths as sdpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context

UNIT = 'slurmd.service'
# The soft limits of a login shell on a node nobody tuned (kernel defaults: INR_OPEN_CUR,
# MLOCK_LIMIT since Linux 5.16, _STK_LIM): what a propagated item gives a job.
SUBMIT_DEFAULTS = {'nofile': 1024, 'memlock': 8 * 1024 * 1024, 'stack': 8 * 1024 * 1024}
# The probe's submit shell: those defaults (ulimit counts KiB for -l and -s), then srun.
SUBMIT_SHELL = ('ulimit -S -n 1024 2>/dev/null; ulimit -S -l 8192 2>/dev/null; '
                'ulimit -S -s 8192 2>/dev/null; exec srun --quiet --ntasks=1 '
                '--job-name=gpufleet-probe ' + probes.CAT)


def leak_text(names, entry):
    """Why jobs get less: the items slurm.conf propagates from the submit shell."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils import slurm_conf as sc

    where = ('%s (%s=%s)' % (entry.where, entry.name, entry.value) if entry is not None
             else '%s sets neither PropagateResourceLimits nor ...Except (default ALL)'
             % rtpaths.SLURM_CONF)
    defaults = ', '.join('%s %s' % (item, model.format_human(item, SUBMIT_DEFAULTS[item]))
                         for item in names if item in SUBMIT_DEFAULTS)
    return ('%s: jobs take %s from the submitting shell, not from slurmd: a job submitted '
            'from a shell with the default soft limits (%s) gets those, whatever slurmd has; '
            'PropagateResourceLimitsExcept=%s fixes it' % (
                where, ', '.join(names), defaults or 'its soft values',
                ','.join(sc.RLIMIT_OF[i] for i in names)))


class Slurm(Context):
    name = 'slurm'
    probe = 'slurm_job'
    units = (UNIT,)
    files = (rtpaths.SLURM_CONF, '/etc/systemd/system/slurmd.service.d/*.conf')
    path_option = 'slurm_conf'
    target = rtpaths.SLURM_CONF
    restart_rank = 2
    fallback = 'slurmd.service (the unit file or the manager default)'

    def detect(self, root=''):
        return sdpaths.unit_exists(UNIT, root) and os.path.isfile(root + rtpaths.SLURM_CONF)

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils import changes
        from ansible_collections.gpufleet.tuning.plugins.module_utils import slurm_conf as sc

        def plan():
            path = request.paths[self.path_option]
            result = dict(path=path, propagated=[], edit='')
            try:
                config = sc.parse(path)
                flags, entry = sc.propagated(config)
                leaking = [item for item in request.limits
                           if item in sc.RLIMIT_OF and flags[sc.RLIMIT_OF[item]]]
                target, text, what = sc.plan_text(config, list(request.limits), path)
            except sc.SlurmConfError as exc:
                raise changes.Failure('%s (nothing written)' % exc.msg, result, kind=exc.kind)
            except (IOError, OSError) as exc:
                raise changes.Failure('%s: cannot read: %s' % (path, exc.strerror or exc),
                                      result, kind=errors.HOST)
            result['propagated'] = leaking
            if target is None:
                return changes.Change(path, result, config.files[path], config.files[path])
            if not request.slurm_conf_edit:
                change = changes.Change(path, result, config.files[path], config.files[path])
                change.warnings.append(leak_text(leaking, entry) + ' (slurm_conf_edit is off: '
                                       'slurm.conf left as it is)')
                return change
            result['edit'] = what
            mode = os.stat(target).st_mode & 0o7777
            return changes.Change(target, result, config.files[target], text, mode=mode)
        return [(self.name, plan)]

    def act(self, change, actions, state, host):
        # slurmstepd reads PropagateResourceLimits* from slurmd's configuration
        if change.changed and UNIT not in actions['units']:
            actions['units'].append(UNIT)

    def restart_context(self, unit):
        return self.probe if unit == UNIT else None

    def probe_command(self, user, uid, params):
        return ['runuser', '-l', user, '-c', SUBMIT_SHELL]

    def run_probe(self, prober, user, uid, command):
        self.require_active(prober, UNIT, 'job')
        return prober.proc(command, self.probe)

    def report(self, auditor):
        if self.name not in auditor.present:
            return None, []
        from ansible_collections.gpufleet.tuning.plugins.module_utils import info
        from ansible_collections.gpufleet.tuning.plugins.module_utils import slurm_conf as sc
        report = dict(slurm_conf=sc.SLURM_CONF, propagated={}, decided_by=None, slurmd={},
                      slurmd_configured={}, error=None)
        try:
            flags, entry = sc.propagated(sc.parse(sc.SLURM_CONF))
        except sc.SlurmConfError as exc:
            report['error'] = exc.msg
            return report, ['slurm.conf: %s' % exc.msg]
        except (IOError, OSError) as exc:
            report['error'] = '%s: %s' % (sc.SLURM_CONF, exc)
            return report, [report['error']]
        report['propagated'] = dict((item, flags[name]) for name, item in sc.RLIMITS)
        if entry is not None:
            report['decided_by'] = dict(where=entry.where,
                                        setting='%s=%s' % (entry.name, entry.value))
        unit, _pending, _error = info.unit_report(auditor.run, UNIT, False)
        report['slurmd_configured'] = unit['configured']
        process = self.main_process_limits(auditor, UNIT)
        if process is not None:
            report['slurmd'] = process
        warnings = []
        leaking = [item for item in sorted(auditor.params['profile'])
                   if report['propagated'].get(item)]
        if leaking:
            warnings.append(leak_text(leaking, entry))
        return report, warnings

    def configured(self, report):
        """What a job submitted from a shell with default soft limits gets, item by item,
        with where it comes from (the slurmd drop-in line, the slurm.conf line)."""
        if not report or report.get('error'):
            return {}
        from ansible_collections.gpufleet.tuning.plugins.module_utils import slurm_conf as sc
        decided = report['decided_by']
        conf = ('%s %s' % (decided['where'], decided['setting']) if decided
                else '%s (no PropagateResourceLimits line: ALL)' % report['slurm_conf'])
        found = {}
        for item, propagate in report['propagated'].items():
            live = report['slurmd'].get(item)
            setting = report['slurmd_configured'].get(item) or {}
            origin = ('%s:%s' % (setting['source'], setting['line'])
                      if setting.get('source') else 'slurmd.service')
            if live is None:
                continue
            slurmd = model.Limit(live['soft'], live['hard'])
            if propagate:
                got = sc.job_limit(True, slurmd, SUBMIT_DEFAULTS.get(item, live['soft']))
                source = ('the submit shell\'s soft %s (propagated: %s), hard from %s' % (
                    item, conf, origin))
            else:
                got = slurmd
                source = '%s (not propagated: %s)' % (origin, conf)
            found[item] = dict(soft=got.soft, hard=got.hard, source=source)
        return found


CONTEXT = Slurm()
