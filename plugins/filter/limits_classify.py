# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why did my job die (module_utils/model/classify.py; docs/job-shape.md, "Why did my job
die"): the answer from an error text, the context the job ran in, the node's audit and its
evidence."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify as cl
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings as fd


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
    if context not in cl.CONTEXTS:
        raise AnsibleFilterError('limits_classify: context %r is not one of %s'
                                 % (context, ', '.join(cl.CONTEXTS)))
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
    if isinstance(audit, list):
        found = audit
    else:
        audit = _mapping(audit, 'audit')
        found = fd.of(audit) if audit else []
        evidence['ceilings'] = dict(kernel_ceilings(audit), **given)
    return cl.answer(text, context, found, evidence)


class FilterModule(object):
    """gpufleet.tuning filters that answer why a job died."""

    def filters(self):
        return {'limits_classify': limits_classify}
