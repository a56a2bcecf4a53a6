# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift watch's audit as Kubernetes node state (issue 34 items 2 and 5): the answer file
the node-problem-detector plugin prints, the Node Feature Discovery local feature file, and the
recorded components as textfile metrics. Plain Python, Python 3.8; docs/node-state.md.

One evaluation: everything here renders the audit's findings (reports/findings.py), as
``findings.OUTLETS['npd']`` and ``['nfd']`` say, with no judgement of its own. A context is the
worst of its findings: ``broken`` (no session opens there), ``short`` (a gap, or a setting not
applied yet), ``unknown`` (its probe failed or could not start now), else ``ok``; kernel
ceilings are the context ``kernel``. The node is ``broken`` when any context is (NPD NonOK,
label false), else ``short`` when any is, else ``ok``; ``unknown`` only when the audit did not
run: a failed probe leaves its context unknown and is named in the message, but does not make
the node unknown, as in the alert rules (a gap is a warning, a failed probe information):
root's user manager comes and goes with sessions, and a node label must not flap with it.

Formats (cited in docs/node-state.md):

* node-problem-detector custom plugins (kubernetes/node-problem-detector
  docs/custom_plugin_monitor.md, pkg/custompluginmonitor/plugin/plugin.go): exit 0 OK,
  1 NonOK, anything else Unknown; stdout, trimmed and cut at ``max_output_length``, is the
  condition's message. The plugin (files/check_gpufleet_limits.sh) must answer within its
  timeout, so it prints what the watch wrote (:func:`npd_status_text`) and only checks that it
  is fresh: ``exit``, ``expires`` (Unix time), ``message``, one ``key=value`` a line.
* NFD local feature files (kubernetes-sigs/node-feature-discovery docs/usage/
  customization-guide.md, "Local feature source"): ``<namespace>/<name>[=<value>]`` lines,
  ``#`` comments, ``# +expiry-time=<RFC3339>`` for the lines after it, 64 kB at most, dot
  files ignored (so a ``.name`` temporary renamed over the file is atomic). The label name is
  a Kubernetes qualified name (name part: 63 characters at most, alphanumeric at both ends,
  ``-_.`` inside) and the value a label value (63 at most, same characters, may be empty).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import component_versions as cv
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import textfile_metrics as tm

OK, SHORT, UNKNOWN, BROKEN = 'ok', 'short', 'unknown', 'broken'
#: NPD plugin exit status per node verdict
EXIT = {OK: 0, SHORT: 1, UNKNOWN: 2, BROKEN: 1}
#: NFD label value per verdict
LABEL_VALUE = {OK: 'true', SHORT: 'false', UNKNOWN: 'unknown', BROKEN: 'false'}
LABEL_PREFIX = 'gpufleet.io/'
NODE_LABEL = 'limits-ok'
#: the longest message the watch writes (the shipped NPD config's max_output_length)
MAX_MESSAGE = 200
NAME_MAX = 63
_NAME_RE = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
_BAD = re.compile(r'[^A-Za-z0-9_.-]')


class Verdict(object):
    """The node's state from one audit: ``state`` (ok, short, unknown), ``contexts``
    {context: state}, ``short`` [(context, item)], ``failed`` [context], ``reason`` and
    ``msg`` when the audit did not run."""

    def __init__(self, state, contexts=None, short=None, failed=None, reason=None, msg='',
                 problems=None):
        self.state = state
        self.problems = problems or []
        self.contexts = contexts or {}
        self.short = short or []
        self.failed = failed or []
        self.reason = reason
        self.msg = msg


def verdict(result):
    """The Verdict of an audit that ran (``result`` as drift_watch's child returns it): its
    findings (reports/findings.py) as findings.OUTLETS['npd'] says, per context and for the
    node (the worst: broken, short, unknown, ok)."""
    found = findings.of(result)
    contexts = findings.context_states('npd', found)
    short = [(f['context'], f['item']) for f in found if findings.action('npd', f) == 'short']
    failed = sorted(set(f['context'] for f in found
                        if f['status'] == findings.PROBE_ERROR))
    problems = [f for f in found if findings.action('npd', f) == 'broken']
    state = findings.node_state('npd', found)
    if state == UNKNOWN:
        # a failed probe leaves its context unknown, not the node (the module docstring)
        state = OK
    causes = []
    for entry in problems:
        if entry['cause'] not in causes:
            causes.append(entry['cause'])
    return Verdict(state, contexts, short, failed, problems=[dict(
        context=', '.join(sorted(set(f['context'] for f in problems if f['cause'] == cause))),
        msg=cause) for cause in causes])


def failure_verdict(reason, msg):
    """The Verdict of an audit that did not run (drift_watch's Outcome reason and message)."""
    return Verdict(UNKNOWN, reason=reason, msg=msg)


def message(found):
    """The NPD message: the most useful words first, at most MAX_MESSAGE characters."""
    if found.reason:
        text = 'gpufleet limits audit failed (%s): %s' % (found.reason, found.msg)
    elif found.state == BROKEN:
        text = 'broken: ' + '; '.join('%s: %s' % (p.get('context'), p.get('msg'))
                                      for p in found.problems)
    elif found.state == SHORT:
        parts = ['%s %s' % pair for pair in found.short]
        text = 'limits below the gpufleet profile: ' + ', '.join(parts)
        if len(text) > MAX_MESSAGE:
            shown = []
            for part in parts:
                candidate = ', '.join(shown + [part])
                tail = ' (+%d more)' % (len(parts) - len(shown) - 1)
                if len('limits below the gpufleet profile: ' + candidate + tail) > MAX_MESSAGE:
                    break
                shown.append(part)
            text = 'limits below the gpufleet profile: %s (+%d more)' % (
                ', '.join(shown), len(parts) - len(shown))
    else:
        text = 'limits at the gpufleet profile in %d contexts' % len(
            [c for c in found.contexts.values() if c == OK])
        if found.failed:
            text += '; not verified (probe failed): %s' % ', '.join(found.failed)
    text = ' '.join(text.split())
    return text[:MAX_MESSAGE]


def npd_status_text(found, now, period=None):
    """The answer file of the NPD plugin: ``verdict``, ``exit``, ``written``, ``expires``
    (after two periods without a new audit the plugin answers Unknown), ``message``."""
    written = int(now)
    expires = written + 2 * int(period) if period else written + 2 * 3600
    return ('# gpufleet.tuning drift watch: the node-problem-detector plugin '
            'check_gpufleet_limits.sh prints this\n'
            'verdict=%s\nexit=%d\nwritten=%d\nexpires=%d\nmessage=%s\n'
            % (found.state, EXIT[found.state], written, expires, message(found)))


def label_name(context):
    """The NFD label name (without the prefix) of a context's verdict: ``limits-ok.CONTEXT``
    with characters a label name cannot have made ``-`` (``unit:x.service`` ->
    ``limits-ok.unit-x.service``), cut and suffixed with a hash when too long."""
    base = NODE_LABEL + '.'
    part = _BAD.sub('-', context)
    if len(base + part) > NAME_MAX:
        digest = hashlib.sha256(context.encode('utf-8')).hexdigest()[:8]
        part = part[:NAME_MAX - len(base) - 9].rstrip('-_.') + '-' + digest
    name = (base + part).rstrip('-_.')
    if not _NAME_RE.match(name):
        name = base + hashlib.sha256(context.encode('utf-8')).hexdigest()[:16]
    return name


def nfd_features_text(found, now, period=None):
    """The NFD local feature file: ``gpufleet.io/limits-ok`` (true, false, unknown) and one
    ``gpufleet.io/limits-ok.CONTEXT`` per audited context, expiring after two periods without
    a new audit (NFD then drops them at its next pass)."""
    lines = ['# gpufleet.tuning drift watch (role limits_watch): written by '
             'gpufleet-limits-watch.service at %s; do not edit' % _rfc3339(now)]
    if period:
        lines.append('# +expiry-time=%s' % _rfc3339(now + 2 * int(period)))
    lines.append('%s%s=%s' % (LABEL_PREFIX, NODE_LABEL, LABEL_VALUE[found.state]))
    used = set()
    for context in sorted(found.contexts):
        name = label_name(context)
        if name in used:    # two contexts made the same name: tell them apart by a hash
            name = NODE_LABEL + '.' + hashlib.sha256(context.encode('utf-8')).hexdigest()[:16]
        used.add(name)
        lines.append('%s%s=%s' % (LABEL_PREFIX, name, LABEL_VALUE[found.contexts[context]]))
    return '\n'.join(lines) + '\n'


def _rfc3339(when):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(when))


def component_metrics(state):
    """The recorded components as metrics text: ``gpufleet_limits_component_info`` (1, the
    version and the short hash of the unit files as labels) for each component present, and
    ``gpufleet_limits_component_changed_timestamp_seconds`` (0: no change seen since the
    first record) for each component on record."""
    families = tm.Families()
    for name in cv.NAMES:
        entry = state.get(name)
        if entry and entry.get('version') is not None:
            families.add('component_info', 'component_info', [
                ('component', name), ('version', entry['version']),
                ('package', entry.get('package') or ''), ('source', entry.get('source') or ''),
                ('units_sha256', cv.short(entry.get('units_sha256')))], 1)
    for name in cv.NAMES:
        entry = state.get(name)
        if entry:
            families.add('component_changed_timestamp_seconds',
                         'component_changed_timestamp_seconds', [('component', name)],
                         entry.get('changed') or 0)
    return families.render()
