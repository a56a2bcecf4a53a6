# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the drift watch writes besides its metrics, from the same audit (issue 34 items 2 and
5; docs/node-state.md, docs/drift-watch.md):

* ``STATE_DIR/components.json``: the versions and unit-file hashes of dockerd, containerd,
  runc, slurmd and systemd as last seen (host/component_versions.py), kept across runs so a
  change is seen once, logged and exported with its time;
* ``STATE_DIR/npd-status``: the answer of the node-problem-detector plugin;
* ``NFD_DIR/gpufleet-limits``: the Node Feature Discovery local feature file (when asked).

Every file is written atomically (a dot temporary in the same directory, renamed over the
old file: NFD ignores dot files). A failure here is logged and never stops the metrics.
:func:`check_components` is the package hooks' quick check: it starts the watch's service
when a component differs from the record, and writes nothing.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import component_versions as cv
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import node_state

STATE_FILE = 'components.json'
NPD_FILE = 'npd-status'
NFD_FILE = 'gpufleet-limits'
WATCH_UNIT = 'gpufleet-limits-watch.service'


def load_state(path):
    """(the recorded components, a problem or None): {} when there is no record yet; a
    record that cannot be read is reported and replaced by the next run's."""
    raw = safe_file.read_bytes(path)
    if raw is None:
        return {}, None
    try:
        data = json.loads(raw.decode('utf-8'))
    except (ValueError, UnicodeDecodeError) as exc:
        return {}, '%s: not JSON (%s); recording afresh' % (path, exc)
    if not isinstance(data, dict) or not isinstance(data.get('components'), dict):
        return {}, '%s: no "components" object; recording afresh' % path
    if not all(isinstance(v, dict) for v in data['components'].values()):
        return {}, '%s: a component is not an object; recording afresh' % path
    return data['components'], None


def save_state(path, components, now):
    data = dict(written_by='gpufleet-limits-watch', time=now, components=components)
    safe_file.write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + '\n')
                           .encode('utf-8'), mode=0o644)


def record_components(host, state_dir, now):
    """Read the components, compare with the record, keep the new record: (state, logs)."""
    logs = []
    path = os.path.join(state_dir, STATE_FILE)
    previous, problem = load_state(path)
    if problem:
        logs.append(('warning', problem))
    state, changes = cv.compare(previous, cv.read_components(host), now)
    for change in changes:
        logs.append(('warning', cv.describe(change)))
    try:
        save_state(path, state, now)
    except safe_file.FileError as exc:
        logs.append(('err', 'component record not written: %s' % exc))
    return state, logs


def after_audit(args, outcome, now, host):
    """After one audit (drift_watch's Outcome): record the components, write the NPD answer
    and the NFD feature file. Returns (metrics text to add, [(priority, message)])."""
    state_dir = getattr(args, 'state_dir', None)
    if not state_dir:
        return '', []
    logs = []
    text = ''
    try:
        state, logs = record_components(host, state_dir, now)
        text = node_state.component_metrics(state)
    except (IOError, OSError) as exc:
        logs.append(('err', 'components not recorded: %s' % exc))
    if outcome.reason is None:
        found = node_state.verdict(outcome.result)
    else:
        found = node_state.failure_verdict(outcome.reason, outcome.msg)
    period = getattr(args, 'period', None)
    outputs = [(os.path.join(state_dir, NPD_FILE), node_state.npd_status_text(found, now, period))]
    nfd_dir = getattr(args, 'nfd_dir', None)
    if nfd_dir:
        outputs.append((os.path.join(nfd_dir, NFD_FILE),
                        node_state.nfd_features_text(found, now, period)))
    for path, content in outputs:
        try:
            safe_file.write_atomic(path, content.encode('utf-8'), mode=0o644)
        except safe_file.FileError as exc:
            logs.append(('err', 'node state not written: %s' % exc))
    return text, logs


def remove_nfd_file(nfd_dir):
    """Remove the feature file (the watch is removed: its labels must go with it)."""
    try:
        os.unlink(os.path.join(nfd_dir, NFD_FILE))
    except OSError:
        pass


def check_components(host, state_dir, unit=WATCH_UNIT):
    """The package hooks' check (dpkg Post-Invoke, dnf post-transaction action): when a
    component differs from the watch's record, start the watch now (without waiting for it)
    and say so. Returns (changed, message); writes nothing, the watch keeps the record."""
    previous, problem = load_state(os.path.join(state_dir, STATE_FILE))
    if problem or not previous:
        return False, 'no component record yet (%s): the watch records one at its next run' % (
            problem or os.path.join(state_dir, STATE_FILE))
    current = cv.read_components(host)
    if not cv.differs(previous, current):
        return False, 'components unchanged'
    _state, changes = cv.compare(previous, current, 0)
    systemctl = host.get_bin_path('systemctl') or 'systemctl'
    rc, _out, err = host.run_command([systemctl, 'start', '--no-block', unit])
    said = '; '.join(cv.describe(c) for c in changes)
    if rc != 0:
        return True, '%s; could not start %s: %s' % (said, unit, err.strip())
    return True, '%s; started %s' % (said, unit)
