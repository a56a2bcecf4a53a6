"""Issue 34 item 2: the drift watch's audit as node-problem-detector and Node Feature Discovery
state (module_utils/reports/node_state.py, run/watch_outlets.py), the NPD plugin script run by
dash and bash, the shipped NPD config; all checked against the formats' documented rules
(tests/node_state_formats.py)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import node_state as ns
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch as dw
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import watch_outlets as wo

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
from node_state_formats import FormatError, check_npd_config, parse_nfd_features  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from audit_shape import with_rows  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FILES = os.path.join(ROOT, 'roles', 'limits_watch', 'files')
PLUGIN = os.path.join(FILES, 'check_gpufleet_limits.sh')
CONFIG = os.path.join(FILES, 'gpufleet-limits-plugin-monitor.json')
SHELLS = [s for s in ('dash', 'bash') if shutil.which(s)]

CLEAN = {'contexts': {'login': {'limits': {}}, 'docker': {'limits': {}},
                      'unit:gpufleet-sleeper.service': {'limits': {}}},
         'gaps': [], 'errors': [], 'rows': [], 'kernel': []}


def result(**changes):
    """An audit result shaped as limits_audit returns it (audit_shape.with_rows: a nofile
    row per probed context, gap where ``gaps`` says); the findings are evaluated from it."""
    data = json.loads(json.dumps(CLEAN))
    data.update(changes)
    return with_rows(data, ['nofile'])


def test_clean_audit_is_ok_everywhere():
    found = ns.verdict(result())
    assert found.state == ns.OK
    assert found.contexts == {'login': 'ok', 'docker': 'ok', 'unit:gpufleet-sleeper.service': 'ok'}
    assert ns.message(found) == 'limits at the gpufleet profile in 3 contexts'


def test_gaps_pids_and_kernel_rows_make_the_node_short():
    found = ns.verdict(result(
        gaps=[{'context': 'login', 'item': 'nofile'}],
        rows=[{'item': 'pids', 'context': 'docker', 'gap': 'max', 'actual': '100'}],
        kernel=[{'name': 'vm.max_map_count', 'gap': 100, 'minimum': 1048576, 'live': 1048476},
                {'name': 'fs.nr_open', 'gap': 0, 'minimum': 1024, 'live': 1048576}]))
    assert found.state == ns.SHORT
    assert found.short == [('login', 'nofile'), ('docker', 'pids'),
                           ('kernel', 'vm.max_map_count')]
    assert found.contexts == {'login': 'short', 'docker': 'short',
                              'unit:gpufleet-sleeper.service': 'ok', 'kernel': 'short'}
    assert ns.message(found) == ('limits below the gpufleet profile: login nofile, docker pids, '
                                 'kernel vm.max_map_count')


def test_a_failed_or_pending_probe_leaves_its_context_unknown_not_the_node():
    found = ns.verdict(result(errors=[{'context': 'docker', 'msg': 'no image'}]))
    assert found.state == ns.OK and found.contexts['docker'] == 'unknown'
    assert ns.message(found) == ('limits at the gpufleet profile in 2 contexts; not verified '
                                 '(probe failed): docker')
    pending = ns.verdict(result(errors=[{'context': 'slurm_job', 'kind': 'busy', 'msg': 'x'}]))
    assert pending.state == ns.OK and pending.contexts['slurm_job'] == 'unknown'
    assert ns.message(pending) == 'limits at the gpufleet profile in 3 contexts'
    both = ns.verdict(result(errors=[{'context': 'docker', 'msg': 'x'}],
                             gaps=[{'context': 'login', 'item': 'nofile'}]))
    assert both.state == ns.SHORT and both.contexts['docker'] == 'unknown'


def test_long_gap_lists_are_cut_with_a_count():
    gaps = [{'context': 'unit:service-number-%02d.service' % i, 'item': 'nofile'} for i in range(20)]
    text = ns.message(ns.verdict(result(gaps=gaps)))
    assert len(text) <= ns.MAX_MESSAGE
    shown = text.count('nofile')
    assert text.endswith('(+%d more)' % (20 - shown)) and shown >= 3


@pytest.mark.parametrize('context,label', [
    ('login', 'limits-ok.login'),
    ('unit:gpufleet-sleeper.service', 'limits-ok.unit-gpufleet-sleeper.service'),
    ('unit:a_b@x.service', 'limits-ok.unit-a_b-x.service'),
])
def test_label_names(context, label):
    assert ns.label_name(context) == label


def test_long_and_odd_context_names_still_make_valid_distinct_labels():
    long_a = 'unit:' + 'a' * 80 + '.service'
    long_b = 'unit:' + 'a' * 80 + '.socket'
    names = [ns.label_name(c) for c in (long_a, long_b, 'unit:x-', 'unit:@')]
    assert len(set(names)) == 4
    odd = (long_a, long_b, 'unit:x-', 'unit:@')
    found = ns.Verdict(ns.OK, contexts=dict((c, ns.OK) for c in odd))
    labels = parse_nfd_features(ns.nfd_features_text(found, 1764751234, 60))
    assert len(labels) == 5


def test_nfd_file_follows_the_documented_format():
    found = ns.verdict(result(gaps=[{'context': 'login', 'item': 'nofile'}],
                              errors=[{'context': 'podman', 'msg': 'x'}]))
    text = ns.nfd_features_text(found, 1764751234, 22)
    labels = parse_nfd_features(text)
    expiry = labels['gpufleet.io/limits-ok'][1]
    assert expiry.timestamp() == 1764751234 + 44
    assert dict((k, v[0]) for k, v in labels.items()) == {
        'gpufleet.io/limits-ok': 'false', 'gpufleet.io/limits-ok.login': 'false',
        'gpufleet.io/limits-ok.docker': 'true', 'gpufleet.io/limits-ok.podman': 'unknown',
        'gpufleet.io/limits-ok.unit-gpufleet-sleeper.service': 'true'}
    failed = ns.nfd_features_text(ns.failure_verdict('timeout', 'slow'), 1764751234, 22)
    assert dict((k, v[0]) for k, v in parse_nfd_features(failed).items()) == {
        'gpufleet.io/limits-ok': 'unknown'}


@pytest.mark.parametrize('text', [
    'gpufleet.io/limits ok=true\n', 'limits-ok=true\n', 'gpufleet.io/x=%s\n' % ('v' * 64),
    'gpufleet.io/x=a:b\n', '# +expiry-time=tomorrow\ngpufleet.io/x\n', 'kubernetes.io/x=1\n',
    'gpufleet.io/x=1\ngpufleet.io/x=2\n', 'gpufleet.io/-x=1\n'])
def test_the_nfd_validator_refuses_what_nfd_or_kubernetes_refuse(text):
    with pytest.raises(FormatError):
        parse_nfd_features(text)


def test_shipped_npd_config_is_valid_and_names_the_installed_plugin():
    with open(CONFIG) as handle:
        data = check_npd_config(handle.read())
    paths = set(r['path'] for r in data['rules'])
    assert paths == {'/usr/local/lib/gpufleet-tuning/npd/check_gpufleet_limits.sh'}
    assert {r['type'] for r in data['rules']} == {'permanent', 'temporary'}
    assert data['conditions'][0]['type'] == 'GpufleetLimitsShort'
    assert data['pluginConfig']['max_output_length'] == ns.MAX_MESSAGE


@pytest.mark.parametrize('change,words', [
    ({'plugin': 'other'}, 'plugin must be'),
    ({'rules': [{'type': 'permanent', 'condition': 'Nope', 'reason': 'r', 'path': '/x'}]},
     'no default condition'),
    ({'rules': [{'type': 'temporary', 'reason': 'r', 'path': '/x', 'timeout': '11s'}]},
     'greater than the global'),
    ({'pluginConfig': {'timeout': '10 s'}}, 'not a Go duration'),
    ({'pluginConfig': {'max_output_lenght': 80}}, 'unknown pluginConfig keys'),
])
def test_the_npd_config_validator_refuses_what_npd_refuses(change, words):
    with open(CONFIG) as handle:
        data = json.load(handle)
    data.update(change)
    with pytest.raises(FormatError, match=words):
        check_npd_config(json.dumps(data))


def plugin(shell, answer):
    proc = subprocess.run([shell, PLUGIN, answer], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout.strip(), proc.stderr


@pytest.mark.skipif(not SHELLS, reason='no dash or bash')
@pytest.mark.parametrize('shell', SHELLS)
def test_plugin_prints_the_watchs_answer_and_exits_with_its_status(tmp_path, shell):
    answer = str(tmp_path / 'npd-status')
    now = time.time()
    cases = [(ns.verdict(result()), 0, 'limits at the gpufleet profile in 3 contexts'),
             (ns.verdict(result(gaps=[{'context': 'login', 'item': 'nofile'}])), 1,
              'limits below the gpufleet profile: login nofile'),
             (ns.failure_verdict('profile_missing', 'profile file x does not exist'), 2,
              'gpufleet limits audit failed (profile_missing): profile file x does not exist')]
    for found, code, words in cases:
        with open(answer, 'w') as handle:
            handle.write(ns.npd_status_text(found, now, 22))
        assert plugin(shell, answer)[:2] == (code, words)


@pytest.mark.skipif(not SHELLS, reason='no dash or bash')
@pytest.mark.parametrize('shell', SHELLS)
def test_plugin_answers_unknown_when_stale_missing_or_unreadable(tmp_path, shell):
    answer = str(tmp_path / 'npd-status')
    rc, out, _err = plugin(shell, answer)
    assert rc == 2 and out.startswith('no gpufleet limits audit result: %s missing' % answer)
    with open(answer, 'w') as handle:   # an ok answer written 100 s ago, period 22 s
        handle.write(ns.npd_status_text(ns.verdict(result()), time.time() - 100, 22))
    rc, out, _err = plugin(shell, answer)
    assert rc == 2 and out.startswith('gpufleet limits audit result is stale: written 10')
    for broken in ('exit=7\nwritten=1\nexpires=99999999999\n', 'exit=0\nwritten=1\nexpires=9x\n',
                   'garbage'):
        with open(answer, 'w') as handle:
            handle.write(broken)
        assert plugin(shell, answer)[:2] == (2, 'unreadable gpufleet limits audit result in %s'
                                             % answer)


def test_after_audit_writes_both_outlets_from_the_same_outcome(tmp_path, monkeypatch):
    monkeypatch.setattr(wo.cv, 'read_components', lambda host, root='': {})
    args = argparse.Namespace(state_dir=str(tmp_path / 'state'), nfd_dir=str(tmp_path / 'nfd'),
                              period=22)
    outcome = dw.Outcome(result=result(gaps=[{'context': 'docker', 'item': 'nofile'}]))
    _text, logs = wo.after_audit(args, outcome, 1764751234.0, None)
    assert logs == []
    status = (tmp_path / 'state' / 'npd-status').read_text()
    assert 'exit=1\n' in status and 'message=limits below the gpufleet profile: docker nofile\n' \
        in status
    labels = parse_nfd_features((tmp_path / 'nfd' / 'gpufleet-limits').read_text())
    assert labels['gpufleet.io/limits-ok'][0] == 'false'
    assert labels['gpufleet.io/limits-ok.docker'][0] == 'false'
    assert not [p for p in os.listdir(str(tmp_path / 'nfd')) if p != 'gpufleet-limits']


def test_after_audit_reports_an_unwritable_outlet_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(wo.cv, 'read_components', lambda host, root='': {})
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    args = argparse.Namespace(state_dir=str(tmp_path / 'state'), nfd_dir=str(blocker / 'sub'),
                              period=22)
    _text, logs = wo.after_audit(args, dw.Outcome(result=result()), 1.0, None)
    assert [p for p, _m in logs] == ['err']
    assert 'node state not written: %s' % (blocker / 'sub' / 'gpufleet-limits') in logs[0][1]
    assert (tmp_path / 'state' / 'npd-status').exists()


def test_without_a_state_dir_nothing_is_written(tmp_path):
    assert wo.after_audit(argparse.Namespace(), dw.Outcome(result=result()), 1.0, None) == ('', [])
