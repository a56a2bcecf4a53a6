# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/audit_limits.yml's per-host reports, from each host's registered limits_audit
result, built once on the controller (no set_fact task per host), and the per-host files of
the probe proofs the controller keeps (limits_audit's ``proofs`` and ``probe_proofs``: the
node keeps none, issue 31 item 20)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.plugin_utils.lazy import module

# imported when a filter uses it (plugin_utils/lazy.py)
ci_reports = module('module_utils.reports.ci_reports')

#: the collection's root (galaxy.yml in a checkout, MANIFEST.json when installed)
COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

#: the parts of a limits_audit result a host's report keeps, and their value for a host that
#: could not be audited
KEPT = (('contexts', dict), ('errors', list), ('ceilings', dict), ('gaps', list),
        ('pam_invalid', list), ('systemd_pending', list), ('unwritable', list), ('kernel', list),
        ('core', dict), ('pids', dict), ('problems', list), ('findings', list))


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
                  rows=[dict(row, host=host) for row in result.get('rows') or []],
                  findings=[dict(entry, host=host) for entry in result.get('findings') or []])
    return report


def audit_host_reports(results, hosts):
    """{host: report} for ``hosts`` (in their order) from their registered results."""
    results, hosts = list(results), list(hosts)
    if len(results) != len(hosts):
        raise AnsibleFilterError('audit_host_reports: %d results for %d hosts'
                                 % (len(results), len(hosts)))
    return dict((host, audit_host_report(result, host)) for host, result in zip(hosts, results))


def valid_proofs(data):
    """The well-formed proofs of ``data`` ({context: {key, output, proved_at}}), others left
    out."""
    if not isinstance(data, dict):
        return {}
    found = {}
    for context, proof in data.items():
        if isinstance(context, str) and isinstance(proof, dict) \
                and isinstance(proof.get('key'), str) and isinstance(proof.get('output'), str) \
                and isinstance(proof.get('proved_at'), (int, float)) \
                and not isinstance(proof.get('proved_at'), bool):
            found[context] = dict(key=proof['key'], output=proof['output'],
                                  proved_at=proof['proved_at'])
    return found


def audit_proofs(text):
    """limits_audit's ``probe_proofs`` from a host's proofs file (its text, or None/'' when
    there is none). A file that is not JSON or holds no proof gives {}: the audit then starts a
    new container, which is all a lost proof costs."""
    if not text:
        return {}
    try:
        return valid_proofs(json.loads(text))
    except (TypeError, ValueError):
        return {}


def audit_proof_files(results, hosts):
    """{HOST.json: the proofs as JSON} of each host of ``hosts`` whose limits_audit call
    (``results``, in the same order) succeeded, for report_files to write on the controller.
    A host that could not be audited keeps its file as it was; a host name that is not a plain
    file name keeps none."""
    results, hosts = list(results), list(hosts)
    if len(results) != len(hosts):
        raise AnsibleFilterError('audit_proof_files: %d results for %d hosts'
                                 % (len(results), len(hosts)))
    files = {}
    for host, result in zip(hosts, results):
        if not isinstance(result, dict) or result.get('unreachable') or result.get('failed') \
                or not isinstance(result.get('proofs'), dict):
            continue
        name = '%s.json' % host
        if os.path.basename(name) != name or host in ('', '.', '..'):
            continue
        files[name] = json.dumps(valid_proofs(result['proofs']), indent=2, sort_keys=True) + '\n'
    return files


def collection_version(root=COLLECTION):
    """The collection's version: MANIFEST.json's (an installed collection), else galaxy.yml's
    (a checkout)."""
    try:
        with open(os.path.join(root, 'MANIFEST.json')) as handle:
            return str(json.load(handle)['collection_info']['version'])
    except (IOError, OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, 'galaxy.yml')) as handle:
            return str(yaml.safe_load(handle)['version'])
    except (IOError, OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise AnsibleFilterError('audit_sarif: no collection version in %s (MANIFEST.json or '
                                 'galaxy.yml): %s' % (root, exc))


def _report(report, name):
    if not isinstance(report, dict) or not isinstance(report.get('hosts'), dict):
        raise AnsibleFilterError('%s expects the audit report ({generated, profile, hosts: '
                                 '{host: report}}), got %s' % (name, type(report).__name__))
    return report


def audit_junit(report):
    """The audit report as JUnit XML text (module_utils/reports/ci_reports.py)."""
    return ci_reports.junit_xml(_report(report, 'audit_junit'))


def audit_sarif(report, version=None):
    """The audit report as a SARIF 2.1.0 log (a dict; to_nice_json writes it), the tool's
    version the collection's unless ``version`` is given."""
    return ci_reports.sarif_log(_report(report, 'audit_sarif'),
                                version if version else collection_version())


def audit_gap_failure(hosts):
    """audit_fail_on_gap's message naming the hosts, contexts and items with a gap, or ''."""
    if not isinstance(hosts, dict):
        raise AnsibleFilterError('audit_gap_failure expects the report\'s hosts mapping, got %s'
                                 % type(hosts).__name__)
    return ci_reports.gap_failure(hosts)


class FilterModule(object):
    def filters(self):
        return {'audit_host_reports': audit_host_reports,
                'audit_not_audited_reason': not_audited_reason,
                'audit_proofs': audit_proofs,
                'audit_proof_files': audit_proof_files,
                'audit_junit': audit_junit,
                'audit_sarif': audit_sarif,
                'audit_gap_failure': audit_gap_failure}
