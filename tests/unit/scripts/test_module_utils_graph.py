"""Issue 32 item 5: plugins/module_utils is grouped by technology in layers, and stays so. The
graph is read from the files (scripts/module_utils_graph.py, imports inside functions too):
no import cycle, no import upward or into a sibling package of the same layer, no file of
plugins/ over 550 lines, every package says it is private, and docs/contexts.md holds the
tables the script writes. Each rule is also shown failing on a graph that breaks it."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import module_utils_graph as graph  # noqa: E402  pylint: disable=wrong-import-position

MAX_LINES = 550


def test_no_import_cycle():
    assert graph.cycles() == []


def test_no_import_goes_upward_or_sideways():
    assert graph.violations() == []


def test_every_package_is_in_a_layer_and_says_it_is_private():
    source = os.path.join(ROOT, 'plugins', 'module_utils')
    packages = sorted(name for name in os.listdir(source)
                      if os.path.isdir(os.path.join(source, name)) and name != '__pycache__')
    layered = sorted(p for packages_, _what in graph.LAYERS for p in packages_)
    assert packages == layered
    loose = [name for name in os.listdir(source) if name.endswith('.py')]
    assert loose == [], 'every module_utils file is in a package: %s' % loose
    for name in packages:
        with open(os.path.join(source, name, '__init__.py'), encoding='utf-8') as handle:
            assert 'private to the collection' in ' '.join(handle.read().lower().split()), name


@pytest.mark.parametrize('rows, expected', [
    ([('a/x', {'a/y': 'top'}), ('a/y', {'a/x': 'lazy'})], [['a/x', 'a/y', 'a/x']]),
    ([('a/x', {'a/y': 'top'}), ('a/y', {'a/z': 'top'}), ('a/z', {'a/x': 'top'})],
     [['a/x', 'a/y', 'a/z', 'a/x']]),
    ([('a/x', {'a/y': 'top'}), ('a/y', {})], []),
])
def test_cycles_are_found(rows, expected):
    assert graph.cycles(rows) == expected


def test_upward_and_sibling_imports_are_found():
    rows = [('core/errors', {'systemd/restarts': 'lazy'}),
            ('pam/pam_limits_conf', {'runtimes/toml_text': 'top', 'model/items': 'top'}),
            ('contexts/pam', {'pam/pam_limits_conf': 'top', 'contexts/_base': 'top'}),
            ('nowhere/x', {'core/errors': 'top'})]
    assert graph.violations(rows) == [
        'core/errors imports systemd/restarts: upward (layer 0 imports layer 3)',
        'pam/pam_limits_conf imports runtimes/toml_text: a sibling package of its layer',
        'nowhere/x: its package is in no layer (LAYERS)']


def test_no_plugin_file_is_over_the_limit():
    long_files = []
    for directory, _dirs, files in os.walk(os.path.join(ROOT, 'plugins')):
        for filename in files:
            if filename.endswith('.py'):
                path = os.path.join(directory, filename)
                with open(path, encoding='utf-8') as handle:
                    count = sum(1 for _line in handle)
                if count > MAX_LINES:
                    long_files.append('%s: %d lines' % (os.path.relpath(path, ROOT), count))
    assert long_files == []


def test_the_docs_hold_the_generated_tables():
    with open(graph.DOC, encoding='utf-8') as handle:
        doc = handle.read()
    assert graph.rendered(doc) == doc, (
        'docs/contexts.md is stale: run python3 scripts/module_utils_graph.py --write')
    stale = doc.replace('| `run/audit` |', '| `run/audit_old` |', 1)
    assert graph.rendered(stale) != stale
