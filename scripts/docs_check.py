"""Docs that cannot drift: the runnable shell blocks and the quoted figures of README.md and
docs/*.md.

A shell block is runnable when the line before its opening fence is a marker naming the one
runner that runs it:

    <!-- run: RUNNER -->
    ```sh
    make demo
    ```

RUNNERS below says where each runner runs its blocks; tests/unit/scripts/test_docs.py checks
that every marker names one of them and that each runner is wired where it says (a block is run
by exactly one runner). `python3 scripts/docs_check.py run RUNNER` runs RUNNER's blocks, in the
order of the files and of the blocks in them, as one bash script (set -euo pipefail; exports
carry from block to block), in the repository, or with --clone in a fresh `git clone` of it.

A figure quoted in prose carries the place it comes from, in a marker just before it:

    the job runs at <!-- fact: benchmarks/demo-throughput.json#after.login.images_per_s -->11.2 images/s
    <!-- fact: count:bad-inputs -->68 bad inputs

`FILE.json#a.b.c` is a value of a JSON file under benchmarks/ (list items by index, or
`[key=value,key=value]`: the one item with those values, as in
`benchmarks/results.json#[approach=gpufleet,phase=rerun].vs_ping`; none or several is an error);
`count:NAME` one of COUNTS, counted from the code. A marker in `inline code` is not one. The figure after the marker must be the
value, shown to as many decimals as it is written with. `python3 scripts/docs_check.py facts`
lists them and fails on a stale one; `--write` rewrites the figures from their sources.
"""
import argparse
import ast
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))

#: runner -> where its blocks are run (checked by tests/unit/scripts/test_docs.py)
RUNNERS = {
    'unit': 'tests/unit/scripts/test_docs.py runs the block in the repository (make test: make unit)',
    'fresh-clone': 'tests/unit/scripts/test_docs.py runs the block in a fresh git clone of the repository',
    'demo-test': 'the Makefile\'s demo-test target runs the blocks (make test: make suites)',
    'ci': '.ci/run runs the block\'s commands as written (CI)',
}

SHELL_LANGS = ('sh', 'bash', 'shell', 'console')
RUN_MARK = re.compile(r'^<!-- run: ([a-z0-9-]+) -->\s*$')
FACT_MARK = re.compile(r'(?<!`)<!-- fact: (\S+) -->(-?[0-9][0-9,]*(?:\.[0-9]+)?)')
FENCE = re.compile(r'^```\s*([A-Za-z0-9_+-]*)')


def doc_files(root=ROOT):
    """README.md, then docs/*.md and the roles' READMEs, in a fixed order."""
    return [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md'))) \
        + sorted(glob.glob(os.path.join(root, 'roles', '*', 'README.md')))


def blocks(path, root=ROOT):
    """Every fenced block of PATH: dicts of file, line (of the fence), lang, runner (the marker
    on the line before, or None) and text."""
    found = []
    with open(path) as handle:
        lines = handle.read().split('\n')
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        start = index
        end = start + 1
        while end < len(lines) and not lines[end].startswith('```'):
            end += 1
        marker = RUN_MARK.match(lines[start - 1]) if start else None
        found.append({'file': os.path.relpath(path, root), 'line': start + 1, 'lang': match.group(1),
                      'runner': marker.group(1) if marker else None,
                      'text': '\n'.join(lines[start + 1:end]) + '\n'})
        index = end + 1
    return found


def marked(root=ROOT):
    """The runnable blocks of every doc file, in order, with the markers that lead nothing
    runnable (a marker not followed by a shell block) as problems."""
    result, problems = [], []
    for path in doc_files(root):
        with open(path) as handle:
            lines = handle.read().split('\n')
        starts = dict((b['line'], b) for b in blocks(path, root))
        for number, line in enumerate(lines, 1):
            mark = RUN_MARK.match(line)
            if not mark:
                continue
            block = starts.get(number + 1)
            where = '%s:%d' % (os.path.relpath(path, root), number)
            if block is None or block['lang'] not in SHELL_LANGS:
                problems.append('%s: "%s" is not followed by a ```sh block' % (where, line.strip()))
            elif mark.group(1) not in RUNNERS:
                problems.append('%s: unknown runner %r (known: %s)' % (where, mark.group(1), ', '.join(sorted(RUNNERS))))
            else:
                result.append(block)
    return result, problems


def stamp(where):
    """The line that says when a block starts (and, with DOCS_CHECK_TIMES set, records it)."""
    return ('echo "+ %s (at ${SECONDS} s)" >&2; [ -z "${DOCS_CHECK_TIMES:-}" ] '
            '|| echo "%s ${SECONDS}" >> "$DOCS_CHECK_TIMES"' % (where, where))


def script(runner, root=ROOT):
    """RUNNER's blocks as one bash script, each led by a comment naming its file and line."""
    parts = ['set -euo pipefail']
    for block in marked(root)[0]:
        if block['runner'] == runner:
            body = block['text']
            if block['lang'] == 'console':     # "$ command" lines; the others are output
                body = ''.join(line[2:] + '\n' for line in body.splitlines() if line.startswith('$ '))
            where = '%s:%d' % (block['file'], block['line'])
            parts.append('# %s\n%s\n%s' % (where, stamp(where), body))
    parts.append(stamp('done'))
    return '\n'.join(parts) + '\n'


def clone(root, into):
    """A fresh clone of ROOT's committed tree in INTO (what a new user gets)."""
    subprocess.check_call(['git', 'clone', '-q', '--no-hardlinks', root, into])
    return into


def run(runner, root=ROOT, fresh=False, env=None, record=None):
    """Run RUNNER's blocks; returns bash's exit status. RECORD: a JSON file that gets the wall
    time of each block (a walkthrough's measurement for benchmarks/)."""
    text = script(runner, root)
    if '\n# ' not in text:
        sys.stderr.write('no blocks marked <!-- run: %s --> in %s\n' % (runner, root))
        return 1
    env = dict(os.environ if env is None else env)
    times = tempfile.NamedTemporaryFile(prefix='docs-check-times-', delete=False)
    times.close()
    env['DOCS_CHECK_TIMES'] = times.name
    try:
        if not fresh:
            status = subprocess.call(['bash', '-c', text], cwd=root, env=env)
        else:
            with tempfile.TemporaryDirectory(prefix='gpufleet-fresh-') as tmp:
                status = subprocess.call(['bash', '-c', text], env=env,
                                         cwd=clone(root, os.path.join(tmp, 'gpufleet.tuning')))
        if record:
            with open(times.name) as handle:
                marks = [line.rsplit(' ', 1) for line in handle.read().splitlines()]
            write_record(record, runner, root, marks, status)
    finally:
        os.unlink(times.name)
    return status


def write_record(path, runner, root, marks, status):
    """benchmarks/walkthrough.json: each block's wall time, the machine and the commit."""
    import platform
    import time
    texts = dict(('%s:%d' % (b['file'], b['line']), b['text']) for b in marked(root)[0])
    rows = []
    for (where, start), (_next, end) in zip(marks, marks[1:]):
        seconds = int(end) - int(start)
        rows.append({'block': where, 'commands': [line for line in texts.get(where, '').splitlines()
                                                  if line.strip() and not line.startswith('#')],
                     'seconds': seconds, 'minutes': round(seconds / 60.0, 1)})
    try:
        commit = subprocess.check_output(['git', 'rev-parse', '--short', 'HEAD'], cwd=root,
                                         universal_newlines=True, stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ''
    data = {'runner': runner, 'exit_status': status, 'commit': commit,
            'written': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
            'machine': '%d cores, %s, load average %s at the end' % (
                os.cpu_count() or 0, platform.machine(), ' '.join('%.1f' % v for v in os.getloadavg())),
            'blocks': rows, 'total_s': sum(r['seconds'] for r in rows)}
    with open(path, 'w') as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write('\n')
    if path.endswith('.json'):
        lines = ['# Walkthrough: the blocks marked `<!-- run: %s -->`, timed' % runner, '',
                 'Written by `python3 scripts/docs_check.py run %s --record %s` (the README\'s blocks, as '
                 'one shell script, in order), %s at commit %s on %s; exit status %d.'
                 % (runner, os.path.basename(path), data['written'], commit or '?', data['machine'], status),
                 '', '| block | commands | wall s | min |', '| --- | --- | ---: | ---: |']
        for row in rows:
            lines.append('| %s | %s | %d | %.1f |' % (row['block'], '<br>'.join(
                '`%s`' % c.replace('|', '\\|') for c in row['commands']), row['seconds'], row['minutes']))
        lines.append('| total | | %d | %.1f |' % (data['total_s'], data['total_s'] / 60.0))
        with open(path[:-len('.json')] + '.md', 'w') as handle:
            handle.write('\n'.join(lines) + '\n')


# --- figures ----------------------------------------------------------------------------------

def count_bad_inputs(root):
    """The reliability suite's bad inputs: molecule/reliability/tests/test_bad_input.py's CASES."""
    with open(os.path.join(root, 'molecule', 'reliability', 'tests', 'test_bad_input.py')) as handle:
        tree = ast.parse(handle.read())
    cases = [node.value for node in tree.body if isinstance(node, ast.Assign)
             and getattr(node.targets[0], 'id', None) == 'CASES']
    return len(cases[0].elts)


def count_scenarios(root):
    """The Molecule scenarios (molecule/*/molecule.yml)."""
    return len(glob.glob(os.path.join(root, 'molecule', '*', 'molecule.yml')))


def count_modules(root):
    """The collection's modules (plugins/modules/*.py; report_files, an action plugin, has one)."""
    return len([p for p in glob.glob(os.path.join(root, 'plugins', 'modules', '*.py'))
                if not p.endswith('__init__.py')])


COUNTS = {
    'bad-inputs': count_bad_inputs,
    'scenarios': count_scenarios,
    'modules': count_modules,
}


def select(items, part, key):
    """The one item of ITEMS whose fields have the values PART ('[key=value,...]') names."""
    wanted = [pair.partition('=') for pair in part[1:-1].split(',')]
    if any(not name or not sep for name, sep, _value in wanted):
        raise KeyError('%s: %s is not [key=value,...]' % (key, part))
    found = [item for item in items if isinstance(item, dict) and all(
        name in item and str(item[name]) == value for name, _sep, value in wanted)]
    if len(found) != 1:
        raise KeyError('%s: %d items match %s, not one' % (key, len(found), part))
    return found[0]


def resolve(key, root=ROOT):
    """The value a fact marker names."""
    if key.startswith('count:'):
        name = key[len('count:'):]
        if name not in COUNTS:
            raise KeyError('unknown count %r (known: %s)' % (name, ', '.join(sorted(COUNTS))))
        return COUNTS[name](root)
    path, _hash, pointer = key.partition('#')
    if not path.startswith('benchmarks/') or not pointer:
        raise KeyError('%s: a fact is benchmarks/FILE.json#path or count:NAME' % key)
    with open(os.path.join(root, path)) as handle:
        value = json.load(handle)
    for part in pointer.split('.'):
        if isinstance(value, list) and part.startswith('[') and part.endswith(']'):
            value = select(value, part, key)
        else:
            value = value[int(part)] if isinstance(value, list) else value[part]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise KeyError('%s is %r, not a number' % (key, value))
    return value


def shown(value, like):
    """VALUE written as LIKE is (its decimals, its thousands separator)."""
    decimals = len(like.partition('.')[2])
    text = '%.*f' % (decimals, value)
    if ',' in like:
        whole, _dot, frac = text.partition('.')
        text = '{:,}'.format(int(whole)) + ('.' + frac if frac else '')
    return text


def facts(root=ROOT, write=False):
    """Every fact marker: (file, line, key, written, wanted) and the stale ones' problems;
    with write, stale figures are rewritten in place."""
    found, problems = [], []
    for path in doc_files(root):
        with open(path) as handle:
            text = handle.read()
        out = []
        last = 0
        for match in FACT_MARK.finditer(text):
            line = text.count('\n', 0, match.start()) + 1
            where = '%s:%d' % (os.path.relpath(path, root), line)
            try:
                wanted = shown(resolve(match.group(1), root), match.group(2))
            except (KeyError, IndexError, ValueError, OSError) as exc:
                problems.append('%s: %s' % (where, exc))
                continue
            found.append((where, match.group(1), match.group(2), wanted))
            if wanted != match.group(2):
                problems.append('%s: %s says %s, its source %s' % (where, match.group(1), match.group(2), wanted))
                out.append(text[last:match.start(2)] + wanted)
                last = match.end(2)
        unmarked = re.findall(r'(?<!`)<!-- fact: [^>]*-->(?!-?[0-9])', text)
        for bad in unmarked:
            problems.append('%s: %r is not followed by a figure' % (os.path.relpath(path, root), bad))
        if write and out:
            with open(path, 'w') as handle:
                handle.write(''.join(out) + text[last:])
    return found, problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    sub = parser.add_subparsers(dest='command', required=True)
    run_parser = sub.add_parser('run', help="run one runner's blocks")
    run_parser.add_argument('runner', choices=sorted(RUNNERS))
    run_parser.add_argument('--clone', action='store_true', help='in a fresh git clone of the repository')
    run_parser.add_argument('--record', metavar='JSON', help="write each block's wall time here")
    list_parser = sub.add_parser('list', help='the runnable blocks and their runners')
    list_parser.add_argument('--script', metavar='RUNNER', help="print RUNNER's script instead")
    facts_parser = sub.add_parser('facts', help='check the figures quoted in the docs')
    facts_parser.add_argument('--write', action='store_true', help='rewrite stale figures from their sources')
    args = parser.parse_args(argv)
    if args.command == 'run':
        return run(args.runner, fresh=args.clone, record=args.record and os.path.abspath(args.record))
    if args.command == 'list':
        if args.script:
            sys.stdout.write(script(args.script))
            return 0
        found, problems = marked()
        for block in found:
            print('%s:%d\t%s' % (block['file'], block['line'], block['runner']))
        for problem in problems:
            print('problem: ' + problem)
        return 1 if problems else 0
    found, problems = facts(write=args.write)
    for where, key, said, wanted in found:
        print('%s\t%s\t%s%s' % (where, key, said, '' if said == wanted else ' (source: %s)' % wanted))
    for problem in problems:
        print('problem: ' + problem)
    return 1 if problems and not args.write else 0


if __name__ == '__main__':
    sys.exit(main())
