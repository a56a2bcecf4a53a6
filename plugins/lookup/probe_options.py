# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: probe_options
short_description: The contexts' probe options from variables named after them, as one mapping
version_added: 0.1.0
description:
  - Returns the probe options of every context of the collection's registry (the options of
    M(gpufleet.tuning.effective_limits) and M(gpufleet.tuning.limits_audit) that a context's
    probe owns, such as C(docker_image)) as one mapping, option name -> value, read from the
    variables named PREFIX + option name (C(limits_verify_docker_image)).
  - For each option the first prefix whose variable is defined gives its value; an option
    whose value is empty (null, C(''), an empty list or mapping) is left out, so that an
    empty variable skips that probe.
  - The limits role, the limits_watch role and C(playbooks/audit_limits.yml) pass the result
    as the modules' C(probe_options), so that a new context's probe option needs no edit
    there.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  _terms:
    description: Variable name prefixes, in order of precedence (C(limits_verify_)).
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Probe with the images the limits role's variables name
  gpufleet.tuning.effective_limits:
    contexts: [login, docker]
    probe_options: "{{ lookup('gpufleet.tuning.probe_options', 'limits_verify_') }}"
'''

RETURN = r'''
_raw:
  description: One mapping, probe option name -> value.
  type: list
  elements: dict
'''

from ansible.plugins.lookup import LookupBase

#: The registry's probe options (module_utils/contexts PROBE_OPTIONS), by name. Written by
#: scripts/gen_option_docs.py (`make docs-gen`; a unit test fails when it is stale) rather than
#: read from the registry here: Ansible runs this lookup in a worker forked per host and task,
#: and each worker would import the whole registry again, compiled from source (about 0.08 s
#: of controller CPU per host and task, benchmarks/profile.md).
# BEGIN GENERATED probe option names by make docs-gen from module_utils/core/options.py and contexts/: do not edit
NAMES = (
    'docker_image',
    'pod_image',
    'pod_handler',
    'cri_client',
    'podman_image',
    'enroot_image',
    'slurm_submit_limits',
)
# END GENERATED probe option names


def collect(prefixes, variables, render):
    """{option name: value} of every probe option of the registry (NAMES) whose first defined
    ``PREFIX + name`` variable, rendered with ``render``, is not empty."""
    found = {}
    for option in NAMES:
        for prefix in prefixes:
            name = prefix + option
            if name in variables:
                value = render(variables[name])
                if value not in (None, '') and value != [] and value != {}:
                    found[option] = value
                break
    return found


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        return [collect(list(terms), variables or {}, self._templar.template)]
