# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/audit_limits.yml's per-host reports, from each host's registered limits_audit
result, built once on the controller (no set_fact task per host)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

#: the parts of a limits_audit result a host's report keeps, and their value for a host that
#: could not be audited
KEPT = (('contexts', dict), ('errors', list), ('ceilings', dict), ('gaps', list),
        ('pam_invalid', list), ('systemd_pending', list), ('unwritable', list))


def not_audited_reason(result):
    """Why a host could not be audited: 'unreachable: MSG' or 'audit failed: MSG'."""
    message = result.get('msg', 'no message')
    return (('unreachable: ' if result.get('unreachable') else 'audit failed: ')
            + str(message if message is not None else 'no message').strip())


def audit_host_report(result, host):
    """One host's part of the report: what its limits_audit call returned (its rows named
    with the host), or, when the host was unreachable or the call failed, audited false and
    the reason as its one error."""
    if not isinstance(result, dict):
        raise AnsibleFilterError('audit_host_reports: %s has no limits_audit result (got %s)'
                                 % (host, type(result).__name__))
    if result.get('unreachable') or result.get('failed'):
        report = dict((key, kind()) for key, kind in KEPT)
        report.update(audited=False, rows=[], job_fit={},
                      errors=[{'context': 'host', 'msg': not_audited_reason(result)}])
        return report
    report = dict((key, result.get(key) or kind()) for key, kind in KEPT)
    report.update(audited=True, job_fit=result.get('job_fit') or {},
                  rows=[dict(row, host=host) for row in result.get('rows') or []])
    return report


def audit_host_reports(results, hosts):
    """{host: report} for ``hosts`` (in their order) from their registered results."""
    results, hosts = list(results), list(hosts)
    if len(results) != len(hosts):
        raise AnsibleFilterError('audit_host_reports: %d results for %d hosts'
                                 % (len(results), len(hosts)))
    return dict((host, audit_host_report(result, host)) for host, result in zip(hosts, results))


class FilterModule(object):
    def filters(self):
        return {'audit_host_reports': audit_host_reports,
                'audit_not_audited_reason': not_audited_reason}
