# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the container runtimes' planners (docker_plan, podman_plan) share: their request (the
modules' options mapped in one place, limits_profile's profile parsed once) and the guard
against values no new container could start with."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model


_FIELDS = 'limits path shm_size purge unit force field'


class RuntimeRequest(namedtuple('RuntimeRequest', _FIELDS,
                                defaults=(None, False, None, False, 'ulimits'))):
    """What docker_plan and podman_plan plan, as plain values: ``limits`` {item: Limit} parsed
    once by the caller (or None: leave default-ulimits alone), ``shm_size`` in bytes (or None),
    ``purge``, ``path`` (the file to write), ``unit`` (Docker's unit, for its flags), ``force``,
    and ``field``: the option the user wrote the limits in, for messages (``ulimits`` for
    docker_ulimits and podman_ulimits, ``profile`` for limits_profile)."""

    __slots__ = ()


def module_request(params):
    """docker_ulimits' or podman_ulimits' options -> a RuntimeRequest: the modules' one
    mapping. Raises LimitError naming ``ulimits.ITEM`` or ``shm_size``."""
    limits, shm_size = model.parse_runtime_request(params['ulimits'], params['shm_size'])
    return RuntimeRequest(limits, params['path'], shm_size=shm_size, purge=params['purge'],
                          unit=params.get('unit'), force=params.get('force', False))


def argument_spec(path):
    """docker_ulimits' and podman_ulimits' options: what both take, ``path`` (the spec of
    their file's option) among them."""
    return dict(
        ulimits=dict(type='dict'),
        shm_size=dict(type='str'),
        purge=dict(type='bool', default=False),
        path=path,
        backup=dict(type='bool', default=False),
        force=dict(type='bool', default=False),
    )


#: both modules need ulimits, shm_size or both
REQUIRED_ONE_OF = [['ulimits', 'shm_size']]


def run_module(module, planner):
    """docker_ulimits' and podman_ulimits' run: plan the file with ``planner`` (every guard
    first), then write it, as the module's options say."""
    change = changes.run_guarded(module, plan_module, planner, module.params, module)
    changes.finish(module, change, backup=module.params['backup'])


def plan_module(planner, params, host, ceiling=None):
    """A runtime module's plan: its options mapped once (module_request), then ``planner``."""
    try:
        request = module_request(params)
    except model.LimitError as exc:
        result = dict(changed=False, path=params['path'], restart_required=False)
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))
    return planner(request, host, ceiling)


def guard(req, result, ceiling, warnings, limits=None):
    """Refuse (changes.Failure) values no new container could start with."""
    errs, forced = host_limits.check_request(
        req.limits if limits is None else limits, ceiling or host_limits.Ceiling(), req.force,
        req.field, 'the container runtime', 'new containers would fail to start')
    if errs:
        raise changes.Failure('; '.join(errs), result, errors=errs)
    warnings.extend(forced)
