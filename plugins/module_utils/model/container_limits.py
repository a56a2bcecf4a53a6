# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Docker and Podman share: both take soft and hard for every ulimit, both show a new
container's limits and /dev/shm the same way, and both modules report limits in one form.
Neither runtime's module imports the other's."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model


def complete_limits(requested, current, where='ulimits'):
    """Docker and Podman need soft and hard: a side the request leaves out (None) is taken from
    the ``current`` entry; with no current entry it is an error naming the field."""
    result = OrderedDict()
    for name, limit in requested.items():
        soft, hard = limit.soft, limit.hard
        old = current.get(name)
        if soft is None or hard is None:
            if old is None:
                raise model.LimitError('%s.%s: give both soft and hard (or one value): the '
                                       'container runtime needs both and none is set yet'
                                       % (where, name))
            soft = old.soft if soft is None else soft
            hard = old.hard if hard is None else hard
        limit = model.Limit(soft, hard)
        item = model.container_item(name, '%s.%s' % (where, name))
        model.check_pair(item, limit, '%s.%s' % (where, name))
        result[item.name] = limit
    return result


PROBE_COMMAND = ['cat', '/proc/self/limits', '/proc/self/mounts']


def parse_probe(text):
    """Output of ``cat /proc/self/limits /proc/self/mounts`` in a container ->
    ({item: Limit}, /dev/shm size in bytes or None)."""
    limits = model.parse_proc_limits(text)
    shm = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == '/dev/shm':
            match = re.search(r'(?:^|,)size=(\d+[kmg]?)(?:,|$)', fields[3])
            if match:
                shm = model.parse_size(match.group(1), '/dev/shm size')
            elif fields[2] == 'tmpfs':
                shm = None
    return limits, shm


def limits_result(limits, sources=None):
    """{item: Limit} -> {item: {'soft', 'hard', 'human'[, 'source']}} for module results."""
    result = OrderedDict()
    for name, limit in limits.items():
        entry = OrderedDict([('soft', limit.soft), ('hard', limit.hard),
                             ('human', model.format_limit(name, limit))])
        if sources and name in sources:
            entry['source'] = sources[name]
        result[name] = entry
    return result


def live(module, runtime, image, result, global_options=(), run_options=()):
    """docker_ulimits_info's and podman_ulimits_info's ``live``: what a throw-away container of
    ``image`` gets (``RUNTIME [GLOBAL_OPTIONS] run --rm [RUN_OPTIONS] -- IMAGE`` PROBE_COMMAND).
    A missing command, a failed run or an output without limits fails ``module`` with
    ``result``."""
    binary = module.get_bin_path(runtime)
    if not binary:
        module.fail_json(msg='image: the %s command is not installed' % runtime, **result)
    command = [binary] + list(global_options) + ['run', '--rm'] + list(run_options) \
        + ['--', image] + PROBE_COMMAND
    rc, out, err = module.run_command(command, environ_update=commands.c_env())
    if rc != 0:
        module.fail_json(msg='image: %s failed (rc %d): %s'
                         % (' '.join(command), rc, (err or out).strip()), **result)
    limits, shm = parse_probe(out)
    if not limits:
        module.fail_json(msg='image: no /proc/self/limits in the output of %s: %s'
                         % (' '.join(command), out.strip()[:500]), **result)
    return {'image': image, 'limits': limits_result(limits), 'shm_size': shm}
