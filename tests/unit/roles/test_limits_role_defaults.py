"""The default profile is written once, in roles/limits/defaults/main.yml: the argument spec's
documented default must say the same (Ansible reads it as static YAML, so it is a copy)."""
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def _load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def test_argument_spec_defaults_are_the_role_defaults():
    defaults = _load('roles', 'limits', 'defaults', 'main.yml')
    options = _load('roles', 'limits', 'meta', 'argument_specs.yml')['argument_specs']['main'][
        'options']
    assert options['limits_profile']['default'] == defaults['limits_profile']
    differing = [name for name, spec in options.items()
                 if 'default' in spec and name in defaults and spec['default'] != defaults[name]]
    assert differing == []


def test_roles_need_the_collection_s_ansible():
    requires = _load('meta', 'runtime.yml')['requires_ansible']
    assert requires.startswith('>=')
    minimum = '.'.join(requires[2:].split('.')[:2])
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        meta = _load('roles', role, 'meta', 'main.yml')
        assert str(meta['galaxy_info']['min_ansible_version']) == minimum, role
