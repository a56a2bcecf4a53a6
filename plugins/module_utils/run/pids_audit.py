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
host. Read-only. Private to the collection; docs/limit-model.md (pids) says what is covered."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports.probe_results import (
    ProbeError)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths as sdpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import tasks_max

ITEM = pids_model.NAME
#: what sets a container's pids.max when no file does
CONTAINER_DEFAULT = {
    'docker': 'the container\'s own cgroup: docker run --pids-limit (dockerd has no daemon-wide '
              'default pids limit; none is set unless the run asks)',
    'podman': 'the container\'s own cgroup: Podman\'s built-in pids_limit (2048: '
              '/usr/share/containers/containers.conf of Podman 4.3.1 says so), no containers.conf '
              'sets pids_limit',
}
_USER_SLICE = re.compile(r'^user-(\d+)\.slice$')


#: the probed contexts whose probe is a plain command that cats /proc/self/limits (the
#: user manager's and the units' chains are read from the host; slurm_job's submit shell ends
#: with srun's command)
COVERED = ('login', 'service', 'user_manager', 'docker', 'podman', 'slurm_job')


def chain_command(command):
    """The context's probe command with the cgroup chain command in place of ``cat
    /proc/self/limits`` (a login shell's ``-c``, a service's or container's command, the
    command a submit shell's ``srun`` runs), or None when the probe is no such command."""
    if command and command[-1] == probes.CAT:
        return list(command[:-1]) + [cgroups.CHAIN_COMMAND]
    if list(command[-2:]) == ['cat', '/proc/self/limits']:
        return list(command[:-2]) + ['sh', '-c', cgroups.CHAIN_COMMAND]
    if command and ' srun ' in command[-1] and command[-1].endswith(' ' + probes.CAT):
        return list(command[:-1]) + [command[-1][:-len(probes.CAT)] + 'sh -c %s' % (
            shlex.quote(cgroups.CHAIN_COMMAND))]
    return None


class NotCovered(Exception):
    """A context the pids probe does not cover (ssh, k8s_pod)."""


def probe_chain(prober, context, user, uid, params):
    """The Chain of a new process of ``context`` (a probed name or unit:NAME); ProbeError."""
    if context.startswith(registry.UNIT_PREFIX):
        unit = context[len(registry.UNIT_PREFIX):]
        pid = prober.run(['systemctl', 'show', '-p', 'MainPID', '--value', unit]).strip()
        return _pid_chain(pid, unit)
    if context == registry.named('systemd_user').probe:
        prober.require_user_manager(user, uid)
        unit = '%s-pids-%d.service' % (probes.PROBE_UNIT, os.getpid())
        start, show, stop = probes.user_probe_commands(user, uid, unit)
        try:
            return _pid_chain(prober.user_service_pid(start, show, unit, user), unit)
        finally:
            prober.execute(stop)
    command = None
    if context in COVERED:
        command = chain_command(registry.probed(context).probe_command(user, uid, params))
    if command is None:
        raise NotCovered(context)
    try:
        return cgroups.parse_chain(prober.run(command), context)
    except pids_model.LimitError as exc:
        raise ProbeError(str(exc))


def _pid_chain(pid, what):
    if not pid.isdigit() or pid == '0':
        raise ProbeError('%s has no main process' % what, kind=errors.NOT_RUNNING)
    chain = cgroups.chain_of_pid(pid)
    if chain is None:
        raise ProbeError('%s: process %s is gone' % (what, pid))
    return chain


def podman_pids_limit(root=''):
    """(value, 'file:line:col') of the last containers.conf ``pids_limit`` Podman reads, or
    (None, None)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import read_bytes
    found = (None, None)
    for path in containers_conf.config_files(root):
        raw = read_bytes(root + path)
        if raw is None:
            continue
        try:
            doc = containers_conf.scan(raw, path)
        except containers_conf.TomlError:
            continue
        entry = doc.get(containers_conf.TABLE, 'pids_limit')
        if entry is not None:
            text = doc.text[entry.value_start:].split('\n', 1)[0].split('#', 1)[0].strip()
            found = (text, doc.place(entry.value_start))
    return found


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
    if unit is None or (context in CONTAINER_DEFAULT and not decides.startswith('/user')):
        if context == 'podman':
            value, where = podman_pids_limit(root)
            if where:
                return '%s (pids_limit = %s)' % (where, value), _owner(where)
        if context in CONTAINER_DEFAULT:
            return CONTAINER_DEFAULT[context], ('ours' if context == 'podman' else '')
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


def _owner(where):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths
    name = os.path.basename(where.split(':', 1)[0])
    ours = (sdpaths.DROPIN_NAME, os.path.basename(runtime_paths.CONTAINERS_DROPIN))
    return 'ours' if name in ours else 'theirs'


def advice_for(context, owner, source):
    """What closes a gap, from the evidence only."""
    where = source.split(' (', 1)[0]
    path = where.split(':', 1)[0]
    if owner == 'theirs' and os.path.dirname(path).endswith('.d') and \
            os.path.basename(path) > sdpaths.DROPIN_NAME:
        return ('raise or remove %s: it is read after the drop-in limits_profile writes, which '
                'cannot override it' % where)
    if owner == 'theirs':
        return ('run limits_profile with pids in the profile: its drop-in %s is read after %s; '
                'or raise that line' % (sdpaths.DROPIN_NAME, where))
    if owner == 'ours' and context == 'podman':
        return 'run limits_profile with pids in the profile and contexts: [podman]'
    if owner == 'ours':
        return 'run limits_profile: %s, the file it writes, holds another value' % (
            source.split(' (', 1)[0])
    if context == 'docker':
        return 'start the container with --pids-limit (dockerd has no default to set)'
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
            row['advice'] = advice_for(context, owner, source)
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
