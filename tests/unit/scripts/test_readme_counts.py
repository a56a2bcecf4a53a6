"""The README's count of the reliability suite's bad inputs is the suite's (it said 48 while the
suite had 68): read from molecule/reliability/tests/test_bad_input.py's CASES."""
import ast
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def test_the_readme_counts_the_bad_inputs_the_suite_has():
    with open(os.path.join(ROOT, 'molecule', 'reliability', 'tests', 'test_bad_input.py')) as f:
        tree = ast.parse(f.read())
    cases = [node.value for node in tree.body if isinstance(node, ast.Assign)
             and getattr(node.targets[0], 'id', None) == 'CASES'][0]
    with open(os.path.join(ROOT, 'README.md')) as handle:
        said = re.search(r'(\d+) bad inputs', handle.read())
    assert said and int(said.group(1)) == len(cases.elts)
