# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why did my job die (module_utils/model/classify.py; docs/job-shape.md, "Why did my job
die"): the answer from an error text, the context the job ran in, the node's audit and its
evidence."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.plugin_utils.lazy import module

# imported when a filter uses them (plugin_utils/lazy.py)
registry = module('module_utils.contexts')
cl = module('module_utils.model.classify')
fd = module('module_utils.reports.findings')
slurm_node = module('module_utils.slurm.slurm_node')


def _mapping(value, name):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AnsibleFilterError('limits_classify: %s must be a mapping, not %r' % (name, value))
    return value


def kernel_ceilings(audit):
    """{sysctl: {value, source}} of the audit's kernel rows that have no finding (no minimum
    in the profile): the live value, and the line that sets it where the kernel has what that
    line says (else /proc/sys/...)."""
    found = {}
    for row in audit.get('kernel') or []:
        if row.get('minimum') is not None or row.get('live') is None:
            continue
        at = fd.where(fd.place_in(row.get('source'))) if row.get('configured') == row[
            'live'] else ''
        found[row['name']] = {'value': row['live'],
                              'source': at or '/proc/sys/%s' % row['name'].replace('.', '/')}
    return found


def limits_classify(text, context='unknown', audit=None, evidence=None):
    """The answer of model/classify.answer: ``audit`` a limits_audit result (its findings; its
    kernel rows without a minimum as ceilings) or a list of findings."""
    if isinstance(text, (list, tuple)):
        text = '\n'.join(str(line) for line in text)
    known = registry.PROBED + [cl.UNKNOWN]
    if context not in known:
        raise AnsibleFilterError('limits_classify: context %r is not one of %s'
                                 % (context, ', '.join(known)))
    evidence = dict(_mapping(evidence, 'evidence'))
    unknown = sorted(set(evidence) - set(cl.EVIDENCE))
    if unknown:
        raise AnsibleFilterError('limits_classify: evidence: unknown key(s) %s; known: %s'
                                 % (', '.join(unknown), ', '.join(cl.EVIDENCE)))
    given = _mapping(evidence.get('ceilings'), 'evidence.ceilings')
    wrong = sorted(set(given) - set(cl.CEILINGS))
    if wrong:
        raise AnsibleFilterError('limits_classify: evidence.ceilings: unknown ceiling(s) %s; '
                                 'known: %s' % (', '.join(wrong), ', '.join(cl.CEILINGS)))
    if evidence.get('exit_status') not in (None, ''):
        evidence['exit_status'] = slurm_node.exit_status(evidence['exit_status'])
    if isinstance(audit, list):
        found = audit
    else:
        audit = _mapping(audit, 'audit')
        found = fd.of(audit) if audit else []
        evidence['ceilings'] = dict(kernel_ceilings(audit), **given)
    return cl.answer(text, registry.job_context(context, text), found, evidence)


def classify_slurm_fields(text):
    """{key: value} of ``scontrol -o show job`` (slurm/slurm_node.show_job: the epilog reads
    the same record)."""
    return slurm_node.show_job(text)


#: sacct -n -P -X -o State,ExitCode,User: its columns
SACCT_COLUMNS = ('job_state', 'exit_status', 'user')


def classify_slurm_job(scontrol, sacct=''):
    """What classify_failure.yml reads of a Slurm job: ``{user, job_state, exit_status,
    output}`` (output: the job's StdErr, else StdOut) from ``scontrol -o show job`` (slurmctld
    keeps a job MinJobAge, 300 s by default, after it ends) and ``sacct -n -P -X -o
    State,ExitCode,User`` (accounting, for older jobs; it prints nothing where
    AccountingStorageType is none): sacct's values where it printed them, else scontrol's
    (UserId=NAME(UID): the name); '' for what neither says."""
    fields = classify_slurm_fields(scontrol)
    first = (str(sacct or '').strip().splitlines() or [''])[0].split('|')
    acct = dict(zip(SACCT_COLUMNS, [p.strip() for p in first])) if len(first) == 3 else {}
    status, state = slurm_node.job_end(fields)
    return {'user': acct.get('user') or re.sub(r'\(\d+\)$', '', fields.get('UserId', '')),
            'job_state': acct.get('job_state') or state,
            'exit_status': acct.get('exit_status') or (status if status is not None else ''),
            'output': fields.get('StdErr') or fields.get('StdOut') or ''}


def classify_node_evidence(text, context='unknown'):
    """The evidence classify_failure.yml reads on the node (lines ``shm_size BLOCKS SIZE``,
    ``remove_ipc true|false``, ``linger yes|no``, ``remove_ipc_at [PATH:LINE]`` (the line that
    sets RemoveIPC, none for logind's default), a unit's ``oom_kill N``, ``memory_max V`` and
    ``memory_max_at PATH:LINE``, then ``--- kernel log`` and the log; a ``--- journal`` and what
    follows is the job's text, not evidence) as
    limits_classify's evidence; /dev/shm's size only outside containers (a container has its
    own)."""
    text = str(text or '').partition('--- journal')[0]
    head, _sep, log = text.partition('--- kernel log')
    own_ipc = registry.job_context(context).own_ipc
    found = {}
    for line in head.splitlines():
        parts = line.split()
        if parts[:1] == ['shm_size'] and len(parts) == 3 and not own_ipc:
            found['shm_size'] = int(parts[1]) * int(parts[2])
        elif parts[:1] == ['remove_ipc'] and len(parts) == 2:
            found['remove_ipc'] = 'yes' if parts[1] in ('true', 'yes') else 'no'
        elif parts[:1] == ['linger'] and len(parts) == 2:
            found['linger'] = parts[1] == 'yes'
        elif parts[:1] == ['oom_kill'] and len(parts) == 2 and parts[1].isdigit():
            found['oom_kill'] = int(parts[1])
        elif parts[:1] == ['memory_max'] and len(parts) == 2:
            found.setdefault('ceilings', {}).setdefault('memory', {})['value'] = parts[1]
        elif parts[:1] == ['memory_max_at'] and len(parts) == 2:
            found.setdefault('ceilings', {}).setdefault('memory', {})['source'] = parts[1]
        elif parts[:1] == ['remove_ipc_at']:
            at = parts[1] if len(parts) == 2 else ''
            found.setdefault('ceilings', {})['removeipc'] = {
                'value': found.get('remove_ipc', 'yes'),
                'source': at or "systemd-logind's default (no RemoveIPC= in logind.conf or "
                                "logind.conf.d)"}
    if log.strip():
        found['kernel_log'] = log.strip()
    return found


class FilterModule(object):
    """gpufleet.tuning filters that answer why a job died."""

    def filters(self):
        return {'limits_classify': limits_classify,
                'classify_slurm_fields': classify_slurm_fields,
                'classify_slurm_job': classify_slurm_job,
                'classify_node_evidence': classify_node_evidence}
