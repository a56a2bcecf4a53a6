# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which ceiling a failed job ran into (module_utils/model/classify.py; docs/job-shape.md,
"Which ceiling failed"), and a node's ceilings with their sources from an audit."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify as cl

# the sysctls a node's kernel values come in as (the playbook reads them from /proc/sys)
SYSCTLS = ('vm.max_map_count', 'fs.file-max', 'fs.inotify.max_user_instances',
           'fs.inotify.max_user_watches')


def _mapping(value, name):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AnsibleFilterError('limits_classify: %s must be a mapping, not %r' % (name, value))
    return value


def limits_classify(text, peaks=None, ceilings=None):
    """The verdict of model/classify.classify with a one-line ``summary``."""
    if isinstance(text, (list, tuple)):
        text = '\n'.join(str(line) for line in text)
    peaks = _mapping(peaks, 'peaks')
    ceilings = _mapping(ceilings, 'ceilings')
    unknown = sorted(set(ceilings) - set(cl.CEILINGS))
    if unknown:
        raise AnsibleFilterError('limits_classify: unknown ceiling(s) %s; known: %s'
                                 % (', '.join(unknown), ', '.join(cl.CEILINGS)))
    verdict = cl.classify(text, peaks, ceilings)
    verdict['summary'] = cl.summary(verdict)
    return verdict


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _soft(actual):
    """The soft side of an audit row's 'soft:hard' (or a {soft, hard} mapping)."""
    if isinstance(actual, dict):
        return actual.get('soft')
    return str(actual).split(':', 1)[0] if actual not in (None, '') else None


def limits_ceilings(audit, context, kernel=None, shm_bytes=None, extra=None):
    """{ceiling: {value, source}} of one context from a limits_audit result (its rows: the soft
    value a new process gets there and the file:line that sets it; its pids row, when the
    audit's profile has pids, as ``pids.max``; its ``kernel`` rows: the live sysctls, with the
    line that sets them), the node's sysctls given apart (``kernel``: {sysctl: value}, source
    /proc/sys/..., winning over the audit's), the size of /dev/shm and ``extra`` ceilings the
    caller knows (a pod's pids.max: {value, source}) that win over the rest."""
    audit = _mapping(audit, 'audit')
    found = {}
    for row in audit.get('rows') or []:
        if row.get('context') == context and row.get('item') in ('nofile', 'nproc'):
            found[row['item']] = {'value': _soft(row.get('actual')),
                                  'source': row.get('source') or 'unknown'}
        if row.get('context') == context and row.get('item') == 'pids' and \
                _int(row.get('actual')) is not None:
            # the pids row (an audit with pids in its profile): the cgroup's pids.max ('max':
            # no ceiling)
            found['pids.max'] = {'value': _int(row['actual']),
                                 'source': row.get('source') or 'unknown'}
    for item in ('nofile', 'nproc'):
        limits = ((audit.get('contexts') or {}).get(context) or {}).get('limits') or {}
        if item not in found and item in limits:
            found[item] = {'value': limits[item].get('soft'),
                           'source': 'probed in %s (no source reported)' % context}
    for row in audit.get('kernel') or []:
        # the audit's kernel rows: the live value, and the line that sets it when it is live
        if row.get('name') in SYSCTLS and row.get('live') is not None:
            found[row['name']] = {'value': row['live'], 'source': row['source'] if row.get(
                'source') and row.get('configured') == row['live'] else '/proc/sys/%s' % row[
                    'name'].replace('.', '/')}
    for name, value in sorted(_mapping(kernel, 'kernel').items()):
        if name not in SYSCTLS:
            raise AnsibleFilterError('limits_ceilings: kernel: %s is not one of %s'
                                     % (name, ', '.join(SYSCTLS)))
        found[name] = {'value': value, 'source': '/proc/sys/%s' % name.replace('.', '/')}
    if shm_bytes not in (None, ''):
        found['shm'] = {'value': shm_bytes, 'source': 'the /dev/shm mount (statfs)'}
    found.update(_mapping(extra, 'extra'))
    return found


class FilterModule(object):
    """gpufleet.tuning filters that name the ceiling a failure ran into."""

    def filters(self):
        return {
            'limits_classify': limits_classify,
            'limits_ceilings': limits_ceilings,
        }
