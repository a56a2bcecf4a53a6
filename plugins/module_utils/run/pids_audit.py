# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's ``pids`` rows: for each probed context, the ``pids.max`` that governs a new
process there (the smallest over its cgroup and every ancestor: the cgroup that holds it
decides), the file:line that sets it (systemd's ``TasksMax=`` of the unit or slice,
``DefaultTasksMax=`` for a service, the ``user-.slice`` drop-in or logind's ``UserTasksMax``
for a login or a user service, containers.conf ``pids_limit`` for Podman) and the gap to the
profile. Each probe starts a new process of the context that prints its own chain
(host/cgroups.py CHAIN_SCRIPT); a user service and a unit's main process are read from the
host. What is particular to a context (how its chain is read, what sets a container's
pids.max, its advice) is its record's (Context.pids_chain, pids_source, pids_advice); the
contexts covered are the records that carry the ``pids`` kind (contexts/kinds.py). Read-only.
Private to the collection; docs/limit-model.md (pids) says what is covered."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import _base
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports.probe_results import (
    ProbeError)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as sdpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import tasks_max

ITEM = pids_model.NAME
_USER_SLICE = re.compile(r'^user-(\d+)\.slice$')
NotCovered = _base.NotCovered
#: the probe command with the cgroup chain command in place of ``cat /proc/self/limits``
chain_command = cgroups.chain_command


def record_of(context):
    """The record that carries pids for ``context`` (a probed name or unit:NAME), or None."""
    for find in (registry.probed, registry.owner):
        try:
            record = find(context)
        except KeyError:
            continue
        return record if 'pids' in record.kinds else None
    return None


def probe_chain(prober, context, user, uid, params):
    """The Chain of a new process of ``context`` (a probed name or unit:NAME); ProbeError, or
    NotCovered where no record carries pids there (ssh, k8s_pod)."""
    record = record_of(context)
    if record is None:
        raise NotCovered(context)
    return record.pids_chain(prober, context, user, uid, params)


def source_of(context, chain, kernel_max, root=''):
    """(source, owner) of the pids.max that decides: ``source`` names the file:line (or what
    sets it where no file does), ``owner`` is 'ours' when it is a file limits_profile writes,
    'theirs' for another file, '' where no file sets it."""
    decides = chain.decides
    if chain.effective is None:
        return 'no pids controller: no cgroup of %s has pids.max' % (chain.cgroup or '/'), ''
    if chain.effective == pids_model.UNLIMITED:
        return 'no cgroup of %s sets a limit (every pids.max is max)' % chain.cgroup, ''
    unit = tasks_max.unit_of_cgroup(decides)
    record = record_of(context)
    if unit is None or (record is not None and record.pids_container and
                        not decides.startswith('/user')):
        found = record.pids_source(root) if record is not None else None
        if found:
            return found
        return 'the cgroup %s (no systemd unit: set by whoever created it)' % decides, ''
    found = tasks_max.unit_tasks_max(unit, root)
    if found.where:
        return '%s (%s of %s)' % (found.where, found.text, unit), _owner(found.where)
    if unit.endswith('.slice'):
        if _USER_SLICE.match(unit):
            logind = tasks_max.logind_user_tasks_max(root)
            if logind.where:
                return '%s (%s, systemd before 240)' % (logind.where, logind.text), 'theirs'
        return ('%s\'s TasksMax, set by no file (a transient property: systemctl show -p '
                'TasksMax %s)' % (unit, unit)), ''
    if unit.endswith('.scope'):
        return ('%s\'s TasksMax, set by the program that created the scope (logind for a '
                'session)' % unit), ''
    scope = sdpaths.USER if '/user@' in decides else sdpaths.SYSTEM
    default = tasks_max.default_tasks_max(scope, root)
    if default.where:
        return ('%s (%s: %s has no TasksMax= of its own)' % (default.where, default.text, unit),
                _owner(default.where))
    return ("systemd's built-in DefaultTasksMax=15%% of the kernel's limit (%s), %s has no "
            'TasksMax= of its own' % (pids_model.human(kernel_max), unit)), ''


_owner = _base.Context.file_owner


def advice_for(context, owner, source, decides=''):
    """What closes a gap, from the evidence only (``decides``: the cgroup whose pids.max
    decides)."""
    where = source.split(' (', 1)[0]
    path = where.split(':', 1)[0]
    if owner == 'theirs' and os.path.dirname(path).endswith('.d') and \
            os.path.basename(path) > sdpaths.DROPIN_NAME:
        return ('raise or remove %s: it is read after the drop-in limits_profile writes, which '
                'cannot override it' % where)
    if owner == 'theirs':
        return ('run limits_profile with pids in the profile: its drop-in %s is read after %s; '
                'or raise that line' % (sdpaths.DROPIN_NAME, where))
    record = record_of(context)
    particular = record.pids_advice(owner, decides) if record is not None else None
    if particular:
        return particular
    if owner == 'ours':
        return 'run limits_profile: %s, the file it writes, holds another value' % (
            source.split(' (', 1)[0])
    return 'run limits_profile with pids in the profile'


def rows(prober, contexts, user, uid, params, value, kernel_max, root=''):
    """(rows, errors): one row per context for ``value`` (a pids_model.TasksMax)."""
    expected = value.resolve(kernel_max)
    found, failed, skipped = [], [], []
    for context in contexts:
        try:
            chain = probe_chain(prober, context, user, uid, params)
        except NotCovered:
            skipped.append(context)
            continue
        except ProbeError as exc:
            failed.append(dict(context=context, item=ITEM, msg=str(exc), kind=exc.kind))
            continue
        source, owner = source_of(context, chain, kernel_max, root)
        gap = pids_model.below(chain.effective, expected)
        row = dict(context=context, item=ITEM, actual=pids_model.human(chain.effective),
                   expected='%s (%s)' % (pids_model.human(expected), value.systemd())
                   if value.permyriad is not None else pids_model.human(expected),
                   source=source, gap='max' if gap else '', how='probed',
                   cgroup=chain.decides, pids=chain.as_dict())
        if gap:
            row['advice'] = advice_for(context, owner, source, chain.decides)
        found.append(row)
    return found, failed, skipped


def job_fit(need, found):
    """Shortfalls of the job's thread demand (``need``: the job's ``pids``) against the rows."""
    shortfalls = []
    for row in found:
        have = row['pids']['effective']
        if have not in ('max', '(unknown)') and int(have) < need:
            shortfalls.append(dict(context=row['context'], item=ITEM, need=need, have=int(have),
                                   short_by=need - int(have)))
    return shortfalls


def audit(prober, contexts, user, uid, params, value, job_need=None):
    """The audit's pids part: {rows, errors, kernel_max, shortfalls}."""
    kernel_max = cgroups.kernel_tasks_max()
    found, failed, skipped = rows(prober, contexts, user, uid, params, value, kernel_max)
    result = dict(rows=found, errors=failed, kernel_tasks_max=kernel_max, not_covered=skipped)
    if job_need:
        result['shortfalls'] = job_fit(job_need, found)
    return result


def split(profile):
    """(the profile without pids, its pids TasksMax or None); LimitError naming profile.pids.
    An expectation that is only compared: no floor."""
    rest, value = pids_model.split_profile(profile)
    if value is None:
        return rest, None
    return rest, pids_model.parse_profile_value(value, 'profile.pids', floor=False)


def extend(result, host, params, contexts, value, job_need=None):
    """limits_audit's hook: the pids rows (and errors, and ``pids``) added to ``result`` for the
    contexts the audit probes and its units."""
    import pwd
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
    user = params['user']
    uid = pwd.getpwnam(user).pw_uid
    prober = effective.Prober(host, params.get('timeout') or 60)
    names = list(contexts) + [effective.unit_context(u) for u in params.get('units') or []]
    part = audit(prober, names, user, uid, dict(params, run_options=[]), value, job_need)
    result['rows'].extend(part['rows'])
    result['errors'].extend(part['errors'])
    result['pids'] = dict(expected=value.systemd(), kernel_tasks_max=part['kernel_tasks_max'],
                          not_covered=part['not_covered'],
                          gaps=[dict(context=r['context'], actual=r['actual'],
                                     expected=r['expected'], source=r['source'])
                                for r in part['rows'] if r['gap']])
    if 'shortfalls' in part:
        result['pids']['shortfalls'] = part['shortfalls']
