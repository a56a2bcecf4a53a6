"""Run the failure classifier (plugins/module_utils/model/classify.py) over the corpus of public
failure reports (tests/unit/fixtures/failure_corpus.yml) and print (or ``--write`` into
docs/job-shape.md) the agreement per ceiling. Each report is answered from its verbatim error
lines, the context the thread states and the node facts it states (``evidence``, mapped by
:func:`evidence_of`); nothing else. tests/unit/plugins/module_utils/test_failure_corpus.py
holds the thresholds and fails when the doc is stale."""
import argparse
import collections
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
CORPUS = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'failure_corpus.yml')
DOC = os.path.join(ROOT, 'docs', 'job-shape.md')
BEGIN = '<!-- corpus agreement: python3 scripts/corpus_agreement.py --write -->'
END = '<!-- end of corpus agreement -->'

#: a corpus evidence key -> (the classifier's evidence key, or ceilings.NAME for a value the
#: job had)
EVIDENCE = {
    'ulimit_n': 'ceilings.nofile', 'ulimit_u': 'ceilings.nproc', 'ulimit_l': 'ceilings.memlock',
    'ulimit_c': 'ceilings.core', 'pids_max': 'ceilings.pids.max',
    'max_user_instances': 'ceilings.fs.inotify.max_user_instances',
    'max_user_watches': 'ceilings.fs.inotify.max_user_watches',
    'max_map_count': 'ceilings.vm.max_map_count', 'file_max': 'ceilings.fs.file-max',
    'rlimit_nproc': 'rlimit_nproc', 'shm_size': 'shm_size', 'dev_shm_used': 'shm_peak',
    'exit_status': 'exit_status', 'oom_kill': 'oom_kill', 'memory_max': None, 'memlock': None,
}
_UNITS = {'': 1, 'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3}


def _path():
    if os.path.join(ROOT, 'build', 'collections') not in sys.path:
        sys.path.append(os.path.join(ROOT, 'build', 'collections'))


def classify():
    _path()
    from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify as cl
    return cl


def load(path=CORPUS):
    import yaml
    with open(path) as handle:
        return yaml.safe_load(handle)


def size(value):
    """Bytes of '64M', '64MB', '2g', or a number."""
    match = re.match(r'^\s*(\d+)\s*([kmg]?)i?b?\s*$', str(value), re.IGNORECASE)
    if not match:
        return value
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def evidence_of(entry):
    """The classifier's evidence from what a thread states (``evidence``)."""
    found = {}
    for key, value in (entry.get('evidence') or {}).items():
        target = EVIDENCE.get(key)
        if target is None:
            continue
        if key in ('shm_size', 'dev_shm_used'):
            value = size(value)
        if key == 'oom_kill':
            value = 1 if value is True else value
        if target.startswith('ceilings.'):
            found.setdefault('ceilings', {})[target[len('ceilings.'):]] = value
        else:
            found[target] = value
    return found


def run(entry):
    """The classifier's answer for one report, through the limits_classify filter (the
    context's record says where the job ran)."""
    _path()
    from ansible_collections.gpufleet.tuning.plugins.filter.limits_classify import (
        limits_classify)
    return limits_classify(entry['lines'], entry['context'], [], evidence_of(entry))


def agrees(entry, answer):
    """A limit case agrees when the answer names its ceiling; a case that is not a limit when
    the answer blames no ceiling."""
    if entry['cause'] == 'not_a_limit':
        return answer['verdict'] != 'limit'
    return answer['verdict'] == 'limit' and answer['ceiling'] == entry['cause']


def counts(entries):
    """{cause: Counter(right, unknown, wrong)} ('unknown': no ceiling named for a limit
    case; 'wrong': another ceiling named, or a ceiling blamed for a case that is not a limit)."""
    found = collections.OrderedDict()
    for entry in entries:
        answer = run(entry)
        outcome = 'right' if agrees(entry, answer) else (
            'unknown' if answer['verdict'] != 'limit' else 'wrong')
        found.setdefault(entry['cause'], collections.Counter())[outcome] += 1
    return found


def table(entries):
    """The Markdown table of the agreement per ceiling, limit cases first, then a total."""
    found = counts(entries)
    cl = classify()
    order = [c for c in cl.CEILINGS if c in found]
    order += [c for c in found if c not in cl.CEILINGS]
    lines = ['| ceiling | reports | named right | unknown | another ceiling |',
             '| --- | ---: | ---: | ---: | ---: |']
    limit = collections.Counter()
    for cause in order:
        got = found[cause]
        total = sum(got.values())
        if cause != 'not_a_limit':
            limit.update(got)
        lines.append('| %s | %d | %d | %d | %d |' % (
            'not a limit (blamed on none)' if cause == 'not_a_limit' else '`%s`' % cause,
            total, got['right'], got['unknown'], got['wrong']))
    total = sum(limit.values())
    lines.append('| **all limit cases** | %d | %d (%.0f%%) | %d | %d |' % (
        total, limit['right'], 100.0 * limit['right'] / total if total else 0,
        limit['unknown'], limit['wrong']))
    return '\n'.join(lines) + '\n'


def render(doc, text):
    head, _sep, rest = doc.partition(BEGIN)
    _old, _sep, tail = rest.partition(END)
    return '%s%s\n%s%s%s' % (head, BEGIN, text, END, tail)


def main(argv=None):
    parse = argparse.ArgumentParser(description=__doc__)
    parse.add_argument('--write', action='store_true', help='write docs/job-shape.md')
    args = parse.parse_args(argv)
    text = table(load())
    if not args.write:
        sys.stdout.write(text)
        return 0
    with open(DOC) as handle:
        doc = handle.read()
    if BEGIN not in doc:
        sys.stderr.write('%s has no %s\n' % (DOC, BEGIN))
        return 1
    with open(DOC, 'w') as handle:
        handle.write(render(doc, text))
    return 0


if __name__ == '__main__':
    sys.exit(main())
