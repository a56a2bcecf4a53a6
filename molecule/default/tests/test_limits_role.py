"""The limits role's effect where training processes start, measured in real processes."""
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest
from conftest import (FILES, USER, Limit, as_user, parse, pid1_limit, short_of,
                      user_service_limits)
from report_schemas import junit_errors, sarif_errors
from scenario_support import ansible_command, checksums, run_module

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'tune_gpu_nodes.yml')
EXPECTED_PROFILE = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}


def meets_and_keeps(host, limits, nofile_soft=16384):
    """What converge.yml's plain profile gives a context: never less than the profile; soft
    nofile as asked; the hard nofile the node had (PID 1's, which systemd gave everything)
    kept instead of cut to the profile's 16384 (issue 31 item 2)."""
    assert short_of(limits) == []
    assert limits['nofile'].soft == nofile_soft
    assert limits['nofile'].hard == pid1_limit(host, 'nofile').hard > 16384


def test_login_session_of_a_training_user(host):
    limits = parse(host.check_output("runuser -l %s -c 'cat /proc/self/limits'" % USER))
    meets_and_keeps(host, limits)


def test_login_session_of_root(host):
    limits = parse(host.check_output("runuser -l root -c 'cat /proc/self/limits'"))
    meets_and_keeps(host, limits)


def test_system_service(host):
    limits = parse(host.check_output('systemd-run --wait --pipe --quiet -p User=%s '
                                     'cat /proc/self/limits' % USER))
    meets_and_keeps(host, limits)


def test_user_manager_service(host):
    assert short_of(user_service_limits(host)) == []


def test_new_container(host):
    limits = parse(host.check_output('docker run --rm --network=none tiny:latest '
                                     'cat /proc/self/limits'))
    # a new container had containerd's limits (its unit's infinity: PID 1's hard here, soft
    # too): a plain 16384 keeps them
    meets_and_keeps(host, limits, nofile_soft=pid1_limit(host, 'nofile').hard)
    shm = host.check_output('docker run --rm --network=none tiny:latest df -k /dev/shm')
    assert int(shm.splitlines()[-1].split()[1]) == 1024 * 1024


def test_one_entry_per_domain_and_item_in_the_limits_file(host):
    """Every domain gets a line per side and item, at the profile or the higher value its
    login had (issue 39.1: a plain value never lowers a side; the collection's line holds it
    against an earlier limits line that would give less)."""
    lines = [line.split() for line in
             host.file(FILES[0]).content_string.splitlines()
             if line.strip() and not line.startswith('#')]
    assert sorted((d, side, item) for d, side, item, _value in lines) == sorted(
        (domain, side, item) for domain in ('*', 'root') for side in ('soft', 'hard')
        for item in ('nofile', 'nproc', 'memlock'))
    values = dict(((d, side, item), value) for d, side, item, value in lines)
    for domain in ('*', 'root'):
        # soft nofile as asked (a login starts it at 1024); the rest the profile's or the
        # higher one logins inherited (kept)
        assert values[(domain, 'soft', 'nofile')] == '16384'
        assert values[(domain, 'hard', 'nofile')] == str(pid1_limit(host, 'nofile').hard)
        for item in ('nproc', 'memlock'):
            for side in ('soft', 'hard'):
                value = values[(domain, side, item)]
                assert value in ('unlimited', '-1') or int(value) >= 8192, (domain, side, item)


def test_effective_limits_module_sees_no_gap(host):
    ok, result, out = run_module(host, 'gpufleet.tuning.effective_limits', {
        'user': USER, 'contexts': ['login', 'service', 'user_manager', 'docker'],
        'docker_image': 'tiny:latest', 'expect': {'nofile': 16384, 'nproc': 8192,
                                                  'memlock': '8MiB'}})
    assert ok, out
    assert result['errors'] == [] and result['gaps'] == []
    assert sorted(result['contexts']) == ['docker', 'login', 'service', 'user_manager']
    # And it does see a gap when the profile asks for more than a context has.
    ok, result, out = run_module(host, 'gpufleet.tuning.effective_limits', {
        'user': USER, 'contexts': ['service'], 'expect': {'nofile': 18000}})
    assert ok, out
    hard = pid1_limit(host, 'nofile').hard     # kept by the role, above 18000 here
    assert result['gaps'] == [{'context': 'service', 'item': 'nofile',
                               'expected': {'soft': 18000, 'hard': 18000},
                               'actual': {'soft': 16384, 'hard': hard},
                               'sides': ['soft'] if hard >= 18000 else ['soft', 'hard']}]


def test_effective_limits_parallel_probes_match_serial_ones(host):
    """The probes of every context at the same time (the default) give what they give one
    after another: the same contexts in the same order, the same limits, no error."""
    args = {'user': USER, 'contexts': ['login', 'service', 'user_manager', 'docker'],
            'docker_image': 'tiny:latest', 'units': ['docker.service'],
            'expect': {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}}
    results = []
    for parallel in (False, True):
        ok, result, out = run_module(host, 'gpufleet.tuning.effective_limits',
                                     dict(args, parallel=parallel))
        assert ok, out
        for key in ('invocation', 'output'):
            result.pop(key, None)
        results.append(result)
    serial, parallel = results
    assert serial['errors'] == [] and serial['gaps'] == []
    assert sorted(parallel['contexts']) == sorted(serial['contexts']) == [
        'docker', 'login', 'service', 'unit:docker.service', 'user_manager']
    assert parallel == serial


def test_tune_playbook_check_diff_changes_nothing(host):
    """tune_gpu_nodes.yml --check --diff with another profile: reports changes, writes none."""
    before = checksums(host, FILES)
    mtimes = dict((path, host.file(path).mtime) for path in FILES)
    login = parse(host.check_output("runuser -l %s -c 'cat /proc/self/limits'" % USER))
    # both sides named: a lowering the profile asks for (a plain value would keep more)
    extra = {'limits_profile': {'nofile': {'soft': 12288, 'hard': 12288},
                                'nproc': {'soft': 4096, 'hard': 4096},
                                'memlock': {'soft': '4MiB', 'hard': '4MiB'}},
             'limits_contexts': ['pam', 'systemd_system', 'systemd_user', 'docker'],
             'limits_verify_user': USER}
    cmd = ansible_command(host, ['ansible-playbook', PLAYBOOK, '--check', '--diff',
                                 '--tags', 'limits', '-e', json.dumps(extra),
                                 '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert '-root\tsoft\tnofile\t16384' in proc.stdout or '-root soft nofile 16384' in \
        ' '.join(proc.stdout.split()).replace('\t', ' '), proc.stdout
    assert 'DefaultLimitNOFILE=12288' in proc.stdout
    assert checksums(host, FILES) == before
    assert dict((path, host.file(path).mtime) for path in FILES) == mtimes
    after = parse(host.check_output("runuser -l %s -c 'cat /proc/self/limits'" % USER))
    assert after == login


@pytest.mark.parametrize('provider', ['miniforge', 'venv'])
def test_whole_playbook_check_diff_finishes_and_changes_nothing(host, provider):
    """issue 17.8: `tune_gpu_nodes.yml --check --diff` (every role) never finished: the
    Miniforge download ran in check mode, and the venv provider's apt task needed python3-apt.
    Now it finishes, downloads and installs nothing, and says what it would do."""
    before = checksums(host, FILES)
    extra = {'limits_profile': EXPECTED_PROFILE,
             'limits_contexts': ['pam', 'systemd_system', 'systemd_user', 'docker'],
             'limits_verify_user': USER, 'pytorch_env_provider': provider}
    cmd = ansible_command(host, ['ansible-playbook', PLAYBOOK, '--check', '--diff',
                                 '-e', json.dumps(extra), '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert 'Check mode - the DataLoader smoke test is not run' in proc.stdout
    assert checksums(host, FILES) == before
    for path in ('/opt/gpufleet/pytorch', '/var/cache/gpufleet/installers',
                 '/var/cache/gpufleet/wheelhouse'):
        assert not host.file(path).exists, path


def test_user_manager_still_runs(host):
    assert host.run(as_user('systemctl --user is-system-running')).rc in (0, 1)
    assert host.service('user@1001.service').is_running


def ci_reports(tmp_path):
    """The JUnit and SARIF files audit_limits.yml wrote, each checked against its schema
    (tests/report_schemas.py): (the JUnit root element, the SARIF log)."""
    junit = (tmp_path / 'limits-audit.junit.xml').read_text()
    assert junit_errors(junit) == '', junit
    with open(str(tmp_path / 'limits-audit.sarif')) as handle:
        log = json.load(handle)
    assert sarif_errors(log) == '', log
    return ET.fromstring(junit.encode('utf-8')), log


def test_audit_reports_sources_and_gaps_and_changes_nothing(host, tmp_path):
    """... and with audit_fail_on_gap (issue 34.3) fails the run on the gaps, naming the host and
    its contexts, after writing every report: JUnit and SARIF valid against their schemas, a
    failure and a result per gap located at the file:line that decides."""
    before = checksums(host, FILES)
    proc, node, markdown = run_audit(host, tmp_path,
                                     {'nofile': 18000, 'nproc': 8192, 'memlock': '8MiB'},
                                     limits_verify_docker_image='tiny:latest',
                                     audit_fail_on_gap=True)
    name = host.backend.host
    assert proc.returncode != 0, proc.stdout
    assert ('audit_fail_on_gap: 1 host below the profile: %s (login: nofile; ' % name
            in proc.stdout), proc.stdout
    assert 'reports in %s' % tmp_path in proc.stdout
    assert checksums(host, FILES) == before
    assert node['errors'] == []
    rows = dict(((r['context'], r['item']), r) for r in node['rows'])
    assert sorted(set(r['context'] for r in node['rows'])) == [
        'docker', 'login', 'service', 'ssh', 'user_manager']
    login = rows[('login', 'nofile')]
    # the role kept the hard nofile logins had (PID 1's, above 18000 here): only soft is short
    hard = pid1_limit(host, 'nofile').hard
    assert login['actual'] == '16384:%d' % hard and login['expected'] == '18000:18000'
    assert login['gap'] == 'soft'
    assert login['source'].startswith(FILES[0] + ':')
    # an SSH session gets what sshd's PAM stack (pam_limits) gives it: the same line
    assert rows[('ssh', 'nofile')]['gap'] == 'soft'
    assert FILES[0] + ':' in rows[('ssh', 'nofile')]['source']
    assert rows[('service', 'nofile')]['source'].startswith(FILES[1] + ':')
    assert rows[('user_manager', 'nproc')]['source'].startswith(FILES[2] + ':')
    assert rows[('docker', 'memlock')]['source'].startswith(FILES[3] + ':')
    assert rows[('docker', 'nproc')]['gap'] == ''
    # a new container kept containerd's limits (PID 1's hard, soft too): no gap there
    assert sorted(set((g['context'], g['item']) for g in node['gaps'])) == [
        ('login', 'nofile'), ('service', 'nofile'), ('ssh', 'nofile'), ('user_manager', 'nofile')]
    # one row per finding, with its status (issue 40) and the short side
    assert '| %s | login | nofile | gap | 16384:%d | 18000:18000 | soft | %s:' % (
        host.backend.host, hard, FILES[0]) in markdown
    assert 'host' in proc.stdout and '18000:18000' in proc.stdout
    junit, log = ci_reports(tmp_path)
    failed = sorted((case.get('classname'), case.get('name')) for case in junit.iter('testcase')
                    if case.find('failure') is not None)
    assert failed == sorted(('gpufleet.%s.%s' % (name, context), 'nofile') for context in (
        'login', 'service', 'ssh', 'user_manager')), failed
    # one test case per finding (issue 40), the rows' and any other the audit evaluated
    assert len(list(junit.iter('testcase'))) == len(node['findings']) >= len(node['rows'])
    results = dict((r['ruleId'], r) for r in log['runs'][0]['results'])
    assert sorted(results) == ['gpufleet/%s/nofile' % c for c in (
        'login', 'service', 'ssh', 'user_manager')]
    where = results['gpufleet/login/nofile']['locations'][0]['physicalLocation']
    line = int(login['source'].split(':')[1].split()[0])
    assert where == {'artifactLocation': {'uri': FILES[0].lstrip('/'), 'uriBaseId': 'NODEROOT'},
                     'region': {'startLine': line}}, where
    assert results['gpufleet/login/nofile']['properties']['host'] == name
    # an SSH session gets the same limits line through sshd's PAM stack: located at that line,
    # not at the PAM stack's line that runs pam_limits
    assert results['gpufleet/ssh/nofile']['locations'][0]['physicalLocation'] == where


def run_audit(host, tmp_path, profile, **variables):
    """audit_limits.yml on the node: (the process, this node's report, the Markdown)."""
    extra = dict({'limits_profile': profile, 'limits_verify_user': USER,
                  'audit_reports_dir': str(tmp_path)}, **variables)
    cmd = ansible_command(host, ['ansible-playbook', os.path.join(ROOT, 'playbooks',
                                                                  'audit_limits.yml'),
                                 '-e', json.dumps(extra), '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert (tmp_path / 'limits-audit.json').exists(), proc.stdout[-5000:]
    with open(str(tmp_path / 'limits-audit.json')) as handle:
        report = json.load(handle)
    return proc, report['hosts'][host.backend.host], (tmp_path / 'limits-audit.md').read_text()


# One process of this job holds 64 + 2 x 8 + 10 x 2000 = 20080 descriptors at its peak.
AUDIT_JOB = {'num_workers': 8, 'batch_size': 64, 'tensors_per_batch': 2000,
             'bytes_per_batch': '64MiB'}


def test_audit_marks_each_context_where_a_job_does_not_fit(host, tmp_path):
    """issue 13.1: with a job, the audit marks each probed context (all at nofile 16384 here)
    where the job does not fit, with its demand, the soft limit and by how much."""
    proc, node, markdown = run_audit(host, tmp_path, EXPECTED_PROFILE, audit_job=AUDIT_JOB,
                                     limits_verify_docker_image='tiny:latest')
    assert proc.returncode == 0, proc.stdout
    fit = node['job_fit']
    assert fit['demand']['nofile'] == 20080
    # docker kept containerd's soft limit (PID 1's hard here), the others have the profile's
    docker = pid1_limit(host, 'nofile').hard
    assert sorted((s['context'], s['item'], s['need'], s['have'], s['short_by'])
                  for s in fit['shortfalls']) == sorted(
        [(context, 'nofile', 20080, 16384, 3696)
         for context in ('login', 'service', 'ssh', 'user_manager')]
        + ([('docker', 'nofile', 20080, docker, 20080 - docker)] if docker < 20080 else []))
    assert fit['fits'] == [] and fit['beyond_kernel'] is None
    assert '## Job fit' in markdown
    assert '| %s | login | nofile | 20080 | 16384 | **3696** |' % host.backend.host in markdown
    assert 'the job does not fit service: nofile needs 20080, soft limit 16384, short by 3696' \
        in proc.stdout


def test_audit_refuses_a_bad_job_naming_the_field_before_probing(host, tmp_path):
    proc, node, _markdown = run_audit(host, tmp_path, EXPECTED_PROFILE,
                                      audit_job=dict(AUDIT_JOB, num_workers=0))
    assert proc.returncode != 0
    assert not node['audited'] and node['contexts'] == {}
    assert 'job.num_workers: 0 is below 1' in node['errors'][0]['msg'], node


NODE_CACHE = '/var/cache/gpufleet'


def docker_rows(node):
    return dict((r['item'], r) for r in node['rows'] if r['context'] == 'docker')


def containers_started(host, since, image='tiny:latest'):
    """How many containers of ``image`` dockerd started since ``since`` (its events, not our
    report). A container that runc could not start (create failed) has no start event."""
    out = host.check_output("docker events --since %s --until \"$(date +%%s.%%N)\" "
                            "--filter type=container --filter event=start --filter image=%s "
                            "--format '{{.ID}}'" % (since, image))
    return len(out.split())


#: the containers a Docker probe starts: the probe and its non-root twin (issue 33 item 4,
#: contexts/_nonroot.py), which limits_audit starts after each new probe, never on a reuse
PROBE_CONTAINERS = 2


def nonroot_ran(node):
    """The docker context's non-root twin ran and printed its limits: a node image built before
    8f41499 had a tiny image whose / was 0700, where runc could not start it ('exec: "cat":
    executable file not found'), so that a fresh audit started one container, not two."""
    found = node['contexts']['docker'].get('nonroot') or {}
    assert found.get('uid') == 65534 and not found.get('error'), (
        'the non-root probe did not run (a node image older than the fix of '
        'images/finalize-rootfs.sh? make images): %s' % found)


def test_audit_reuses_a_docker_probe_until_what_decides_it_changes(host, tmp_path):
    """issue 15.3: with audit_probe_max_age (the playbook's default 3600 s), an audit reuses
    the node's last Docker probe instead of starting a container (nor its non-root twin), says
    so per row and in the fleet summary, and starts them again as soon as anything that decides
    a new container's limits changes (here: containerd's own limits, by prlimit), when the
    proof is older than asked, or with 0. The proof is kept on the controller (audit_proofs_dir/HOST.json), none
    on the node (issue 31 item 20)."""
    profile = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
    proofs_dir = tmp_path / 'proofs'
    proof_file = proofs_dir / ('%s.json' % host.backend.host)
    image = dict(limits_verify_docker_image='tiny:latest', audit_proofs_dir=str(proofs_dir))

    def audit(name, **variables):
        since = host.check_output('date +%s.%N').strip()
        proc, node, markdown = run_audit(host, tmp_path / name, profile,
                                         **dict(image, **variables))
        assert proc.returncode == 0, proc.stdout
        assert node['errors'] == [] and node['gaps'] == [], node
        return node, markdown, proc.stdout, containers_started(host, since)

    fresh, _md, _out, started = audit('fresh')
    nonroot_ran(fresh)
    assert started == PROBE_CONTAINERS
    assert set(r['how'] for r in docker_rows(fresh).values()) == {'probed'}
    proof = json.loads(proof_file.read_text())['docker']
    assert sorted(proof) == ['key', 'output', 'proved_at'] and 'Max open files' in proof['output']
    assert oct(os.stat(str(proof_file)).st_mode & 0o777) == oct(0o600)
    assert not host.file(NODE_CACHE).exists
    assert 'reused' not in fresh['contexts']['docker']

    again, markdown, out, started = audit('again')
    assert started == 0                                   # no container: the proof was reused
    assert 'nonroot' not in again['contexts']['docker']   # nor its non-root twin
    rows = docker_rows(again)
    assert set(r['how'] for r in rows.values()) == {'reused'}
    assert dict((i, r['actual']) for i, r in rows.items()) == dict(
        (i, r['actual']) for i, r in docker_rows(fresh).items())
    assert again['contexts']['docker']['reused']['age_s'] < 600
    assert set(r['how'] for r in again['rows'] if r['context'] != 'docker') == {'probed'}
    assert '- docker: reused on 1 hosts a probe made since ' in markdown
    assert 'docker: reused on 1 hosts' in out
    assert json.loads(proof_file.read_text())['docker'] == proof     # kept as it was

    pid = host.check_output('systemctl show -p MainPID --value containerd.service').strip()
    containerd_nofile = proc_limits(host, pid)['nofile']
    soft, hard = containerd_nofile.soft, containerd_nofile.hard
    assert isinstance(soft, int) and isinstance(hard, int), (soft, hard)
    host.check_output('prlimit --pid %s --nofile=%d:%d' % (pid, soft - 1, hard))
    try:
        changed, _md, _out, started = audit('changed')
    finally:
        host.check_output('prlimit --pid %s --nofile=%d:%d' % (pid, soft, hard))
    assert started == PROBE_CONTAINERS
    assert set(r['how'] for r in docker_rows(changed).values()) == {'probed'}

    _node, _md, _out, started = audit('restored')          # limits back: a new key again
    assert started == PROBE_CONTAINERS
    old, _md, _out, started = audit('old', audit_probe_max_age=0)
    assert started == PROBE_CONTAINERS
    assert set(r['how'] for r in docker_rows(old).values()) == {'probed'}
    host.check_output('sleep 2')
    _node, _md, _out, started = audit('aged', audit_probe_max_age=1)
    assert started == PROBE_CONTAINERS
    assert json.loads(proof_file.read_text())['docker']['proved_at'] > proof['proved_at']
    assert not host.file(NODE_CACHE).exists


SITE_DROPIN = '/etc/systemd/system.conf.d/95-site.conf'
GPU_LINES = '/etc/security/limits.d/95-gpu.conf'
TYPO_LINES = '/etc/security/limits.d/96-typos.conf'


def test_audit_names_real_sources_and_shows_what_is_pending_or_misread(host, tmp_path):
    """issue 17.5 and 17.6 on a messy node: a user line above what pam_limits can set (the
    session keeps its defaults), a system.conf.d drop-in not applied yet, and limits lines
    pam_limits skips (a typo, a size suffix). The audit names the line that could not be
    applied, says the drop-in is not applied yet, and the table and the Markdown show the
    pending setting and the misread lines (they were only in the JSON)."""
    host.check_output('printf "%s" > %s' % (r'[Manager]\nDefaultLimitNOFILE=4096\n', SITE_DROPIN))
    host.check_output('printf "%s" > %s' % (r'%s hard nofile 30000\n' % USER, GPU_LINES))
    host.check_output('printf "%s" > %s' % (r'%s hard nofle 4096\n* soft memlock 64M\n' % USER,
                                            TYPO_LINES))
    try:
        proc, node, markdown = run_audit(host, tmp_path, EXPECTED_PROFILE,
                                         audit_fail_on_gap=False)
        rows = dict(((r['context'], r['item']), r) for r in node['rows'])
        # issue 34.3: the gap's location is the line pam_limits could not apply (the advice's),
        # not the profile's file the source names first; audit_fail_on_gap false: it passes
        _junit, log = ci_reports(tmp_path)
        login = [r for r in log['runs'][0]['results'] if r['ruleId'] == 'gpufleet/login/nofile']
        assert [r['locations'][0]['physicalLocation'] for r in login] == [
            {'artifactLocation': {'uri': GPU_LINES.lstrip('/'), 'uriBaseId': 'NODEROOT'},
             'region': {'startLine': 1}}], log
        # issue 32: acted on, what the audit says changes the value: the re-exec the source
        # names applies the drop-in (a new service then gets its 4096, a gap whose advice
        # names the drop-in); the line the login gap's advice names, removed, gives logins
        # the profile again
        assert 'systemctl daemon-reexec applies it' in rows[('service', 'nofile')]['source']
        assert rows[('login', 'nofile')]['advice'].startswith('change %s:1' % GPU_LINES)
        host.check_output('systemctl daemon-reexec && rm -f %s' % GPU_LINES)
        _proc, after, _markdown = run_audit(host, tmp_path, EXPECTED_PROFILE)
        acted = dict(((r['context'], r['item']), r) for r in after['rows'])
        assert acted[('service', 'nofile')]['actual'] == '4096:4096', acted
        assert acted[('service', 'nofile')]['advice'].startswith(
            'raise or remove %s:2 (it sets 4096:4096)' % SITE_DROPIN), acted
        assert acted[('login', 'nofile')]['gap'] == '', acted
    finally:
        host.check_output('rm -f %s %s %s && systemctl daemon-reexec'
                          % (SITE_DROPIN, GPU_LINES, TYPO_LINES))
    assert proc.returncode == 0, proc.stdout
    login = rows[('login', 'nofile')]
    assert login['source'].startswith('not the limits files: they give 16384:30000'), login
    assert 'pam_limits could not apply %s:1 (hard nofile 30000' % GPU_LINES in login['source']
    assert FILES[0] not in login['source'].split('could not apply')[1]
    service = rows[('service', 'nofile')]
    assert service['actual'] == '16384:%d' % pid1_limit(host, 'nofile').hard, service
    assert service['source'].startswith('%s:2 sets 4096:4096, not applied yet' % SITE_DROPIN)
    out = ' '.join(proc.stdout.replace('\\n', ' ').split())
    for text in (markdown, out):
        assert 'not applied yet' in text and 'systemd manager `nofile`' in text.replace(
            'manager nofile', 'manager `nofile`'), text
        assert '%s:1' % TYPO_LINES in text and 'nofle' in text, text
        assert '%s:2' % TYPO_LINES in text and '64M' in text, text
    assert '**not applied yet**' in markdown and '**pam_limits skips or misreads**' in markdown


def proc_limits(host, pid):
    return parse(host.file('/proc/%s/limits' % pid).content_string)


def main_pid(host, unit):
    return host.check_output('systemctl show -p MainPID --value %s' % unit).strip()


def test_detected_contexts_containerd_podman_and_units(host):
    """The role with limits_contexts left empty: it finds containerd and Podman too, and gives
    the profile to containerd and a listed unit (restarted); runs last, it changes the node."""
    extra = {'limits_profile': {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'},
             'limits_units': ['gpufleet-sleeper'], 'limits_verify_user': USER,
             'limits_verify_docker_image': 'tiny:latest',
             'limits_verify_podman_image': 'localhost/tiny:latest'}
    sleeper_before = main_pid(host, 'gpufleet-sleeper.service')
    assert proc_limits(host, sleeper_before)['nofile'] == Limit(2048, 2048)
    cmd = ansible_command(host, ['ansible-playbook', os.path.join(ROOT, 'molecule', 'default',
                                                                  'role.yml'),
                                 '-e', json.dumps(extra), '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    out = ' '.join(proc.stdout.split())
    assert proc.returncode == 0, proc.stdout
    assert ('Contexts: pam, systemd_system, systemd_user, docker, containerd, podman; '
            'units: gpufleet-sleeper.service, containerd.service') in out, out
    # Unit drop-ins override the unit's own LimitNOFILE=2048 and the units were restarted.
    sleeper = main_pid(host, 'gpufleet-sleeper.service')
    assert sleeper != sleeper_before
    # raised from its own 2048 on both sides; the other items keep what the unit had
    sleeper_limits = proc_limits(host, sleeper)
    assert sleeper_limits['nofile'] == Limit(16384, 16384)
    assert short_of(sleeper_limits) == []
    assert short_of(proc_limits(host, main_pid(host, 'containerd.service'))) == []
    limits = parse(host.check_output('podman run --rm --network=none localhost/tiny:latest '
                                     'cat /proc/self/limits'))
    assert short_of(limits) == []
    # Docker still answers after containerd's restart.
    limits = parse(host.check_output('docker run --rm --network=none tiny:latest '
                                     'cat /proc/self/limits'))
    assert short_of(limits) == []


def test_modules_keep_no_compiled_code_on_the_node(host):
    """Issue 31: the modules run the collection's code from the AnsiballZ payload only; no
    run (the converge, check mode, a read-only module) leaves compiled code on the node, as
    the removed bytecode cache did in /var/cache/gpufleet/bytecode."""
    ok, first, out = run_module(host, 'gpufleet.tuning.pam_limits_info', {'user': USER})
    assert ok, out
    ok, second, out = run_module(host, 'gpufleet.tuning.pam_limits_info', {'user': USER})
    assert ok, out
    assert not host.file('/var/cache/gpufleet/bytecode').exists
    first.pop('output'), second.pop('output')
    assert second == first and second['effective']
