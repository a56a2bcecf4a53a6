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

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import containerd
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import containerd_cri
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import crio
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import enroot
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import podman
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import ssh
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_system
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_user
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import units
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option, RoleVar

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
    enroot.CONTEXT,
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
#: limits_profile's options that the contexts own (their files' paths, their policies), in
#: registry order: declared on the records only
OPTIONS = tuple(option for c in REGISTRY for option in c.configured_options())
#: the options of effective_limits and limits_audit that the contexts' probes own (images, ...)
PROBE_OPTIONS = tuple(option for c in REGISTRY for option in c.probed_options())

#: the same options as one mapping (effective_limits' and limits_audit's ``probe_options``,
#: limits_restart's and limits_profile's ``verify.probe_options``, the limits role's
#: ``limits_verify_probe_options``): what the role, the playbooks, the audit and the watch pass
#: through without naming a context's option (run/effective.py with_probe_options)
PROBE_MAP = Option(
    'probe_options', 'dict', default={}, description=(
        "The contexts' probe options as one mapping, option name -> value (%s). Where an "
        'option is also given by its own name, that value is used unless it is unset (null, '
        'empty or its default). A name that is no probe option, or a value of the wrong type, '
        'fails naming C(probe_options.NAME) before anything runs.'
        % ', '.join('C(%s)' % o.name for o in PROBE_OPTIONS),),
    role=RoleVar('limits_verify_probe_options', default={}, description=(
        "The contexts' probe options as one mapping, option name -> value (%s). Each is also "
        'read from the variable C(limits_verify_NAME) where that is set and not empty (for '
        'example C(limits_verify_docker_image)), which wins over this mapping.'
        % ', '.join('C(%s)' % o.name for o in PROBE_OPTIONS),)))

#: limits_profile's ``contexts`` (and the limits role's ``limits_contexts``)
CONFIGURED_OPTION = Option(
    'contexts', 'list', elements='str', choices=CONFIGURED, default=[], description=(
        'The contexts to write. An empty list means every context present on the node '
        '(C(/etc/security), a running systemd, C(user@.service), C(docker.service), '
        'C(containerd.service), a C(podman) binary, C(slurmd.service) with '
        'C(/etc/slurm/slurm.conf), C(/etc/crio/crio.conf) or C(crio.conf.d)). C(slurm) writes '
        "the profile into C(slurmd.service)'s drop-in and stops slurm.conf from propagating the "
        "profile's items from the submit shell (O(slurm_conf_edit)); see docs/slurm.md. "
        'C(containerd_cri) (present when O(containerd_config) leaves the CRI plugin on and the '
        'node has C(kubelet.service) or a handler with a base spec) patches the profile into '
        'the base runtime spec of every CRI handler that has one, keeps '
        "C(containerd.service)'s drop-in, and restarts containerd under O(restart_policy) "
        '(C(when_idle) waits while pod sandboxes run, and running pods keep their old spec); '
        "see docs/containerd-kubernetes.md. C(crio) writes CRI-O's C(default_ulimits) "
        '(O(crio_dropin)), never run against a real CRI-O.',),
    role=RoleVar('limits_contexts', default=[], description=(
        'The contexts to manage. Empty means every one present on the node (C(pam) when '
        '/etc/security exists, C(systemd_system) when systemd runs, C(systemd_user) when it '
        'also has user@.service, C(docker) and C(containerd) when their services exist, '
        'C(podman) when /usr/bin/podman exists, C(slurm) when C(slurmd.service) and the '
        "slurm.conf slurmd reads exist (slurmd's drop-in and slurm.conf, docs/slurm.md), "
        'C(containerd_cri) when /etc/containerd/config.toml leaves the CRI plugin on and the '
        'node has C(kubelet.service) or a handler with a base spec (the base runtime specs of '
        "the Kubernetes handlers and containerd's drop-in, docs/containerd-kubernetes.md), "
        'C(crio) when /etc/crio/crio.conf or crio.conf.d exists (CRI-O\'s C(default_ulimits) '
        'in a crio.conf.d drop-in, then a checked restart of C(crio.service); never run '
        'against a real CRI-O, docs/containerd-kubernetes.md)).',)))
#: effective_limits' ``contexts``
PROBED_OPTION = Option(
    'contexts', 'list', elements='str', choices=PROBED, default=['login', 'service'],
    description=('The contexts to probe. %s.' % '; '.join(
        'C(%s) needs O(%s)' % (c.probe, c.image_option) for c in REGISTRY if c.image_option),))


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


def probe_map(configured, units=(), host=None):
    """limits_profile's ``probes``: for each configured context with a probe of its own, the
    probed name and the effective_limits option its probe needs (``image``, or None); then
    each context probed but not configured (``ssh``) whose sessions what is written decides
    (its ``verified_with``: the configured context or unit that decides it, and ``gap`` and
    ``cause`` where nothing written reaches it)."""
    found = []
    for c in REGISTRY:
        if c.name and c.name in configured and c.probe:
            found.append(dict(context=c.name, probe=c.probe, image=c.image_option))
        elif not c.name and c.probe and host is not None:
            entry = c.verified_with(configured, units, host)
            if entry:
                found.append(entry)
    return found


#: the records generic code needs by role, so that no code outside contexts/ names a context
#: by a string: the login session (pam: the audit's pam_invalid and blocked lines), the system
#: manager (its units' reports), the Slurm job (the health check's default)
PAM = pam.CONTEXT
SYSTEM = systemd_system.CONTEXT
SLURM = slurm.CONTEXT
#: the container contexts, for the DataLoader check's container and pod runs
DOCKER = docker.CONTEXT
PODMAN = podman.CONTEXT
CRI = containerd_cri.CONTEXT


def job_context(probe=None, text=''):
    """Where a job ran, as the failure classifier reads it (classify.Where): the record probed
    as ``probe``; for None or 'unknown', the record whose ``shown_by`` a line of ``text``
    matches, else classify.NOWHERE. KeyError for a name no record probes. The classifier is
    imported here, not with the registry: the modules that write and audit the limits load the
    registry on every run and never classify."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify
    if probe not in (None, '', classify.UNKNOWN):
        return probed(probe).job_context()
    for context in REGISTRY:
        if context.shown_by and re.search(context.shown_by, str(text or ''), re.M):
            return context.job_context()
    return classify.NOWHERE
