# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the dataloader_check role, as plain functions: turn the smoke test's output into
a result record, and the records of all contexts plus the canary into the
``dataloader_check_results`` fact with a one-line summary and the list of problems that fail the
play; the results plot (SVG).

Everything here is plain Python (no Ansible import) so tests/unit can test it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.tuning.plugins.plugin_utils.lazy import module

# imported when a filter uses them (plugin_utils/lazy.py)
registry = module('module_utils.contexts')
cl = module('module_utils.model.classify')

_RESULT_DEFAULTS = {
    'ok': False, 'error': '', 'fd_exhausted': False, 'samples_per_s': 0.0, 'peak_fds': 0,
    'nofile_soft': None, 'nofile_hard': None,
}


# How close to a limit a measured peak must come for a failed run to count as that limit's
# exhaustion, whatever its error text (an EOFError, ConnectionResetError or BrokenPipeError of a
# worker queue, "received 0 items of ancdata"): within (absolute, fraction of the limit), the
# larger. Descriptors and threads: 2 or 2 % (the sampler itself holds one descriptor while it
# counts, and the call that failed wanted one or two more). /dev/shm: 5 %, as the sampler reads
# it every 50 ms and a worker fills the last megabytes between two reads.
NEAR = {'nofile': (2, 0.02), 'nproc': (2, 0.02), 'shm': (0, 0.05)}
KINDS = ('nofile', 'shm', 'nproc')


def _number(value):
    """An int from a record's field, or None (missing, 'unlimited', not a number)."""
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _mib(value):
    return '%.1f MiB' % (value / 1024.0 ** 2)


def measured_peaks(record):
    """{kind: (peak, limit, text)} of what one run measured against the limit in its context:
    descriptors of one process against soft nofile, threads of the run against soft nproc,
    /dev/shm in use (what was there before the run and the run's own peak) against the size
    of /dev/shm. A kind is left out where the peak or the limit is unknown or unlimited."""
    record = record or {}
    limits = record.get('limits') or {}
    peaks = {}
    nofile = _number(record.get('nofile_soft'))
    if nofile is None:
        nofile = _number((limits.get('nofile') or {}).get('soft'))
    fds = _number(record.get('peak_fds'))
    if nofile and fds is not None:
        peaks['nofile'] = (fds, nofile, 'peak %d of soft %d' % (fds, nofile))
    nproc = _number((limits.get('nproc') or {}).get('soft'))
    threads = _number(record.get('peak_threads'))
    if nproc and threads is not None:
        peaks['nproc'] = (threads, nproc, 'peak %d threads of soft %d' % (threads, nproc))
    size = _number(record.get('shm_size_bytes'))
    shm = _number(record.get('peak_shm_bytes'))
    if size and shm is not None:
        used = shm + (_number(record.get('shm_used_at_start_bytes')) or 0)
        peaks['shm'] = (used, size, 'peak %s of %s /dev/shm' % (_mib(used), _mib(size)))
    return peaks


def _peak_text(record):
    """'peak 4094 of soft 4096' for the kind a record ran out of ('' when not measured)."""
    found = measured_peaks(record).get(record.get('exhausted'))
    return found[2] if found else ''


def _near(kind, peak, limit):
    absolute, fraction = NEAR[kind]
    return peak >= limit - max(absolute, limit * fraction)


def classify_failure(record):
    """What a failed run ran out of: {kind, how, cause, text_kind}.

    The measured peaks decide where the error text names no limit: a run whose peak came
    within NEAR of a limit ran out of that limit, whatever else its error says (an EOFError,
    ConnectionResetError or BrokenPipeError of a worker queue; several near: the closest).
    An error that names one (the smoke test's ``exhausted``: Too many open files, No space
    left on device, can't start new thread: the errno of the call that failed) keeps it, as
    the sampler may miss a peak between two reads; how is 'peak' when its peak confirms it.
    kind: nofile, shm, nproc or '' (something else); how: 'peak', 'text' or ''; cause: one
    line, such as ``nofile: peak 4094 of soft 4096`` or ``other: EOFError: ...``."""
    record = record or {}
    # (a record of an older smoke test has fd_exhausted only)
    text_kind = record.get('exhausted') or ('nofile' if record.get('fd_exhausted') else '')
    if text_kind not in KINDS:
        text_kind = ''
    peaks = measured_peaks(record)
    near = [kind for kind in KINDS if kind in peaks and _near(kind, *peaks[kind][:2])]
    if near and text_kind in ('',) + tuple(near):
        kind = text_kind or max(near, key=lambda k: float(peaks[k][0]) / peaks[k][1])
        return dict(kind=kind, how='peak', cause='%s: %s' % (kind, peaks[kind][2]),
                    text_kind=text_kind)
    if text_kind:
        measured = [peaks[text_kind][2]] if text_kind in peaks else []
        measured += ['%s near its limit: %s' % (kind, peaks[kind][2]) for kind in near]
        cause = '%s: %s' % (text_kind, last_line(record.get('error'), 120))
        if measured:
            cause += ' (%s)' % '; '.join(measured)
        return dict(kind=text_kind, how='text', cause=cause, text_kind=text_kind)
    return dict(kind='', how='', cause='other: %s' % (last_line(record.get('error'), 120)
                                                      or 'no error text'),
                text_kind='')


def context_of(label):
    """The record of the context a run's label says it ran in (the answer's classify.Where),
    or None."""
    return dict([(registry.PAM.probe, registry.PAM), (registry.SYSTEM.probe, registry.SYSTEM),
                 ('container', registry.DOCKER), ('pod', registry.CRI)]).get(label)


def answer_of(record):
    """Why a failed run died (model/classify.answer): its error text and traceback in its
    context, with its measured peaks and the ceilings the run itself read (its
    /proc/self/limits, the size and use of its /dev/shm) as the evidence."""
    limits = record.get('limits') or {}
    text = '\n'.join(str(record.get(key) or '') for key in ('traceback', 'error'))
    used = _number(record.get('peak_shm_bytes'))
    if used is not None:
        used += _number(record.get('shm_used_at_start_bytes')) or 0
    peaks = dict(nofile=_number(record.get('peak_fds')),
                 threads=_number(record.get('peak_threads')), shm_bytes=used,
                 maps=max(_number(record.get('peak_maps_main')) or 0,
                          _number(record.get('peak_maps_worker')) or 0) or None)
    given = {}
    for item in ('nofile', 'nproc', 'memlock'):
        soft = (limits.get(item) or {}).get('soft')
        if item == 'nofile' and record.get('nofile_soft') is not None:
            soft = record['nofile_soft']
        if soft is not None:
            given[item] = {'value': soft, 'source': "soft %s of the run's /proc/self/limits "
                                                    "(the audit names its file)" % item}
    evidence = dict(peaks=dict((k, v) for k, v in peaks.items() if v is not None),
                    ceilings=given, shm_size=_number(record.get('shm_size_bytes')),
                    shm_peak=used, exit_status=record.get('rc'))
    record_of = context_of(str(record.get('label') or ''))
    if record_of is registry.DOCKER and record.get('engine'):
        record_of = registry.probed(record['engine'])
    where = record_of.job_context() if record_of else registry.job_context(None, text)
    return cl.answer(text, where, [], dict((k, v) for k, v in evidence.items()
                                           if v not in (None, {}, [])))


def classified(record):
    """The record with its failure classified (classify_failure): exhausted, fd_exhausted,
    exhausted_how, cause, and ``answer`` (answer_of); a run that passed gets none of it."""
    if record.get('ok') or record.get('cause'):
        return record
    found = classify_failure(record)
    record['exhausted'] = found['kind']
    record['fd_exhausted'] = found['kind'] == 'nofile'
    record['exhausted_how'] = found['how']
    record['cause'] = found['cause']
    record['answer'] = answer_of(record)
    return record


def _ceiling_words(record):
    """'; ceiling nofile' for a failed run whose answer names a ceiling, '; not a limit
    (cuda-fork)', '; ceiling pids.max or nproc (to decide: ...)' where the evidence does not
    decide, else ''."""
    found = record.get('answer')
    if not isinstance(found, dict):
        return ''
    if found.get('verdict') == cl.LIMIT:
        return '; ceiling %s' % found['ceiling']
    if found.get('verdict') == cl.NOT_A_LIMIT:
        return '; not a limit (%s)' % found['why']
    if found.get('candidates'):
        return '; ceiling %s (to decide: %s)' % (' or '.join(found['candidates']),
                                                 found.get('decide') or 'no evidence')
    return ''


def dataloader_check_parse(stdout, rc=None, stderr='', label=''):
    """The smoke test's JSON line from a command's stdout, as a result record.

    A run that printed no JSON (killed by `timeout`, no python, a crash before the report) gives
    a record with ok false and an error that says so, with the exit status and the stderr tail.
    """
    record = None
    for line in reversed(str(stdout or '').splitlines()):
        line = line.strip()
        if line.startswith('{') and line.endswith('}'):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                break
            record = None
    if record is None:
        tail = ' '.join(str(stderr or '').strip().splitlines()[-5:])
        why = 'timed out' if rc in (124, 137) else 'no result'
        record = {'error': '%s: the smoke test printed no JSON (exit status %s)%s'
                           % (why, rc, ': ' + tail if tail else '')}
    merged = dict(_RESULT_DEFAULTS)
    merged.update(record)
    merged['rc'] = rc
    if label:
        merged['label'] = label
    if merged['ok'] and rc not in (0, None):
        merged['ok'] = False
        merged['error'] = merged.get('error') or 'exit status %s' % rc
    return classified(merged)


def dataloader_check_parse_run(result):
    """dataloader_check_parse for a registered command result (a loop item names the context)."""
    result = result or {}
    if result.get('skipped'):
        return dict(_RESULT_DEFAULTS, error='not run (skipped)')
    label = result.get('item', '')
    record = dataloader_check_parse(result.get('stdout', ''), result.get('rc'),
                                    result.get('stderr', ''),
                                    label if isinstance(label, str) else '')
    wall = _seconds(result.get('delta'))
    if wall is not None:
        # the whole run as the context starts it: session or unit or container, python, torch
        record['wall_s'] = wall
    return record


def _seconds(delta):
    """A command result's ``delta`` ('0:00:12.345678') in seconds, or None."""
    try:
        hours, minutes, seconds = str(delta).split(':')
        return round(int(hours) * 3600 + int(minutes) * 60 + float(seconds), 3)
    except (TypeError, ValueError):
        return None


def last_line(text, width=160):
    lines = [line.strip() for line in str(text or '').splitlines() if line.strip()]
    # PyTorch's worker errors put the real cause on the last line, and its end says why
    # ("... Too many open files (24)"): keep the end.
    line = lines[-1] if lines else ''
    if len(line) <= width:
        return line
    # keep whole words: cut at the first space inside the last width - 4 characters
    tail = line[-(width - 4):]
    space = tail.find(' ')
    return '... ' + (tail[space + 1:] if 0 <= space < len(tail) - 1 else tail)


def _headroom(record):
    """soft nofile / peak descriptors of one process, as text ('' when unknown)."""
    try:
        return '%.1fx' % (float(record['nofile_soft']) / float(record['peak_fds']))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return ''


def dataloader_check_report(contexts, canary=None, host='', canary_enabled=True,
                            shm_leftovers=0):
    """The dataloader_check_results fact: contexts, canary, ok, problems, summary.

    contexts: {name: record}; canary: a record of the low-limit run (None when disabled).
    The canary must fail with a descriptor error; if it passes, or fails for another reason,
    the check itself is broken and says so.
    """
    problems = []
    parts = []
    report = {'host': host, 'contexts': {}, 'canary': None,
              'shm_leftovers_removed': int(shm_leftovers or 0)}
    if canary_enabled:
        canary = classified(dict(_RESULT_DEFAULTS, **(canary or {})))
        failed = not canary['ok']
        entry = {
            'failed': failed,
            'fd_exhausted': bool(canary.get('fd_exhausted')),
            'error': canary.get('error', ''),
            'nofile_soft': canary.get('nofile_soft'),
            'peak_fds': canary.get('peak_fds'),
            'elapsed_s': canary.get('elapsed_s'),
        }
        if failed:
            entry['cause'] = canary.get('cause', '')
        report['canary'] = entry
        if not failed:
            problems.append('canary did not fail at nofile %s (peak %s fds): the check is '
                            'broken, it cannot detect descriptor exhaustion'
                            % (entry['nofile_soft'], entry['peak_fds']))
            parts.append('canary PASSED (check broken)')
        elif not entry['fd_exhausted']:
            problems.append('canary failed for another reason than descriptors, the check is '
                            'broken: %s' % (last_line(entry['error'])
                                            if canary.get('exhausted_how') != 'peak'
                                            else entry['cause']))
            parts.append('canary failed wrongly')
        else:
            parts.append('canary failed as expected at nofile %s (%s)'
                         % (entry['nofile_soft'], last_line(entry['error'], 70)))
    for name in sorted(contexts or {}):
        record = classified(dict(_RESULT_DEFAULTS, **dict({'label': name},
                                                          **(contexts[name] or {}))))
        report['contexts'][name] = record
        limit = '%s/%s' % (record.get('nofile_soft'), record.get('nofile_hard'))
        shown = '%s (%s)' % (name, record['engine']) if record.get('engine') else name
        if record['ok']:
            headroom = _headroom(record)
            unit = 'images' if record.get('pipeline') == 'images' else 'samples'
            parts.append('%s ok %.2f %s/s with %s workers, peak %s fds of soft nofile %s '
                         '(nofile %s%s)'
                         % (shown, float(record['samples_per_s']), unit, record.get('num_workers'),
                            record['peak_fds'], record.get('nofile_soft'), limit,
                            ', headroom %s' % headroom if headroom else ''))
        else:
            # A run classified from its measured peaks says so before the error text, which
            # (an EOFError of a worker queue) does not name the limit.
            by_peak = record.get('exhausted_how') == 'peak'
            problems.append('%s: %s%s (nofile %s%s)' % (
                shown, '%s ran out (%s): ' % (record['exhausted'], _peak_text(record))
                if by_peak else '', last_line(record['error']), limit,
                _ceiling_words(record)))
            parts.append('%s FAILED%s%s nofile %s' % (
                shown, ' (%s ran out)' % record['exhausted'] if record.get('exhausted') else '',
                ' at %s,' % _peak_text(record) if by_peak else '', limit))
    report['problems'] = problems
    report['ok'] = not problems
    verdict = 'OK' if not problems else 'FAILED'
    report['summary'] = '%s: %s: %s' % (host or 'host', verdict, '; '.join(parts))
    return report


def _xml(text):
    return str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def dataloader_check_plot_svg(results, width=480, height=300):
    """An SVG line plot of samples/s against num_workers from the contexts' sweeps.

    results: the dataloader_check_results fact. Each context with a `sweep` (its own run counts
    as one more point) is one line; a failed point is a red cross on the axis, listed under the
    plot with its error. '' when there is nothing to plot.
    """
    lines = {}
    failed = []
    for name, record in sorted(((results or {}).get('contexts') or {}).items()):
        failed.extend((name, int(p['num_workers']), last_line(p.get('error'), 70))
                      for p in (record.get('sweep') or []) if not p.get('ok'))
        points = [(int(p['num_workers']), float(p['samples_per_s']))
                  for p in (record.get('sweep') or []) if p.get('ok')]
        if not points and not any(f[0] == name for f in failed):
            continue
        if record.get('ok') and record.get('num_workers'):
            points.append((int(record['num_workers']), float(record['samples_per_s'])))
        lines[name] = sorted(set(points))
    if not lines:
        return ''
    left, right, top, bottom = 60, 20, 30, 45
    height += 14 * len(failed)
    bottom += 14 * len(failed)
    xs = [x for pts in lines.values() for x, _y in pts] + [f[1] for f in failed]
    ys = [y for pts in lines.values() for _x, y in pts] or [0.0]
    x_min = min(xs)
    x_max = max(xs + [x_min + 1])
    y_max = max(ys) * 1.1 or 1.0

    def px(x):
        return left + (x - x_min) * (width - left - right) / float(x_max - x_min)

    def py(y):
        return height - bottom - y * (height - top - bottom) / y_max

    colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd']
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<text x="%d" y="18" font-size="13">%s: DataLoader throughput against num_workers'
           '</text>' % (left, results.get('host', '')),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
           % (left, height - bottom, width - right, height - bottom),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
           % (left, top, left, height - bottom),
           '<text x="%d" y="%d">num_workers</text>' % ((width - 60) // 2, height - 8),
           '<text x="12" y="%d" transform="rotate(-90 12 %d)">samples/s</text>'
           % (height // 2 + 25, height // 2 + 25)]
    for x in sorted(set(xs)):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (px(x), height - bottom + 15, x))
    for tick in range(5):
        y = y_max * tick / 4.0
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (left - 5, py(y) + 4, y))
    for index, (name, pts) in enumerate(sorted(lines.items())):
        colour = colours[index % len(colours)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (colour, ' '.join('%.1f,%.1f' % (px(x), py(y)) for x, y in pts)))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), colour))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>'
                   % (width - right - 80, top + 14 * (index + 1), colour, name))
    for index, (name, workers, error) in enumerate(failed):
        x, y = px(workers), py(0)
        out.append('<path d="M%.1f,%.1f l8,8 m0,-8 l-8,8" stroke="#d62728" stroke-width="2" '
                   'class="failed"/>' % (x - 4, y - 4))
        out.append('<text x="%d" y="%d" fill="#d62728">failed: %s, %d workers: %s</text>'
                   % (left, height - bottom + 45 + 14 * index, _xml(name), workers, _xml(error)))
    out.append('</svg>')
    return '\n'.join(out) + '\n'


class FilterModule(object):
    """gpufleet.tuning filters for the dataloader_check role."""

    def filters(self):
        return {
            'dataloader_check_parse': dataloader_check_parse,
            'dataloader_check_parse_run': dataloader_check_parse_run,
            'dataloader_check_report': dataloader_check_report,
            'dataloader_check_plot_svg': dataloader_check_plot_svg,
        }
