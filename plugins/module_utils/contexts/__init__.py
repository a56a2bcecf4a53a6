# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry of contexts: every place a training process can start, one record each
(``contexts/<name>.py``, a :class:`_base.Context`). limits_profile's planning and actions,
effective_limits' probes, the audit and the limits role (through limits_profile's ``probes``)
iterate :data:`REGISTRY`; none of them names a context. Private to the collection.

A new context is one new file with a ``CONTEXT`` record, one import and one entry below (the
order is the order of planning, detection and reports), plus its tests and docs/contexts.md.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import containerd
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import containerd_cri
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import crio
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import podman
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import ssh
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_system
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_user
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import units

# Planning order: the files are written in this order (and put back in reverse).
REGISTRY = (
    pam.CONTEXT,
    ssh.CONTEXT,
    systemd_system.CONTEXT,
    systemd_user.CONTEXT,
    units.CONTEXT,
    docker.CONTEXT,
    containerd.CONTEXT,
    containerd_cri.CONTEXT,
    podman.CONTEXT,
    slurm.CONTEXT,
    crio.CONTEXT,
)

for _record in REGISTRY:
    _record.registry = REGISTRY

#: limits_profile's ``contexts`` choices (where a context is configured)
CONFIGURED = [c.name for c in REGISTRY if c.name]
#: effective_limits' ``contexts`` choices (where a context is probed), in report order
PROBED = [c.probe for c in REGISTRY if c.probe]
#: limits_profile's path options and their defaults
PATH_DEFAULTS = dict((c.path_option, c.target) for c in REGISTRY if c.path_option)
UNIT_PREFIX = units.PREFIX


def named(name):
    """The record configured as ``name``."""
    for context in REGISTRY:
        if context.name == name:
            return context
    raise KeyError(name)


def probed(probe):
    """The record probed as ``probe``."""
    for context in REGISTRY:
        if context.probe == probe:
            return context
    raise KeyError(probe)


def owner(label):
    """The record a planned change's context (``pam``, ``unit:NAME``) belongs to."""
    for context in REGISTRY:
        if context.owns(label):
            return context
    raise KeyError(label)


def detect(root=''):
    """The configured contexts present on the node, from files only."""
    return [c.name for c in REGISTRY if c.name and c.detect(root)]


def restart_context(unit):
    """The probed context a restart of ``unit`` applies to (``docker``, ``user_manager``,
    ``unit:NAME``): what stays pending when the restart policy defers it."""
    for context in REGISTRY:
        found = context.restart_context(unit)
        if found:
            return found
    return UNIT_PREFIX + unit


def probe_map(configured):
    """limits_profile's ``probes``: for each configured context with a probe of its own, the
    probed name and the effective_limits option its probe needs (``image``, or None)."""
    return [dict(context=c.name, probe=c.probe, image=c.image_option)
            for c in REGISTRY if c.name in configured and c.probe]
