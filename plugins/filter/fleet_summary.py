# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report's fleet summary (module_utils/reports/fleet_summary.py) as filters."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.plugin_utils.lazy import module

# imported when a filter uses it (plugin_utils/lazy.py)
fs = module('module_utils.reports.fleet_summary')


def fleet_summary(hosts, limit=12):
    """The fleet summary of an audit report's hosts mapping."""
    if not isinstance(hosts, dict):
        raise AnsibleFilterError('fleet_summary expects the report\'s hosts mapping, got %s'
                                 % type(hosts).__name__)
    return fs.build(hosts, int(limit))


def fleet_summary_lines(summary, markdown=False):
    """The fleet summary as report lines (plain text, or Markdown with markdown=true)."""
    return fs.lines(summary, bool(markdown))


def fleet_summary_text(summary, markdown=False):
    """The fleet summary as one block of text (the lines joined by newlines)."""
    return '\n'.join(fs.lines(summary, bool(markdown)))


def audit_table_text(found, show='gaps', full='', markdown=False):
    """The audit's per-host table of findings for the terminal (audit_show: the failing ones
    only, or all), led by their count and where the full table is, or (``markdown``) the
    report's Markdown table of every finding, as one block of text."""
    try:
        return '\n'.join(fs.table_lines(found, str(show), str(full or ''), bool(markdown)))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {'fleet_summary': fleet_summary, 'fleet_summary_lines': fleet_summary_lines,
                'fleet_summary_text': fleet_summary_text, 'audit_table_text': audit_table_text}
