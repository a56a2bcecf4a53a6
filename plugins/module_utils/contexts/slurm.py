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
# The submit side the slurm_job context assumes unless the caller gives one
# (O(slurm_submit_limits)): a login shell on a node nobody tuned, whose soft limits are the
# kernel's defaults (include/asm-generic/resource.h INIT_RLIMITS: INR_OPEN_CUR, _STK_LIM,
# MLOCK_LIMIT since Linux 5.16, core 0, the rest unlimited) - every item Slurm propagates
# alike. nproc has no fixed default: fork_init gives init max_threads/2, which
# /proc/sys/kernel/threads-max shows (:func:`submit_defaults`).
KERNEL_SOFT = {'cpu': model.UNLIMITED, 'fsize': model.UNLIMITED, 'data': model.UNLIMITED,
               'stack': 8 * 1024 * 1024, 'core': 0, 'rss': model.UNLIMITED,
               'nofile': 1024, 'memlock': 8 * 1024 * 1024, 'as': model.UNLIMITED}
THREADS_MAX = '/proc/sys/kernel/threads-max'
# bash's ulimit flag of each item Slurm propagates and the kernel units in one of its steps
# (bash(1): 1024-byte steps, -t seconds, -n and -u unscaled)
ULIMIT_FLAG = {'cpu': ('t', 1), 'fsize': ('f', 1024), 'data': ('d', 1024), 'stack': ('s', 1024),
               'core': ('c', 1024), 'rss': ('m', 1024), 'nproc': ('u', 1), 'nofile': ('n', 1),
               'memlock': ('l', 1024), 'as': ('v', 1024)}
DEFAULT_SUBMIT = "the kernel's defaults"
# A node name that could not be found: the probe is not run (run_probe says why).
UNRESOLVED = '(unresolved)'


def submit_defaults(threads_max=THREADS_MAX):
    """{item: soft} of the default submit side (:data:`KERNEL_SOFT`, nproc from
    ``threads_max``: left out when it cannot be read)."""
    found = dict(KERNEL_SOFT)
    try:
        with open(threads_max) as handle:
            found['nproc'] = int(handle.read().strip()) // 2
    except (IOError, OSError, ValueError):
        pass
    return found


def submit_side(given=None, threads_max=THREADS_MAX):
    """({item: soft in kernel units}, what it is) of the submit side a job is predicted and
    probed from: ``given`` (O(slurm_submit_limits): item -> value, the profile's grammar) over
    :func:`submit_defaults`. model.LimitError naming ``slurm_submit_limits.ITEM`` for an item
    Slurm does not propagate or a value the model does not read."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
    side = submit_defaults(threads_max)
    if not given:
        return side, DEFAULT_SUBMIT
    if not isinstance(given, dict):
        raise model.LimitError('slurm_submit_limits: must be a mapping of item -> soft value')
    for name, value in sorted(given.items()):
        where = 'slurm_submit_limits.%s' % name
        if name not in sc.RLIMIT_OF:
            raise model.LimitError('%s: Slurm propagates only %s' % (
                where, ', '.join(item for _name, item in sc.RLIMITS)))
        side[name] = model.parse_value(name, value, where)
    return side, 'slurm_submit_limits'


def submit_shell(node, side=None):
    """The probe's submit shell: the submit side's soft limits (``side``: {item: soft}; default
    :func:`submit_defaults`), then srun pinned to this host's NodeName (``-w``) that never
    queues: ``--immediate`` gives up after a few seconds when the node runs jobs, with words
    :func:`slurm_node.refusal` knows. A value above the shell's hard limit stays unset (ulimit
    cannot raise it)."""
    side = submit_defaults() if side is None else side
    words = []
    for item in sorted(side):
        flag, step = ULIMIT_FLAG[item]
        value = side[item]
        words.append('ulimit -S -%s %s 2>/dev/null; ' % (
            flag, value if model.is_unlimited(value) else value // step))
    return ('%sexec srun --quiet --ntasks=1 -w %s --immediate=%d --job-name=gpufleet-probe %s'
            % (''.join(words), shlex.quote(node), sn.IMMEDIATE, probes.CAT))


def leak_text(names, entry, path=rtpaths.SLURM_CONF):
    """Why jobs get less: the items slurm.conf propagates from the submit shell."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc

    where = ('%s (%s=%s)' % (entry.where, entry.name, entry.value) if entry is not None
             else '%s sets neither PropagateResourceLimits nor ...Except (default ALL)'
             % path)
    side = submit_defaults()
    defaults = ', '.join('%s %s' % (item, model.format_human(item, side[item]))
                         for item in names if item in side)
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


SUBMIT = Option('slurm_submit_limits', 'dict', default={}, description=(
    'The soft limits of the shell a Slurm job is assumed to be submitted from, for the '
    "C(slurm_job) probe and prediction, as item -> value in the profile's grammar (for "
    'example C(nofile) 1500 and C(nproc) 3000), for the items Slurm propagates (C(cpu), '
    'C(fsize), C(data), C(stack), C(core), C(rss), C(nproc), C(nofile), C(memlock), C(as)). '
    "An item not given keeps the kernel's default, as a login shell on a node nobody tuned "
    'has it (C(nofile) 1024, C(memlock) and C(stack) 8 MiB, C(core) 0, C(nproc) half of '
    'C(kernel.threads-max), the rest unlimited). An item slurm.conf propagates is predicted '
    "as this value, at most slurmd's hard limit; an item it does not propagate comes from "
    "slurmd's running limits (docs/slurm.md).",))


class Slurm(Context):
    name = 'slurm'
    probe = 'slurm_job'
    task_limit = 'nproc'
    shown_by = r'^slurmstepd(-\S+)?: '
    kinds = ('rlimit', 'pids')
    units = (UNIT,)
    files = (rtpaths.SLURM_CONF, '/etc/systemd/system/slurmd.service.d/*.conf')
    path = PATH
    options = (CONF_EDIT,)
    probe_options = (SUBMIT,)
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
        side, _what = submit_side(params.get(SUBMIT.name))
        return ['runuser', '-l', user, '-c', submit_shell(node, side)]

    def check_probe_params(self, params):
        submit_side(params.get(SUBMIT.name))

    def run_probe(self, prober, user, uid, command):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        self.require_active(prober, UNIT, 'job')
        if ' -w %s ' % shlex.quote(UNRESOLVED) in command[-1]:
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
        try:
            side, assumed = submit_side(auditor.params.get(SUBMIT.name))
        except model.LimitError as exc:
            raise info.InfoError(exc.msg, {})
        report = dict(slurm_conf=path, found_by=found.how, configless=found.configless,
                      propagated={}, decided_by=None, slurmd={}, slurmd_configured={},
                      submit=side, submit_is=assumed, error=None)
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
        """What a job gets, item by item, by one rule (``ulimits.c``): an item slurm.conf
        propagates takes the submit side's soft value (``report['submit']``, the same side
        for every item: :func:`submit_side`), at most slurmd's hard one, and slurmd's hard;
        an item it does not propagate keeps slurmd's running limits. Each side names what
        decides it (``soft_source``, ``hard_source``; ``source`` both): slurm.conf's
        Propagate line for a propagated soft side, slurmd's drop-in line (else its unit or the
        manager default) for a side slurmd's limits give."""
        if not report or report.get('error'):
            return {}
        side = report.get('submit')
        if side is None:
            side = submit_defaults()
        assumed = report.get('submit_is') or DEFAULT_SUBMIT
        decided = report['decided_by']
        conf = ('%s %s' % (decided['where'], decided['setting']) if decided
                else '%s (no PropagateResourceLimits line: ALL)' % report['slurm_conf'])
        found = {}
        for item, propagate in report['propagated'].items():
            live = report['slurmd'].get(item)
            if live is None or (propagate and side.get(item) is None):
                continue
            slurmd = model.Limit(live['soft'], live['hard'])
            hard_source = slurmd_origin(report['slurmd_configured'].get(item), self.fallback)
            soft_source = slurmd_soft_origin(item, slurmd, report['slurmd_configured'].get(
                item), hard_source)
            if propagate:
                want = side[item]
                got = job_limit(slurmd, want)
                shell = "the submit shell's soft %s %s (%s)" % (
                    item, model.format_human(item, want), assumed)
                if got.soft == want:
                    soft_source = '%s propagates %s' % (conf, shell)
                else:
                    soft_source = "%s (slurmd's hard: %s, propagated by %s, is capped at it)" % (
                        hard_source, shell, conf)
            else:
                got = slurmd
                soft_source = '%s (not propagated: %s)' % (soft_source, conf)
                hard_source = '%s (not propagated: %s)' % (hard_source, conf)
            found[item] = dict(soft=got.soft, hard=got.hard, soft_source=soft_source,
                               hard_source=hard_source,
                               source=both_sides(soft_source, hard_source))
        return found

    def predict(self, report):
        """{item: Limit} a job gets, from :meth:`configured` (slurmd's running limits and
        slurm.conf's propagation): the slurm_job rows of an audit that starts no job."""
        return dict((item, model.Limit(entry['soft'], entry['hard']))
                    for item, entry in self.configured(report).items())


def job_limit(slurmd, submit_soft):
    """What a propagated item gives a job: slurm_conf.job_limit, the one rule."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
    return sc.job_limit(True, slurmd, submit_soft)


def slurmd_origin(setting, fallback):
    """The file:line of slurmd's unit or drop-in that sets an item, else ``fallback``."""
    if setting and setting.get('source'):
        return '%s:%s' % (setting['source'], setting['line'])
    return fallback


def slurmd_soft_origin(item, running, setting, hard_source):
    """What decides slurmd's running soft value: its setting's line, except for nofile when
    slurmd runs at the hard value the line sets and the line says a lower soft one: slurmd
    raises its soft nofile to its hard one when it starts (``rlimits_use_max_nofile``). A
    setting slurmd does not run with yet (a restart owed) is not taken for that."""
    if (item == 'nofile' and setting and setting.get('soft') is not None
            and setting.get('hard') == running.hard == running.soft
            and model.exceeds(running.soft, setting['soft'])):
        return "%s (its hard: slurmd raises its soft nofile to it)" % hard_source
    return hard_source


def both_sides(soft, hard):
    """One source text of a job's two sides: the one text when they are the same, else
    ``soft: ...; hard: ...`` (the form ci_reports.line_in reads a side's line from)."""
    return soft if soft == hard else 'soft: %s; hard: %s' % (soft, hard)


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
