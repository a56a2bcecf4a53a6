# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""/proc/PID/limits rows -> kernel units.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    BY_PROC_ROW, UNLIMITED, Limit)


def parse_proc_limits(text):
    """/proc/PID/limits content -> {item_name: Limit} in kernel units."""
    result = {}
    for line in text.splitlines()[1:]:
        for row, item in BY_PROC_ROW.items():
            if line.startswith(row + ' '):
                fields = line[len(row):].split()
                result[item.name] = Limit(_proc_side(fields[0]), _proc_side(fields[1]))
    return result


def _proc_side(text):
    return UNLIMITED if text == 'unlimited' else int(text)
