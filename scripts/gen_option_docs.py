# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the documentation of the options that are declared once, as data
(plugins/module_utils/core/options.py and each context's record in plugins/module_utils/contexts/),
where Ansible needs it as static YAML:

- the ``options:`` entries of each module that composes its argument_spec from them (the
  module's ``OPTIONS``), between the GENERATED options markers of its DOCUMENTATION, and the
  doc fragments of its option groups (options.Group) between the GENERATED fragments markers
  of its ``extends_documentation_fragment``; the module's other options and the rest of the
  DOCUMENTATION stay hand-written;
- plugins/doc_fragments/options.py, the groups' documentation (documented once for the modules
  that take them), whole;
- the limits role's variables that pass such an option through (an option's ``role``), between
  the markers of roles/limits/meta/argument_specs.yml, and the defaults of those of the
  contexts' probes (their images, ``limits_verify_probe_options``) between the markers of
  roles/limits/defaults/main.yml;
- the names of the contexts' probe options in the probe_options lookup (plugins/lookup/
  probe_options.py), between its markers: that lookup runs in a worker per host and task on
  the controller, which would otherwise import (and compile) the whole registry each time.

Usage: python3 scripts/gen_option_docs.py (or `make docs-gen`) rewrites the files; --check writes
nothing and exits 1 naming each file that differs. tests/unit/scripts/test_gen_option_docs.py
runs the same check.
"""
from __future__ import print_function

import argparse
import importlib
import json
import os
import sys
import textwrap

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
COMMAND = 'make docs-gen'
BEGIN = '# BEGIN GENERATED %%s by %s from module_utils/core/options.py and contexts/: do not edit' \
    % COMMAND
END = '# END GENERATED %s'
#: the modules whose argument_spec is composed (each has OPTIONS)
MODULES = ('limits_profile', 'effective_limits', 'limits_audit', 'limits_restart')
ROLE_SPEC = os.path.join('roles', 'limits', 'meta', 'argument_specs.yml')
ROLE_DEFAULTS = os.path.join('roles', 'limits', 'defaults', 'main.yml')
PROBE_LOOKUP = os.path.join('plugins', 'lookup', 'probe_options.py')
FRAGMENT = os.path.join('plugins', 'doc_fragments', 'options.py')
WIDTH = 100


def collection():
    """Make ansible_collections.gpufleet.tuning importable from this checkout."""
    base = os.path.join(ROOT, 'build', 'collections')
    link = os.path.join(base, 'ansible_collections', 'gpufleet', 'tuning')
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link))
        os.symlink(ROOT, link)
    if base not in sys.path:
        sys.path.insert(0, base)


def package(name):
    collection()
    return importlib.import_module('ansible_collections.gpufleet.tuning.plugins.' + name)


def module_options(module):
    """The Option records ``module`` composes its argument_spec from."""
    return package('modules.' + module).OPTIONS


def role_options():
    """The Option records the limits role passes through (those with a ``role``)."""
    registry = package('module_utils.contexts')
    opts = package('module_utils.core.options')
    options = (registry.CONFIGURED_OPTION, opts.RESTART_POLICY) + registry.OPTIONS \
        + registry.PROBE_OPTIONS + (registry.PROBE_MAP,)
    return [option for option in options if option.role]


def probe_role_options():
    """The limits role's variables of the contexts' probe options, and their mapping."""
    registry = package('module_utils.contexts')
    return [option for option in registry.PROBE_OPTIONS + (registry.PROBE_MAP,) if option.role]


def scalar(value):
    """``value`` as one line of YAML (flow style for lists and dicts)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10000).strip()
    if text.endswith('\n...'):
        text = text[:-4].strip()
    elif text.endswith('...'):
        text = text[:-3].strip()
    return text


def paragraph(text, indent):
    """One description paragraph as a YAML list item, wrapped to WIDTH, at ``indent``."""
    lead = ' ' * indent + '- '
    lines = textwrap.wrap(text, WIDTH, initial_indent=lead,
                          subsequent_indent=' ' * (indent + 2), break_long_words=False,
                          break_on_hyphens=False)
    rendered = '\n'.join(lines) + '\n'
    try:
        plain = yaml.safe_load(rendered) == [text]
    except yaml.YAMLError:  # a wrapped line that YAML reads as a key (``(C(x)) or: ...``)
        plain = False
    if not plain:  # not a plain scalar: quote it
        rendered = lead + json.dumps(text) + '\n'
    return rendered


def entry(name, description, spec, indent):
    """One option's YAML: ``name:`` at ``indent``, then description and spec keys."""
    inner = ' ' * (indent + 2)
    out = ' ' * indent + name + ':\n' + inner + 'description:\n'
    out += ''.join(paragraph(text, indent + 4) for text in description)
    for key in ('type', 'elements', 'choices', 'required', 'default', 'version_added'):
        if key in spec:
            out += '%s%s: %s\n' % (inner, key, scalar(spec[key]))
    return out


def groups(options):
    return [option for option in options if not hasattr(option, 'spec')]


def options_block(options, indent=2):
    """The entries of ``options`` that are not in a group, at ``indent``."""
    out = ''
    for option in options:
        if hasattr(option, 'spec'):
            doc = option.doc()
            out += entry(option.name, doc.pop('description'), doc, indent)
    return out


def fragments_block(options):
    """The ``extends_documentation_fragment`` entries of ``options``' groups."""
    return ''.join('  - %s\n' % group.fragment for group in groups(options))


def fragment_file():
    """plugins/doc_fragments/options.py: every group of the modules, documented."""
    found = {}
    for module in MODULES:
        for group in groups(module_options(module)):
            found[group.name] = group
    out = FRAGMENT_HEAD
    for name in sorted(found):
        out += '\n    # %s\n    %s = r\'\'\'\noptions:\n%s\'\'\'\n' % (
            ', '.join(m for m in MODULES if found[name] in groups(module_options(m))),
            name, options_block(found[name].options))
    return out


FRAGMENT_HEAD = '''# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# GENERATED by %s (scripts/gen_option_docs.py) from plugins/module_utils/core/options.py
# and the contexts' records: do not edit. A unit test fails when it differs.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Options that several modules take, documented once (options.Group); each attribute
    lists the modules that extend it."""
''' % COMMAND


def role_block(options):
    """The generated part of the limits role's ``options:`` (indent 6)."""
    out = ''
    for option in options:
        var = option.role
        spec = option.spec()
        spec.pop('default', None)
        spec.pop('required', None)
        spec['default'] = var.default
        out += entry(var.name, var.description or option.description, spec, 6)
    return out


def defaults_block(options):
    """The limits role's defaults of the contexts' probe variables (defaults/main.yml)."""
    return ''.join('%s: %s\n' % (option.role.name, scalar(option.role.default))
                   for option in options)


def names_block(options):
    """The probe options' names as a Python tuple (the probe_options lookup's NAMES)."""
    return 'NAMES = (\n%s)\n' % ''.join("    '%s',\n" % option.name for option in options)


def replace_block(text, block, indent, where, what='options'):
    """``text`` with what stands between the ``what`` markers (at ``indent``) replaced by
    ``block``."""
    begin, end = ' ' * indent + BEGIN % what + '\n', ' ' * indent + END % what + '\n'
    start = text.find(begin)
    stop = text.find(end)
    if start < 0 or stop < start or text.count(begin) != 1:
        raise SystemExit('%s: no GENERATED markers (%r ... %r) at indent %d'
                         % (where, BEGIN % what, END % what, indent))
    return text[:start + len(begin)] + block + text[stop:]


def expected():
    """{path relative to ROOT: (text now, text generated)}."""
    files = {}
    for module in MODULES:
        path = os.path.join('plugins', 'modules', module + '.py')
        with open(os.path.join(ROOT, path)) as handle:
            text = handle.read()
        options = module_options(module)
        new = replace_block(text, options_block(options), 2, path)
        files[path] = (text, replace_block(new, fragments_block(options), 2, path, 'fragments'))
    try:
        with open(os.path.join(ROOT, FRAGMENT)) as handle:
            text = handle.read()
    except IOError:
        text = ''
    files[FRAGMENT] = (text, fragment_file())
    with open(os.path.join(ROOT, ROLE_SPEC)) as handle:
        text = handle.read()
    files[ROLE_SPEC] = (text, replace_block(text, role_block(role_options()), 6, ROLE_SPEC))
    with open(os.path.join(ROOT, ROLE_DEFAULTS)) as handle:
        text = handle.read()
    files[ROLE_DEFAULTS] = (text, replace_block(text, defaults_block(probe_role_options()), 0,
                                                ROLE_DEFAULTS, 'probe variables'))
    with open(os.path.join(ROOT, PROBE_LOOKUP)) as handle:
        text = handle.read()
    files[PROBE_LOOKUP] = (text, replace_block(text, names_block(package('module_utils.contexts').PROBE_OPTIONS), 0,
                                               PROBE_LOOKUP, 'probe option names'))
    return files


def stale():
    """The files whose generated part differs from what the declarations give."""
    return sorted(path for path, (now, new) in expected().items() if now != new)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--check', action='store_true',
                        help='write nothing; exit 1 naming the files that differ')
    args = parser.parse_args(argv)
    files = expected()
    differing = sorted(path for path, (now, new) in files.items() if now != new)
    if args.check:
        for path in differing:
            print('%s: generated options differ from the declarations; run `%s`'
                  % (path, COMMAND))
        return 1 if differing else 0
    for path in differing:
        with open(os.path.join(ROOT, path), 'w') as handle:
            handle.write(files[path][1])
        print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
