"""Issue 40 item 4, a ratchet: no code outside contexts/ and the registry names a context by a
string literal. The count of string constants in plugins/ (outside plugins/module_utils/
contexts/, docstrings left out) equal to a context's configured or probed name may only go
down: a new one fails here (give the record a hook, or use a role handle of
contexts/__init__.py such as registry.PAM). Counted as /work/prompts/context_literals_count.py
counts. Lower LIMIT when you remove some."""
import ast
import collections
import os

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
CONTEXTS_DIR = os.path.join('plugins', 'module_utils', 'contexts')
#: 73 in 22 files when issue 40 was filed, 55 in 21 before item 4 (item kinds)
LIMIT = 33


def context_names():
    names = set()
    for record in registry.REGISTRY:
        names.update(n for n in (record.name, record.probe) if n)
    return names


def literals(root=ROOT, names=None):
    """Counter {path: count} of the context-name literals outside contexts/."""
    names = context_names() if names is None else names
    found = collections.Counter()
    for base, _dirs, files in os.walk(os.path.join(root, 'plugins')):
        rel = os.path.relpath(base, root)
        if rel == CONTEXTS_DIR or rel.startswith(CONTEXTS_DIR + os.sep):
            continue
        for name in sorted(f for f in files if f.endswith('.py')):
            path = os.path.join(base, name)
            with open(path, encoding='utf-8') as handle:
                tree = ast.parse(handle.read())
            docs = set()
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body \
                        and isinstance(node.body[0], ast.Expr) \
                        and isinstance(node.body[0].value, ast.Constant):
                    docs.add(id(node.body[0].value))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        node.value in names and id(node) not in docs:
                    found[os.path.relpath(path, root)] += 1
    return found


def test_no_new_context_name_literal_outside_contexts():
    found = literals()
    total = sum(found.values())
    assert total <= LIMIT, 'context names as string literals outside contexts/: %d > %d:\n%s' % (
        total, LIMIT, '\n'.join('%d %s' % (n, p) for p, n in found.most_common()))


def test_the_count_finds_a_literal_and_skips_docstrings_and_contexts(tmp_path):
    module = tmp_path / 'plugins' / 'module_utils' / 'run'
    module.mkdir(parents=True)
    (module / 'x.py').write_text('"""pam is named here."""\nA = "pam"\nB = "pams"\n'
                                 'def f():\n    """docker"""\n    return "docker"\n')
    inside = tmp_path / 'plugins' / 'module_utils' / 'contexts'
    inside.mkdir()
    (inside / 'y.py').write_text('A = "pam"\n')
    assert literals(str(tmp_path), set(['pam', 'docker'])) == {
        os.path.join('plugins', 'module_utils', 'run', 'x.py'): 2}
