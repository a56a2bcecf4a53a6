# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's limits audit: what new processes get in each context, where each value comes
from (file:line) and the gaps to a profile. Read-only; used by the limits_audit module."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pwd

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import audit_job
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import pids_audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import container_caps
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import core_dumps
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import kernel_ceilings
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model

# Where a value comes from when no file sets it (the registry's texts, by probed context).
FALLBACK = dict((c.probe, c.fallback) for c in registry.REGISTRY if c.probe)
UNIT_FALLBACK = registry.owner(registry.UNIT_PREFIX).fallback

# The file the limits role writes for each configured context.
TARGETS = [(c.name, c.target) for c in registry.REGISTRY if c.name and c.target]


class Auditor(object):
    """What the contexts' reports need: the module, the user, the units, the contexts present
    and the audit's parameters."""

    def __init__(self, host, params, present):
        self.host = host
        self.params = params
        self.user = params['user']
        self.units = params['units']
        self.present = present

    def run(self, args):
        return self.host.run_command(args, environ_update=commands.live_env())


def unwritable(present):
    """The files the limits role writes that cannot be written here (read-only mounts)."""
    found = []
    for context, path in TARGETS:
        if context in present:
            path = registry.named(context).target_path() or path
            problem = changes.Change(path, {}, None, '').writable()
            if problem:
                found.append(dict(context=context, path=path, msg=problem))
    return found


class AuditError(changes.Failure):
    """An audit that cannot be made: ``msg`` and the result so far."""


def _where(configured):
    if not configured.get('source'):
        return ''
    line = configured.get('line')
    return configured['source'] + (':%s' % line if line is not None else '')


def _pair(entry):
    return '%s:%s' % (entry.get('soft'), entry.get('hard'))


def unappliable(configured, ceiling):
    """The login lines pam_limits cannot apply on this host: ``file:line`` with the reason,
    for each configured item whose hard value is above what a login service can set."""
    found = []
    for name, entry in sorted(configured.items()):
        hard = entry.get('hard')
        if hard is None or name not in model.ITEMS:
            continue
        top, reason = ceiling.hard_ceiling(name)
        if top is not None and model.exceeds(hard, top):
            found.append('%s (hard %s %s: %s)' % (
                entry.get('hard_source') or 'a limits line', name,
                model.format_human(model.ITEMS[name], hard), reason))
    return found


def source_of(context, configured, actual=None, blocked=None, pending=None):
    """Where the actual value comes from, or ''.

    A file is named only when the value it sets is the value the probe saw (``actual``,
    ``{soft, hard}``); otherwise the text says what is known: pam_limits that could not apply
    a line (``blocked``: the lines from :func:`unappliable`; the session kept its defaults), a
    setting not applied yet, said only with evidence (``pending``: the action that applies it,
    from :func:`pending_actions`: the running manager or unit has not loaded the file, or the
    daemon started before the file changed), or a file that does not decide the value."""
    if not configured:
        return ''
    if configured.get('why'):
        # the files decide nothing here (the login stack runs no pam_limits): that says why
        return configured['why']
    matches = actual is None or (configured.get('soft') == actual.get('soft')
                                 and configured.get('hard') == actual.get('hard'))
    if context == registry.PAM.probe:
        soft, hard = configured.get('soft_source') or '', configured.get('hard_source') or ''
        if not matches:
            cause = ('pam_limits could not apply %s' % '; '.join(blocked) if blocked else
                     'pam_limits could not apply a line (the journal says "Could not set limit")')
            return ('not the limits files: they give %s (%s) but the session got %s; %s, so the '
                    'session kept its defaults' % (
                        _pair(configured), soft if soft == hard else '; '.join(
                            x for x in (soft, hard) if x), _pair(actual), cause))
        if soft.endswith(' (clamped to hard)'):
            return 'hard: %s (soft %s clamped to it)' % (hard, soft[:-len(' (clamped to hard)')])
        if soft and hard and soft != hard:
            soft_file, _sep, soft_line = soft.rpartition(':')
            hard_file, _sep, hard_line = hard.rpartition(':')
            if soft_file == hard_file and soft_line.isdigit() and hard_line.isdigit():
                return '%s:%s (soft), :%s (hard)' % (soft_file, soft_line, hard_line)
            return 'soft: %s; hard: %s' % (soft, hard)
        return soft or hard
    where = _where(configured)
    if where and not matches:
        if pending:
            return ('%s sets %s, not applied yet (a new process gets %s; %s applies it)'
                    % (where, _pair(configured), _pair(actual), pending))
        return ('%s sets %s, but a new process gets %s: that file does not decide it here (it '
                'is loaded: no restart or re-exec is owed)'
                % (where, _pair(configured), _pair(actual)))
    return where


def _owner(context):
    """The record a probed context (``login``, ``unit:NAME``) is configured through, or None."""
    if context.startswith(registry.UNIT_PREFIX):
        return registry.owner(registry.UNIT_PREFIX)
    try:
        return registry.probed(context)
    except KeyError:
        return None


def advice_for(context, configured, actual=None, blocked=None, pending=None,
               sides=('soft', 'hard')):
    """The text of :func:`advice_at`."""
    return advice_at(context, configured, actual, blocked, pending, sides)[0]


def advice_at(context, configured, actual=None, blocked=None, pending=None,
              sides=('soft', 'hard')):
    """(what would close a gap, the place it acts on: {path, line} or None), said only where
    the evidence points at it (the same evidence :func:`source_of` names): the action that
    applies a setting not applied yet (``pending``), the login lines pam_limits cannot apply
    (``blocked``), the file:line that sets the value a new process gets (of the short
    ``sides``, each side from its own record), or the tune's own file where no file sets it.
    ('', None) where a file sets other values than the process gets and nothing says why (no
    advice without evidence)."""
    configured = configured or {}
    places = findings.places_of(configured)
    at = findings.first_place(places, sides)
    if pending:
        return pending, at
    if configured.get('fix'):
        # what makes the files apply at all (the login stack's pam_limits line)
        return configured['fix'], at
    side_fix = next((side for side in sides if configured.get('%s_fix' % side)), None)
    if side_fix:
        # a side no file sets, and the context's own evidence says what would set it (an SSH
        # session: the pam context's file, which sshd's pam_limits applies)
        return configured['%s_fix' % side_fix], configured.get('%s_fix_place' % side_fix) or at
    if context == registry.PAM.probe and blocked and actual is not None and (
            configured.get('soft'), configured.get('hard')) != (actual.get('soft'),
                                                                actual.get('hard')):
        return ('change %s: pam_limits cannot apply it, so the session keeps its defaults'
                % '; '.join(blocked), findings.place_in(blocked[0]) or at)
    record = _owner(context)
    if context == registry.PAM.probe:
        places = [(configured.get('%s_source' % side) or '').split(' (', 1)[0] for side in sides]
        where = '; '.join(p for i, p in enumerate(places) if p and p not in places[:i])
    else:
        where = _where(configured)
    matches = actual is None or (configured.get('soft'), configured.get('hard')) == (
        actual.get('soft'), actual.get('hard'))
    if where and matches:
        target = record.target_path() if record is not None else None
        if target and all(w.rsplit(':', 1)[0] == target for w in where.split('; ')):
            return ('run limits_profile: %s, the file it writes, holds other values than the '
                    'profile' % where, at)
        return ('raise or remove %s (it sets %s); limits_profile does not edit files it does not '
                'own' % (where, _pair(configured)), at)
    if not where and context.startswith(registry.UNIT_PREFIX):
        return ('run limits_profile with units: [%s] (a drop-in with Limit*= for it)'
                % context[len(registry.UNIT_PREFIX):], None)
    if not where and record is not None and record.name:
        target = record.target_path() or record.target
        return ('run limits_profile with contexts: [%s] (it writes %s)'
                % (record.name, target), findings.place(target))
    return '', None


def pending_actions(reports, host):
    """{(context, item): action} for the values a file sets and a running process has not
    taken yet, with evidence: each record's own word (Context.not_applied: systemd's systemctl
    show against its files, dockerd started before daemon.json last changed)."""
    found = {}
    for record in registry.REGISTRY:
        if record.probe is not None and record.probe in reports:
            for key, action in record.not_applied(reports.get(record.probe), host).items():
                found.setdefault(key, action)
    return found


def pending_row(row, error, configured):
    """``row`` of a context whose probe is pending (a busy Slurm node: effective's ``busy``
    error): what is configured, from where, and how long the probe waited."""
    setting = (error.get('configured') or {}).get(row['item']) or configured or {}
    row.update(how='pending', actual='(pending: %s)' % error.get('reason', 'busy'),
               waited_s=error.get('waited_s'))
    if setting.get('soft') is not None or setting.get('hard') is not None:
        row['configured'] = effective.human_limit(row['item'], setting)
    if setting.get('source'):
        row['source'] = setting['source']
    return row


def rows(observed, expected, gaps, configured_by_context, items, blocked=None, predicted=(),
         pending=None, unapplied=None):
    """One row per probed context and profile item: actual, expected, gap sides, source and
    ``how`` (``probed``: a new process showed it; ``reused``: a new container showed it at
    ``proved_at`` and nothing that decides it has changed since, module_utils/host/proofs.py;
    ``predicted``: worked out from the files, the contexts in ``predicted``; ``pending``: the
    probe could not start now, {context: its busy error} in ``pending``). ``blocked``: the
    login lines pam_limits cannot apply (:func:`unappliable`); ``unapplied``: the evidence
    of values not applied yet (:func:`pending_actions`)."""
    pending = pending or {}
    found = []
    for context, entry in observed.items():
        configured = configured_by_context.get(context, {})
        for item in items:
            limit = (entry.get('limits') or {}).get(item)
            gap = [g for g in gaps if g['context'] == context and g['item'] == item]
            source = source_of(context, configured.get(item) or {},
                               dict(soft=limit.get('soft'), hard=limit.get('hard')) if limit else None,
                               blocked if context == registry.PAM.probe else None,
                               (unapplied or {}).get((context, item)))
            row = dict(
                context=context, item=item,
                actual=limit['human'] if limit else '(none)',
                expected=expected[item]['human'],
                source=source or FALLBACK.get(context, UNIT_FALLBACK),
                gap='+'.join(gap[0]['sides']) if gap else '',
                how='predicted' if context in predicted else 'probed')
            row['places'] = findings.places_of(configured.get(item))
            if gap:
                owed = (unapplied or {}).get((context, item))
                text, at = advice_at(
                    context, configured.get(item) or {},
                    dict(soft=limit.get('soft'), hard=limit.get('hard')) if limit else None,
                    blocked if context == registry.PAM.probe else None, owed, gap[0]['sides'])
                row['advice'] = text
                row['advice_at'] = findings.advice(text, at)
                if owed:
                    row['owed'] = owed
            if entry.get('reused'):
                row.update(how='reused', proved_at=entry['reused']['proved_at'])
            if context in pending:
                pending_row(row, pending[context], configured.get(item))
            found.append(row)
    return found


def add_predicted(probed, reports, contexts):
    """Put the predicted values of the contexts that were not probed (a pod when no CRI
    client is given) into effective.probe's result, with their gaps; returns their names."""
    predicted = {}
    for record in registry.REGISTRY:
        if record.probe and record.probe not in contexts:
            limits = record.predict(reports.get(record.probe))
            if limits:
                predicted[record.probe] = limits
                probed['contexts'][record.probe] = dict(
                    command='', predicted=True, limits=effective.public_limits(limits))
    if predicted and probed.get('expected'):
        probed['gaps'] += effective.gaps(effective.from_public(probed['expected']), predicted)
        probed['table'] = effective.gap_table(probed['gaps']) if probed['gaps'] else ''
    return list(predicted)


def audit(host, params):
    """The limits_audit result. ``host``: the AnsibleModule. params: profile, user, units,
    the contexts' probe options (by name or in probe_options), timeout, probe_max_age
    (seconds a container probe's proof may be reused: 0 never), probe_proofs (the proofs an earlier audit returned, {context: proof},
    kept by the controller; module_utils/host/proofs.py), job (optional: the training job's
    shape, :mod:`audit_job`) and probe_only (optional: the contexts to probe; the others
    present are predicted where their record can, run/slurm_health.py). The result's ``proofs`` are the proofs of this audit's probes,
    for the controller to keep: nothing is written on the node."""
    user = params['user']
    result = dict(changed=False, contexts={}, errors=[], gaps=[], rows=[], table='',
                  pam_invalid=[], systemd_pending=[], present=[], unwritable=[], problems=[], proofs={})
    try:
        # the contexts' probe options, by name or in probe_options: the records read them
        params = effective.with_probe_options(params)
    except effective.ProbeFailure as exc:
        raise AuditError(exc.msg, result)
    try:
        # pids is the cgroup pids.max, no rlimit: audited apart (run/pids_audit.py)
        profile, pids_value = pids_audit.split(params['profile'])
        items = [model.get_item(name, 'profile.%s' % name).name for name in profile]
        model.parse_profile(profile, 'profile', floor=False)
    except model.LimitError as exc:
        raise AuditError(str(exc), result)
    if (params.get('probe_max_age') or 0) < 0:
        raise AuditError('probe_max_age: %s is below 0 (seconds; 0 starts a new container every '
                         'time)' % params['probe_max_age'], result)
    try:
        job = audit_job.parse(params.get('job'))
    except audit_job.jd.JobError as exc:
        raise AuditError(str(exc), result)
    try:
        result['kernel'] = kernel_ceilings.rows(params.get('sysctl'))
    except kernel_ceilings.KernelError as exc:
        raise AuditError(str(exc), result)
    try:
        pwd.getpwnam(user)
    except KeyError:
        raise AuditError('user: %s does not exist on this host' % user, result)

    present = registry.detect()
    result['present'] = present
    result['unwritable'] = unwritable(present)
    auditor = Auditor(host, params, present)
    # probe_only: the contexts to probe (the Slurm health check starts no job: slurm_job is
    # predicted from its files, add_predicted); None probes every context present
    only = params.get('probe_only')
    warnings = kernel_ceilings.warnings(result['kernel'])
    reports = {}
    contexts = []
    try:
        for record in registry.REGISTRY:
            if record.probe is None:
                continue
            report, found = record.report(auditor)
            warnings.extend(found)
            reports[record.probe] = report
            result['problems'].extend(dict(problem, context=record.probe)
                                      for problem in record.problems(report))
            if record.audit_probe(report, auditor) and (
                    only is None or record.probe in only):
                contexts.append(record.probe)
    except info.InfoError as exc:
        raise AuditError(exc.msg, result)
    try:
        # every context's probe options, as the registry declares them (never by name)
        request = dict((option.name, params.get(option.name))
                       for option in registry.PROBE_OPTIONS)
        probed = effective.probe(host, dict(
            request, contexts=contexts, user=user, run_options=[], units=params['units'],
            expect=profile, baseline=None, timeout=params['timeout'],
            probe_max_age=params.get('probe_max_age') or 0,
            probe_proofs=params.get('probe_proofs') or {}, prove=True, nonroot=True))
    except effective.ProbeFailure as exc:
        raise AuditError(exc.msg, result)

    predicted = add_predicted(probed, reports, contexts)
    configured = dict((probe, registry.probed(probe).configured(report))
                      for probe, report in reports.items())
    system = reports[registry.SYSTEM.probe]
    for unit, report in system['units'].items():
        configured[effective.unit_context(unit)] = report.get('configured') or {}
    result.update(
        contexts=probed['contexts'], errors=probed['errors'], gaps=probed['gaps'],
        table=probed['table'], ceilings=probed['ceilings'], expected=probed['expected'],
        proofs=probed.get('proofs') or {},
        pam_invalid=reports[registry.PAM.probe]['invalid'],
        systemd_pending=system['pending'],
        rows=rows(probed['contexts'], probed['expected'], probed['gaps'], configured, items,
                  unappliable(configured[registry.PAM.probe], host_limits.Ceiling()),
                  predicted, dict((e['context'], e) for e in probed['errors']
                                  if e.get('kind') == errors.BUSY),
                  pending_actions(reports, host)))
    # the memlock rows of the containers whose non-root process was probed say what it gets
    container_caps.annotate(result['rows'], result['contexts'])
    # where cores go, and the profile's core limit judged against it (one judgement: core_dumps)
    result['core'] = core_dumps.section(model.parse_profile(profile, 'profile', floor=False))
    if result['core']['warning']:
        warnings.append(result['core']['warning'])
    if job:
        result['job_fit'] = audit_job.fit(job, probed['contexts'], audit_job.read_nr_open())
    if pids_value is not None:
        pids_audit.extend(result, host, params, contexts, pids_value,
                          ((result.get('job_fit') or {}).get('demand') or {}).get('pids'))
    # the one evaluation every outlet renders (reports/findings.py)
    result['findings'] = findings.evaluate(
        result, items + (['pids'] if pids_value is not None else []))
    for row in result['rows']:
        # the evidence the findings were evaluated from: in the findings, not twice
        for key in ('places', 'advice_at', 'owed'):
            row.pop(key, None)
    if job:
        audit_job.settle(result['job_fit'], result['findings'],
                         (result.get('pids') or {}).get('shortfalls'))
    return result, warnings
