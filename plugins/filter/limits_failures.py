# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limits role's outcome and failure table: ``limits_outcome`` (module_utils/reports/
outcome.py: what is pending, failed, busy or not verified, whether the run fails and rolls back,
the report and the failure message; the role decides none of it in Jinja) and
``limits_failure_table`` (the verification's gaps, each row with its cause, the file and line
the limits_profile call named for that context and item: module_utils/reports/gap_sources.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.tuning.plugins.plugin_utils.lazy import module

# imported when a filter uses it (plugin_utils/lazy.py)
outcome = module('module_utils.reports.outcome')


def limits_failure_table(gaps, profile_result, pending=None):
    """effective_limits' ``gaps`` as the table context x item -> expected / actual / below /
    source; ``pending``: the contexts whose restart the policy deferred (marked so)."""
    if not isinstance(gaps, list):
        raise AnsibleFilterError('limits_failure_table expects the verification\'s gaps, got %s'
                                 % type(gaps).__name__)
    return outcome.failure_table(gaps, profile_result if isinstance(profile_result, dict) else {},
                                 pending or ())


def limits_outcome(profile_result, after=None, rollback='never', check_mode=False,
                   restart_policy='when_idle', user=''):
    """limits_profile's result (and the verification's probe result, or None where the run
    did not verify) -> the run's outcome (outcome.outcome)."""
    if not isinstance(profile_result, dict):
        raise AnsibleFilterError('limits_outcome expects limits_profile\'s result, got %s'
                                 % type(profile_result).__name__)
    if after is not None and not isinstance(after, dict):
        raise AnsibleFilterError('limits_outcome expects the verification\'s result or none, '
                                 'got %s' % type(after).__name__)
    return outcome.outcome(profile_result, after, rollback=rollback, check_mode=bool(check_mode),
                           restart_policy=restart_policy, user=user)


class FilterModule(object):
    def filters(self):
        return {'limits_failure_table': limits_failure_table, 'limits_outcome': limits_outcome}
