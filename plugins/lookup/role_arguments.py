# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: role_arguments
short_description: Check a role's options against its argument spec without a task of its own
version_added: 0.1.0
description:
  - Validates the options of one of this collection's roles, as the task's variables give them,
    against the role's C(meta/argument_specs.yml), with the same validator and messages as
    ansible-core's own role argument validation (M(ansible.builtin.validate_argument_spec)).
  - Returns C(true), or fails the task naming each option that is wrong and why. Used in the
    C(when) of a role's first task, it checks the options in the worker that runs that task.
    ansible-core's own validation runs a task, so a forked worker, per host. On a fleet rerun
    that is one worker per host more than the role's single module call.
  - C(playbooks/tune_gpu_nodes.yml) imports the limits role with C(rolespec_validate=false) and
    relies on this check. A play that lists the role under C(roles) gets both checks.
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  _terms:
    description: Names of this collection's roles (C(limits)).
    type: list
    elements: str
    required: true
  entry_point:
    description: The argument spec's entry point.
    type: str
    default: main
'''

EXAMPLES = r'''
- name: The role's first task, run only when the role's options are valid
  gpufleet.tuning.limits_profile:
    profile: "{{ limits_profile }}"
  when: lookup('gpufleet.tuning.role_arguments', 'limits')
'''

RETURN = r'''
_raw:
  description: C(true) for each role whose options are valid.
  type: list
  elements: bool
'''

import os

import yaml

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.lookup import LookupBase

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_spec(path):
    """meta/argument_specs.yml as plain data, through libyaml when PyYAML has it. The lookup
    runs in a forked worker per host, so nothing parsed here outlives the task: ansible's own
    loader (position tracking, vault and tag handling this file does not use) took 7 ms per
    host for the limits role's spec, libyaml about 1."""
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))


def has_template(value):
    """Whether ``value`` holds a string with Jinja markup anywhere in it (keys included)."""
    if isinstance(value, str):
        return '{{' in value or '{%' in value or '{#' in value
    if hasattr(value, 'items'):
        return any(has_template(key) or has_template(item) for key, item in value.items())
    if isinstance(value, (list, tuple, set)):
        return any(has_template(item) for item in value)
    return False


def role_options(role, entry_point='main', load=load_spec):
    """The options of `role`'s entry point from its meta/argument_specs.yml."""
    path = os.path.join(COLLECTION, 'roles', role, 'meta', 'argument_specs.yml')
    if not os.path.isfile(path):
        raise AnsibleError('role_arguments: gpufleet.tuning.%s has no meta/argument_specs.yml' % role)
    data = load(path)
    try:
        return data['argument_specs'][entry_point].get('options') or {}
    except (KeyError, TypeError, AttributeError):
        raise AnsibleError('role_arguments: %s has no entry point %r' % (path, entry_point))


def check(role, options, values, entry_point='main'):
    """Raise AnsibleError naming every option of `values` that `options` does not accept."""
    result = ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True)
    if result.error_messages:
        raise AnsibleError("Validation of arguments failed for role gpufleet.tuning.%s (entry "
                           "point '%s'):\n%s" % (role, entry_point,
                                                 '\n'.join(result.error_messages)))


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        entry_point = kwargs.get('entry_point', 'main')
        variables = variables or {}
        for role in terms:
            options = role_options(role, entry_point)
            values = dict((name, variables[name]) for name in options if name in variables)
            # only the values that hold a template go through the templar: the rest (most,
            # plain role defaults) are what they are, and templating them all cost about 10 ms
            # per host
            values.update((name, self._templar.template(value))
                          for name, value in list(values.items()) if has_template(value))
            check(role, options, values, entry_point)
        return [True] * len(terms)
