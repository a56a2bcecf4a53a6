# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DataLoader check's canaries of the failure modes beyond descriptors (docs/dataloader-check.md)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.filter.dataloader_check import (
    classified, last_line)

# canary -> the failure kind it must show ('' = it must pass)
EXPECTED = {
    'canary_shm': 'shm',
    'canary_shm_tuned': '',
    'canary_nproc': 'nproc',
}
WHAT = {'shm': 'shared memory (/dev/shm)', 'nproc': 'processes and threads (nproc)'}


def dataloader_check_canaries(results, records):
    """Judge the failure-mode canaries: each must fail with its own kind of error (the smoke
    test's ``exhausted``, classified from its measured peaks first, then its error text),
    ``canary_shm_tuned`` must pass. Adds ``canaries`` to the results,
    appends problems and flips ``ok`` when one does not behave, and extends the summary."""
    results = dict(results or {})
    problems = list(results.get('problems') or [])
    canaries, parts = {}, []
    for name, record in sorted((records or {}).items()):
        record = classified(dict(record or {}))
        expected = EXPECTED.get(name, '')
        got = record.get('exhausted') or ''
        short = name[len('canary_'):]
        entry = dict(failed=not record.get('ok'), exhausted=got, expected=expected,
                     error=last_line(record.get('error'), 120))
        if entry['failed']:
            entry['cause'] = record.get('cause', '')
        if expected:
            entry['as_expected'] = entry['failed'] and got == expected
            if not entry['failed']:
                problems.append('canary %s passed: the check cannot detect a lack of %s'
                                % (short, WHAT[expected]))
            elif got != expected:
                problems.append('canary %s failed for another reason than %s: %s'
                                % (short, WHAT[expected], entry['error']))
            parts.append('%s canary %s' % (short, 'failed as expected' if entry['as_expected']
                                           else 'WRONG'))
        else:
            entry['as_expected'] = not entry['failed']
            if entry['failed']:
                problems.append('canary %s (the same shape with enough /dev/shm) failed: %s'
                                % (short, entry['error']))
            parts.append('%s %s' % (short, 'passed' if entry['as_expected'] else 'FAILED'))
        canaries[short] = entry
    results['canaries'] = canaries
    results['problems'] = problems
    results['ok'] = bool(results.get('ok', True)) and not any(
        not c['as_expected'] for c in canaries.values())
    if parts:
        summary = results.get('summary', '')
        if not results['ok'] and ': OK: ' in summary:
            summary = summary.replace(': OK: ', ': FAILED: ', 1)
        results['summary'] = '%s; %s' % (summary, '; '.join(parts))
    return results


class FilterModule(object):
    """gpufleet.tuning filters for the DataLoader check's failure-mode canaries."""

    def filters(self):
        return {'dataloader_check_canaries': dataloader_check_canaries}
