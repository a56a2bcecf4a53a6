"""Drift watch with the real parts: the timer, node_exporter's textfile collector, Prometheus'
rules and HTTP API, Alertmanager and the collection's re-tune rulebook in ansible-rulebook.
Tests run in file order: clean node, drift and re-tune, faults."""
import json
import os
import subprocess
import time

import pytest
from conftest import (APT_HOOK, CODE, DELAY, INTERVAL, METRICS, METRICS_DIR, NFD_FILE,
                      NPD_CONFIG, NPD_PLUGIN, PERIOD, PROFILE, REMOVE, ROOT, STATE_DIR, UNIT, api,
                      firing, journal_since, key, metrics, nfd_labels, npd, query, wait_for)
from eda_support import (NOWHERE, Rulebook, alertmanager_config, notification,
                         set_alertmanager)
from scenario_support import ansible_command, run_playbook

# the limits.d drift reaches SSH sessions too (the node's sshd runs pam_limits: the ssh probe)
DRIFTS = {('login', 'nofile'), ('ssh', 'nofile'), ('unit:gpufleet-sleeper.service', 'nofile'),
          ('docker', 'nofile')}


def instance(host):
    return '%s:9100' % host.check_output('hostname').strip()


def test_watch_installed_and_timer_running(host):
    assert host.service('%s.timer' % UNIT).is_enabled
    assert host.service('%s.timer' % UNIT).is_running
    timer = host.file('/etc/systemd/system/%s.timer' % UNIT).content_string
    assert 'OnUnitActiveSec=%ds' % INTERVAL in timer
    assert 'RandomizedDelaySec=%ds' % DELAY in timer
    config = json.loads(host.file(PROFILE).content_string)
    # the profile the limits role applied (its variables are the watch's defaults)
    assert config['profile'] == {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
    assert config['units'] == ['gpufleet-sleeper.service']
    # the contexts' probe options, one mapping (the probe_options lookup): the image only
    assert config['probe_options'] == {'docker_image': 'tiny:latest'}
    assert config['sysctl'] == {'vm.max_map_count': 65530, 'fs.inotify.max_user_instances': 128}


def test_tuned_node_has_metrics_and_no_alert(host):
    wait_for('a successful audit in the metrics file', lambda: host.file(METRICS).exists
             and metrics(host).get(key('gpufleet_limits_audit_success')) == '1', 3 * PERIOD)
    got = metrics(host)
    compliant = dict((dict(labels)['context'], value) for (name, labels), value in got.items()
                     if name == 'gpufleet_limits_compliant' and dict(labels)['item'] == 'nofile')
    # user_manager only while root's user manager runs (a login session can start it)
    compliant.setdefault('user_manager', '1')
    assert compliant == {'login': '1', 'ssh': '1', 'service': '1', 'docker': '1',
                         'user_manager': '1', 'unit:gpufleet-sleeper.service': '1'}
    assert got[key('gpufleet_limits_soft', context='login', item='nofile')] == '16384'
    assert got[key('gpufleet_limits_hard_bytes', context='docker', item='memlock')] == '8388608'
    assert got[key('gpufleet_limits_profile_info', item='memlock', soft='8388608',
                   hard='8388608')] == '1'
    assert host.run('promtool check metrics < %s' % METRICS).rc == 0
    # Prometheus scrapes it by the node's name and evaluates the rules: nothing fires
    wait_for('Prometheus has the metrics', lambda: query(
        host, 'gpufleet_limits_compliant{instance="%s"}' % instance(host)), 60)
    time.sleep(6)   # one more rule evaluation after the first scrape
    assert firing(host) == []
    errors = query(host, 'node_textfile_scrape_error{instance="%s"}' % instance(host))
    assert errors[0]['value'][1] == '0'


def test_kernel_ceilings_beside_node_exporters_own_names(host):
    """issue 33 items 2 and 8: the watch exports what node_exporter cannot know (configured
    value, minimum, gap, configured-not-applied) and none of node_exporter's own names, which
    Prometheus still gets from node_exporter's collectors in the same scrape."""
    wait_for('the kernel rows in the metrics file', lambda: host.file(METRICS).exists and key(
        'gpufleet_limits_sysctl_gap', sysctl='vm.max_map_count') in metrics(host), 3 * PERIOD)
    got = metrics(host)
    live = int(host.file('/proc/sys/fs/inotify/max_user_instances').content_string)
    assert got[key('gpufleet_limits_sysctl_minimum', sysctl='vm.max_map_count')] == '65530'
    assert got[key('gpufleet_limits_sysctl_gap', sysctl='vm.max_map_count')] == '0'
    # a plain value is a minimum the node holds (live, and at boot: no file sets it): the
    # role wrote no line, so no configured value; the live one is node_exporter's
    assert live >= 128
    assert key('gpufleet_limits_sysctl_configured',
               sysctl='fs.inotify.max_user_instances') not in got
    assert got[key('gpufleet_limits_sysctl_gap', sysctl='fs.inotify.max_user_instances')] == '0'
    assert not host.file('/etc/sysctl.d/90-gpufleet-tuning.conf').exists
    assert not [n for n, _labels in got if n.startswith('gpufleet_limits_sysctl_not_applied')]
    assert not [n for n, _labels in got if not n.startswith('gpufleet_limits_')]
    wait_for('Prometheus has the kernel rows', lambda: query(
        host, 'gpufleet_limits_sysctl_gap{instance="%s"}' % instance(host)), 60)
    maximum = query(host, 'node_filefd_maximum{instance="%s"}' % instance(host))
    assert float(maximum[0]['value'][1]) == float(host.file('/proc/sys/fs/file-max').content_string)
    assert query(host, 'up{instance="%s"}' % instance(host))[0]['value'][1] == '1'
    # a later site file the kernel does not follow (read-only /proc/sys): configured, not applied
    site = '/etc/sysctl.d/95-gpufleet-test.conf'
    host.check_output("printf 'vm.max_map_count = 262144\\n' > %s" % site)
    try:
        wait_for('configured, not applied in the metrics file', lambda: metrics(host).get(key(
            'gpufleet_limits_sysctl_not_applied', sysctl='vm.max_map_count', read_only='1'))
            == '1', 3 * PERIOD)
        assert metrics(host)[key('gpufleet_limits_sysctl_configured',
                                 sysctl='vm.max_map_count')] == '262144'
    finally:
        host.run('rm -f %s' % site)


def drift(host):
    """Change three limits behind the tool's back, as upgrades and vendor tools do."""
    host.check_output("sed -i 's/16384/4096/g' /etc/security/limits.d/90-gpufleet-tuning.conf")
    host.check_output("sed -i 's/^LimitNOFILE=.*/LimitNOFILE=4096/' "
                      '/etc/systemd/system/gpufleet-sleeper.service.d/90-gpufleet-tuning.conf')
    host.check_output('systemctl daemon-reload && systemctl restart gpufleet-sleeper.service')
    data = json.loads(host.file('/etc/docker/daemon.json').content_string)
    # (no default-ulimits key where containerd's own limits, which containers inherit, meet
    # the profile: the collection writes no entry then, issue 39.1)
    data.setdefault('default-ulimits', {})['nofile'] = {'Name': 'nofile', 'Soft': 4096,
                                                        'Hard': 4096}
    host.check_output("printf '%%s' '%s' > /etc/docker/daemon.json" % json.dumps(data))
    host.check_output('systemctl restart docker.service')
    wait_for('dockerd answers', lambda: host.run('docker info').rc == 0, 60)


def below(host):
    return set((a['context'], a['item']) for a in firing(host, 'GpufleetLimitsBelowProfile')
               if a['instance'] == instance(host))


@pytest.fixture
def rulebook(host, tmp_path, request):
    """The collection's re-tune rulebook in a real ansible-rulebook on this controller, the
    node's Alertmanager sending the drift watch's alerts to its webhook."""
    failed = request.session.testsfailed
    book = Rulebook(host.backend.host, str(tmp_path))
    try:
        set_alertmanager(host, alertmanager_config(book.node_url))
        # Prometheus sends its alerts to that Alertmanager
        wait_for('Prometheus knows the Alertmanager', lambda: api(
            host, 'alertmanagers')['activeAlertmanagers'], 30)
        yield book
    finally:
        book.stop()
        set_alertmanager(host, NOWHERE)
        if request.session.testsfailed > failed:
            print('\nansible-rulebook output (%s), its end:\n%s'
                  % (book.log, '\n'.join(book.output().splitlines()[-80:])))


def test_drift_fires_the_rulebook_retunes_and_the_alert_clears(host, rulebook):
    """Drift -> GpufleetLimitsBelowProfile within two timer periods -> Alertmanager -> the
    rulebook's webhook -> tune_limits.yml on this node only -> compliant -> alert resolved
    (issue 34 item 4; docs/drift-watch.md, "Alert -> re-tune")."""
    node = host.backend.host
    changed = time.time()
    drift(host)
    wait_for('GpufleetLimitsBelowProfile for the three drifts',
             lambda: below(host) >= DRIFTS, 2 * PERIOD + 30, step=1)
    took = time.time() - changed
    found = below(host)
    print('\nalert fired %.1f s after the first change (two periods: %d s)' % (took, 2 * PERIOD))
    assert found == DRIFTS     # nothing else (service, nproc, memlock) fires
    assert took <= 2 * PERIOD + 10, 'fired after %.1f s' % took
    gap = query(host, 'gpufleet_limits_gap{context="login",item="nofile",side="soft"}')
    assert gap[0]['value'][1] == str(16384 - 4096)
    # the scrape configuration's host label (the inventory hostname) is on the alert
    assert set(a['host'] for a in firing(host, 'GpufleetLimitsBelowProfile')) == {node}

    fired = time.time()
    wait_for('the re-tune the rulebook runs', rulebook.recaps, 300, step=1)
    retuned = time.time()
    runs = rulebook.recaps()
    # one run, on this node only (--limit from the alert's host label), that changed it back
    assert list(runs[0]) == [node], runs
    assert runs[0][node]['failed'] == 0 and runs[0][node]['changed'] > 0, runs
    wait_for('the alert clears after the re-tune', lambda: not below(host), 2 * PERIOD + 30,
             step=1)
    cleared = time.time()
    assert host.file('/etc/security/limits.d/90-gpufleet-tuning.conf').contains('16384')
    wait_for('the resolved notification at the rulebook', lambda: rulebook.notifications(
        'resolved'), 60)
    print('the rulebook\'s re-tune ended %.1f s after the alert fired; the alert cleared %.1f s '
          'after it; %d firing notifications' % (retuned - fired, cleared - retuned,
                                                 len(rulebook.notifications('firing'))))
    assert cleared - retuned <= 2 * PERIOD + 10

    # Posted like Alertmanager: the same alert again within 15 minutes (a repeat, a flap) is
    # throttled; an alert a re-tune does not fix, a resolved one, one grouped across hosts (no
    # host label) run nothing; without the token the webhook refuses
    across = notification('GpufleetLimitsBelowProfile', node)
    del across['commonLabels']['host']     # the alerts' own labels keep theirs
    posts = [notification('GpufleetLimitsBelowProfile', node, context='login', item='nofile'),
             notification('GpufleetLimitsAuditFailing', node, reason='crashed'),
             notification('GpufleetLimitsBelowProfile', node, status='resolved'), across]
    events = len(rulebook.events())
    assert rulebook.post(posts[0], token=None) == 401
    assert [rulebook.post(p) for p in posts] == [200] * len(posts)
    wait_for('the posted events at the rulebook', lambda: len(rulebook.events())
             == events + len(posts), 30)
    time.sleep(3)
    assert rulebook.output().count('Calling Ansible runner') == 1
    assert len(rulebook.recaps()) == 1


@pytest.fixture
def quiet_timer(host):
    """The timer stopped and no audit running, so that only the test's own runs happen."""
    host.check_output('systemctl stop %s.timer' % UNIT)
    wait_for('no audit running', lambda: host.run(
        'systemctl is-active %s.service' % UNIT).stdout.strip() != 'activating', 120)
    yield
    host.check_output('systemctl start %s.timer' % UNIT)


def run_watch(host):
    """One audit now, as the timer starts it (oneshot: returns when it is done)."""
    return host.run('systemctl start %s.service' % UNIT).rc


def assert_whole_metrics_file(host):
    names = host.check_output('ls -A %s' % METRICS_DIR).split()
    assert not [n for n in names if n.startswith('.gpufleet_limits.')], names
    assert host.run('promtool check metrics < %s' % METRICS).rc == 0


def assert_failure(host, since, reason, words):
    got = metrics(host)
    assert got[key('gpufleet_limits_audit_success')] == '0'
    assert got[key('gpufleet_limits_audit_error', reason=reason)] == '1'
    assert float(got[key('gpufleet_limits_audit_last_success_timestamp_seconds')]) < since
    assert_whole_metrics_file(host)
    wait_for('journal line "%s"' % words, lambda: words in journal_since(host, since), 10)


def test_profile_missing_or_corrupt(host, quiet_timer):
    saved = host.file(PROFILE).content_string
    try:
        since = time.time()
        host.check_output('rm %s' % PROFILE)
        assert run_watch(host) != 0
        assert_failure(host, since, 'profile_missing', 'audit failed (profile_missing): '
                       'profile file %s does not exist' % PROFILE)
        # the same outcome for Kubernetes: NPD Unknown with the reason, NFD "unknown"
        assert npd(host) == (2, 'gpufleet limits audit failed (profile_missing): profile file '
                             '%s does not exist (run the limits_watch role)' % PROFILE)
        assert nfd_labels(host) == {'gpufleet.io/limits-ok': 'unknown'}
        since = time.time()
        host.check_output("printf '{\"profile\": {\"nofile\": ' > %s" % PROFILE)
        assert run_watch(host) != 0
        assert_failure(host, since, 'profile_invalid', 'audit failed (profile_invalid): '
                       '%s: not JSON' % PROFILE)
    finally:
        host.check_output("printf '%%s' '%s' > %s" % (saved, PROFILE))
    assert run_watch(host) == 0


def test_audit_that_crashes_or_times_out(host, quiet_timer):
    host.check_output('cp %s/run/audit.py /root/audit.py.saved' % CODE)
    dropin = '/run/systemd/system/%s.service.d' % UNIT
    try:
        since = time.time()
        host.check_output("printf 'raise RuntimeError(\"injected crash\")\\n' > %s/run/audit.py"
                          % CODE)
        assert run_watch(host) != 0
        assert_failure(host, since, 'crashed', 'RuntimeError: injected crash')

        since = time.time()
        host.check_output("printf 'import time\\ntime.sleep(600)\\n' > %s/run/audit.py" % CODE)
        exec_start = host.check_output('systemctl show -p ExecStart --value %s.service' % UNIT)
        argv = exec_start.split('argv[]=')[1].split(' ;')[0]
        argv = argv.replace('--timeout 60', '--timeout 3')
        host.check_output('mkdir -p %s && printf "[Service]\\nExecStart=\\nExecStart=%s\\n" '
                          '> %s/10-test.conf && systemctl daemon-reload' % (dropin, argv, dropin))
        assert run_watch(host) != 0
        assert time.time() - since < 30
        assert_failure(host, since, 'timeout', 'audit failed (timeout): the audit did not '
                       'finish within 3 s')
        # the hung audit was stopped, not left behind
        assert host.run("pgrep -f 'gpufleet_limits_watch[.]py --child'").rc != 0
    finally:
        host.run('rm -rf %s && systemctl daemon-reload' % dropin)
        host.check_output('cp /root/audit.py.saved %s/run/audit.py' % CODE)
    assert run_watch(host) == 0


def test_metrics_directory_missing_or_read_only(host, quiet_timer):
    since = time.time()
    host.check_output('mount --bind {0} {0} && mount -o remount,bind,ro {0}'.format(METRICS_DIR))
    before = host.file(METRICS).content_string
    try:
        assert run_watch(host) != 0
        wait_for('journal line on a read-only directory', lambda: 'metrics not written: cannot '
                 'write to metrics directory %s: read-only file system' % METRICS_DIR
                 in journal_since(host, since), 10)
        assert host.file(METRICS).content_string == before     # the old file, whole
    finally:
        host.check_output('umount %s' % METRICS_DIR)
    assert_whole_metrics_file(host)

    since = time.time()
    host.check_output('mv %s %s.away' % (METRICS_DIR, METRICS_DIR))
    try:
        assert run_watch(host) != 0
        wait_for('journal line on a missing directory', lambda: 'metrics not written: metrics '
                 'directory %s does not exist' % METRICS_DIR in journal_since(host, since), 10)
    finally:
        host.check_output('mv %s.away %s' % (METRICS_DIR, METRICS_DIR))
    assert run_watch(host) == 0
    assert_whole_metrics_file(host)


def metrics_say(host):
    """{context: 'true', 'false' or 'unknown'} as the metrics file says it: 'false' when any
    item has compliant 0, else 'unknown' for a probe that failed or is pending, else 'true'."""
    compliant, unproven = {}, set()
    for (name, labels), value in metrics(host).items():
        labels = dict(labels)
        if name == 'gpufleet_limits_compliant':
            compliant.setdefault(labels['context'], set()).add(value)
        elif name in ('gpufleet_limits_probe_error', 'gpufleet_limits_probe_pending'):
            unproven.add(labels['context'])
    said = dict((c, 'unknown') for c in unproven)
    for context, values in compliant.items():
        if '0' in values:
            said[context] = 'false'
        elif context not in unproven:
            said[context] = 'true'
    return said


def test_npd_and_nfd_say_what_the_metrics_say(host, quiet_timer):
    """Issue 34 item 2 (no cluster here: the plugin and the feature file on the node, checked
    against NPD's and NFD's documented formats): one audit, three outlets that agree, on the
    node as it is and with a narrowed limits.d line."""
    from node_state_formats import check_npd_config
    check_npd_config(host.file(NPD_CONFIG).content_string,
                     path_exists=lambda p: host.file(p).exists and host.file(p).mode & 0o111)
    limits_d = '/etc/security/limits.d/90-gpufleet-tuning.conf'
    seen = {}
    for planted in (False, True):
        if planted:
            host.check_output("sed -i 's/16384/4096/g' %s" % limits_d)
        try:
            assert run_watch(host) == 0
            said = metrics_say(host)
            labels = nfd_labels(host)
            answers = set(npd(host, shell=shell) for shell in ('sh', 'bash'))  # dash and bash
        finally:
            if planted:
                host.check_output("sed -i 's/4096/16384/g' %s" % limits_d)
        short = set(c for c, v in said.items() if v == 'false')
        kernel = [n for n, v in metrics(host).items()
                  if n[0] == 'gpufleet_limits_sysctl_gap' and float(v) > 0]
        seen[planted] = short
        assert len(answers) == 1, answers
        rc, out = answers.pop()
        assert rc == (1 if short or kernel else 0), out
        if short or kernel:
            head, _sep, listed = out.partition(': ')
            assert head == 'limits below the gpufleet profile'
            assert set(p.split(' ')[0] for p in listed.split(', ')) == short | (
                {'kernel'} if kernel else set())
        else:
            assert out.startswith('limits at the gpufleet profile in %d contexts'
                                  % len([v for v in said.values() if v == 'true'])), out
        assert labels.pop('gpufleet.io/limits-ok') == ('false' if short or kernel else 'true')
        assert labels == dict(('gpufleet.io/limits-ok.' + c.replace(':', '-'), v)
                              for c, v in said.items())
    # the narrowed line reaches login and ssh sessions, and only them
    assert seen[True] - seen[False] == {'login', 'ssh'}
    # an answer two periods old is Unknown (the watch stopped); none at all too
    host.check_output("sed 's/^expires=.*/expires=1/' %s/npd-status > /root/npd-old" % STATE_DIR)
    rc, out = npd(host, '/root/npd-old')
    assert rc == 2 and out.startswith('gpufleet limits audit result is stale: written ')
    assert npd(host, '/root/none')[0] == 2


def fake_package(host, name, files):
    """A local .deb that installs ``files`` ({path: text}), built on the node with dpkg-deb:
    apt-get installs it offline, so dpkg runs and apt's DPkg::Post-Invoke hooks run after it,
    as for any upgrade."""
    tree = '/root/%s' % name
    host.check_output('rm -rf {0} && mkdir -p {0}/DEBIAN'.format(tree))
    host.check_output("printf 'Package: %s\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: "
                      "gpufleet tests <tests@example.invalid>\\nDescription: watch scenario test "
                      "package\\n' > %s/DEBIAN/control" % (name, tree))
    for path, text in files.items():
        host.check_output("mkdir -p %s%s && printf '%s' > %s%s" % (
            tree, os.path.dirname(path), text, tree, path))
    host.check_output('dpkg-deb --build %s /root/%s.deb' % (tree, name))
    return '/root/%s.deb' % name


def component(host, name):
    """(labels of gpufleet_limits_component_info, changed timestamp) of a component."""
    got = metrics(host)
    info = [dict(labels) for (metric, labels), _v in got.items()
            if metric == 'gpufleet_limits_component_info' and dict(labels)['component'] == name]
    changed = got.get(key('gpufleet_limits_component_changed_timestamp_seconds', component=name))
    return (info[0] if info else None), float(changed or 0)


def test_a_package_transaction_that_changes_a_component_reaudits_at_once(host, quiet_timer):
    """Issue 34 item 5: the components' versions (dpkg) and unit-file hashes are exported; a
    package that changes containerd's unit files (a drop-in, as an upgrade's new unit would)
    makes apt's Post-Invoke hook start the watch while its timer is stopped, and the change
    reaches the metrics, the journal and Prometheus' alert."""
    assert host.file(APT_HOOK).exists
    assert run_watch(host) == 0
    for name in ('dockerd', 'containerd', 'runc', 'systemd'):
        info, _changed = component(host, name)
        assert info and info['source'] == 'dpkg', name
        assert info['version'] == host.check_output(
            "dpkg-query -W -f '${Version}' %s" % info['package'])
    before, _changed = component(host, 'containerd')
    package = 'gpufleet-test-containerd-dropin'
    deb = fake_package(host, package, {
        '/etc/systemd/system/containerd.service.d/50-gpufleet-test.conf':
            '[Service]\\n# installed by the watch scenario test package\\n'})
    try:
        since = int(time.time())
        out = host.check_output('DEBIAN_FRONTEND=noninteractive apt-get install -y %s 2>&1' % deb)
        assert 'gpufleet-limits-watch: component changed: containerd unit files' in out, out
        (info, changed), took = wait_for('the re-audit after apt (timer stopped)', lambda: (
            component(host, 'containerd') if component(host, 'containerd')[1] >= since
            else None), 60, step=0.5)
        print('\nre-audit after apt-get install: metrics changed %.1f s after apt returned' % took)
        assert info['version'] == before['version']
        assert info['units_sha256'] != before['units_sha256']
        assert 'component changed: containerd unit files %s -> %s' % (
            before['units_sha256'], info['units_sha256']) in journal_since(host, since, 'warning')
        wait_for('GpufleetLimitsComponentChanged in Prometheus', lambda: [
            a for a in firing(host, 'GpufleetLimitsComponentChanged')
            if a['component'] == 'containerd' and a['instance'] == instance(host)], 60)
    finally:
        removed = int(time.time())
        host.check_output('DEBIAN_FRONTEND=noninteractive apt-get remove -y %s 2>&1' % package)
    (info, changed), _took = wait_for('the re-audit after apt-get remove', lambda: (
        component(host, 'containerd') if component(host, 'containerd')[1] >= removed
        else None), 60, step=0.5)
    assert info['units_sha256'] == before['units_sha256']
    # nothing changed since: the hooks' check says so and starts nothing
    check = host.run('python3 -I -S /usr/local/lib/gpufleet-tuning/gpufleet_limits_components.py '
                     '%s -v' % STATE_DIR)
    assert check.rc == 0 and 'components unchanged' in check.stderr


def timer_runs(host, since):
    return journal_since(host, since).count('audit failed (profile_invalid)')


def test_failing_audits_alert_and_the_timer_keeps_running(host):
    saved = host.file(PROFILE).content_string
    since = time.time()
    host.check_output("printf 'corrupt' > %s" % PROFILE)
    try:
        # the timer starts it again and again although each run fails
        wait_for('two failed audits started by the timer', lambda: timer_runs(host, since) >= 2,
                 3 * PERIOD + 20, step=2)
        assert host.service('%s.timer' % UNIT).is_running
        alerts = wait_for('GpufleetLimitsAuditFailing', lambda: firing(
            host, 'GpufleetLimitsAuditFailing'), 2 * PERIOD + 30)[0]
        assert alerts[0]['reason'] == 'profile_invalid'
        assert alerts[0]['instance'] == instance(host)
    finally:
        host.check_output("printf '%%s' '%s' > %s" % (saved, PROFILE))
    # and recovers by itself: the next timer run succeeds, the alert clears
    wait_for('a successful audit started by the timer', lambda: metrics(host).get(
        key('gpufleet_limits_audit_success')) == '1', 2 * PERIOD + 20, step=2)
    wait_for('GpufleetLimitsAuditFailing clears', lambda: not firing(
        host, 'GpufleetLimitsAuditFailing'), 30)
    assert api(host, 'targets')['activeTargets'][0]['health'] == 'up'


def test_state_absent_removes_the_watch(host):
    rc, out = run_playbook(host, REMOVE)
    assert rc == 0, out
    for path in ('/etc/systemd/system/%s.timer' % UNIT, '/etc/systemd/system/%s.service' % UNIT,
                 '/usr/local/lib/gpufleet-tuning', PROFILE, METRICS, STATE_DIR, APT_HOOK,
                 NPD_CONFIG, NPD_PLUGIN, NFD_FILE):
        assert not host.file(path).exists, path
    assert host.run('systemctl is-active %s.timer' % UNIT).stdout.strip() != 'active'
    rc, out = run_playbook(host, REMOVE)
    assert rc == 0 and 'changed=0' in out, out


def tune_playbook(host, *args):
    """playbooks/tune_gpu_nodes.yml on the node with converge.yml's profile; (rc, output)."""
    extra = {'gpufleet_hosts': host.backend.host,
             'limits_profile': {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'},
             'limits_units': ['gpufleet-sleeper.service'],
             'limits_verify_docker_image': 'tiny:latest'}
    cmd = ansible_command(host, ['ansible-playbook',
                                 os.path.join(ROOT, 'playbooks', 'tune_gpu_nodes.yml'),
                                 '-e', json.dumps(extra)] + list(args))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


def test_the_tuning_playbook_installs_the_watch_only_when_asked(host):
    """tune_gpu_nodes.yml's watch play: -e gpufleet_limits_watch=true installs the watch (tag
    watch); without it the play has no hosts, so a run costs nothing per host for it."""
    rc, out = tune_playbook(host, '--tags', 'watch')
    assert rc == 0, out
    assert 'skipping: no hosts matched' in out, out
    assert not host.file('/etc/systemd/system/%s.timer' % UNIT).exists
    rc, out = tune_playbook(host, '--tags', 'watch', '-e', 'gpufleet_limits_watch=true')
    assert rc == 0, out
    assert host.service('%s.timer' % UNIT).is_enabled
    assert json.loads(host.file(PROFILE).content_string)['profile'] == {
        'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
    rc, out = run_playbook(host, REMOVE)
    assert rc == 0, out
