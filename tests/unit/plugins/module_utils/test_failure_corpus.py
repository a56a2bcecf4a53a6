"""The classifier (model/classify.answer) over the corpus of public failure reports
(tests/unit/fixtures/failure_corpus.yml, issue 41): each report answered from its verbatim
error lines, the context and the node facts its thread states. At least 90 % of the limit
cases are named right, no case that is not a limit is blamed on one, and docs/job-shape.md
states the agreement measured (scripts/corpus_agreement.py)."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import corpus_agreement as ca  # noqa: E402

ENTRIES = ca.load()
LIMITS = [e for e in ENTRIES if e['cause'] != 'not_a_limit']


def test_at_least_90_percent_of_the_limit_cases_are_named_right():
    right = [e['id'] for e in LIMITS if ca.agrees(e, ca.run(e))]
    assert len(right) >= 0.9 * len(LIMITS), (
        '%d of %d limit cases named right; missed: %s' % (
            len(right), len(LIMITS), ', '.join(e['id'] for e in LIMITS if e['id'] not in right)))


@pytest.mark.parametrize('entry', [e for e in ENTRIES if e['cause'] == 'not_a_limit'],
                         ids=lambda e: e['id'])
def test_no_case_that_is_not_a_limit_is_blamed_on_one(entry):
    found = ca.run(entry)
    assert found['verdict'] != 'limit', found['summary']


def test_every_ceiling_of_the_corpus_is_named_at_least_once():
    named = set(e['cause'] for e in LIMITS if ca.agrees(e, ca.run(e)))
    assert named == set(e['cause'] for e in LIMITS)


def test_the_evidence_a_thread_states_reaches_the_classifier():
    """The corpus's node facts map onto the classifier's evidence (a stated RLIMIT_NPROC of a
    million rules nproc out: the podman thread's pids limit is what is left)."""
    entry = next(e for e in ENTRIES if e['id'] == 'mozilla-translations-630-podman-pids')
    assert ca.evidence_of(entry)['rlimit_nproc'] == 1031641
    found = ca.run(entry)
    assert found['ceiling'] == 'pids.max' and 'nproc' in found['ruled_out']
    assert ca.size('64M') == 64 << 20 and ca.size('2g') == 2 << 30


def test_docs_state_the_agreement_measured():
    with open(ca.DOC) as handle:
        doc = handle.read()
    assert ca.BEGIN + '\n' + ca.table(ENTRIES) + ca.END in doc, (
        'docs/job-shape.md is stale: run python3 scripts/corpus_agreement.py --write')
