"""The collection's reference is generated from its plugins' documentation (docs/modules/README.md):
ansible-doc must render every module, filter, lookup and role from it (doc fragments resolved),
and each filter's sidecar documentation (plugins/filter/NAME.yml) must describe the function
the filter runs: its arguments, in order, with their defaults. `make lint` checks the same
documentation with antsibull-docs (schema, markup, references) and `make docs` builds the
docsite from it."""
import ast
import importlib
import inspect
import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible.release import __version__ as ANSIBLE_VERSION

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
COLLECTIONS = os.path.join(ROOT, 'build', 'collections')
ANSIBLE_DOC = os.path.join(os.path.dirname(sys.executable), 'ansible-doc')
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, 'plugins', 'modules'))
                 if name.endswith('.py') and not name.startswith('_'))
ROLES = sorted(name for name in os.listdir(os.path.join(ROOT, 'roles'))
               if os.path.exists(os.path.join(ROOT, 'roles', name, 'meta', 'argument_specs.yml')))
# sidecar documentation of filters (plugins/filter/NAME.yml) is read from ansible-core 2.14 on;
# the Python 3.8 run of these tests has ansible-core 2.13
SIDECARS = tuple(int(part) for part in ANSIBLE_VERSION.split('.')[:2]) >= (2, 14)


def filters():
    """{filter name: its function}, from every FilterModule of plugins/filter."""
    found = {}
    for name in sorted(os.listdir(os.path.join(ROOT, 'plugins', 'filter'))):
        if name.endswith('.py') and not name.startswith('_'):
            code = importlib.import_module('ansible_collections.gpufleet.tuning.plugins.filter.'
                                           + name[:-3])
            found.update(code.FilterModule().filters())
    return found


def ansible_doc(kind, names):
    """ansible-doc --json for ``names`` of plugin type ``kind``: {full name: entry}."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([ANSIBLE_DOC, '--json', '-t', kind]
                          + ['gpufleet.tuning.' + name for name in names],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def fragments(module):
    """The doc fragments ``module``'s DOCUMENTATION extends, as written in the file."""
    with open(os.path.join(ROOT, 'plugins', 'modules', module + '.py')) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == 'DOCUMENTATION':
            text = node.value.value if hasattr(node.value, 'value') else node.value.s
            return yaml.safe_load(text).get('extends_documentation_fragment') or []
    raise AssertionError('%s has no DOCUMENTATION' % module)


def fragment_options(name):
    """The options the doc fragment ``name`` (gpufleet.tuning.FILE[.VAR]) documents."""
    parts = name.split('.')[2:]
    code = importlib.import_module('ansible_collections.gpufleet.tuning.plugins.doc_fragments.'
                                   + parts[0])
    text = getattr(code.ModuleDocFragment, parts[1] if len(parts) > 1 else 'DOCUMENTATION')
    return yaml.safe_load(text).get('options') or {}


def test_ansible_doc_renders_every_module_with_its_fragments():
    docs = ansible_doc('module', MODULES)
    assert sorted(docs) == ['gpufleet.tuning.' + name for name in MODULES]
    for module in MODULES:
        entry = docs['gpufleet.tuning.' + module]
        doc = entry['doc']
        assert doc['module'] == module and doc['short_description'] and doc['description']
        assert entry['examples'].strip() and entry['return'], module
        for name in fragments(module):
            for option, spec in fragment_options(name).items():
                assert option in doc['options'], (module, name, option)
                assert doc['options'][option]['description'], (module, option)
                assert doc['options'][option].get('default') == spec.get('default'), (module, option)


def test_options_shared_by_several_modules_come_from_one_fragment():
    # the modules that extend a fragment document none of its options themselves
    for module in MODULES:
        code = importlib.import_module('ansible_collections.gpufleet.tuning.plugins.modules.'
                                       + module)
        own = yaml.safe_load(code.DOCUMENTATION).get('options') or {}
        for name in fragments(module):
            assert not set(own) & set(fragment_options(name)), (module, name)


def test_ansible_doc_renders_the_lookup_and_every_role():
    lookups = ansible_doc('lookup', ['role_arguments'])
    assert lookups['gpufleet.tuning.role_arguments']['doc']['options']['_terms']
    roles = ansible_doc('role', ROLES)
    for role in ROLES:
        entry = roles['gpufleet.tuning.' + role]
        assert entry['entry_points']['main']['options'], role


@pytest.mark.skipif(not SIDECARS, reason='ansible-core %s reads no sidecar filter docs (2.14+)'
                    % ANSIBLE_VERSION)
def test_ansible_doc_renders_every_filter():
    names = sorted(filters())
    docs = ansible_doc('filter', names)
    assert sorted(docs) == ['gpufleet.tuning.' + name for name in names]
    for name in names:
        doc = docs['gpufleet.tuning.' + name]['doc']
        assert doc['name'] == name and doc['short_description'] and doc['options']['_input']


def test_every_filter_is_documented_as_its_function_takes_it():
    for name, function in sorted(filters().items()):
        path = os.path.join(ROOT, 'plugins', 'filter', name + '.yml')
        assert os.path.exists(path), 'filter %s has no documentation (%s)' % (name, path)
        with open(path) as handle:
            sidecar = yaml.safe_load(handle)
        doc = sidecar['DOCUMENTATION']
        assert doc['name'] == name and sidecar['EXAMPLES'].count('gpufleet.tuning.' + name)
        assert sidecar['RETURN']['_value']['description'], name
        params = list(inspect.signature(function).parameters.values())
        positional = [p.name for p in params[1:]]
        assert [p.strip() for p in doc.get('positional', '').split(',') if p.strip()] \
            == positional, name
        assert sorted(doc['options']) == sorted(['_input'] + positional), name
        for param in params[1:]:
            option = doc['options'][param.name]
            assert option['description'], (name, param.name)
            if param.default is inspect.Parameter.empty:
                assert option.get('required') is True, (name, param.name)
            else:
                assert not option.get('required'), (name, param.name)
                assert option.get('default') == param.default, (name, param.name)
        assert doc['options']['_input'].get('required') is True, name
