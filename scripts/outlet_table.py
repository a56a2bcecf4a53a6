"""Write (``--write``) or print the outlet x status table of docs/audit.md from
plugins/module_utils/reports/findings.py (OUTLETS, FAILING, MEANING): what every outlet does
with each status of a finding. tests/unit/scripts/test_outlet_table.py fails when the doc is
stale."""
import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
DOC = os.path.join(ROOT, 'docs', 'audit.md')
BEGIN = '<!-- outlet table: python3 scripts/outlet_table.py --write -->'
END = '<!-- end of outlet table -->'


def load():
    """reports/findings.py, plain Python with no import of the collection's."""
    import importlib.util
    path = os.path.join(ROOT, 'plugins', 'module_utils', 'reports', 'findings.py')
    spec = importlib.util.spec_from_file_location('findings', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table(findings):
    """The Markdown: statuses with their meaning, then outlet x status, failures in bold."""
    lines = ['| status | meaning |', '| --- | --- |']
    lines += ['| `%s` | %s |' % (s, findings.MEANING[s]) for s in findings.STATUSES]
    lines += ['', '| outlet | %s |' % ' | '.join('`%s`' % s for s in findings.STATUSES),
              '| --- |%s' % (' --- |' * len(findings.STATUSES))]
    for outlet in sorted(findings.OUTLETS):
        cells = []
        for status in findings.STATUSES:
            cell = findings.OUTLETS[outlet][status]
            cells.append('**%s**' % cell if cell in findings.FAILING[outlet] else cell)
        lines.append('| %s | %s |' % (findings.OUTLET_TEXT[outlet], ' | '.join(cells)))
    return '\n'.join(lines) + '\n'


def render(doc, text):
    if BEGIN not in doc:
        raise SystemExit('%s has no line %s' % (DOC, BEGIN))
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return head + BEGIN + '\n' + text + END + tail


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--write', action='store_true', help='write docs/audit.md')
    args = parser.parse_args(argv)
    text = table(load())
    if not args.write:
        sys.stdout.write(text)
        return 0
    with open(DOC) as handle:
        doc = handle.read()
    with open(DOC, 'w') as handle:
        handle.write(render(doc, text))
    return 0


if __name__ == '__main__':
    sys.exit(main())
