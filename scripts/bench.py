"""make bench: the limits part of tune_gpu_nodes.yml against the ping floor and the usual approach.

For each fleet size N (NODES, default "4 16 32"), on N lab nodes (lab/lab.sh with LAB_SSH=1,
containers BENCH_PREFIX-1..N, default gpufleet-bench, with systemd, PAM, a user manager, a
dockerd and sshd each), and for each transport (TRANSPORTS, default "ssh docker mitogen"):

  ping      ansible -m ansible.builtin.ping                        (the floor; phase rerun)
  usual     benchmarks/usual.yml: community.general.pam_limits in a loop, ini_file for
            system.conf and user.conf, copy of daemon.json, the same restarts
  gpufleet  playbooks/tune_gpu_nodes.yml --tags limits (the lab's profile)
  audit     playbooks/audit_limits.yml on the tuned fleet: phase audit-fresh with
            audit_probe_max_age=0 (a new container on every node every run), phase audit
            with the playbook's default (after one untimed run that records each node's
            Docker proof, the runs reuse it: nothing that decides it changes in between)

Every approach starts from the same node state (the nodes' files are put back and the managers
and dockerd restarted between approaches). Settings shared by all: forks = N, pipelining on.
Transports: ssh (ansible.builtin.ssh, ControlPersist, the main series), docker
(community.docker.docker, the earlier figures) and mitogen (SSH through mitogen's
mitogen_linear strategy, from MITOGEN_VENV: a venv with mitogen and ansible-core that
`make bench` creates). Each run's wall time is the whole ansible or
ansible-playbook process; module invocations per host are counted by
benchmarks/callback_plugins/invocations.py. A run that fails, or a rerun that changes
anything, stops the benchmark.

Results: each run is a dated series, benchmarks/results-DATE-nSIZES-TRANSPORTS-HHMM.json and
.md (``--label`` adds a word); benchmarks/results.json and results.md, the headline the README
and docs/fleet-scale.md quote, are a copy of the newest series (newest_series: the one rule,
checked by tests/unit/scripts/test_bench.py), and benchmarks/fleet-history.md lists every
series (its index between HISTORY_BEGIN and HISTORY_END, rewritten here).
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
PREFIX = os.environ.get('BENCH_PREFIX', 'gpufleet-bench')
LAB_DIR = os.path.join(ROOT, 'build', PREFIX)
INVENTORIES = dict(docker=os.path.join(LAB_DIR, 'inventory.yml'),
                   ssh=os.path.join(LAB_DIR, 'inventory-ssh.yml'),
                   mitogen=os.path.join(LAB_DIR, 'inventory-ssh.yml'))
MITOGEN_VENV = os.environ.get('MITOGEN_VENV', os.path.join(ROOT, 'build', 'mitogen-venv'))
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

# Issue 42's targets, at N=32 over SSH in the same run as the ping floor: wall time and the
# controller's CPU per host (the figure that extrapolates to a fleet), each against ping's.
TARGETS = dict(rerun_vs_ping=1.5, rerun_cpu_vs_ping=1.3, audit_vs_ping=2.0,
               audit_cpu_vs_ping=1.5, fresh_vs_ping=3.0, converge_invocations=2,
               converge_vs_usual=0.4, at_nodes=32, transport='ssh')


def log(message):
    sys.stderr.write('[bench %s] %s\n' % (time.strftime('%H:%M:%S'), message))
    sys.stderr.flush()


#: container name -> its cgroup's CPU files (node_cpu_s), for the lab now up
NODE_CGROUPS = {}


def lab(action, nodes):
    # a new lab's containers have new ids: forget the cgroups of the last one (a run of
    # several sizes read none at the second size: the N=4 nodes' paths were cached by name)
    NODE_CGROUPS.clear()
    env = dict(os.environ, LAB_PREFIX=PREFIX, LAB_NODES=str(nodes), LAB_DIR=LAB_DIR, LAB_SSH='1')
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


def mitogen_strategy_dir():
    lib = os.path.join(MITOGEN_VENV, 'lib')
    for version in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
        path = os.path.join(lib, version, 'site-packages', 'ansible_mitogen', 'plugins', 'strategy')
        if os.path.isdir(path):
            return path
    raise SystemExit('no mitogen in %s (make bench creates it; MITOGEN_VENV names another)'
                     % MITOGEN_VENV)


def ansible_env(nodes, counts_file, transport):
    env = dict(os.environ)
    if transport == 'mitogen':
        # The controller's collections (community.general for the usual approach) come from
        # the main venv's ansible package; mitogen's venv holds ansible-core only.
        import ansible  # noqa: F401 pylint: disable=import-outside-toplevel
        site = os.path.dirname(os.path.dirname(ansible.__file__))
        env.update(ANSIBLE_STRATEGY_PLUGINS=mitogen_strategy_dir(),
                   ANSIBLE_STRATEGY='mitogen_linear',
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'build', 'collections') + ':' + site)
    env.update(ANSIBLE_FORKS=str(nodes), ANSIBLE_PIPELINING='True',
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(OUT_DIR, 'callback_plugins'),
               ANSIBLE_CALLBACKS_ENABLED='invocations', ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1',
               BENCH_INVOCATIONS_FILE=counts_file)
    env.setdefault('ANSIBLE_COLLECTIONS_PATH', os.path.join(ROOT, 'build', 'collections'))
    if transport != 'mitogen':
        env['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(ROOT, 'build', 'collections')
    return env


def node_cpu_s(nodes):
    """CPU seconds used so far by the lab's node containers together (their cgroups: v1
    cpuacct or v2 cpu.stat), or None where neither is readable. The nodes share this machine's
    CPUs, so at large N a run can be bound by their CPU, not by latency (docs/fleet-scale.md)."""
    total = 0.0
    for name in ['%s-%d' % (PREFIX, i) for i in range(1, nodes + 1)]:
        if name not in NODE_CGROUPS:
            cid = subprocess.run(['docker', 'inspect', '-f', '{{.Id}}', name],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 universal_newlines=True, check=False).stdout.strip()
            NODE_CGROUPS[name] = [
                ('v1', '/sys/fs/cgroup/cpuacct/docker/%s/cpuacct.usage' % cid),
                ('v2', '/sys/fs/cgroup/system.slice/docker-%s.scope/cpu.stat' % cid)]
        for kind, path in NODE_CGROUPS[name]:
            try:
                with open(path) as handle:
                    text = handle.read()
            except OSError:
                continue
            if kind == 'v1':
                total += int(text.strip()) / 1e9
            else:
                total += int(text.split('usage_usec', 1)[1].split()[0]) / 1e6
            break
        else:
            return None
    return total


def cpu_ticks():
    """(steal, total) jiffies of this machine's CPUs (/proc/stat), or None."""
    try:
        with open('/proc/stat') as handle:
            fields = [int(f) for f in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_pct(before, after):
    """The share of CPU time the hypervisor gave to others between two cpu_ticks()."""
    if None in (before, after) or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def controller_cpu_s():
    """CPU seconds of the ansible processes this script waited for (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(nodes, command, transport):
    """(wall seconds, {host: counts}, output, node CPU s, controller CPU s, steal %) of one
    ansible command; exits on failure."""
    command = list(command)
    if transport == 'mitogen':
        command[0] = os.path.join(MITOGEN_VENV, 'bin', command[0])
    command[1:1] = ['-i', INVENTORIES[transport]]
    with tempfile.NamedTemporaryFile(suffix='.json') as counts:
        cpu_before, own_before = node_cpu_s(nodes), controller_cpu_s()
        ticks_before = cpu_ticks()
        start = time.monotonic()
        proc = subprocess.run(command, env=ansible_env(nodes, counts.name, transport), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        wall = time.monotonic() - start
        steal = steal_pct(ticks_before, cpu_ticks())
        cpu_after, own_after = node_cpu_s(nodes), controller_cpu_s()
        with open(counts.name) as handle:
            text = handle.read()
    if proc.returncode != 0:
        raise SystemExit('%s failed (%d):\n%s' % (' '.join(command), proc.returncode,
                                                  proc.stdout[-6000:]))
    hosts = json.loads(text) if text else {}
    if len(hosts) != nodes:
        raise SystemExit('%s: counted %d hosts, expected %d' % (' '.join(command), len(hosts),
                                                                nodes))
    node_cpu = (cpu_after - cpu_before) if None not in (cpu_before, cpu_after) else None
    return wall, hosts, proc.stdout, node_cpu, own_after - own_before, steal


def measure(nodes, transport, approach, phase, command, repeat, expect):
    """Run ``command`` ``repeat`` times; one result row (median wall time)."""
    walls, per_host, changed, node_cpu, own_cpu, steals = [], [], [], [], [], []
    for attempt in range(repeat):
        wall, hosts, output, node, own, steal = run(nodes, command, transport)
        walls.append(wall)
        own_cpu.append(own)
        if steal is not None:
            steals.append(steal)
        if node is not None:
            node_cpu.append(node)
        per_host = sorted(set(h['invocations'] for h in hosts.values()))
        changed = sorted(set(h['changed'] for h in hosts.values()))
        problem = expect(hosts)
        if problem:
            raise SystemExit('%s %s at N=%d over %s, run %d: %s\n%s' % (
                approach, phase, nodes, transport, attempt + 1, problem, output[-6000:]))
        log('N=%d %s %s %s: %.2f s, invocations/host %s, changed/host %s, load %.2f, '
            'CPU s: nodes %s, controller %.2f, steal %s%%' % (
                nodes, transport, approach, phase, wall, per_host, changed, os.getloadavg()[0],
                '%.2f' % node if node is not None else '?', own,
                '%.1f' % steal if steal is not None else '?'))
    wall = statistics.median(walls)
    cpu = dict(controller_cpu_s_per_host=round(statistics.median(own_cpu) / nodes, 3),
               node_cpu_s_per_host=(round(statistics.median(node_cpu) / nodes, 3)
                                    if node_cpu else None),
               steal_pct=round(statistics.median(steals), 1) if steals else None)
    return dict(nodes=nodes, transport=transport, approach=approach, load_1m=round(os.getloadavg()[0], 2), phase=phase, wall_s=round(wall, 2),
                per_host_s=round(wall / nodes, 3),
                invocations_per_host=per_host[-1] if len(per_host) == 1 else per_host,
                changed_per_host=changed[-1] if len(changed) == 1 else changed,
                runs_s=[round(w, 2) for w in walls], **cpu)


def all_changed(hosts):
    idle = [h for h, c in hosts.items() if not c['changed']]
    return 'no change on %s (a converge from the reset state must write)' % idle if idle else ''


def none_changed(hosts):
    busy = ['%s (%d)' % (h, c['changed']) for h, c in sorted(hosts.items()) if c['changed']]
    return 'the idempotent rerun changed something on %s' % busy if busy else ''


def no_check(hosts):
    return ''


def audit_clean(report_dir, reused=False):
    """No gaps, no errors, every host in the report; ``reused``: every host's Docker rows
    reused its proof (else none did)."""
    def check(hosts):
        with open(os.path.join(report_dir, 'limits-audit.json')) as handle:
            report = json.load(handle)
        hows = set(r.get('how') for h in report['hosts'].values() for r in h['rows']
                   if r['context'] == 'docker')
        if hows != {'reused' if reused else 'probed'}:
            return 'the Docker rows say %s, not %s' % (sorted(hows),
                                                       'reused' if reused else 'probed')
        bad = ['%s: %s' % (h, r['gaps'] or r['errors']) for h, r in sorted(report['hosts'].items())
               if r['gaps'] or r['errors']]
        if len(report['hosts']) != len(hosts):
            return 'the audit report has %d hosts, not %d' % (len(report['hosts']), len(hosts))
        summary = report.get('summary') or {}
        if summary.get('hosts') != len(hosts) or summary.get('short_hosts') or summary.get('items'):
            return 'the fleet summary does not say %d hosts, none short: %s' % (len(hosts), summary)
        return 'gaps after tuning: %s' % bad if bad else ''
    return check


def bench(nodes, repeat, transports):
    log('N=%d: starting the lab' % nodes)
    lab('down', nodes)
    lab('up', nodes)
    on_nodes(nodes, SNAPSHOT)
    rows = []
    for number, transport in enumerate(transports):
        if number:
            on_nodes(nodes, RESET)
        rows.extend(series(nodes, repeat, transport))
        save_partial(rows)
    lab('down', nodes)
    return rows


PARTIAL = os.path.join(ROOT, 'build', PREFIX + '-rows.json')


def save_partial(rows):
    """Every finished series so far, in build/ (PARTIAL): a run stopped later keeps them
    (``--render`` turns them into the results)."""
    done = []
    if os.path.exists(PARTIAL):
        with open(PARTIAL) as handle:
            done = [r for r in json.load(handle)
                    if (r['nodes'], r['transport']) not in set((x['nodes'], x['transport'])
                                                               for x in rows)]
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    with open(PARTIAL, 'w') as handle:
        json.dump(done + [dict(r, date=r.get('date', now)) for r in rows], handle, indent=1)


def series(nodes, repeat, transport):
    """Every approach over one transport, from the reset state. The ping floor is measured
    right before our rerun and audit, which are compared with it: this machine's speed drifts
    over minutes (other tenants' CPU steal), and a floor measured before the usual approach's
    runs was minutes older than the rows it divided."""
    ping = ['ansible', 'gpu_nodes', '-m', 'ansible.builtin.ping']
    # An untimed ping first: the first command over SSH opens every host's ControlPersist
    # connection, which the later runs reuse; the floor must not carry that cost alone.
    run(nodes, ping, transport)
    usual = ['ansible-playbook', os.path.join(OUT_DIR, 'usual.yml')]
    rows = [measure(nodes, transport, 'usual', 'converge', usual, 1, all_changed)]
    rows.append(measure(nodes, transport, 'usual', 'rerun', usual, repeat, none_changed))
    on_nodes(nodes, RESET)
    ours = ['ansible-playbook', os.path.join(ROOT, 'playbooks', 'tune_gpu_nodes.yml'),
            '--tags', 'limits']
    rows.append(measure(nodes, transport, 'gpufleet', 'converge', ours, 1, all_changed))
    run(nodes, ping, transport)
    rows.insert(0, measure(nodes, transport, 'ping', 'rerun', ping, repeat, no_check))
    rows.append(measure(nodes, transport, 'gpufleet', 'rerun', ours, repeat, none_changed))
    report_dir = os.path.join(LAB_DIR, 'audit')
    audit = ['ansible-playbook', os.path.join(ROOT, 'playbooks', 'audit_limits.yml'), '-e',
             'audit_reports_dir=%s' % report_dir]
    rows.append(measure(nodes, transport, 'gpufleet', 'audit-fresh',
                        audit + ['-e', 'audit_probe_max_age=0'], max(1, repeat - 1),
                        audit_clean(report_dir)))
    # The first audit with the default records each node's Docker proof; the timed ones
    # reuse it (audit_clean checks that they did, on every host).
    run(nodes, audit, transport)
    rows.append(measure(nodes, transport, 'gpufleet', 'audit', audit, max(1, repeat - 1),
                        audit_clean(report_dir, reused=True)))
    return rows


def ratios(rows):
    floor = dict(((r['nodes'], r['transport']), r['wall_s']) for r in rows
                 if r['approach'] == 'ping')
    usual = dict(((r['nodes'], r['transport'], r['phase']), r['wall_s']) for r in rows
                 if r['approach'] == 'usual')
    cpu_floor = dict(((r['nodes'], r['transport']), r.get('controller_cpu_s_per_host'))
                     for r in rows if r['approach'] == 'ping')
    for row in rows:
        row['vs_ping'] = round(row['wall_s'] / floor[row['nodes'], row['transport']], 2)
        base = usual.get((row['nodes'], row['transport'], row['phase']))
        row['vs_usual'] = round(row['wall_s'] / base, 2) if base else None
        ctl, ping = row.get('controller_cpu_s_per_host'), cpu_floor.get(
            (row['nodes'], row['transport']))
        row['cpu_vs_ping'] = round(ctl / ping, 2) if ctl and ping else None


def target_rows(rows):
    """(N, transport, {(approach, phase): row}): the rows the targets are judged on, at
    TARGETS' fleet size over its transport, else the largest N measured over it."""
    at, over = TARGETS['at_nodes'], TARGETS['transport']
    if not any(r['nodes'] == at and r['transport'] == over for r in rows):
        at = max([r['nodes'] for r in rows if r['transport'] == over] or [at])
    return at, over, dict(((r['approach'], r['phase']), r) for r in rows
                          if r['nodes'] == at and r['transport'] == over)


def scaling(rows):
    """Lines of the table of the controller's CPU per host by fleet size (each phase, each
    transport measured at more than one N), which should stay flat as N grows; none for one N."""
    sizes = sorted(set(r['nodes'] for r in rows))
    if len(sizes) < 2:
        return []
    lines = ['', '## Controller CPU per host by fleet size', '',
             'CPU seconds of the ansible processes per host (`ctl cpu/host` above), by N: what a '
             'larger fleet costs the controller per node.', '',
             '| transport | approach | phase | %s |' % ' | '.join('N=%d' % n for n in sizes),
             '| --- | --- | --- | %s |' % ' | '.join('---:' for _n in sizes)]
    keys = []
    for r in rows:
        if (r['transport'], r['approach'], r['phase']) not in keys:
            keys.append((r['transport'], r['approach'], r['phase']))
    for key in keys:
        cells = dict((r['nodes'], r.get('controller_cpu_s_per_host')) for r in rows
                     if (r['transport'], r['approach'], r['phase']) == key)
        lines.append('| %s | %s | %s | %s |' % (key + (' | '.join(
            '%.3f' % cells[n] if cells.get(n) is not None else '' for n in sizes),)))
    return lines


def verdicts(rows):
    at, over, pick = target_rows(rows)
    found = []
    rerun = pick.get(('gpufleet', 'rerun'))
    audit = pick.get(('gpufleet', 'audit'))
    fresh = pick.get(('gpufleet', 'audit-fresh'))
    converge = pick.get(('gpufleet', 'converge'))

    def within(what, row, key, limit):
        value = row.get(key)
        found.append(('%s within %.1fx the ping floor%s at N=%d over %s' % (
            what, limit, "'s controller CPU per host" if key == 'cpu_vs_ping' else '', at, over),
            '%.2fx' % value if value is not None else 'not measured',
            value is not None and value <= limit))
    if rerun:
        within('idempotent rerun', rerun, 'vs_ping', TARGETS['rerun_vs_ping'])
        within('idempotent rerun', rerun, 'cpu_vs_ping', TARGETS['rerun_cpu_vs_ping'])
    if audit:
        within('audit (probe proofs reused)', audit, 'vs_ping', TARGETS['audit_vs_ping'])
        within('audit (probe proofs reused)', audit, 'cpu_vs_ping', TARGETS['audit_cpu_vs_ping'])
    if fresh:
        within('audit with a new container on every node (audit_probe_max_age=0)', fresh,
               'vs_ping', TARGETS['fresh_vs_ping'])
    if converge:
        most = converge['invocations_per_host']
        most = max(most) if isinstance(most, list) else most
        found.append(('first converge, verification included, within %d module invocations '
                      'per host at N=%d over %s' % (TARGETS['converge_invocations'], at, over),
                      str(most), most <= TARGETS['converge_invocations']))
        found.append(('first converge within %.1fx the usual converge at N=%d over %s' % (
            TARGETS['converge_vs_usual'], at, over), '%.2fx' % converge['vs_usual'],
            converge['vs_usual'] <= TARGETS['converge_vs_usual']))
    return found


def versions():
    def out(cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  universal_newlines=True, check=False).stdout.strip()
        except OSError:
            return '?'
    core = out(['ansible', '--version']).splitlines()
    mitogen = out([os.path.join(MITOGEN_VENV, 'bin', 'python'), '-c',
                   'import mitogen, ansible.release as r; '
                   'print("mitogen %s, ansible-core %s" % (".".join(map(str, mitogen.__version__)), '
                   'r.__version__))']) if os.path.isdir(MITOGEN_VENV) else 'mitogen not installed'
    commit = out(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD']) or '?'
    if out(['git', '-C', ROOT, 'status', '--porcelain', '--untracked-files=no']):
        commit += ' with uncommitted changes'
    return dict(cpus=os.cpu_count(), machine=platform.machine(), mitogen=mitogen,
                ansible_core=core[0] if core else '?', commit=commit,
                docker=out(['docker', 'version', '--format', '{{.Server.Version}}']))


def markdown(rows, meta):
    lines = ['# Benchmark: the limits part of tune_gpu_nodes.yml at fleet scale', '',
             'Written by `make bench` (scripts/bench.py), runs of %s at commit %s; %s CPUs, %s, '
             'Docker %s, %s. '
             'Lab nodes are containers on this one machine (systemd, PAM, a user manager, a '
             'dockerd and sshd each); forks = N, pipelining on, no fact gathering in any '
             'approach. Transports: **ssh** (ansible.builtin.ssh, ControlPersist; the main '
             'series), **docker** (community.docker.docker, as in the earlier figures), '
             '**mitogen** (SSH through the mitogen_linear strategy). `load` is the 1-minute '
             'load average when the row finished: the machine is shared, so compare rows of '
             'the same N and transport (one run) rather than across runs. Wall time is the whole `ansible`/'
             '`ansible-playbook` process, the median of the runs in `runs_s` for ping and '
             'reruns (%d asked), one run for converges. Invocations are module runs per host (controller-only tasks such '
             'as debug and set_fact are not counted).' % (
                 meta['date'], meta.get('commit', '?'), meta['cpus'], meta['ansible_core'],
                 meta['docker'], meta['mitogen'],
                 meta['repeat']), '',
             '- **ping**: `ansible -m ansible.builtin.ping`, the floor.',
             '- **usual**: `benchmarks/usual.yml`: community.general.pam_limits in a loop over '
             'the entries, community.general.ini_file for system.conf and user.conf, '
             'ansible.builtin.copy of daemon.json, the same restarts as the role.',
             '- **gpufleet**: `playbooks/tune_gpu_nodes.yml --tags limits` (one '
             'gpufleet.tuning.limits_profile call, which after a change also restarts what the '
             'change owes and verifies every context, then the report); '
             '**audit**: `playbooks/audit_limits.yml` on the tuned fleet, as users run it '
             '(after one untimed audit, each node\'s Docker probe is reused: nothing that '
             'decides a new container\'s limits changed); **audit-fresh**: the same with '
             '`audit_probe_max_age=0`, a new container on every node every run (rows before '
             'this phase existed started one every run too).', '',
             'CPU columns (runs from this version of the script on): `ctl cpu/host` is the CPU '
             'time of the ansible processes per host (the ssh ControlPersist masters, which '
             'outlive a run, are not in it), `node cpu/host` the CPU time the node containers '
             'used during the run per host (their cgroups: modules, sshd, probes, restarts), '
             'and `cpu floor` their sum times N over the %s CPUs: the shortest wall time this '
             'machine allows for that work, since the nodes share its CPUs. On a real fleet each '
             'node has its own CPUs, and only the controller part adds up. `steal %%` (runs from '
             'this version of the script on) is the share of this virtual machine\'s CPU time '
             'that its hypervisor gave to other guests during the runs (/proc/stat): the same '
             'work takes longer, and its CPU seconds read higher, when it is high. The ping floor '
             'runs right before our rerun and audit, which are divided by it (from this '
             'version of the script on; before, it ran first).' % meta['cpus'], '',
             '| nodes | transport | approach | phase | wall_s | per_host_s | invocations/host '
             '| x ping | x usual | ctl cpu/host | ctl cpu x ping | node cpu/host | cpu floor s '
             '| load | steal % |',
             '| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: '
             '| ---: | ---: | ---: |']
    for r in rows:
        ctl, node = r.get('controller_cpu_s_per_host'), r.get('node_cpu_s_per_host')
        floor = ((ctl + node) * r['nodes'] / meta['cpus']
                 if None not in (ctl, node) and meta['cpus'] else None)
        steal = r.get('steal_pct')
        row_format = ('| %d | %s | %s | %s | %.2f | %.3f | %s | %.2f | %s | %s | %s | %s | %s '
                      '| %.2f | %s |')
        lines.append(row_format % (
            r['nodes'], r['transport'], r['approach'], r['phase'], r['wall_s'], r['per_host_s'],
            r['invocations_per_host'], r['vs_ping'],
            '%.2f' % r['vs_usual'] if r['vs_usual'] is not None else '',
            '%.3f' % ctl if ctl is not None else '',
            '%.2f' % r['cpu_vs_ping'] if r.get('cpu_vs_ping') is not None else '',
            '%.3f' % node if node is not None else '',
            '%.1f' % floor if floor is not None else '', r['load_1m'],
            '%.1f' % steal if steal is not None else ''))
    lines += scaling(rows)
    lines += ['', '## Targets', '', '| target | measured | met |', '| --- | ---: | --- |']
    for name, value, met in verdicts(rows):
        lines.append('| %s | %s | %s |' % (name, value, 'yes' if met else '**no**'))
    lines += ['', 'Every run of every row is in the JSON file of the same name (`runs_s`). A rerun that changed '
              'anything, a failed run or an audit with gaps would have stopped the benchmark.',
              '']
    return '\n'.join(lines)


# --- the headline and the history (issue 42) ---------------------------------------------------

SERIES = re.compile(r'^results-([0-9]{4}-[0-9]{2}-[0-9]{2})-.+\.json$')
ROW_DATE = re.compile(r'([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2})(?:-([0-9]{2}:[0-9]{2}))? UTC')
HEADLINE = 'results'
HISTORY = 'fleet-history.md'
HISTORY_BEGIN = '<!-- every series: written by scripts/bench.py (write_history), newest first -->'
HISTORY_END = '<!-- end of every series -->'


def series_date(path):
    """When the series in PATH ended ('YYYY-MM-DD HH:MM', UTC): the latest date of its rows (the
    end of a range such as '12:14-12:41'), else 00:00 of the day its file name carries."""
    with open(path) as handle:
        rows = json.load(handle)
    found = []
    for row in rows:
        match = ROW_DATE.search(str(row.get('date') or ''))
        if match:
            found.append('%s %s' % (match.group(1), match.group(3) or match.group(2)))
    return max(found) if found else '%s 00:00' % SERIES.match(os.path.basename(path)).group(1)


def series_files(out_dir):
    """Every dated series in OUT_DIR (results-YYYY-MM-DD-*.json; not the headline), as
    (date, file name), oldest first (two that ended the same minute: by name)."""
    names = [name for name in os.listdir(out_dir) if SERIES.match(name)]
    return sorted((series_date(os.path.join(out_dir, name)), name) for name in names)


def newest_series(out_dir):
    """The headline rule, the one place it is decided: the series that ended last is the
    headline (benchmarks/results.json and results.md are a copy of it). None without a series."""
    found = series_files(out_dir)
    return found[-1][1] if found else None


def headline_markdown(out_dir, name):
    """results.md for the series NAME (a .json file name): its Markdown, led by where it is from."""
    with open(os.path.join(out_dir, name[:-len('.json')] + '.md')) as handle:
        text = handle.read()
    return ('<!-- The headline: a copy of %s, the newest series (scripts/bench.py newest_series); '
            'every series: %s. -->\n%s' % (name[:-len('.json')] + '.md', HISTORY, text))


def headline_problems(out_dir):
    """What makes results.json / results.md in OUT_DIR other than the newest series' copy."""
    name = newest_series(out_dir)
    if name is None:
        return ['%s: no dated series (results-YYYY-MM-DD-*.json)' % out_dir]
    problems = []
    with open(os.path.join(out_dir, name)) as handle:
        newest = json.load(handle)
    try:
        with open(os.path.join(out_dir, HEADLINE + '.json')) as handle:
            headline = json.load(handle)
    except (OSError, ValueError) as exc:
        headline = None
        problems.append('%s.json: %s' % (HEADLINE, exc))
    if headline is not None and headline != newest:
        dates = sorted(set(str(r.get('date')) for r in headline))
        problems.append('%s.json (rows of %s) is not the newest series %s (ended %s): '
                        'python3 scripts/bench.py --headline' % (
                            HEADLINE, ', '.join(dates), name, series_date(os.path.join(out_dir, name))))
    try:
        wanted = headline_markdown(out_dir, name)
    except OSError as exc:
        return problems + ['the newest series %s has no Markdown: %s' % (name, exc)]
    try:
        with open(os.path.join(out_dir, HEADLINE + '.md')) as handle:
            said = handle.read()
    except OSError as exc:
        said = None
        problems.append('%s.md: %s' % (HEADLINE, exc))
    if said is not None and said != wanted:
        problems.append('%s.md is not the Markdown of the newest series %s: '
                        'python3 scripts/bench.py --headline' % (HEADLINE, name))
    return problems


def write_headline(out_dir):
    """results.json and results.md in OUT_DIR: a copy of the newest series. Returns its name."""
    name = newest_series(out_dir)
    if name is None:
        raise SystemExit('%s: no dated series to make the headline of' % out_dir)
    text = headline_markdown(out_dir, name)
    with open(os.path.join(out_dir, name)) as handle:
        rows = json.load(handle)
    with open(os.path.join(out_dir, HEADLINE + '.json'), 'w') as handle:
        json.dump(rows, handle, indent=1)
        handle.write('\n')
    with open(os.path.join(out_dir, HEADLINE + '.md'), 'w') as handle:
        handle.write(text)
    return name


def history_index(out_dir):
    """The table of every series for fleet-history.md, newest first: when it ended, its fleet
    sizes and transports, and the targets' ratios on the rows verdicts() judges."""
    lines = [HISTORY_BEGIN, '',
             '| series | table | ended (UTC) | nodes | transports | judged at | rerun x ping '
             '| audit x ping | audit-fresh x ping | converge x usual | converge calls/host |',
             '| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |']
    newest = newest_series(out_dir)
    for date, name in reversed(series_files(out_dir)):
        with open(os.path.join(out_dir, name)) as handle:
            rows = json.load(handle)
        if any('vs_ping' not in r for r in rows):
            rows = [dict(r) for r in rows]
            try:
                ratios(rows)
            except KeyError:            # a series without a ping floor
                for row in rows:
                    row.setdefault('vs_ping', None)
                    row.setdefault('vs_usual', None)
        at, over, pick = target_rows(rows)

        def ratio(approach, phase, key):
            row = pick.get((approach, phase))
            value = row.get(key) if row else None
            return '%.2fx' % value if isinstance(value, (int, float)) else ''
        converge = pick.get(('gpufleet', 'converge'))
        calls = converge['invocations_per_host'] if converge else ''
        stem = name[:-len('.json')]
        table = '[md](%s.md)' % stem if os.path.exists(os.path.join(out_dir, stem + '.md')) else ''
        lines.append('| [%s](%s)%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            name, name, ' (the headline)' if name == newest else '', table, date,
            ' '.join(str(n) for n in sorted(set(r['nodes'] for r in rows))),
            ' '.join(sorted(set(r['transport'] for r in rows))),
            'N=%d %s' % (at, over) if pick else '', ratio('gpufleet', 'rerun', 'vs_ping'),
            ratio('gpufleet', 'audit', 'vs_ping'), ratio('gpufleet', 'audit-fresh', 'vs_ping'),
            ratio('gpufleet', 'converge', 'vs_usual'),
            calls if not isinstance(calls, list) else '-'.join(str(c) for c in calls)))
    lines += ['', HISTORY_END]
    return '\n'.join(lines)


def history_text(out_dir):
    """fleet-history.md with its index of every series as history_index() writes it (the
    index is added at the end when the file has none)."""
    with open(os.path.join(out_dir, HISTORY)) as handle:
        text = handle.read()
    index = history_index(out_dir)
    if HISTORY_BEGIN in text and HISTORY_END in text:
        head, rest = text.split(HISTORY_BEGIN, 1)
        return head + index + rest.split(HISTORY_END, 1)[1]
    return text.rstrip('\n') + '\n\n## Every series\n\n' + index + '\n'


def history_problems(out_dir):
    with open(os.path.join(out_dir, HISTORY)) as handle:
        text = handle.read()
    if text != history_text(out_dir):
        return ['%s: its index of every series is not the dated files of %s: '
                'python3 scripts/bench.py --headline' % (HISTORY, out_dir)]
    return []


def write_history(out_dir):
    text = history_text(out_dir)
    with open(os.path.join(out_dir, HISTORY), 'w') as handle:
        handle.write(text)


def series_name(rows, label):
    """results-YYYY-MM-DD-nSIZES-TRANSPORTS[-LABEL]-HHMM: the latest date of the rows (now for
    rows with none)."""
    found = [ROW_DATE.search(str(r.get('date') or '')) for r in rows]
    found = [m.groups()[:2] for m in found if m]
    now = datetime.datetime.now(datetime.timezone.utc)
    end = max(found) if found else (now.strftime('%Y-%m-%d'), now.strftime('%H:%M'))
    sizes = '-'.join(str(n) for n in sorted(set(r['nodes'] for r in rows)))
    transports = []
    for row in rows:
        if row['transport'] not in transports:
            transports.append(row['transport'])
    return 'results-%s-n%s-%s%s-%s' % (end[0], sizes, '-'.join(transports),
                                       '-' + label if label else '', end[1].replace(':', ''))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--nodes', default=os.environ.get('NODES', '4 16 32'))
    parser.add_argument('--repeat', type=int, default=int(os.environ.get('REPEAT', '3')))
    parser.add_argument('--transports', default=os.environ.get('TRANSPORTS', 'ssh docker mitogen'))
    parser.add_argument('--out', default=OUT_DIR)
    parser.add_argument('--label', default=os.environ.get('BENCH_LABEL', ''),
                        help='a word for the series file name (results-DATE-nN-TRANSPORT-LABEL-HHMM)')
    parser.add_argument('--render', nargs='+', metavar='RESULTS_JSON',
                        help='write one series from the rows of earlier runs (for example a quick '
                             'run and a large-N run), measuring nothing; the headline stays the '
                             'newest series')
    parser.add_argument('--headline', action='store_true',
                        help='rewrite results.json, results.md and the index of fleet-history.md '
                             'from the dated series, measuring nothing')
    args = parser.parse_args()
    if args.label and not re.match(r'^[a-z0-9]+(-[a-z0-9]+)*$', args.label):
        parser.error('--label %r: lower-case letters, digits and dashes' % args.label)
    if args.headline:
        log('the headline is %s' % write_headline(args.out))
        write_history(args.out)
        return
    if args.render:
        rows = []
        for name in args.render:
            with open(name) as handle:
                rows.extend(json.load(handle))
        write(rows, args.out, args.repeat, args.label or 'render')
        return
    sizes = [int(n) for n in args.nodes.replace(',', ' ').split()]
    transports = args.transports.replace(',', ' ').split()
    unknown = sorted(set(transports) - set(INVENTORIES))
    if unknown:
        parser.error('unknown transport(s) %s: choose from %s' % (unknown, sorted(INVENTORIES)))
    rows = []
    try:
        for nodes in sizes:
            rows.extend(bench(nodes, args.repeat, transports))
    finally:
        lab('down', max(sizes))
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    for row in rows:
        row['date'] = now
    write(rows, args.out, args.repeat, args.label)


def write(rows, out_dir, repeat, label):
    """``rows`` (by fleet size, with their ratios) as a new dated series in OUT_DIR, then the
    headline (the newest series: this one unless its rows are older) and the history index.
    Returns the series' name (no extension)."""
    rows.sort(key=lambda row: row['nodes'])
    ratios(rows)
    os.makedirs(out_dir, exist_ok=True)
    meta = versions()
    meta.update(date=', '.join(sorted(set(str(r.get('date', '')) for r in rows) - {''})),
                repeat=repeat)
    base = name = series_name(rows, label)
    number = 1
    while os.path.exists(os.path.join(out_dir, name + '.json')):
        number += 1
        name = '%s-%d' % (base, number)
    with open(os.path.join(out_dir, name + '.json'), 'w') as handle:
        json.dump(rows, handle, indent=1)
        handle.write('\n')
    text = markdown(rows, meta)
    with open(os.path.join(out_dir, name + '.md'), 'w') as handle:
        handle.write(text)
    headline = write_headline(out_dir)
    if os.path.exists(os.path.join(out_dir, HISTORY)):
        write_history(out_dir)
    print(text)
    log('wrote %s.json and .md; the headline (results.json, results.md) is %s' % (name, headline))
    return name


if __name__ == '__main__':
    main()
