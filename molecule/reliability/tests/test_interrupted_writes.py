"""Interrupted writes: gpufleet.tuning.pam_limits, killed with SIGKILL at seeded random points
while it rewrites a large limits.d file, leaves the old file or the new one, never a partial one;
the temporary files a kill leaves behind are named so that PAM, systemd and dockerd never read
them, and logins still get their limits with them lying there.

The module runs as Ansible runs it on a node: the AnsiballZ payload of a real call, kept with
ANSIBLE_KEEP_REMOTE_FILES=1, executed again inside the node by files/kill_writes.py, which does
the killing and the classification (its docstring explains both)."""
import json
import os
import subprocess

import pytest

from conftest import (ROOT, SCENARIO, USER, login_limits, node, node_name, output, run_module,
                      support)

TARGET = '/etc/security/limits.d/80-reliability-bulk.conf'
WORK = '/root/reliability-kill'
FOREIGN_LINES = 60000
SEED = 20260207
SPREAD = 30     # kills spread over the whole run time
WINDOW = 15     # kills aimed at the write window
WINDOW_MIN = 10  # kills that must land inside the write (topped up, see kill_writes.py)


def entries(value):
    return {'path': TARGET, 'limits': [{'domain': 'relbulk', 'item': 'nofile', 'value': value}]}


def keep_payload(host, args):
    """Run pam_limits once with its AnsiballZ payload kept in WORK/tmp; returns the payload's
    path in the node."""
    env = dict(os.environ, ANSIBLE_KEEP_REMOTE_FILES='1', ANSIBLE_PIPELINING='False',
               ANSIBLE_REMOTE_TMP=WORK + '/tmp')
    command = support.ansible_command(host, ['ansible', '-m', 'gpufleet.tuning.pam_limits',
                                             '-a', json.dumps(args), host.backend.host])
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    found = output(host, 'ls %s/tmp/*/AnsiballZ_pam_limits.py' % WORK)
    payloads = found.split()
    assert len(payloads) == 1, payloads
    return payloads[0]


@pytest.fixture(scope='module')
def report(host):
    """Set up old and new content and the payload, run the kills, yield the report; remove
    everything afterwards (the bulk file and every temporary file the kills left)."""
    node(host, 'rm -rf %s && mkdir -p %s' % (WORK, WORK))
    node(host, "seq -f '#%%06g a foreign line pam_limits keeps byte for byte' 1 %d > %s"
         % (FOREIGN_LINES, TARGET))
    try:
        ok, result, printed = run_module(host, 'gpufleet.tuning.pam_limits', entries(4096))
        assert ok and result['changed'], printed
        node(host, 'cp %s %s/old.bin' % (TARGET, WORK))
        payload = keep_payload(host, entries(8192))
        node(host, 'cp %s %s/new.bin' % (TARGET, WORK))
        subprocess.run(['docker', 'cp', os.path.join(SCENARIO, 'files', 'kill_writes.py'),
                        '%s:%s/kill_writes.py' % (node_name(host), WORK)], check=True)
        spec = {'payload': payload, 'target': TARGET, 'old': WORK + '/old.bin',
                'new': WORK + '/new.bin', 'seed': SEED, 'spread': SPREAD, 'window': WINDOW,
                'window_min': WINDOW_MIN, 'calibrations': 3}
        node(host, "echo '%s' > %s/spec.json" % (json.dumps(spec), WORK))
        out = output(host, 'python3 %s/kill_writes.py %s/spec.json' % (WORK, WORK))
        data = json.loads(out.strip().splitlines()[-1])
        os.makedirs(os.path.join(ROOT, 'build', 'reliability'), exist_ok=True)
        with open(os.path.join(ROOT, 'build', 'reliability', 'interrupted-writes.json'),
                  'w') as handle:
            json.dump(data, handle, indent=1)
        print('\ninterrupted writes (build/reliability/interrupted-writes.json): %s' % json.dumps(
            dict((k, v) for k, v in data.items() if k not in ('kills', 'leftovers'))))
        yield data
    finally:
        node(host, "rm -rf %s %s /etc/security/limits.d/.80-reliability-bulk.conf.*.tmp"
             % (WORK, TARGET), check=False)


def test_enough_kills_across_the_run_and_in_the_write(report):
    assert report['count'] >= SPREAD + WINDOW >= 30
    assert report['by_kind']['spread']['kills'] == SPREAD
    assert report['by_kind']['window']['kills'] == WINDOW
    assert report['runtime'] > 0.2, report['runtime']
    # The spread kills land all over the run; most while the module reads and plans (old).
    spread = [k for k in report['kills'] if k['kind'] == 'spread']
    assert any(k['outcome'] == 'old' for k in spread)
    # A kill counts as inside the write when it left the module's temporary file behind.
    assert report['in_window'] >= WINDOW_MIN, report


def test_every_kill_left_the_old_or_the_new_file(report):
    outcomes = [(k['delay'], k['outcome'], k['size']) for k in report['kills']]
    assert report['partial'] == 0, outcomes
    assert all(k['outcome'] in ('old', 'new') for k in report['kills'])
    assert report['old'] + report['new'] == report['count']
    # A kill that left a temporary file came before the rename: the target is still the old one.
    assert all(k['outcome'] == 'old' for k in report['kills'] if k['temp'])


def test_leftover_temporary_files_are_never_read(host, report):
    leftovers = report['leftovers']
    assert len(leftovers) == report['in_window']
    for name in leftovers:
        # pam_limits reads limits.d/*.conf, systemd *.conf drop-ins, dockerd daemon.json only.
        assert name.startswith('.80-reliability-bulk.conf.') and name.endswith('.tmp'), name
        assert not name.endswith('.conf') and not name.endswith('.json'), name
    listing = output(host, 'ls -a /etc/security/limits.d')
    assert set(leftovers) <= set(listing.split())
    # With them lying there, a login still gets the profile and pam_limits_info sees no
    # temporary file among the files PAM reads.
    assert login_limits(host, USER)['nofile'].hard == 16384
    ok, info, printed = run_module(host, 'gpufleet.tuning.pam_limits_info', {'user': USER})
    assert ok, printed
    paths = [f['path'] for f in info['files']]
    assert TARGET in paths, paths
    assert not [p for p in paths if p.endswith('.tmp')], paths
