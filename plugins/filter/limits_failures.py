# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limits role's failure table (roles/limits/tasks/failed.yml): the verification's gaps,
each row with its cause, the file and line the limits_profile call named for that context and
item (module_utils/reports/gap_sources.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import gap_sources


def limits_failure_table(gaps, profile_result, pending=None):
    """effective_limits' ``gaps`` as the table context x item -> expected / actual / below /
    source; ``pending``: the contexts whose restart the policy deferred (marked so)."""
    if not isinstance(gaps, list):
        raise AnsibleFilterError('limits_failure_table expects the verification\'s gaps, got %s'
                                 % type(gaps).__name__)
    if not gaps:
        return ''
    found = gap_sources.sources(gaps, profile_result if isinstance(profile_result, dict) else {})
    return effective.gap_table(gaps, list(pending or []), found)


class FilterModule(object):
    def filters(self):
        return {'limits_failure_table': limits_failure_table}
