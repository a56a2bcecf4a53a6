"""One finding, one verdict (issue 40): the outlet x status table is whole, docs/audit.md prints
it, and every outlet, run on the planted layouts of the issue, fails exactly where the table
says, at the place each side's own evidence names. The outlets are the real renderers (JUnit
XML, SARIF, the gate's message, the terminal/Markdown table, the textfile metrics, the NPD
answer and NFD labels, the Slurm health check's judgement, the fleet summary, the job fit); what
each prints is read back, not the table."""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import audit_job
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import ci_reports as ci
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import fleet_summary as fs
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import node_state as ns
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import textfile_metrics as tm
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch as dw
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import slurm_health as sh

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
from scenario_support import samples  # noqa: E402  pylint: disable=wrong-import-position

LINK = '/etc/security/limits.d/50-x.conf'
SLURM_CONF = '/etc/slurm/slurm.conf'
DROPIN = '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf'
SYSCTL = '/etc/sysctl.d/99-site.conf'
DOCKER_DROPIN = '/etc/systemd/system/docker.service.d/override.conf'
EXPECTED = {'nofile': {'soft': 16384, 'hard': 16384, 'human': '16384:16384'},
            'nproc': {'soft': 4096, 'hard': 4096, 'human': '4096:4096'}}


def row(context, item, gap='', **extra):
    found = dict(context=context, item=item, actual='1024:16384' if gap else '16384:16384',
                 expected=EXPECTED.get(item, {}).get('human', '8192'), gap=gap, how='probed',
                 source='')
    found.update(extra)
    return found


def audit(rows=(), errors=(), problems=(), kernel=(), pids=None):
    """An audit result as limits_audit returns it, findings evaluated by the module's code."""
    result = dict(rows=list(rows), errors=list(errors), problems=list(problems),
                  kernel=list(kernel), expected=EXPECTED, gaps=[], contexts={})
    for entry in rows:
        result['contexts'].setdefault(entry['context'], {'limits': {}})
        if entry['gap'] and entry['item'] != 'pids':
            result['gaps'].append(dict(context=entry['context'], item=entry['item'],
                                       sides=entry['gap'].split('+')))
    if pids is not None:
        result['pids'] = pids
    result['findings'] = findings.evaluate(result, list(EXPECTED) + (
        ['pids'] if pids is not None else []))
    return result


#: the planted layouts of issue 40, as the audit's evidence gives them
CASES = {
    # a dangling symlink in limits.d: no PAM session opens, the login probe fails
    'broken_pam': audit(
        rows=[row('service', 'nofile'), row('service', 'nproc'), row('ssh', 'nofile'),
              row('ssh', 'nproc')],
        errors=[dict(context='login', msg='the login session did not open', kind='probe')],
        problems=[dict(context='login', source=LINK, msg=LINK + ' is a symbolic link to '
                       '/nonexistent', state='broken', stops=['login', 'ssh', 'user_manager'],
                       advice='remove ' + LINK)]),
    # vm.max_map_count below the profile's minimum
    'kernel_low': audit(
        rows=[row('slurm_job', 'nofile'), row('slurm_job', 'nproc')],
        kernel=[dict(name='vm.max_map_count', live=65530, configured=None, source=None,
                     minimum=1048576, gap=1048576 - 65530, state='below',
                     reason='vm.max_map_count is 65530, below the minimum 1048576')]),
    # slurm_job: the soft side from slurm.conf's propagation, the hard side from slurmd's
    # drop-in (which is fine)
    'slurm_soft': audit(rows=[
        row('slurm_job', 'nofile', 'soft', how='predicted', places={
            'soft': {'path': SLURM_CONF, 'line': 3}, 'hard': {'path': DROPIN, 'line': 4}}),
        row('slurm_job', 'nproc')]),
    # a docker.service drop-in adding --default-ulimit, reloaded, not restarted, while
    # daemon.json sets default-ulimits: the values run now, but dockerd refuses its next start
    'docker_clash': audit(
        rows=[row('docker', 'nofile'), row('docker', 'nproc'), row('login', 'nofile')],
        problems=[dict(context='docker', source=DOCKER_DROPIN + ':3', state='running', msg=(
            DOCKER_DROPIN + ':3 passes --default-ulimit to dockerd and /etc/docker/daemon.json '
            'sets "default-ulimits": dockerd would refuse to start at its next restart (remove '
            'the flag or the key)'))]),
    # a setting not applied yet (dockerd started before daemon.json last changed), a probe
    # that failed, a busy node and a pids gap
    'mixed': audit(
        rows=[row('docker', 'nofile', 'soft+hard', owed='restarting docker.service',
                  places={'soft': {'path': '/etc/docker/daemon.json', 'line': 3}}),
              row('docker', 'nproc'),
              row('slurm_job', 'nofile', how='pending', actual='(pending: busy)'),
              row('slurm_job', 'nproc', how='pending', actual='(pending: busy)'),
              row('service', 'pids', 'max', actual='300', expected='8192',
                  places={'value': {'path': '/etc/systemd/system/x.slice.d/50.conf',
                                    'line': 2}})],
        errors=[dict(context='podman', msg='podman run failed (rc 125)', kind='probe'),
                dict(context='user_manager', msg='not running', kind='not_running')],
        pids={'not_covered': ['docker'], 'shortfalls': []}),
}


def table(outlet, result, contexts=None):
    """{(context, item)} the table says fail in ``outlet`` (only ``contexts`` where given)."""
    return set((f['context'], f['item']) for f in findings.failing(outlet, result['findings'])
               if contexts is None or f['context'] in contexts)


# --- what each outlet prints, read back --------------------------------------------------

def junit_failing(result):
    text = ci.junit_xml({'hosts': {'h': dict(result, audited=True)}})
    root = ET.fromstring(text.encode('utf-8'))
    return set((case.get('classname').split('.', 2)[2], case.get('name'))
               for case in root.iter('testcase')
               if case.find('failure') is not None or case.find('error') is not None)


def sarif_failing(result):
    log = ci.sarif_log({'hosts': {'h': dict(result, audited=True)}}, '0')
    return set((r['properties']['context'], r['properties']['item'])
               for r in log['runs'][0]['results'])


def gate_failing(result):
    text = ci.gap_failure({'h': dict(result, audited=True)})
    found = set()
    if text:
        inside = text.split('h (', 1)[1].rsplit(')', 1)[0]
        for part in inside.split('; '):
            context, items = part.split(': ', 1)
            found.update((context, re.sub(r' \(.*\)$', '', i)) for i in items.split(', '))
    return found


def table_failing(result):
    lines = fs.table_lines([dict(f, host='h') for f in result['findings']])
    return set(tuple(line.split()[1:3]) for line in lines[2:])


def metrics_failing(result):
    got = samples(tm.render_audit(result, list(EXPECTED), 1700000000))
    return set((dict(labels)['context'], dict(labels)['item'])
               for (name, labels), value in got.items()
               if name == 'gpufleet_limits_compliant' and value == '0')


def nfd_failing_contexts(result):
    text = ns.nfd_features_text(ns.verdict(result), 1700000000, 60)
    return set(line.split('=')[0][len('gpufleet.io/limits-ok.'):]
               for line in text.splitlines()
               if line.startswith('gpufleet.io/limits-ok.') and line.endswith('=false'))


def slurm_failing(result, contexts):
    code, _sentence, draining = sh.judge(dw.Outcome(result=result), contexts)
    assert (code == sh.CRITICAL) == bool(draining)
    return set((f['context'], f['item']) for f in draining)


def fleet_failing(result):
    summary = fs.build({'h': dict(result, audited=True)})
    short = set((i['context'], i['item']) for i in summary['items'])
    broken = set(c for g in summary['broken'] for c in g['context'].split(', '))
    return short, broken


def journal_failing(result):
    """The journal's warning lines (gap_lines) and error lines (problem_lines, by context)."""
    pairs = set(re.search(r'context=(\S+) item=(\S+)', line).groups()
                for line in dw.gap_lines(result))
    broken = set(re.search(r'context=([^:]+):', line).group(1)
                 for line in dw.problem_lines(result))
    return pairs, broken


def contexts_of(pairs):
    return set(c for c, _i in pairs)


@pytest.mark.parametrize('case', sorted(CASES))
def test_every_outlet_fails_exactly_where_the_table_says(case):
    result = CASES[case]
    assert junit_failing(result) == table('junit', result)
    assert sarif_failing(result) == table('sarif', result)
    assert gate_failing(result) == table('gate', result)
    assert table_failing(result) == table('markdown', result)
    assert metrics_failing(result) == table('metrics', result)
    assert nfd_failing_contexts(result) == contexts_of(table('nfd', result))
    verdict = ns.verdict(result)
    assert (verdict.state != ns.OK) == bool(table('npd', result))
    jobs = ['slurm_job']
    node_wide = set((f['context'], f['item']) for f in findings.failing(
        'slurm_health', result['findings']) if f['context'] == findings.KERNEL
        or f['status'] == findings.NODE_BROKEN)
    assert slurm_failing(result, jobs) == table('slurm_health', result, jobs) | node_wide
    warned, problems = journal_failing(result)
    assert warned == set((f['context'], f['item']) for f in findings.failing(
        'journal', result['findings']) if findings.action('journal', f) == 'warning')
    assert problems == set(p['context'] for p in result['problems'])
    short, broken = fleet_failing(result)
    want = findings.failing('fleet_summary', result['findings'])
    assert short == set((f['context'], f['item']) for f in want if f['status'] != 'node_broken')
    assert broken == set(f['context'] for f in want if f['status'] == 'node_broken')


def test_the_planted_cases_fail_where_the_issue_says_at_the_right_line():
    broken = CASES['broken_pam']
    # no session opens: not healthy anywhere (it was 12 passing cases, 0 SARIF results,
    # limits-ok=true and "0 short")
    assert ('login', 'nofile') in junit_failing(broken)
    assert ('ssh', 'nproc') in sarif_failing(broken)
    assert ns.verdict(broken).state == ns.BROKEN
    assert 'gpufleet.io/limits-ok=false' in ns.nfd_features_text(ns.verdict(broken), 0)
    assert slurm_failing(broken, ['slurm_job'])
    assert fs.build({'h': dict(broken, audited=True)})['broken_hosts'] == 1
    log = ci.sarif_log({'hosts': {'h': dict(broken, audited=True)}}, '0')
    assert log['runs'][0]['results'][0]['locations'][0]['physicalLocation'][
        'artifactLocation']['uri'] == LINK.lstrip('/')
    # a kernel ceiling below its minimum: the gate, JUnit, SARIF, the summary and the drain
    kernel = CASES['kernel_low']
    pair = ('kernel', 'vm.max_map_count')
    assert pair in gate_failing(kernel) and pair in junit_failing(kernel)
    assert pair in sarif_failing(kernel) and pair in slurm_failing(kernel, ['slurm_job'])
    assert pair in fleet_failing(kernel)[0] and pair in table_failing(kernel)
    # the soft side from propagation names slurm.conf's line, in the drain and in SARIF
    soft = CASES['slurm_soft']
    _code, sentence, _found = sh.judge(dw.Outcome(result=soft), ['slurm_job'])
    assert sentence == 'gpufleet: slurm_job nofile 1024 < 16384 (%s:3)' % SLURM_CONF
    log = ci.sarif_log({'hosts': {'h': dict(soft, audited=True)}}, '0')
    located = log['runs'][0]['results'][0]['locations'][0]['physicalLocation']
    assert located == {'artifactLocation': {'uri': SLURM_CONF.lstrip('/'),
                                            'uriBaseId': 'NODEROOT'},
                       'region': {'startLine': 3}}
    # a setting not applied yet is owed, not "nothing owed": pending, a SARIF warning
    mixed = CASES['mixed']
    docker = [f for f in mixed['findings'] if f['context'] == 'docker' and f['item'] == 'nofile']
    assert docker[0]['status'] == findings.PENDING
    assert docker[0]['advice']['action'] == 'restarting docker.service'


def test_a_flag_that_will_stop_dockerd_is_owed_not_nothing_owed():
    # issue 40: the warning said dockerd will refuse to start, the row said nothing is owed
    clash = CASES['docker_clash']
    docker = [f for f in clash['findings'] if f['context'] == 'docker']
    assert docker and all(f['status'] == findings.NODE_BROKEN for f in docker)
    assert all(f['place'] == {'path': DOCKER_DROPIN, 'line': 3} for f in docker)
    assert ('docker', 'nofile') in gate_failing(clash) and ('docker', 'nofile') in junit_failing(clash)
    assert ('login', 'nofile') not in gate_failing(clash)


def test_a_job_that_is_short_of_threads_is_not_in_fits():
    fit = dict(demand={}, shortfalls=[], fits=['service', 'slurm_job'], short=[])
    result = CASES['mixed']
    audit_job.settle(fit, result['findings'], [dict(context='service', item='pids', need=9000,
                                                    have=300, short_by=8700)])
    assert fit['fits'] == ['slurm_job'] and fit['short'] == ['service']
    assert fit['shortfalls'][0]['item'] == 'pids'
    # a context where no session opens cannot hold the job
    fit = dict(demand={}, shortfalls=[], fits=['login', 'service'], short=[])
    audit_job.settle(fit, CASES['broken_pam']['findings'])
    assert 'login' in fit['short'] and 'login' not in fit['fits']


def test_the_table_has_a_cell_for_every_outlet_and_status():
    assert set(findings.OUTLETS) == set(findings.FAILING) == set(findings.OUTLET_TEXT)
    for outlet, cells in findings.OUTLETS.items():
        assert set(cells) == set(findings.STATUSES), outlet
        assert set(findings.FAILING[outlet]) <= set(cells.values()), outlet
    assert set(findings.MEANING) == set(findings.STATUSES)
    # the check can fail: an outlet without a cell for a status
    broken = dict(findings.OUTLETS, junit=dict(findings.OUTLETS['junit']))
    del broken['junit'][findings.PENDING]
    assert set(broken['junit']) != set(findings.STATUSES)


def test_every_status_is_produced_by_the_evaluation():
    seen = set(f['status'] for result in CASES.values() for f in result['findings'])
    assert seen == set(findings.STATUSES)


def test_docs_audit_md_prints_the_table():
    out = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'outlet_table.py')],
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    with open(os.path.join(ROOT, 'docs', 'audit.md')) as handle:
        doc = handle.read()
    assert out in doc, 'docs/audit.md is stale: run python3 scripts/outlet_table.py --write'


@pytest.mark.parametrize('state, read_only, configured, status', [
    ('below', False, None, findings.GAP),
    # a sysctl.d file sets enough, not applied yet: systemd-sysctl applies it
    (findings.NOT_APPLIED, False, 1048576, findings.PENDING),
    # read-only /proc/sys (a container): the host decides, a gap here
    (findings.NOT_APPLIED, True, 1048576, findings.GAP),
    # a file that sets too little is a gap whatever applies it
    (findings.NOT_APPLIED, False, 70000, findings.GAP),
])
def test_a_kernel_ceiling_s_status_says_what_applies_it(state, read_only, configured, status):
    row = dict(name='vm.max_map_count', live=65530, configured=configured, minimum=1048576,
               gap=1048576 - 65530, state=state, read_only=read_only, reason='x',
               source=SYSCTL + ':2' if configured else None)
    [found] = findings.kernel_findings([row])
    assert found['status'] == status
    if configured:
        assert found['place'] == {'path': SYSCTL, 'line': 2}


@pytest.mark.parametrize('error, waiting, status', [
    (dict(context='docker', kind='not_running'), (), findings.NOT_COVERED),
    (dict(context='slurm_job', kind='busy'), (), findings.UNVERIFIED),
    (dict(context='docker', kind='probe'), ('docker',), findings.PENDING),
    (dict(context='docker', kind='probe'), (), findings.PROBE_ERROR),
])
def test_one_rule_for_a_probe_without_values_in_the_audit_and_the_tune(error, waiting, status):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import outcome
    assert findings.error_status(error, waiting) == status
    tune = outcome.tune_findings({'errors': [dict(error, msg='x')]}, {}, waiting)
    assert [f['status'] for f in tune] == [status]
    if not waiting and status != findings.UNVERIFIED:     # busy: the audit's row is pending
        audited = findings.evaluate(dict(errors=[dict(error, msg='x')]), ['nofile'])
        assert [f['status'] for f in audited] == [status]


def test_the_core_finding_s_advice_is_core_dumps_own():
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import core_dumps
    [found] = findings.core_findings(dict(core_limit='unlimited:unlimited', pattern='core',
                                          warning='core unlimited: ...', advice=core_dumps.ADVICE))
    assert found['status'] == findings.GAP and found['advice']['action'] == core_dumps.ADVICE


def test_a_pids_row_s_place_is_the_line_its_source_names():
    """A pids row carries no places: its source names the setting first (``FILE:2 (TasksMax=40
    of user-1001.slice)``); the finding's place, its advice's and the classifier's come from it
    (found on a real node: the pids canary's answer had no file:line)."""
    dropin = '/etc/systemd/system/user-1001.slice.d/95-site.conf'
    row = dict(context='login', item='pids', kind='pids', actual='40', expected='1024',
               gap='max', source='%s:2 (TasksMax=40 of user-1001.slice)' % dropin,
               advice='raise or remove %s:2' % dropin)
    found = findings.from_row(row, findings.row_status(row))
    assert found['places'] == {'value': {'path': dropin, 'line': 2}}
    assert findings.where(found['place']) == dropin + ':2'
    assert (found['advice']['path'], found['advice']['line']) == (dropin, 2)
