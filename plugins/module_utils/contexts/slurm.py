# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm jobs: a job step's tasks start under slurmd (through slurmstepd) and keep slurmd's
limits, except the ones slurm.conf propagates from the submitting shell
(``PropagateResourceLimits``, default ALL): those take the submit shell's *soft* value,
capped at slurmd's hard one (SchedMD/slurm ``src/slurmd/slurmstepd/ulimits.c``). So the
profile goes into ``slurmd.service``'s ``Limit*=`` (the units context) and slurm.conf stops
propagating the profile's items (``PropagateResourceLimitsExcept``, edited in place or
added; plugins/module_utils/slurm/slurm_conf.py). Configured as ``slurm``, probed as
``slurm_job``: ``srun`` from a login session whose soft limits are the distribution's
defaults. docs/slurm.md."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths as rtpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_node as sn
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option, RoleVar

UNIT = 'slurmd.service'
# The soft limits of a login shell on a node nobody tuned (kernel defaults: INR_OPEN_CUR,
# MLOCK_LIMIT since Linux 5.16, _STK_LIM): what a propagated item gives a job.
SUBMIT_DEFAULTS = {'nofile': 1024, 'memlock': 8 * 1024 * 1024, 'stack': 8 * 1024 * 1024}
# A node name that could not be found: the probe is not run (run_probe says why).
UNRESOLVED = '(unresolved)'


def submit_shell(node):
    """The probe's submit shell: those defaults (ulimit counts KiB for -l and -s), then srun
    pinned to this host's NodeName (``-w``) that never queues: ``--immediate`` gives up after
    a few seconds when the node runs jobs, with words :func:`slurm_node.refusal` knows."""
    return ('ulimit -S -n 1024 2>/dev/null; ulimit -S -l 8192 2>/dev/null; '
            'ulimit -S -s 8192 2>/dev/null; exec srun --quiet --ntasks=1 -w %s --immediate=%d '
            '--job-name=gpufleet-probe %s' % (shlex.quote(node), sn.IMMEDIATE, probes.CAT))


def leak_text(names, entry, path=rtpaths.SLURM_CONF):
    """Why jobs get less: the items slurm.conf propagates from the submit shell."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc

    where = ('%s (%s=%s)' % (entry.where, entry.name, entry.value) if entry is not None
             else '%s sets neither PropagateResourceLimits nor ...Except (default ALL)'
             % path)
    defaults = ', '.join('%s %s' % (item, model.format_human(item, SUBMIT_DEFAULTS[item]))
                         for item in names if item in SUBMIT_DEFAULTS)
    return ('%s: jobs take %s from the submitting shell, not from slurmd: a job submitted '
            'from a shell with the default soft limits (%s) gets those, whatever slurmd has; '
            'PropagateResourceLimitsExcept=%s fixes it' % (
                where, ', '.join(names), defaults or 'its soft values',
                ','.join(sc.RLIMIT_OF[i] for i in names)))


PATH = Option('slurm_conf', 'path', description=(
    "Slurm's configuration file (the C(slurm) context); default, the file slurmd reads (C(-f), "
    'C(SLURM_CONF), its configless cache under C(/run/slurm/conf), C(/etc/slurm-llnl), then '
    'C(/etc/slurm/slurm.conf)). It is read with its C(Include) files as Slurm reads it; an '
    'unreadable line, a missing include or both C(PropagateResourceLimits) and '
    'C(PropagateResourceLimitsExcept) set is refused, naming C(file:line), before anything '
    "is written; a configless cache is read, never edited (edit slurm.conf on slurmctld's "
    'host).',))
CONF_EDIT = Option(
    'slurm_conf_edit', 'bool', default=True, description=(
        "With the C(slurm) context, edit O(slurm_conf) so that the profile's items are not "
        'propagated from the submitting shell (the line that decides is edited in place, in '
        'the file that holds it; with none, C(PropagateResourceLimitsExcept) is added), and '
        'restart C(slurmd.service) under O(restart_policy). C(false) leaves slurm.conf alone '
        'and warns which items jobs take from the submit shell instead.',),
    role=RoleVar('limits_slurm_conf_edit', default=True, description=(
        'With the C(slurm) context, edit the slurm.conf slurmd reads so that jobs take the '
        "profile's items from slurmd, not from the submitting shell "
        '(C(PropagateResourceLimitsExcept)); C(false) leaves it alone and warns which '
        'items jobs take from the submit shell (docs/slurm.md). A configless cache '
        '(C(slurmd --conf-server)) is never edited; the edit is refused, naming the '
        "slurmctld host's slurm.conf as the place.",)))


class Slurm(Context):
    name = 'slurm'
    probe = 'slurm_job'
    units = (UNIT,)
    files = (rtpaths.SLURM_CONF, '/etc/systemd/system/slurmd.service.d/*.conf')
    path = PATH
    options = (CONF_EDIT,)
    target = rtpaths.SLURM_CONF
    restart_rank = 2
    fallback = 'slurmd.service (the unit file or the manager default)'

    def detect(self, root=''):
        return sdpaths.unit_exists(UNIT, root) and sn.find_conf(root).path is not None

    def plans(self, request, host, ceiling):
        return [(self.name, lambda: self.plan(request))]

    def undo_plans(self, request, host):
        """slurm.conf without the lines the collection added (byte for byte): slurmd
        restarts under the policy. A configless cache is never edited."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files

        def plan():
            path = request.paths.get(self.path_option) or sn.find_conf().path
            if path is None or sn.in_cache(path):
                return None
            return undo_files.undo_slurm(path)
        return [(self.name, plan)]

    def plan(self, request):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
        from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc

        path = request.paths.get(self.path_option)
        if not path:
            found = sn.find_conf()
            if found.path is None:
                raise changes.Failure('no slurm.conf found (looked at: %s); set slurm_conf' % (
                    '; '.join(found.looked)), dict(path=None, propagated=[], edit=''),
                    kind=errors.HOST)
            path = found.path
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
        unchanged = changes.Change(path, result, config.files[path], config.files[path])
        if target is None:
            return unchanged
        if not request.slurm_conf_edit:
            unchanged.warnings.append(leak_text(leaking, entry, path) + ' (slurm_conf_edit is '
                                      'off: slurm.conf left as it is)')
            return unchanged
        if sn.in_cache(target):
            raise changes.Failure(configless_refusal(target, leak_text(leaking, entry, path)),
                                  result, kind=errors.REFUSED)
        result['edit'] = what
        mode = safe_file.mode_of(target)
        return changes.Change(target, result, config.files[target], text, mode=mode)

    def act(self, change, actions, state, host):
        # slurmstepd reads PropagateResourceLimits* from slurmd's configuration
        if change.changed and UNIT not in actions['units']:
            actions['units'].append(UNIT)

    def restart_context(self, unit):
        return self.probe if unit == UNIT else None

    def probe_command(self, user, uid, params):
        try:
            node = sn.this_node(sn.find_conf())
        except sn.NodeError:
            node = UNRESOLVED
        return ['runuser', '-l', user, '-c', submit_shell(node)]

    def run_probe(self, prober, user, uid, command):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        self.require_active(prober, UNIT, 'job')
        if submit_shell(UNRESOLVED) in command:
            try:
                sn.this_node(sn.find_conf())
            except sn.NodeError as exc:
                raise probe_results.ProbeError('no job can be pinned to this node: %s' % exc.msg)
        started = time.time()
        try:
            return prober.proc(command, self.probe)
        except probe_results.ProbeError as exc:
            refused = sn.refusal(exc.msg)
            if refused is None:
                raise
            raise self.pending(prober, command, refused, time.time() - started)

    def pending(self, prober, command, refused, waited):
        """The BUSY ProbeError of a node where srun --immediate could not start the probe now,
        with what slurm.conf and slurmd configure (``detail``: waited_s, reason, configured)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        words = shlex.split(command[-1])
        node = words[words.index('-w') + 1]
        try:
            configured = self.configured(self.report(LocalAuditor(prober.module))[0])
        except (errors.Error, IOError, OSError, KeyError, ValueError) as exc:
            configured, failed = {}, 'the configured values could not be read: %s' % exc
        else:
            failed = '' if configured else 'the configured values could not be read'
        items = getattr(prober, 'items', None) or sorted(configured)
        said = '; '.join('%s %s from %s' % (item, model.format_limit(
            item, model.Limit(configured[item]['soft'], configured[item]['hard'])),
            configured[item]['source']) for item in items if item in configured)
        what = ('runs jobs' if refused[0] == 'busy' else 'is down, drained or reserved')
        error = probe_results.ProbeError(
            'pending: node %s %s, so srun -w %s --immediate=%d could not start the probe job '
            '(srun: "%s"; waited %.1f s); verified once a job can start there. Configured: %s'
            % (node, what, node, sn.IMMEDIATE, refused[1], waited, said or failed),
            kind=errors.BUSY)
        error.detail = dict(node=node, reason=refused[0], waited_s=round(waited, 1),
                            configured=dict((i, configured[i]) for i in items if i in configured))
        return error

    def report(self, auditor):
        if self.name not in auditor.present:
            warning = sdpaths.unit_exists(UNIT) and sn.find_conf().warning()
            return None, [warning] if warning else []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
        found = sn.find_conf()
        path = found.path or sc.SLURM_CONF
        report = dict(slurm_conf=path, found_by=found.how, configless=found.configless,
                      propagated={}, decided_by=None, slurmd={}, slurmd_configured={},
                      error=None)
        try:
            flags, entry = sc.propagated(sc.parse(path))
        except sc.SlurmConfError as exc:
            report['error'] = exc.msg
            return report, ['slurm.conf: %s' % exc.msg]
        except (IOError, OSError) as exc:
            report['error'] = '%s: %s' % (path, exc)
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
            text = leak_text(leaking, entry, path)
            warnings.append(configless_refusal(path, text) if found.configless else text)
        return report, warnings

    def configured(self, report):
        """What a job submitted from a shell with default soft limits gets, item by item,
        with where it comes from (the slurmd drop-in line, the slurm.conf line)."""
        if not report or report.get('error'):
            return {}
        from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
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

    def predict(self, report):
        """{item: Limit} a job gets, from :meth:`configured` (slurmd's running limits and
        slurm.conf's propagation): the slurm_job rows of an audit that starts no job."""
        return dict((item, model.Limit(entry['soft'], entry['hard']))
                    for item, entry in self.configured(report).items())


def configless_refusal(path, leak):
    """Why a configless cache is not edited, and where to fix it."""
    return ('%s; %s is slurmd\'s configless cache (slurmd --conf-server): slurmd rewrites it from '
            'slurmctld, so it is not edited here: change slurm.conf on the slurmctld host '
            '(SlurmctldHost) and run `scontrol reconfigure`, or set slurm_conf_edit: false'
            % (leak, path))


class LocalAuditor(object):
    """What :meth:`Slurm.report` needs of the audit's Auditor, from a probe's host."""

    present = (Slurm.name,)
    params = {'profile': {}}

    def __init__(self, host):
        self.host = host

    def run(self, args):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
        return self.host.run_command(args, environ_update=commands.live_env())


CONTEXT = Slurm()
