# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the container runtimes' planners (docker_plan, podman_plan) share: the guard against
values no new container could start with."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import host_limits


def guard(requested, params, result, ceiling, warnings):
    """Refuse (changes.Failure) values no new container could start with."""
    errors, forced = host_limits.check_request(
        requested, ceiling or host_limits.Ceiling(), params.get('force', False), 'ulimits',
        'the container runtime', 'new containers would fail to start')
    if errors:
        raise changes.Failure('; '.join(errors), result, errors=errors)
    warnings.extend(forced)
