# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module options declared once, as data: an :class:`Option` is both the ``argument_spec``
entry a module is built with and its documentation. Private to the collection.

A context's own options (its file's path, its probe's image, its policies) are declared on
its record (``contexts/<name>.py``: ``path``, ``image``, ``options``, ``probe_options``) and
collected by the registry (``contexts.OPTIONS``, ``contexts.PROBE_OPTIONS``); the options
several modules share that belong to no context are declared below. limits_profile,
effective_limits, limits_audit and limits_restart compose their ``argument_spec`` from these
(``spec``; a :class:`Group` is documented once, as a doc fragment), and
``scripts/gen_option_docs.py`` writes the same declarations into their DOCUMENTATION, the
doc fragment and the limits role's ``meta/argument_specs.yml`` (``make docs-gen``; a unit
test fails when a copy differs).

Nothing here imports a context or a planner: the contexts import this file.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy


class RoleVar(object):
    """The limits role's variable for an option (``limits_docker_shm_size``): its name, its
    default (the role's defaults/main.yml has the same) and, where the role's wording differs
    from the module's, its description."""

    def __init__(self, name, default=None, description=None):
        self.name = name
        self.default = default
        self.description = tuple(description) if description else None


class Option(object):
    """One option: name, type, default, choices, elements, required and its description (a
    tuple of paragraphs). ``role``: a :class:`RoleVar` when the limits role passes the option
    through."""

    def __init__(self, name, type, description, default=None, choices=None, elements=None,
                 required=False, version_added=None, role=None):
        self.name = name
        self.type = type
        self.description = tuple(description)
        self.default = default
        self.choices = tuple(choices) if choices is not None else None
        self.elements = elements
        self.required = required
        self.version_added = version_added
        self.role = role

    def __repr__(self):
        return 'Option(%r)' % self.name

    def spec(self):
        """The ``argument_spec`` entry (a fresh copy each call: defaults are never shared)."""
        entry = dict(type=self.type)
        if self.elements:
            entry['elements'] = self.elements
        if self.choices is not None:
            entry['choices'] = list(self.choices)
        if self.required:
            entry['required'] = True
        if self.default is not None:
            entry['default'] = copy.deepcopy(self.default)
        return entry

    def doc(self):
        """The documentation entry, as ``options:`` of a DOCUMENTATION string has it."""
        entry = dict(description=list(self.description))
        entry.update(self.spec())
        if self.version_added:
            entry['version_added'] = self.version_added
        return entry


class Group(object):
    """Options that several modules take with the same documentation, documented once: in
    the doc fragment ``gpufleet.tuning.options.NAME`` (plugins/doc_fragments/options.py,
    written by scripts/gen_option_docs.py), which those modules extend."""

    def __init__(self, name, options):
        self.name = name
        self.options = tuple(options)

    def __repr__(self):
        return 'Group(%r)' % self.name

    @property
    def fragment(self):
        return 'gpufleet.tuning.options.' + self.name


def flat(options):
    """``options`` (Option and Group records) as Option records, a group's in its place."""
    result = []
    for option in options:
        result.extend(option.options if isinstance(option, Group) else (option,))
    return result


def spec(options):
    """{name: argument_spec entry} of ``options`` (Option and Group records, in order)."""
    result = {}
    for option in flat(options):
        if option.name in result:
            raise ValueError('option %s declared twice' % option.name)
        result[option.name] = option.spec()
    return result


def container_image(probe, runtime, what=None, role_what=None):
    """The option naming the image of a context's probe that starts a container of
    ``runtime`` (``docker_image``), with the limits role's variable for it; ``what`` and
    ``role_what`` replace the descriptions' first sentence for a runtime whose images are not
    a registry's (enroot)."""
    return Option(
        '%s_image' % probe, 'str', description=(
            (what or 'The image of the C(%s) probe (a new container runs C(cat '
             '/proc/self/limits)), present or pullable' % probe)
            + '; without it there is no C(%s) probe.' % probe,),
        role=RoleVar('limits_verify_%s_image' % probe, default='', description=(
            (role_what or 'A local or pullable image for the %s probe (C(IMAGE cat '
             '/proc/self/limits) must work)' % runtime) + '; empty skips that probe.',)))


# --- options several modules share that no context owns -----------------------------------

RESTART_POLICIES = ('when_idle', 'always', 'never')

RESTART_POLICY = Option(
    'restart_policy', 'str', choices=RESTART_POLICIES, default='when_idle', description=(
        'How the restarts that units running workloads need are reported in RV(actions) '
        '(C(docker.service), C(containerd.service), C(crio.service), C(slurmd.service) and the '
        'user managers C(user@UID.service)). C(when_idle) defers a restart that would stop a '
        "running container (dockerd without live-restore), running user services (a user "
        "manager) or other processes in the unit's cgroup; C(never) defers all of them; "
        'C(always) defers none. C(deferred) in RV(actions) says what a caller (or O(restart)) '
        'should leave running and report as pending.',),
    role=RoleVar('limits_docker_restart', default='when_idle', description=(
        'The restart policy of every unit that runs workloads, when its limits changed, namely '
        'dockerd (daemon.json, or C(docker.service) in O(limits_units)), '
        'C(containerd.service), C(crio.service), C(slurmd.service) and the user managers '
        '(C(user@UID.service)).',
        'C(when_idle) restarts one only when it runs nothing that the restart would stop, that '
        'is no running container (or live-restore on) for dockerd, no running user service for '
        "a user manager, no process besides the main one in the unit's cgroup for the others. "
        "A restart it skips is reported as pending (and that context's gaps are not "
        'failures). C(always) restarts (a dockerd restart without live-restore stops running '
        'containers; a user manager restart stops the user\'s services). C(never) always '
        'leaves them pending.')))

SETTLE = Option('settle', 'int', default=2, description=(
    'Seconds a restarted unit must stay active before its restart counts.',))

DOCKER_WAIT = Option('docker_wait', 'int', default=60, description=(
    'Seconds to wait for a restarted dockerd to answer C(docker info).',))

#: the checks of the restarts that limits_restart and limits_profile's ``restart`` do
RESTART_CHECKS = Group('RESTART_CHECKS', (SETTLE, DOCKER_WAIT))

RUN_OPTIONS = Option(
    'run_options', 'list', elements='str', default=[], description=(
        'Extra options for C(docker run) and C(podman run), as separate elements.',))

PROBE_USER = Option(
    'user', 'str', default='root', description=(
        'The user the login, service and user-manager probes run as.',))

PROBE_UNITS = Option(
    'units', 'list', elements='str', default=[], description=(
        "Running units whose main process's limits are read too (what the processes they start "
        'inherit); a name without a type gets C(.service). Each becomes the context '
        'C(unit:NAME).',))

PROBE_TIMEOUT = Option(
    'timeout', 'int', default=60, description=('Seconds each probe may run.',))

#: what effective_limits and limits_audit both take for their probes, besides the contexts'
PROBE_COMMON = (PROBE_USER, PROBE_UNITS, PROBE_TIMEOUT)
