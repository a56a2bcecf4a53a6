# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The import graph of plugins/module_utils: for each file, the module_utils it imports (at the
top or inside a function), as a Markdown table for docs/contexts.md.

    python3 scripts/module_utils_graph.py            # print the table
    python3 scripts/module_utils_graph.py --write    # replace the table in docs/contexts.md
"""
import ast
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
SOURCES = os.path.join(ROOT, 'plugins', 'module_utils')
DOC = os.path.join(ROOT, 'docs', 'contexts.md')
PREFIX = 'ansible_collections.gpufleet.tuning.plugins.module_utils'
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


def main(argv):
    text = table()
    if '--write' not in argv:
        sys.stdout.write(text)
        return 0
    doc = open(DOC, encoding='utf-8').read()
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = doc.rstrip('\n') + '\n\n', '\n'
    with open(DOC, 'w', encoding='utf-8') as handle:
        handle.write(head + BEGIN + '\n' + text + END + tail)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
