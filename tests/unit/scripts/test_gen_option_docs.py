"""The options declared once (module_utils/core/options.py, the contexts' records) and their static
copies: the generated part of the modules' DOCUMENTATION and of the limits role's
meta/argument_specs.yml must be what scripts/gen_option_docs.py writes now, and every module
documents exactly the options its argument_spec has, with the same type, default and choices
(what ansible-test's validate-modules checks too, here in the unit tests)."""
import importlib
import os
import sys
import textwrap

import pytest
import yaml

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import gen_option_docs as gen  # noqa: E402  pylint: disable=wrong-import-position

# report_files runs as an action plugin only: its module file builds no AnsibleModule
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, 'plugins', 'modules'))
                 if name.endswith('.py') and not name.startswith('_')
                 and name != 'report_files.py')
SPEC_KEYS = ('type', 'elements', 'choices', 'default', 'required')


def test_the_generated_copies_are_current():
    stale = gen.stale()
    assert stale == [], ('generated option docs differ from the declarations in %s: run `%s` '
                         '(scripts/gen_option_docs.py) and commit the result'
                         % (', '.join(stale), gen.COMMAND))


def test_a_stale_copy_is_named_with_the_command(monkeypatch, capsys):
    files = gen.expected()
    path = sorted(files)[0]
    now, new = files[path]
    monkeypatch.setattr(gen, 'expected', lambda: dict(files, **{path: (now + '#', new)}))
    assert gen.main(['--check']) == 1
    out = capsys.readouterr().out
    assert path in out and gen.COMMAND in out


def test_the_generated_yaml_is_the_declarations():
    for module in gen.MODULES:
        options = gen.module_options(module)
        block = yaml.safe_load('options:\n' + gen.options_block(options))['options'] or {}
        assert block == dict((o.name, o.doc()) for o in options if isinstance(o, opts.Option))
        assert yaml.safe_load(gen.fragments_block(options)) == (
            [g.fragment for g in options if isinstance(g, opts.Group)] or None)
        for group in gen.groups(options):
            assert fragment(group.fragment) == dict((o.name, o.doc()) for o in group.options)
    block = textwrap.indent(textwrap.dedent(gen.role_block(gen.role_options())), '  ')
    role = yaml.safe_load('options:\n' + block)['options']
    for option in gen.role_options():
        entry = role.pop(option.role.name)
        assert entry['default'] == option.role.default and entry['type'] == option.type
        assert entry['description'] == list(option.role.description or option.description)
    assert role == {}


class Stop(Exception):
    pass


def argument_spec(module):
    """{option: spec} that ``module``'s main() builds its AnsibleModule with."""
    code = importlib.import_module('ansible_collections.gpufleet.tuning.plugins.modules.' + module)
    captured = {}

    def fake(*args, **kwargs):
        captured.update(kwargs)
        raise Stop()
    original = code.AnsibleModule
    code.AnsibleModule = fake
    try:
        code.main()
    except Stop:
        pass
    finally:
        code.AnsibleModule = original
    return captured['argument_spec']


def fragment(name):
    """The ``options`` a gpufleet.tuning doc fragment (``attributes.RUNTIME_FORCE``) adds."""
    parts = name.split('.')[2:]
    code = importlib.import_module('ansible_collections.gpufleet.tuning.plugins.doc_fragments.'
                                   + parts[0])
    text = getattr(code.ModuleDocFragment, parts[1] if len(parts) > 1 else 'DOCUMENTATION')
    return yaml.safe_load(text).get('options') or {}


def documented(module):
    """{option: its documentation}, the module's fragments included."""
    code = importlib.import_module('ansible_collections.gpufleet.tuning.plugins.modules.' + module)
    doc = yaml.safe_load(code.DOCUMENTATION)
    options = {}
    for name in doc.get('extends_documentation_fragment') or ():
        options.update(fragment(name))
    options.update(doc.get('options') or {})
    return options


@pytest.mark.parametrize('module', MODULES)
def test_every_option_is_documented_and_every_documented_option_exists(module):
    spec, docs = argument_spec(module), documented(module)
    assert sorted(set(spec) - set(docs)) == [], 'undocumented in %s' % module
    assert sorted(set(docs) - set(spec)) == [], 'documented, not in the spec of %s' % module
    for name, entry in spec.items():
        doc = docs[name]
        assert doc.get('description'), (module, name)
        for key in SPEC_KEYS:
            want = entry.get(key)
            have = doc.get(key)
            if key == 'required':
                want, have = bool(want), bool(have)
            if key == 'type':
                want, have = want or 'str', have or 'str'
            if key == 'choices' and want is not None:
                want, have = list(want), list(have or ())
            assert have == want, (module, name, key, have, want)


def test_the_composed_modules_take_their_options_from_the_declarations():
    for module in gen.MODULES:
        spec = argument_spec(module)
        for option in opts.flat(gen.module_options(module)):
            assert spec[option.name] == option.spec(), (module, option.name)
    composed = opts.spec(effective.OPTIONS)
    assert dict((name, entry) for name, entry in effective.argument_spec().items()
                if name in composed) == composed


def test_each_context_declares_its_options_once():
    names = [o.name for c in registry.REGISTRY
             for o in c.configured_options() + c.probed_options()]
    assert len(names) == len(set(names)), names
    assert registry.PATH_DEFAULTS == dict((c.path.name, c.target) for c in registry.REGISTRY
                                          if c.path)
    for context in registry.REGISTRY:
        # a path or image option is declared as an Option on the record (path = Option(...)),
        # never as a bare name: the modules' argument_spec is composed from the declarations
        assert context.path_option == (context.path.name if context.path else None), context
        assert context.image_option == (context.image.name if context.image else None), context
        # a path option's default, where it has one, is the file the context writes
        assert context.path is None or context.path.default in (None, context.target), context
        if context.image_option:
            assert context.probe and context.image.type == 'str', context
        for option in context.configured_options() + context.probed_options():
            assert isinstance(option, opts.Option) and option.description, option


def test_the_role_passes_each_generated_variable_through():
    text = ''
    for part in ('tasks/main.yml', 'vars/main.yml', 'defaults/main.yml'):
        with open(os.path.join(ROOT, 'roles', 'limits', part)) as handle:
            text += handle.read()
    with open(os.path.join(ROOT, 'roles', 'limits', 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    probe = [option.name for option in gen.package('module_utils.contexts').PROBE_OPTIONS]
    for option in gen.role_options():
        var = option.role
        assert var.name in defaults and defaults[var.name] == var.default, var.name
        if option.name in probe:
            # passed as probe_options by the probe_options lookup, which reads each probe
            # option from limits_verify_NAME (vars/main.yml __limits_probe_options)
            assert var.name == 'limits_verify_' + option.name, var.name
            assert "lookup('gpufleet.tuning.probe_options', 'limits_verify_')" in text
        else:
            assert text.count(var.name) >= 2, '%s is not passed to the modules' % var.name
