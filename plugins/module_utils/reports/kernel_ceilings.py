# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel rows of limits_audit and the drift watch: each ceiling's live value, fs.file-max
with the handles in use, the configured value and the file:line that decides it, the gap
against a minimum, and "configured, not applied" with why. Plain Python, read-only.

The live values of node_exporter's own collectors are not repeated as metrics here (see
:data:`NODE_EXPORTER`, docs/drift-watch.md): the watch exports what node_exporter cannot know.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings

#: The audited ceilings, in report order (declared in model/ceilings.py).
CEILINGS = ceilings.NAMES

#: node_exporter's name for each ceiling's live value, and the collector that exports it
#: (filefd is on by default; processes and sysctl need --collector.processes and
#: --collector.sysctl --collector.sysctl.include=NAME).
NODE_EXPORTER = dict((c.name, c.exporter) for c in ceilings.KERNEL)

OK, BELOW, NOT_APPLIED, UNREADABLE = 'ok', 'below', 'configured_not_applied', 'unreadable'


class KernelError(ValueError):
    """A minimum that cannot be audited; the message names the field (sysctl.NAME)."""


def minimums(sysctl, root=''):
    """{dotted name: minimum} of the audit's ``sysctl`` option (as the sysctl_ceilings module
    reads it; ``exact`` entries are compared as minimums too). KernelError naming the field."""
    try:
        wants = sysctl_plan.parse_request(sysctl or {}, 'present', root)
    except changes.Failure as exc:
        raise KernelError(exc.msg)
    return dict((w.name, w.asked) for w in wants)


def rows(sysctl=None, root=''):
    """The kernel rows: one per ceiling of :data:`CEILINGS` and of ``sysctl`` (a minimum per
    name), each {name, live, configured (value or None), source (file:line or None), minimum,
    gap, state, reason, node_exporter}; fs.file-max also ``in_use`` (allocated handles)."""
    wanted = minimums(sysctl, root)
    names = list(CEILINGS) + sorted(n for n in wanted if n not in CEILINGS)
    assignments, _problems = conf.parse_files(conf.config_files(root))
    found = []
    for name in names:
        key = conf.normalize(name)
        live = conf.as_int(conf.live(key, root))
        winner = conf.resolve(assignments, key)['winner']
        configured = conf.as_int(winner.value) if winner is not None else None
        minimum = wanted.get(name)
        row = dict(name=name, live=live, configured=configured,
                   source=winner.where if winner is not None else None, minimum=minimum,
                   gap=max(0, minimum - live) if minimum is not None and live is not None else None,
                   state=OK, reason=None,
                   node_exporter=NODE_EXPORTER.get(name, (None,))[0])
        if name == 'fs.file-max':
            row['in_use'] = conf.file_nr(root)[0]
        if live is None:
            row.update(state=UNREADABLE, reason='%s cannot be read' % conf.proc_path(key))
        elif configured is not None and configured != live:
            why = conf.writable(key, root)
            row.update(state=NOT_APPLIED, read_only=why == conf.READ_ONLY,
                       reason=not_applied(row['source'], configured, live, why))
        elif row['gap']:
            row.update(state=BELOW, reason='%s is %d, below the minimum %d%s' % (
                name, live, minimum, ' (%s sets it)' % row['source'] if row['source'] else
                ' (the kernel default: no sysctl file sets it)'))
        found.append(row)
    return found


def not_applied(source, configured, live, why):
    """Why a configured value is not the live one, and what applies it."""
    said = '%s sets %d, the kernel has %d' % (source, configured, live)
    if why == conf.READ_ONLY:
        return '%s: %s, so the host decides; it applies where /proc/sys is writable at boot' % (
            said, why)
    if why:
        return '%s: %s; as root, systemd-sysctl (or sysctl --system) applies it' % (said, why)
    return '%s: not applied since it was written; systemd-sysctl (or sysctl --system) applies ' \
        'it' % said


def warnings(found):
    """One warning per row whose live value is below its minimum (with why: below, or
    configured but not applied)."""
    return ['kernel: %s' % row['reason'] for row in found if row['gap']]
