# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layers and the import graph of plugins/module_utils: for each file, the module_utils it
imports (at the top or inside a function), as Markdown tables for docs/contexts.md; and the
rules the graph keeps (tests/unit/scripts/test_module_utils_graph.py fails when one breaks):

* no import cycle between files, counting imports inside functions;
* a file imports only from its own package or from a lower layer (LAYERS): never upward,
  never a sibling package of its own layer (Podman's code does not load Docker's);
* docs/contexts.md holds what this script writes (``--check`` says when it is stale).

    python3 scripts/module_utils_graph.py            # print the tables
    python3 scripts/module_utils_graph.py --write    # replace them in docs/contexts.md
    python3 scripts/module_utils_graph.py --check    # exit 1 when docs/contexts.md is stale
"""
import ast
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
SOURCES = os.path.join(ROOT, 'plugins', 'module_utils')
DOC = os.path.join(ROOT, 'docs', 'contexts.md')
PREFIX = 'ansible_collections.gpufleet.tuning.plugins.module_utils'
#: (package, what it holds), lowest layer first; packages on one line share a layer and do
#: not import one another
LAYERS = (
    (('core',), 'files, errors, commands, planned changes'),
    (('model',), 'the limit model, a job\'s shape'),
    (('host',), 'the node\'s state, read only'),
    (('systemd',), 'systemd: units, managers, restarts'),
    (('pam', 'runtimes', 'slurm', 'kernel'), 'one technology each'),
    (('reports', 'undo'), 'what the modules report; undoing one file'),
    (('contexts',), 'the registry: one record per context'),
    (('run',), 'what the modules run over the registry'),
)
BEGIN = '<!-- import graph: python3 scripts/module_utils_graph.py --write -->'
END = '<!-- end of import graph -->'


def name_of(path):
    rel = os.path.relpath(path, SOURCES)[:-len('.py')]
    return rel[:-len('/__init__')] if rel.endswith('/__init__') else rel


def imports(path):
    """{module_utils name: 'top' or 'lazy'} imported by the file at ``path``."""
    tree = ast.parse(open(path, encoding='utf-8').read(), path)
    lazy_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lazy_nodes.update(id(n) for n in ast.walk(node) if n is not node)
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (node.module or '').startswith(PREFIX):
            continue
        base = node.module[len(PREFIX):].lstrip('.').replace('.', '/')
        targets = []
        for alias in node.names:
            candidate = '/'.join(p for p in (base, alias.name) if p)
            if os.path.exists(os.path.join(SOURCES, candidate + '.py')) or \
                    os.path.exists(os.path.join(SOURCES, candidate, '__init__.py')):
                targets.append(candidate)
            elif base:
                targets.append(base)
        kind = 'lazy' if id(node) in lazy_nodes else 'top'
        for target in targets:
            if found.get(target) != 'top':
                found[target] = kind
    return found


def graph():
    rows = []
    for directory, _dirs, files in os.walk(SOURCES):
        for filename in files:
            if filename.endswith('.py'):
                path = os.path.join(directory, filename)
                rows.append((name_of(path), imports(path)))
    return sorted(rows)


def package(name):
    return name.split('/', 1)[0]


def layer(name):
    for index, (packages, _what) in enumerate(LAYERS):
        if package(name) in packages:
            return index
    return None


def violations(rows=None):
    """['a imports b: why'] for every import that breaks a layer rule."""
    found = []
    for name, targets in (rows or graph()):
        for target in sorted(targets):
            mine, theirs = layer(name), layer(target)
            if mine is None:
                found.append('%s: its package is in no layer (LAYERS)' % name)
                break
            if theirs is None or package(name) == package(target):
                continue
            if theirs > mine:
                found.append('%s imports %s: upward (layer %d imports layer %d)'
                             % (name, target, mine, theirs))
            elif theirs == mine:
                found.append('%s imports %s: a sibling package of its layer' % (name, target))
    return found


def cycles(rows=None):
    """Every import cycle (a list of files, the first repeated at the end), once each."""
    edges = dict((name, sorted(targets)) for name, targets in (rows or graph()))
    found, seen = [], set()

    def walk(node, path):
        for target in edges.get(node, ()):
            if target in path:
                cycle = path[path.index(target):] + [target]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    found.append(cycle)
            elif target in edges and target not in done:
                walk(target, path + [target])
        done.add(node)

    done = set()
    for start in sorted(edges):
        if start not in done:
            walk(start, [start])
    return found


def layers_table():
    rows = graph()
    lines = ['| layer | packages | holds | files |', '| ---: | --- | --- | ---: |']
    for index, (packages, what) in enumerate(LAYERS):
        names = [name for name, _found in rows if package(name) in packages]
        listed = ', '.join('`%s`' % p for p in packages)
        lines.append('| %d | %s | %s | %d |' % (index, listed, what, len(names)))
    return '\n'.join(lines) + '\n'


def table():
    lines = ['| module_utils | imports (*in a function*) | imported by (module_utils files) |', '| --- | --- | --- |']
    rows = graph()
    users = {}
    for name, found in rows:
        for target in found:
            users.setdefault(target, set()).add(name)
    for name, found in rows:
        listed = ', '.join('*%s*' % t if kind == 'lazy' else t for t, kind in sorted(found.items()))
        lines.append('| `%s` | %s | %d |' % (name, listed or '-', len(users.get(name, ()))))
    return '\n'.join(lines) + '\n'


def rendered(doc):
    """docs/contexts.md's text with the generated tables replaced."""
    text = layers_table() + '\n' + table()
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = doc.rstrip('\n') + '\n\n', '\n'
    return head + BEGIN + '\n' + text + END + tail


def main(argv):
    doc = open(DOC, encoding='utf-8').read()
    if '--check' in argv:
        if rendered(doc) != doc:
            sys.stderr.write('docs/contexts.md: the import graph is stale; run python3 '
                             'scripts/module_utils_graph.py --write\n')
            return 1
        return 0
    if '--write' not in argv:
        sys.stdout.write(layers_table() + '\n' + table())
        return 0
    with open(DOC, 'w', encoding='utf-8') as handle:
        handle.write(rendered(doc))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
