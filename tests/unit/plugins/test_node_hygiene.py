# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 31 regression: the code that runs on the node (plugins/modules, plugins/module_utils)
keeps no compiled code there and uses no other project's private interfaces.

- No cache on the node: nothing imports a bytecode cache, and no path under ``/var/cache`` is
  named (ALLOWED_CACHE_PATHS is empty: limits_audit's probe proofs, once kept in
  /var/cache/gpufleet/proofs, are kept by the controller now, issue 31 item 20).
- No CPython import internals: ``_imp``, ``importlib._bootstrap*``, ``marshal``, ``zipimport``,
  ``__loader__``, and no change to ``sys.meta_path``, ``sys.path_hooks`` or
  ``sys.path_importer_cache``.
- No systemd private socket (``/run/systemd/private``, ``/run/user/UID/systemd/private``):
  systemd(1) keeps it to systemd; the modules ask systemctl.

Docstrings and comments may name these (to say they are not used); code may not."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

from conftest import ROOT

NODE_TREES = [os.path.join(ROOT, 'plugins', 'modules'), os.path.join(ROOT, 'plugins', 'module_utils')]

# Cache paths the node code may name: none. Read-only modules and check mode must leave the
# node unchanged, and a cache written by the other modules would be read by read-only ones
# (limits_audit's probe proofs are kept on the controller: module_utils/host/proofs.py).
ALLOWED_CACHE_PATHS = ()
FORBIDDEN_MODULES = ('_imp', 'marshal', 'zipimport', 'importlib._bootstrap',
                     'importlib._bootstrap_external', 'bytecode_cache', 'systemd_bus')
FORBIDDEN_SYS = ('meta_path', 'path_hooks', 'path_importer_cache')
FORBIDDEN_NAMES = ('__loader__',)
FORBIDDEN_TEXT = ('systemd/private', 'GPUFLEET_BYTECODE_CACHE', '_fix_co_filename')


def node_files():
    found = []
    for tree in NODE_TREES:
        for directory, _dirs, files in os.walk(tree):
            found.extend(os.path.join(directory, name) for name in sorted(files)
                         if name.endswith('.py'))
    return sorted(found)


def docstring_nodes(tree):
    """ids of the string constants that are docstrings (a bare string statement)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            ids.add(id(node.value))
    return ids


def forbidden_uses(source):
    """[(line, what)] of the forbidden uses in Python ``source``."""
    tree = ast.parse(source)
    docstrings = docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in FORBIDDEN_MODULES or alias.name.startswith('importlib._'):
                    found.append((node.lineno, 'import %s' % alias.name))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ''
            names = [module] + ['%s.%s' % (module, alias.name) for alias in node.names] \
                + [alias.name for alias in node.names]
            for name in names:
                if name in FORBIDDEN_MODULES or name.startswith('importlib._') \
                        or name.endswith(('.bytecode_cache', '.systemd_bus')):
                    found.append((node.lineno, 'from %s import %s' % (
                        module, ', '.join(alias.name for alias in node.names))))
                    break
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == 'sys' \
                    and node.attr in FORBIDDEN_SYS:
                found.append((node.lineno, 'sys.%s' % node.attr))
            if node.attr.startswith('_bootstrap') or node.attr in FORBIDDEN_NAMES:
                found.append((node.lineno, '.%s' % node.attr))
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            text = node.value
            if text in FORBIDDEN_MODULES + FORBIDDEN_NAMES:
                found.append((node.lineno, repr(text)))
            for word in FORBIDDEN_TEXT:
                if word in text:
                    found.append((node.lineno, repr(word)))
            start = text.find('/var/cache')
            while start >= 0:
                rest = text[start:]
                if not any(rest.startswith(path) and rest[len(path):len(path) + 1] in ('', '/', ')', ' ', "'")
                           for path in ALLOWED_CACHE_PATHS):
                    found.append((node.lineno, 'a path under /var/cache: %r' % rest[:60]))
                start = text.find('/var/cache', start + 1)
    return found


def test_the_node_code_is_there():
    files = node_files()
    assert len(files) > 20
    assert os.path.join(ROOT, 'plugins', 'modules', 'limits_profile.py') in files


def test_the_bytecode_cache_and_the_bus_client_are_gone():
    for name in ('bytecode_cache.py', 'systemd_bus.py'):
        assert not os.path.exists(os.path.join(ROOT, 'plugins', 'module_utils', name))


@pytest.mark.parametrize('path', node_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_no_cache_of_code_and_no_private_interfaces(path):
    with open(path, 'rb') as handle:
        source = handle.read().decode('utf-8')
    assert forbidden_uses(source) == [], path


@pytest.mark.parametrize('source, expected', [
    ('import marshal', 'import marshal'),
    ('import _imp', 'import _imp'),
    ('from importlib import _bootstrap', 'from importlib import _bootstrap'),
    ('import importlib._bootstrap_external', 'import importlib._bootstrap_external'),
    ('import sys\nsys.meta_path.insert(0, object())', 'sys.meta_path'),
    ('import sys\nsys.path_hooks.append(len)', 'sys.path_hooks'),
    ("fix = getattr(__import__('_imp'), '_fix_co_filename')", "'_imp'"),
    ('archive = __loader__.archive', '__loader__'),
    ("importer = globals().get('__loader__')", "'__loader__'"),
    ('from ansible_collections.gpufleet.tuning.plugins.module_utils import bytecode_cache',
     'from ansible_collections.gpufleet.tuning.plugins.module_utils import bytecode_cache'),
    ('from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_bus as bus',
     'from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_bus'),
    ("CACHE_DIR = '/var/cache/gpufleet/bytecode'", "a path under /var/cache: '/var/cache/gpufleet/bytecode'"),
    ("OTHER = '/var/cache/gpufleet/proofs-old'", "a path under /var/cache: '/var/cache/gpufleet/proofs-old'"),
    ("CACHE_DIR = '/var/cache/gpufleet/proofs'", "a path under /var/cache: '/var/cache/gpufleet/proofs'"),
    ("DOC = 'kept in C(/var/cache/gpufleet/proofs/probe-docker.json)'",
     "a path under /var/cache: '/var/cache/gpufleet/proofs/probe-docker.json)'"),
    ("SOCKET = '/run/systemd/private'", "'systemd/private'"),
    ("path = '/run/user/%d/systemd/private' % uid", "'systemd/private'"),
])
def test_the_check_finds_what_it_forbids(source, expected):
    assert expected in [what for _line, what in forbidden_uses(source)]


def test_docstrings_pass():
    source = ('"""Never /run/systemd/private, no /var/cache/gpufleet/bytecode or '
              '/var/cache/gpufleet/proofs."""\n'
              'import importlib\n')
    assert forbidden_uses(source) == []


def test_no_cache_path_is_allowed():
    assert ALLOWED_CACHE_PATHS == ()
