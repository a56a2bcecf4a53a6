"""make bench: the limits part of tune_gpu_nodes.yml against the ping floor and the usual approach.

For each fleet size N (NODES, default "4 16 32"), on N lab nodes (lab/lab.sh, containers
gpufleet-bench-1..N with systemd, PAM, a user manager and a dockerd each):

  ping      ansible -m ansible.builtin.ping                        (the floor; phase rerun)
  usual     benchmarks/usual.yml: community.general.pam_limits in a loop, ini_file for
            system.conf and user.conf, copy of daemon.json, the same restarts
  gpufleet  playbooks/tune_gpu_nodes.yml --tags limits (the lab's profile)
  audit     playbooks/audit_limits.yml on the tuned fleet

Every approach starts from the same node state (the nodes' files are put back and the managers
and dockerd restarted between approaches). Settings shared by all: forks = N, pipelining on,
the community.docker.docker connection. Each run's wall time is the whole ansible or
ansible-playbook process; module invocations per host are counted by
benchmarks/callback_plugins/invocations.py. A run that fails, or a rerun that changes
anything, stops the benchmark. Results: benchmarks/results.json and benchmarks/results.md.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
PREFIX = 'gpufleet-bench'
LAB_DIR = os.path.join(ROOT, 'build', 'bench')
INVENTORY = os.path.join(LAB_DIR, 'inventory.yml')
OUT_DIR = os.path.join(ROOT, 'benchmarks')
SAVED = '/var/lib/gpufleet-bench'
FILES = ['/etc/security/limits.conf', '/etc/systemd/system.conf', '/etc/systemd/user.conf',
         '/etc/docker/daemon.json']
DROPINS = ['/etc/security/limits.d', '/etc/systemd/system.conf.d', '/etc/systemd/user.conf.d',
           '/etc/systemd/system/containerd.service.d', '/etc/containers/containers.conf.d']

SNAPSHOT = 'set -e; mkdir -p %s; for f in %s; do cp -a "$f" %s/; done' % (
    SAVED, ' '.join(FILES), SAVED)
RESET = ('set -e; for f in %s; do cp -a %s/$(basename "$f") "$f"; done; '
         'rm -rf %s /etc/docker/daemon.json.*~ /etc/security/limits.conf.*~; '
         'systemctl daemon-reexec; systemctl restart docker.service user@1001.service; '
         'docker info >/dev/null') % (
    ' '.join(FILES), SAVED, ' '.join(d + '/90-gpufleet-tuning.conf*' for d in DROPINS))

TARGETS = dict(rerun_vs_ping=2.0, rerun_vs_usual=0.3, audit_s=60.0, at_nodes=32)


def log(message):
    sys.stderr.write('[bench %s] %s\n' % (time.strftime('%H:%M:%S'), message))
    sys.stderr.flush()


def lab(action, nodes):
    env = dict(os.environ, LAB_PREFIX=PREFIX, LAB_NODES=str(nodes), LAB_DIR=LAB_DIR)
    proc = subprocess.run([os.path.join(ROOT, 'lab', 'lab.sh'), action], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise SystemExit('lab.sh %s failed:\n%s' % (action, proc.stdout[-4000:]))


def on_nodes(nodes, script):
    """Run ``script`` in every node at once (untimed set-up work); fail loudly."""
    procs = [(name, subprocess.Popen(['docker', 'exec', name, 'bash', '-c', script],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     universal_newlines=True))
             for name in ['%s-%d' % (PREFIX, i) for i in range(1, nodes + 1)]]
    for name, proc in procs:
        out = proc.communicate()[0]
        if proc.returncode != 0:
            raise SystemExit('%s: set-up script failed (%d): %s' % (name, proc.returncode, out))


def ansible_env(nodes, counts_file):
    env = dict(os.environ)
    env.update(ANSIBLE_FORKS=str(nodes), ANSIBLE_PIPELINING='True',
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(OUT_DIR, 'callback_plugins'),
               ANSIBLE_CALLBACKS_ENABLED='invocations', ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'build', 'collections'),
               BENCH_INVOCATIONS_FILE=counts_file)
    return env


def run(nodes, command):
    """(wall seconds, {host: counts}, output) of one ansible command; exits on failure."""
    with tempfile.NamedTemporaryFile(suffix='.json') as counts:
        start = time.monotonic()
        proc = subprocess.run(command, env=ansible_env(nodes, counts.name), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        wall = time.monotonic() - start
        with open(counts.name) as handle:
            text = handle.read()
    if proc.returncode != 0:
        raise SystemExit('%s failed (%d):\n%s' % (' '.join(command), proc.returncode,
                                                  proc.stdout[-6000:]))
    hosts = json.loads(text) if text else {}
    if len(hosts) != nodes:
        raise SystemExit('%s: counted %d hosts, expected %d' % (' '.join(command), len(hosts),
                                                                nodes))
    return wall, hosts, proc.stdout


def measure(nodes, approach, phase, command, repeat, expect):
    """Run ``command`` ``repeat`` times; one result row (median wall time)."""
    walls, per_host, changed = [], [], []
    for attempt in range(repeat):
        wall, hosts, output = run(nodes, command)
        walls.append(wall)
        per_host = sorted(set(h['invocations'] for h in hosts.values()))
        changed = sorted(set(h['changed'] for h in hosts.values()))
        problem = expect(hosts)
        if problem:
            raise SystemExit('%s %s at N=%d, run %d: %s\n%s' % (
                approach, phase, nodes, attempt + 1, problem, output[-6000:]))
        log('N=%d %s %s: %.2f s, invocations/host %s, changed/host %s' % (
            nodes, approach, phase, wall, per_host, changed))
    wall = statistics.median(walls)
    return dict(nodes=nodes, approach=approach, phase=phase, wall_s=round(wall, 2),
                per_host_s=round(wall / nodes, 3),
                invocations_per_host=per_host[-1] if len(per_host) == 1 else per_host,
                changed_per_host=changed[-1] if len(changed) == 1 else changed,
                runs_s=[round(w, 2) for w in walls])


def all_changed(hosts):
    idle = [h for h, c in hosts.items() if not c['changed']]
    return 'no change on %s (a converge from the reset state must write)' % idle if idle else ''


def none_changed(hosts):
    busy = ['%s (%d)' % (h, c['changed']) for h, c in sorted(hosts.items()) if c['changed']]
    return 'the idempotent rerun changed something on %s' % busy if busy else ''


def no_check(hosts):
    return ''


def audit_clean(report_dir):
    def check(hosts):
        with open(os.path.join(report_dir, 'limits-audit.json')) as handle:
            report = json.load(handle)
        bad = ['%s: %s' % (h, r['gaps'] or r['errors']) for h, r in sorted(report['hosts'].items())
               if r['gaps'] or r['errors']]
        if len(report['hosts']) != len(hosts):
            return 'the audit report has %d hosts, not %d' % (len(report['hosts']), len(hosts))
        return 'gaps after tuning: %s' % bad if bad else ''
    return check


def bench(nodes, repeat):
    log('N=%d: starting the lab' % nodes)
    lab('down', nodes)
    lab('up', nodes)
    on_nodes(nodes, SNAPSHOT)
    inventory = ['-i', INVENTORY]
    rows = [measure(nodes, 'ping', 'rerun', ['ansible'] + inventory
                    + ['gpu_nodes', '-m', 'ansible.builtin.ping'], repeat, no_check)]
    usual = ['ansible-playbook'] + inventory + [os.path.join(OUT_DIR, 'usual.yml')]
    rows.append(measure(nodes, 'usual', 'converge', usual, 1, all_changed))
    rows.append(measure(nodes, 'usual', 'rerun', usual, repeat, none_changed))
    on_nodes(nodes, RESET)
    ours = ['ansible-playbook'] + inventory + [
        os.path.join(ROOT, 'playbooks', 'tune_gpu_nodes.yml'), '--tags', 'limits']
    rows.append(measure(nodes, 'gpufleet', 'converge', ours, 1, all_changed))
    rows.append(measure(nodes, 'gpufleet', 'rerun', ours, repeat, none_changed))
    report_dir = os.path.join(LAB_DIR, 'audit')
    audit = ['ansible-playbook'] + inventory + [
        os.path.join(ROOT, 'playbooks', 'audit_limits.yml'), '-e',
        'audit_reports_dir=%s' % report_dir]
    rows.append(measure(nodes, 'gpufleet', 'audit', audit, max(1, repeat - 1),
                        audit_clean(report_dir)))
    lab('down', nodes)
    return rows


def ratios(rows):
    floor = dict((r['nodes'], r['wall_s']) for r in rows if r['approach'] == 'ping')
    usual = dict(((r['nodes'], r['phase']), r['wall_s']) for r in rows if r['approach'] == 'usual')
    for row in rows:
        row['vs_ping'] = round(row['wall_s'] / floor[row['nodes']], 2)
        base = usual.get((row['nodes'], row['phase']))
        row['vs_usual'] = round(row['wall_s'] / base, 2) if base else None


def verdicts(rows):
    at = TARGETS['at_nodes']
    pick = dict(((r['nodes'], r['approach'], r['phase']), r) for r in rows)
    found = []
    rerun = pick.get((at, 'gpufleet', 'rerun'))
    audit = pick.get((at, 'gpufleet', 'audit'))
    if rerun:
        found.append(('idempotent rerun within %.1fx the ping floor at N=%d' % (
            TARGETS['rerun_vs_ping'], at), '%.2fx' % rerun['vs_ping'],
            rerun['vs_ping'] <= TARGETS['rerun_vs_ping']))
        found.append(('idempotent rerun within %.1fx the usual approach at N=%d' % (
            TARGETS['rerun_vs_usual'], at), '%.2fx' % rerun['vs_usual'],
            rerun['vs_usual'] <= TARGETS['rerun_vs_usual']))
    if audit:
        found.append(('audit of %d nodes under %d s' % (at, TARGETS['audit_s']),
                      '%.1f s' % audit['wall_s'], audit['wall_s'] < TARGETS['audit_s']))
    return found


def versions():
    def out(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  universal_newlines=True, check=False).stdout.strip()
        except OSError:
            return '?'
    core = out(['ansible', '--version']).splitlines()
    return dict(cpus=os.cpu_count(), machine=platform.machine(),
                ansible_core=core[0] if core else '?',
                docker=out(['docker', 'version', '--format', '{{.Server.Version}}']))


def markdown(rows, meta):
    lines = ['# Benchmark: the limits part of tune_gpu_nodes.yml at fleet scale', '',
             'Written by `make bench` (scripts/bench.py) on %s; %s CPUs, %s, Docker %s. '
             'Lab nodes are containers on this one machine (systemd, PAM, a user manager and a '
             'dockerd each); connection community.docker.docker, forks = N, pipelining on, no '
             'fact gathering in any approach. Wall time is the whole `ansible`/'
             '`ansible-playbook` process, the median of %d runs for ping and reruns, one run '
             'for converges. Invocations are module runs per host (controller-only tasks such '
             'as debug and set_fact are not counted).' % (
                 meta['date'], meta['cpus'], meta['ansible_core'], meta['docker'],
                 meta['repeat']), '',
             '- **ping**: `ansible -m ansible.builtin.ping`, the floor.',
             '- **usual**: `benchmarks/usual.yml`: community.general.pam_limits in a loop over '
             'the entries, community.general.ini_file for system.conf and user.conf, '
             'ansible.builtin.copy of daemon.json, the same restarts as the role.',
             '- **gpufleet**: `playbooks/tune_gpu_nodes.yml --tags limits` (one '
             'gpufleet.tuning.limits_profile call, handlers, verification after a change); '
             '**audit**: `playbooks/audit_limits.yml` on the tuned fleet.', '',
             '| nodes | approach | phase | wall_s | per_host_s | invocations/host | x ping '
             '| x usual |', '| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |']
    for r in rows:
        lines.append('| %d | %s | %s | %.2f | %.3f | %s | %.2f | %s |' % (
            r['nodes'], r['approach'], r['phase'], r['wall_s'], r['per_host_s'],
            r['invocations_per_host'], r['vs_ping'],
            '%.2f' % r['vs_usual'] if r['vs_usual'] is not None else ''))
    lines += ['', '## Targets', '', '| target | measured | met |', '| --- | ---: | --- |']
    for name, value, met in verdicts(rows):
        lines.append('| %s | %s | %s |' % (name, value, 'yes' if met else '**no**'))
    lines += ['', 'Every run of every row is in results.json (`runs_s`). A rerun that changed '
              'anything, a failed run or an audit with gaps would have stopped the benchmark.',
              '']
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--nodes', default=os.environ.get('NODES', '4 16 32'))
    parser.add_argument('--repeat', type=int, default=int(os.environ.get('REPEAT', '3')))
    parser.add_argument('--out', default=OUT_DIR)
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.replace(',', ' ').split()]
    rows = []
    try:
        for nodes in sizes:
            rows.extend(bench(nodes, args.repeat))
    finally:
        lab('down', max(sizes))
    ratios(rows)
    meta = versions()
    meta.update(date=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
                repeat=args.repeat)
    with open(os.path.join(args.out, 'results.json'), 'w') as handle:
        json.dump(rows, handle, indent=1)
        handle.write('\n')
    text = markdown(rows, meta)
    with open(os.path.join(args.out, 'results.md'), 'w') as handle:
        handle.write(text)
    print(text)


if __name__ == '__main__':
    main()
