"""Cost of one drift-watch audit on a node (issue 14.4, issue 42 item 3): CPU seconds and wall
time, in all and per part.

Runs in a node container that has the watch installed (`make bench-watch` converges the `watch`
Molecule scenario and calls this): stops the timer, measures the node's idle CPU rate, then
runs each variant below RUNS times, the variants in turn (run 1 of each, then run 2, ...: the
machine's speed drifts), and takes for each run
  * wall: the start-to-end time of the command;
  * process CPU: user+system time of the command (a child of the benchmark, so that
    getrusage(RUSAGE_CHILDREN) counts it and every command it runs and waits for: runuser,
    systemd-run, docker clients);
  * node CPU: the CPU time of every process in the node (utime+stime+cutime+cstime summed over
    /proc, so exited processes count through their reaper) during the run, minus the idle rate
    times the wall time: adds what dockerd, containerd, systemd and the probe processes spent
    for the audit.

The variants: `watch` is the service's command (ExecStart: the entry point, which reads the
profile, runs the audit in a child, writes the metrics and the outlets); the others run that
child alone (`gpufleet_limits_watch.py --child`, the audit's parameters on stdin as the entry
point builds them with drift_watch.read_profile) with the audit's own options:
  * `audit`: every context, as the watch runs it;
  * `readers`: no probe (probe_only: []), no units, no sysctl, no pids: starting the audit,
    reading every context's configuration (PAM files, systemctl show, docker info ...) and
    the findings;
  * `probe CONTEXT`: the readers plus one probed context (probe_only: [CONTEXT]);
  * `units`: the readers plus the running units' limits (the profile's units);
  * `audit without sysctl` / `audit without pids`: every context, the kernel ceilings or the
    pids part left out (`audit with pids`: the profile given `pids: PIDS` where it has none);
  * `audit without images`: every context but the containers (no probe option `*_image`):
    the contexts of the role's defaults (limits_watch_docker_image and
    limits_watch_podman_image are empty unless set), which BUDGET_S is judged on.
A part's cost is its variant's median minus the readers' (a probe, the units) or the audit's
minus its variant's (sysctl, pids), and the entry point's is the watch's minus the audit's.
Writes benchmarks/watch-cost.json and benchmarks/watch-cost.md.

    python3 benchmarks/watch_cost.py --container gpufleet-watch-speed --runs 10
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
#: node CPU seconds one watch run may cost with the scenario's contexts (issue 42 item 3)
BUDGET_S = 0.5
#: the pids value of the `audit with pids` variant (a profile without pids)
PIDS = 4096

# Runs inside the node (python3 -), prints one JSON object.
NODE_SIDE = r'''
import json, os, resource, subprocess, sys, time
CONFIG = json.loads(@CONFIG@)
UNIT = 'gpufleet-limits-watch'
TICK = os.sysconf('SC_CLK_TCK')

def node_cpu():
    total = 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except (IOError, OSError):
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / TICK

def show(prop):
    return subprocess.check_output(['systemctl', 'show', '-p', prop, '--value',
                                    UNIT + '.service']).decode().strip()

def measure(argv, data, idle_rate):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0, t0 = node_cpu(), time.time()
    proc = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.time() - t0
    node = node_cpu() - c0 - idle_rate * wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dict(rc=proc.returncode, wall_s=round(wall, 3), process_cpu_s=round(own, 3),
                node_cpu_s=round(node, 3)), proc.stdout

subprocess.check_call(['systemctl', 'stop', UNIT + '.timer'])
while show('ActiveState') == 'activating':
    time.sleep(0.5)
try:
    argv = show('ExecStart').split('argv[]=')[1].split(' ;')[0].split()
    script = [a for a in argv if a.endswith('gpufleet_limits_watch.py')][0]
    sys.path.insert(0, os.path.dirname(script))
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch
    params = drift_watch.read_profile(argv[argv.index('--profile') + 1])
    child = [argv[0], '-I', '-S', script, '--child']

    def audit_input(probe_only=None, units=True, sysctl=True, pids=True, images=True,
                    add_pids=None):
        found = dict(params, profile=dict(params['profile']))
        if add_pids is not None:
            found['profile']['pids'] = add_pids
        if not images:
            found['probe_options'] = dict((k, v) for k, v in params['probe_options'].items()
                                          if not k.endswith('_image'))
        if probe_only is not None:
            found['probe_only'] = probe_only
        if not units:
            found['units'] = []
        if not sysctl:
            found['sysctl'] = {}
        if not pids:
            found['profile'].pop('pids', None)
        return json.dumps(found).encode()

    subprocess.call(argv, stderr=subprocess.DEVNULL)   # warm caches
    first = json.loads(subprocess.run(child, input=audit_input(), stdout=subprocess.PIPE,
                                      check=True).stdout.decode())
    assert first['ok'], first
    probed = sorted(first['result']['contexts'])
    records = [c for c in probed if not c.startswith('unit:')]
    variants = [('watch', argv, None), ('audit', child, audit_input())]
    if CONFIG['parts']:
        variants.append(('readers', child, audit_input([], False, False, False)))
        variants += [('probe ' + c, child, audit_input([c], False, False, False))
                     for c in records]
        if params['units']:
            variants.append(('units', child, audit_input([], True, False, False)))
        if params.get('sysctl'):
            variants.append(('audit without sysctl', child, audit_input(sysctl=False)))
        if 'pids' in params['profile']:
            variants.append(('audit without pids', child, audit_input(pids=False)))
        else:
            # what the pids part would cost (a profile with pids; this one has none)
            variants.append(('audit with pids', child, audit_input(add_pids=CONFIG['pids'])))
    if any(k.endswith('_image') for k in params['probe_options']):
        # the role's default: no container image (limits_watch_docker_image '')
        variants.append(('audit without images', child, audit_input(images=False)))
    c0, t0 = node_cpu(), time.time()
    time.sleep(CONFIG['idle'])
    idle_rate = (node_cpu() - c0) / (time.time() - t0)
    runs = dict((name, []) for name, _argv, _data in variants)
    for _ in range(CONFIG['runs']):
        for name, command, data in variants:
            row, out = measure(command, data, idle_rate)
            if data is not None:
                answer = json.loads(out.decode() or '{}')
                row['ok'] = bool(answer.get('ok'))
                row['probed'] = sorted((answer.get('result') or {}).get('contexts') or [])
            runs[name].append(row)
            time.sleep(0.5)
    with open('/var/lib/prometheus/node-exporter/gpufleet_limits.prom') as handle:
        metrics = handle.read()
    contexts = sorted(set(line.split('context="')[1].split('"')[0]
                          for line in metrics.splitlines()
                          if line.startswith('gpufleet_limits_compliant{')))
    print(json.dumps(dict(idle_cpu_per_s=round(idle_rate, 4), runs=runs, contexts=contexts,
                          probed=probed, order=[name for name, _a, _d in variants],
                          profile=sorted(params['profile']), units=params['units'],
                          sysctl=sorted(params.get('sysctl') or {}), nproc=os.cpu_count())))
finally:
    subprocess.call(['systemctl', 'start', UNIT + '.timer'])
'''


def summary(values):
    return dict(median=round(statistics.median(values), 3), min=min(values), max=max(values))


KEYS = ('node_cpu_s', 'process_cpu_s', 'wall_s')


def parts(medians, spreads=None):
    """[{part, label, node_cpu_s, process_cpu_s, wall_s, spread_s}] each part costs: a probe
    and the units over the readers, sysctl, pids and the container images the audit minus the
    audit without them, the entry point the watch minus the audit. ``spreads``: each variant's
    node CPU max - min; a part's spread_s is half the larger of its two variants'."""
    found = []
    spreads = spreads or {}

    def diff(part, label, high, low):
        if high in medians and low in medians:
            found.append(dict(part=part, label=label, spread_s=round(max(
                spreads.get(high, 0), spreads.get(low, 0)) / 2, 3), **dict(
                    (k, round(medians[high][k] - medians[low][k], 3)) for k in KEYS)))
    if 'readers' in medians:
        found.append(dict(part='readers', label='readers: start the audit, read every '
                          'configuration, the findings',
                          spread_s=round(spreads.get('readers', 0) / 2, 3),
                          **dict((k, medians['readers'][k]) for k in KEYS)))
    for name in medians:
        if name.startswith('probe '):
            context = name[len('probe '):]
            diff('probe-' + context, 'probe of `%s`' % context, name, 'readers')
    diff('units', 'the running units\' limits', 'units', 'readers')
    diff('sysctl', 'kernel ceilings (sysctl)', 'audit', 'audit without sysctl')
    diff('pids', 'pids', 'audit', 'audit without pids')
    diff('pids', 'pids (added to the profile: `pids: %s`)' % PIDS, 'audit with pids', 'audit')
    diff('images', 'the container probes (the probe options `*_image`)', 'audit',
         'audit without images')
    diff('entry', 'entry point: profile, child, metrics and outlets', 'watch', 'audit')
    return found


def default_contexts_cpu(medians):
    """Node CPU of one watch run with the role's default contexts (no container image): the
    audit without images plus the entry point's part; None when not measured."""
    if 'audit without images' not in medians:
        return medians['watch']['node_cpu_s'] if 'audit' in medians else None
    return round(medians['audit without images']['node_cpu_s']
                 + medians['watch']['node_cpu_s'] - medians['audit']['node_cpu_s'], 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--container', default='gpufleet-watch-watch')
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--idle', type=int, default=10, help='seconds of idle baseline')
    parser.add_argument('--no-parts', action='store_true',
                        help='the whole watch run only (no per-part variants)')
    parser.add_argument('--out', default=HERE)
    parser.add_argument('--render', action='store_true',
                        help='rewrite watch-cost.md from watch-cost.json in --out, measuring nothing')
    args = parser.parse_args()
    if args.render:
        with open(os.path.join(args.out, 'watch-cost.json')) as handle:
            text = markdown(json.load(handle))
        with open(os.path.join(args.out, 'watch-cost.md'), 'w') as handle:
            handle.write(text)
        return
    config = dict(runs=args.runs, idle=args.idle, parts=not args.no_parts, pids=PIDS)
    code = NODE_SIDE.replace('@CONFIG@', repr(json.dumps(config)))
    out = subprocess.run(['docker', 'exec', '-i', args.container, 'python3', '-'],
                         input=code.encode(), stdout=subprocess.PIPE, check=True).stdout
    data = json.loads(out.decode())
    bad = dict((name, [r for r in runs if r['rc'] != 0 or r.get('ok') is False])
               for name, runs in data['runs'].items())
    bad = dict((name, runs) for name, runs in bad.items() if runs)
    assert not bad, bad
    runs = data['runs']['watch']
    variants = dict((name, dict(
        wall_s=summary([r['wall_s'] for r in found]),
        process_cpu_s=summary([r['process_cpu_s'] for r in found]),
        node_cpu_s=summary([r['node_cpu_s'] for r in found]),
        probed=found[0].get('probed'))) for name, found in data['runs'].items())
    medians = dict((name, dict((k, v[k]['median']) for k in KEYS))
                   for name, v in variants.items())
    result = dict(
        generated=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        container=args.container, contexts=data['contexts'], probed=data['probed'],
        profile=data['profile'], units=data['units'], sysctl=data['sysctl'], runs=runs,
        idle_cpu_per_s=data['idle_cpu_per_s'], cpus=data['nproc'],
        wall_s=variants['watch']['wall_s'], process_cpu_s=variants['watch']['process_cpu_s'],
        node_cpu_s=variants['watch']['node_cpu_s'], budget_node_cpu_s=BUDGET_S,
        default_contexts_node_cpu_s=default_contexts_cpu(medians),
        variants=dict((name, dict(variants[name], runs=data['runs'][name]))
                      for name in data['order']),
        parts=parts(medians, dict((name, v['node_cpu_s']['max'] - v['node_cpu_s']['min'])
                                  for name, v in variants.items())))
    result['within_budget'] = (result['default_contexts_node_cpu_s'] is not None
                               and result['default_contexts_node_cpu_s'] <= BUDGET_S)
    with open(os.path.join(args.out, 'watch-cost.json'), 'w') as handle:
        json.dump(result, handle, indent=2)
        handle.write('\n')
    text = markdown(result)
    with open(os.path.join(args.out, 'watch-cost.md'), 'w') as handle:
        handle.write(text)
    print(text)


def markdown(result):
    """watch-cost.md from the result (watch-cost.json)."""
    lines = [
        '# Cost of one drift-watch audit (`make bench-watch`)',
        '',
        'Generated %s by `benchmarks/watch_cost.py` in the `watch` scenario\'s node (%s), on a '
        'machine with %d cores shared with other work. One audit probes the contexts %s '
        '(each a new process: a login session, an SSH session where sshd runs, a transient '
        'service, a user service, a container from a local image; a running unit\'s limits) '
        'against a %d-item profile (%s) and %d kernel ceilings, and writes the metrics file; '
        '%d runs of each variant, in turn, timer stopped.'
        % (result['generated'], result['container'], result['cpus'],
           ', '.join('`%s`' % c for c in result['probed']), len(result['profile']),
           ', '.join(result['profile']), len(result['sysctl']), len(result['runs'])),
        '',
        '| one watch run | median | min | max |',
        '| --- | ---: | ---: | ---: |',
    ]
    for name, key in (('wall time (s)', 'wall_s'),
                      ('CPU of the watch\'s processes: entry point, audit, commands (s)',
                       'process_cpu_s'),
                      ('CPU of the whole node minus idle: adds dockerd, containerd, systemd (s)',
                       'node_cpu_s')):
        lines.append('| %s | %s | %s | %s |' % (name, result[key]['median'], result[key]['min'],
                                                result[key]['max']))
    lines += ['', 'Node CPU of one watch run with the role\'s default contexts (no container '
              'image: the audit without images plus the entry point): %s s; within %.1f s: '
              '**%s**. With this scenario\'s container probe: %.3f s (median).' % (
                  result['default_contexts_node_cpu_s'], BUDGET_S,
                  'yes' if result['within_budget'] else 'no', result['node_cpu_s']['median'])]
    if result['parts']:
        lines += ['', '## Where it goes', '',
                  'Each variant is run as the watch runs its audit (the child, with the '
                  'parameters the entry point reads from the profile), with the audit\'s own '
                  'options `probe_only`, `units`, `sysctl` and the profile narrowed; medians of '
                  'the runs. A part\'s cost is the difference of two variants\' medians (see '
                  'the script\'s docstring), so a small part can read below 0 on a busy machine.',
                  '', '| variant | node CPU s | process CPU s | wall s | node CPU min-max |',
                  '| --- | ---: | ---: | ---: | --- |']
        for name, found in result['variants'].items():
            lines.append('| %s | %.3f | %.3f | %.3f | %s-%s |' % (
                name, found['node_cpu_s']['median'], found['process_cpu_s']['median'],
                found['wall_s']['median'], found['node_cpu_s']['min'],
                found['node_cpu_s']['max']))
        lines += ['', '| part | node CPU s | process CPU s | wall s | spread ± s |',
                  '| --- | ---: | ---: | ---: | ---: |']
        for part in result['parts']:
            lines.append('| %s | %.3f | %.3f | %.3f | %.3f |' % (
                part['label'], part['node_cpu_s'], part['process_cpu_s'], part['wall_s'],
                part['spread_s']))
        heavy = sorted((p for p in result['parts'] if p['node_cpu_s'] >= 0.1
                        and p['node_cpu_s'] > p['spread_s'] and p['part'] != 'images'),
                       key=lambda p: -p['node_cpu_s'])
        lines += ['', '`spread` is half the larger node CPU range (max - min) of the two '
                  'variants a part is the difference of: a part below its spread is not told '
                  'apart from none here. The parts of 0.1 node CPU s or more, above their '
                  'spread: %s.' % ', '.join(
                      '`%s` %.3f s' % (p['part'], p['node_cpu_s']) for p in heavy)]
    share = 100 * result['node_cpu_s']['median'] / 900
    lines += ['', 'Idle CPU of the node (node_exporter, Prometheus, Alertmanager, dockerd): %s s '
              'per second, taken off every figure.' % result['idle_cpu_per_s'],
              'With the default period (900 s) the watch costs about %.4f %% of one core on '
              'such a node (node CPU median / 900 s).' % share, '']
    return '\n'.join(lines)


if __name__ == '__main__':
    main()
