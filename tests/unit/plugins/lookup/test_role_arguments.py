# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role_arguments lookup against the limits role's real meta/argument_specs.yml, through
ansible's own Templar and lookup loader: what ansible's validation task accepts it accepts, and
what that task refuses it refuses with the same messages."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

import pytest

if sys.version_info < (3, 11):
    pytest.skip('controller code: the ansible-core it needs (2.18+) runs on Python 3.11 and later',
                allow_module_level=True)

# conftest puts the collection on sys.path.
import conftest  # noqa: F401 pylint: disable=unused-import

from ansible.errors import AnsibleError  # noqa: E402 pylint: disable=wrong-import-position
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpufleet.tuning.plugins.lookup import role_arguments

LOADER = DataLoader()
OPTIONS = role_arguments.role_options('limits', load=LOADER.load_from_file)


def lookup(variables, *terms):
    templar = Templar(loader=LOADER, variables=variables)
    module = role_arguments.LookupModule(loader=LOADER, templar=templar)
    return module.run(list(terms), variables=variables)


def ansible_messages(values):
    """What ansible's own validate_argument_spec says about ``values``."""
    return ArgumentSpecValidator(OPTIONS).validate(
        values, validate_role_argument_spec=True).error_messages


def test_the_spec_is_the_role_spec():
    assert 'limits_profile' in OPTIONS and 'limits_docker_restart' in OPTIONS
    assert OPTIONS['limits_docker_restart']['choices'] == ['when_idle', 'always', 'never']


def test_good_options_pass():
    values = {'limits_profile': {'nofile': 16384}, 'limits_docker_restart': 'never',
              'limits_verify': 'yes', 'unrelated': object()}
    assert lookup(values, 'limits') == [True]
    assert lookup({}, 'limits') == [True]


@pytest.mark.parametrize('values', [
    {'limits_docker_restart': 'sometimes'},
    {'limits_verify': 'maybe'},
    {'limits_profile': ['nofile']},
    {'limits_docker_restart': 'sometimes', 'limits_verify': 'maybe'},
])
def test_bad_options_fail_with_ansibles_own_messages(values):
    expected = ansible_messages(values)
    assert expected
    with pytest.raises(AnsibleError) as caught:
        lookup(values, 'limits')
    text = str(caught.value)
    assert "Validation of arguments failed for role gpufleet.tuning.limits (entry point 'main')" in text
    for message in expected:
        assert message in text
    for name in values:
        assert name in text


def test_an_unknown_role_or_entry_point_is_an_error():
    with pytest.raises(AnsibleError, match='has no meta/argument_specs.yml'):
        lookup({}, 'no_such_role')
    with pytest.raises(AnsibleError, match="has no entry point 'other'"):
        role_arguments.role_options('limits', 'other', load=LOADER.load_from_file)


def test_the_fast_load_reads_what_ansibles_loader_reads():
    assert role_arguments.role_options('limits') == OPTIONS


@pytest.mark.parametrize('value, expected', [
    ('plain', False), ('{{ x }}', True), ('{% if x %}y{% endif %}', True), ('a {# c #}', True),
    ({'nofile': 1024}, False), ({'nofile': '{{ n }}'}, True), ({'{{ k }}': 1}, True),
    (['a', ['{{ b }}']], True), ([1, 2.5, None, True], False)])
def test_has_template(value, expected):
    assert role_arguments.has_template(value) is expected


def test_templated_values_are_checked_as_templated():
    # a template anywhere in a value is rendered before the check, as ansible's task does
    # (variables from playbooks and inventories are trusted templates; plain strings are not)
    from ansible.template import trust_as_template
    assert lookup({'limits_docker_restart': trust_as_template("{{ 'never' }}")},
                  'limits') == [True]
    with pytest.raises(AnsibleError) as caught:
        lookup({'limits_docker_restart': trust_as_template('{{ policy }}'),
                'policy': 'sometimes'}, 'limits')
    assert 'limits_docker_restart' in str(caught.value) and 'sometimes' in str(caught.value)
    with pytest.raises(AnsibleError) as caught:
        lookup({'limits_profile': trust_as_template('{{ profile }}'), 'profile': ['nofile']},
               'limits')
    assert 'limits_profile' in str(caught.value)
    # a template inside a list is found too
    with pytest.raises(AnsibleError) as caught:
        lookup({'limits_contexts': ['pam', trust_as_template('{{ other }}')],
                'other': 'nowhere'}, 'limits')
    assert 'limits_contexts' in str(caught.value) and 'nowhere' in str(caught.value)
