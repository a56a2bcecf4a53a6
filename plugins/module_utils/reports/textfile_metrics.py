# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Limits audits as node_exporter textfile metrics: the rendering and the atomic write.

Plain Python (no Ansible import), runs on Python 3.8 targets. Used by drift_watch.py (the
node-side audit on a timer); docs/drift-watch.md lists the metrics.

Conventions (prometheus/node_exporter README and collector/textfile.go, prometheus docs
practices/naming.md and exposition_formats.md):

* one prefix, ``gpufleet_limits_``; base units in the name (``_bytes``, ``_seconds``) and never
  two units in one metric name, so size items (bytes), cpu (seconds) and counts (nofile, nproc,
  ...) are three metric names per quantity, told apart by the item's kind;
* ``+Inf`` for unlimited; one HELP and one TYPE line per name, before its samples; no
  client-side timestamps (node_exporter skips a file that has any);
* low-cardinality labels only: ``context`` (login, service, user_manager, docker, podman,
  unit:NAME), ``item``, ``side``, ``reason``;
* the file is written to a temporary name in the same directory (not ``*.prom``, so
  node_exporter never reads it half-written), flushed to disk, then renamed over the old one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import glob
import os
import re
import tempfile
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings

PREFIX = 'gpufleet_limits_'
FILE_NAME = 'gpufleet_limits.prom'
TEMP_PREFIX = '.gpufleet_limits.'
TEMP_SUFFIX = '.tmp'
# Temporary files of a run that was killed are removed after this many seconds.
STALE_TEMP_SECONDS = 600

# Why an audit produced no values (label ``reason`` of gpufleet_limits_audit_error).
REASONS = ('profile_missing', 'profile_invalid', 'audit_failed', 'crashed', 'timeout')

LAST_SUCCESS = PREFIX + 'audit_last_success_timestamp_seconds'
_LAST_SUCCESS_RE = re.compile(r'^%s (\S+)$' % re.escape(LAST_SUCCESS), re.MULTILINE)

_HELP = {
    'soft': 'Soft limit a new process gets in the context (+Inf: unlimited).',
    'hard': 'Hard limit a new process gets in the context (+Inf: unlimited).',
    'gap': 'How far the context is below the profile on this side (0: not below).',
    'compliant': '1 when the context gets at least the profile on both sides, else 0.',
    'profile_info': 'The profile the node is audited against (values in the metric units).',
    'probe_error': '1 for a context whose probe failed in the last audit.',
    'probe_pending': '1 for a context whose probe could not start now (a Slurm node running '
                     'jobs): not verified, not failed.',
    'audit_success': '1 when the last audit ran, 0 when it failed (see audit_error).',
    'audit_error': '1 with the reason the last audit failed.',
    'audit_last_success_timestamp_seconds': 'Unix time of the last audit that ran.',
    'audit_duration_seconds': 'Wall time of the last audit.',
    'audit_period_seconds': 'Longest expected time between two audits (timer period plus '
                            'its random delay).',
    'systemd_pending': 'systemd limits settings written but not applied yet (restart owed).',
    # kernel ceilings: the live values are node_exporter's own (node_filefd_maximum,
    # node_processes_max_threads, node_sysctl_*; docs/drift-watch.md), never repeated here
    'sysctl_configured': 'The value the sysctl configuration sets for a kernel ceiling at boot '
                         '(the line that wins as systemd-sysctl reads them).',
    'sysctl_minimum': 'The minimum the profile asks for a kernel ceiling.',
    'sysctl_gap': 'How far the live kernel ceiling is below the minimum (0: not below).',
    'pids_max': 'The cgroup pids.max that governs a new process in the context (the smallest '
                'of its cgroup and their parents; +Inf: max).',
    'pids_gap': 'How far the pids.max of the context is below the profile\'s pids (0: not '
                'below).',
    # the recorded components (reports/node_state.component_metrics, issue 34 item 5)
    'component_info': 'A daemon whose upgrade can change limits: its installed version and '
                      'the short sha256 of its unit files and drop-ins.',
    'component_changed_timestamp_seconds': 'Unix time the watch first saw the component\'s '
                                           'version or unit files change (0: none seen).',
    'sysctl_not_applied': '1 when a sysctl file sets another value than the kernel has '
                          '(configured, not applied; read_only=1 where /proc/sys is read-only).',
}


class MetricsWriteError(Exception):
    """The metrics file cannot be written; the message names the directory and why."""


def unit_suffix(item):
    """'_bytes' for size items (and msgqueue, bytes in the kernel), '_seconds' for cpu, ''."""
    kind = model.ITEMS[item].kind if item in model.ITEMS else 'count'
    if kind == 'size' or item == 'msgqueue':
        return '_bytes'
    if kind == 'time':
        return '_seconds'
    return ''


def value(number):
    """A sample value: ints as ints, unlimited as +Inf, None as NaN."""
    if number is None:
        return 'NaN'
    if model.is_unlimited(number) or number == float('inf'):
        return '+Inf'
    if isinstance(number, float):
        return repr(number) if number != int(number) or abs(number) >= 1e15 else str(int(number))
    return str(int(number))


def _info_value(number):
    """A profile side as a label value: '' when the profile leaves that side alone."""
    return '' if number is None else value(number)


def escape(text):
    return str(text).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def labels(pairs):
    if not pairs:
        return ''
    return '{%s}' % ','.join('%s="%s"' % (k, escape(v)) for k, v in pairs)


def gap(expected, actual):
    """How far ``actual`` is below ``expected`` (kernel units or unlimited): 0 when not below,
    +Inf when the profile says unlimited and the context has a number."""
    if expected is None or actual is None:
        return None
    if model.compare(actual, expected) >= 0:
        return 0
    if model.is_unlimited(expected):
        return float('inf')
    return expected - actual


class Families(object):
    """Metric families in first-use order, each with its HELP, TYPE and samples."""

    def __init__(self):
        self.order = []
        self.samples = {}
        self.meta = {}

    def add(self, name, key, pairs, number, kind='gauge'):
        full = PREFIX + name
        if full not in self.samples:
            self.order.append(full)
            self.samples[full] = []
            self.meta[full] = (_HELP[key], kind)
        self.samples[full].append('%s%s %s' % (full, labels(pairs), value(number)))

    def render(self):
        out = []
        for name in self.order:
            help_text, kind = self.meta[name]
            out.append('# HELP %s %s' % (name, help_text))
            out.append('# TYPE %s %s' % (name, kind))
            out.extend(self.samples[name])
        return '\n'.join(out) + '\n' if out else ''


def _node_metrics(families, success, last_success, duration, period, reason=None):
    families.add('audit_success', 'audit_success', [], 1 if success else 0)
    if reason:
        families.add('audit_error', 'audit_error', [('reason', reason)], 1)
    if last_success is not None:
        families.add('audit_last_success_timestamp_seconds',
                     'audit_last_success_timestamp_seconds', [], last_success)
    if duration is not None:
        families.add('audit_duration_seconds', 'audit_duration_seconds', [], round(duration, 3))
    if period is not None:
        families.add('audit_period_seconds', 'audit_period_seconds', [], period)


def render_audit(result, profile_items, now, duration=None, period=None):
    """The metrics text of a successful audit.

    ``result``: the audit's result (``contexts`` {context: {limits: {item: {soft, hard}}}},
    ``expected`` {item: {soft, hard}}, ``gaps``, ``errors`` [{context, msg, kind}] (kind
    ``busy``: a pending probe),
    ``systemd_pending``); ``profile_items``: the profile's item names, the only items shown.
    """
    families = Families()
    expected = result.get('expected') or {}
    items = [i for i in profile_items if i in expected]
    failed = set(e.get('context') for e in result.get('errors') or [])
    pending = set(e.get('context') for e in result.get('errors') or [] if e.get('kind') == 'busy')
    contexts = [c for c in result.get('contexts') or {} if c not in failed]
    for side in ('soft', 'hard'):
        for context in contexts:
            limits = result['contexts'][context].get('limits') or {}
            for item in items:
                if item in limits and limits[item].get(side) is not None:
                    families.add(side + unit_suffix(item), side,
                                 [('context', context), ('item', item)], limits[item][side])
    for context in contexts:
        limits = result['contexts'][context].get('limits') or {}
        for item in items:
            for side in ('soft', 'hard'):
                got = (limits.get(item) or {}).get(side)
                distance = gap(expected[item].get(side), got)
                if distance is not None:
                    families.add('gap' + unit_suffix(item), 'gap',
                                 [('context', context), ('item', item), ('side', side)], distance)
    # compliant: the findings, as findings.OUTLETS['metrics'] says (a node where no session
    # opens and a kernel ceiling below its minimum are 0 too)
    for entry in findings.of(result):
        cell = findings.action('metrics', entry)
        if cell in ('compliant', 'not_compliant'):
            families.add('compliant', 'compliant', [('context', entry['context']),
                                                    ('item', entry['item'])],
                         1 if cell == 'compliant' else 0)
    for item in items:
        families.add('profile_info', 'profile_info', [
            ('item', item), ('soft', _info_value(expected[item].get('soft'))),
            ('hard', _info_value(expected[item].get('hard')))], 1)
    for context in sorted(failed - pending):
        families.add('probe_error', 'probe_error', [('context', context)], 1)
    for context in sorted(pending):
        families.add('probe_pending', 'probe_pending', [('context', context)], 1)
    families.add('systemd_pending', 'systemd_pending', [],
                 len(result.get('systemd_pending') or []))
    pids_metrics(families, [r for r in result.get('rows') or [] if r.get('item') == 'pids'])
    kernel_metrics(families, result.get('kernel') or [])
    _node_metrics(families, True, now, duration, period)
    return families.render()


def pids_metrics(families, rows):
    """The pids rows (run/pids_audit.rows) as metrics, label ``context``: the pids.max a new
    process gets and how far below the profile (``compliant`` with ``item="pids"`` comes from
    the findings, with every other item)."""
    for row in rows:
        pairs = [('context', row['context'])]
        effective = pids_model.parse_pids_max(row['actual']) if row['actual'] not in (
            '(unknown)', None) else None
        if effective is None:
            continue
        families.add('pids_max', 'pids_max', pairs,
                     float('inf') if effective == pids_model.UNLIMITED else effective)
        wanted = str(row.get('expected') or '').split(' ', 1)[0]
        wanted = pids_model.parse_pids_max(wanted) if wanted and wanted != '(unknown)' else None
        if wanted is not None:
            distance = 0 if not pids_model.below(effective, wanted) else (
                float('inf') if wanted == pids_model.UNLIMITED else wanted - effective)
            families.add('pids_gap', 'pids_gap', pairs, distance)


def kernel_metrics(families, rows):
    """The kernel rows (reports/kernel_ceilings.rows) as metrics, label ``sysctl``: what
    node_exporter cannot know (the configured value, the minimum, the gap, not applied)."""
    for row in rows:
        pairs = [('sysctl', row['name'])]
        if row.get('configured') is not None:
            families.add('sysctl_configured', 'sysctl_configured', pairs, row['configured'])
        if row.get('minimum') is not None:
            families.add('sysctl_minimum', 'sysctl_minimum', pairs, row['minimum'])
        if row.get('gap') is not None:
            families.add('sysctl_gap', 'sysctl_gap', pairs, row['gap'])
        if row.get('state') == 'configured_not_applied':
            families.add('sysctl_not_applied', 'sysctl_not_applied',
                         pairs + [('read_only', '1' if row.get('read_only') else '0')], 1)


def render_failure(reason, last_success=None, duration=None, period=None):
    """The metrics text of an audit that could not run: no limit values (none are known), the
    reason, and the time of the last audit that did run (from the previous file)."""
    if reason not in REASONS:
        raise ValueError('unknown reason %r' % reason)
    families = Families()
    _node_metrics(families, False, last_success, duration, period, reason)
    return families.render()


def previous_last_success(directory, name=FILE_NAME):
    """The last-success time in the file a previous run wrote, or None."""
    try:
        with open(os.path.join(directory, name)) as handle:
            found = _LAST_SUCCESS_RE.search(handle.read())
    except (IOError, OSError, UnicodeDecodeError):
        return None
    if not found:
        return None
    try:
        return float(found.group(1))
    except ValueError:
        return None


def remove_stale_temps(directory, now=None, age=STALE_TEMP_SECONDS):
    """Remove temporary files a killed run left (older than ``age`` seconds)."""
    now = time.time() if now is None else now
    for path in glob.glob(os.path.join(directory, TEMP_PREFIX + '*' + TEMP_SUFFIX)):
        try:
            if now - os.stat(path).st_mtime > age:
                os.unlink(path)
        except OSError:
            pass


def write_atomic(directory, text, name=FILE_NAME, mode=0o644):
    """Write ``text`` as ``directory/name``: a temporary file in the same directory, flushed
    and synced, then renamed over the old file (node_exporter sees the old or the new file,
    never a part). MetricsWriteError names the directory and the reason."""
    if not os.path.isdir(directory):
        raise MetricsWriteError('metrics directory %s does not exist' % directory)
    remove_stale_temps(directory)
    try:
        handle, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=directory)
    except OSError as exc:
        reason = 'read-only file system' if exc.errno == errno.EROFS else exc.strerror
        raise MetricsWriteError('cannot write to metrics directory %s: %s' % (directory, reason))
    try:
        try:
            data = text.encode('utf-8')
            while data:
                data = data[os.write(handle, data):]
            os.fchmod(handle, mode)
            os.fsync(handle)
        finally:
            os.close(handle)
        os.rename(temp, os.path.join(directory, name))
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise MetricsWriteError('cannot write %s: %s' % (os.path.join(directory, name),
                                                         exc.strerror))
    safe_file.fsync_directory(directory)
    return os.path.join(directory, name)
