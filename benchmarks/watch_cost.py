"""Cost of one drift-watch audit on a node (issue 14.4): CPU seconds and wall time.

Runs in a node container that has the watch installed (`make bench-watch` converges the `watch`
Molecule scenario and calls this): stops the timer, measures the node's idle CPU rate, then
runs the service's command RUNS times and takes for each run
  * wall: the start-to-end time of the command;
  * process CPU: user+system time of the service's command (its ExecStart, run as a child of
    the benchmark so that getrusage(RUSAGE_CHILDREN) counts it: the entry point, the audit
    child and every command it runs and waits for: runuser, systemd-run, docker clients);
  * node CPU: the CPU time of every process in the node (utime+stime+cutime+cstime summed over
    /proc, so exited processes count through their reaper) during the run, minus the idle rate
    times the wall time: adds what dockerd, containerd, systemd and the probe processes spent
    for the audit.
Writes benchmarks/watch-cost.json and benchmarks/watch-cost.md.

    python3 benchmarks/watch_cost.py --container gpufleet-watch-watch --runs 10
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))

# Runs inside the node (python3 -), prints one JSON object.
NODE_SIDE = r'''
import json, os, resource, subprocess, time
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

subprocess.check_call(['systemctl', 'stop', UNIT + '.timer'])
while show('ActiveState') == 'activating':
    time.sleep(0.5)
try:
    argv = show('ExecStart').split('argv[]=')[1].split(' ;')[0].split()
    subprocess.call(argv)   # warm caches
    c0, t0 = node_cpu(), time.time()
    time.sleep(IDLE)
    idle_rate = (node_cpu() - c0) / (time.time() - t0)
    runs = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0, t0 = node_cpu(), time.time()
        rc = subprocess.call(argv, stderr=subprocess.DEVNULL)
        wall = time.time() - t0
        node = node_cpu() - c0 - idle_rate * wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        runs.append(dict(rc=rc, wall_s=round(wall, 3), process_cpu_s=round(own, 3),
                         node_cpu_s=round(node, 3)))
        time.sleep(1)
    with open('/var/lib/prometheus/node-exporter/gpufleet_limits.prom') as handle:
        metrics = handle.read()
    contexts = sorted(set(line.split('context="')[1].split('"')[0]
                          for line in metrics.splitlines()
                          if line.startswith('gpufleet_limits_compliant{')))
    print(json.dumps(dict(idle_cpu_per_s=round(idle_rate, 4), runs=runs, contexts=contexts,
                          nproc=os.cpu_count())))
finally:
    subprocess.call(['systemctl', 'start', UNIT + '.timer'])
'''


def summary(values):
    return dict(median=round(statistics.median(values), 3), min=min(values), max=max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--container', default='gpufleet-watch-watch')
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--idle', type=int, default=10, help='seconds of idle baseline')
    parser.add_argument('--out', default=HERE)
    args = parser.parse_args()
    code = NODE_SIDE.replace('RUNS', str(args.runs)).replace('IDLE', str(args.idle))
    out = subprocess.run(['docker', 'exec', '-i', args.container, 'python3', '-'],
                         input=code.encode(), stdout=subprocess.PIPE, check=True).stdout
    data = json.loads(out.decode())
    runs = data['runs']
    assert all(r['rc'] == 0 for r in runs), runs
    result = dict(
        generated=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        container=args.container, contexts=data['contexts'], runs=runs,
        idle_cpu_per_s=data['idle_cpu_per_s'], cpus=data['nproc'],
        wall_s=summary([r['wall_s'] for r in runs]),
        process_cpu_s=summary([r['process_cpu_s'] for r in runs]),
        node_cpu_s=summary([r['node_cpu_s'] for r in runs]))
    with open(os.path.join(args.out, 'watch-cost.json'), 'w') as handle:
        json.dump(result, handle, indent=2)
        handle.write('\n')
    lines = [
        '# Cost of one drift-watch audit (`make bench-watch`)',
        '',
        'Generated %s by `benchmarks/watch_cost.py` in the `watch` scenario\'s node (%s), on a '
        'machine with %d cores shared with other work. One audit probes the contexts %s '
        '(each a new process: a login session, a transient service, a user service, a container '
        'from a local image; a running unit\'s limits) against a 3-item profile and writes the metrics file; %d runs, timer stopped.'
        % (result['generated'], args.container, result['cpus'],
           ', '.join('`%s`' % c for c in result['contexts']), len(runs)),
        '',
        '| per audit | median | min | max |',
        '| --- | --- | --- | --- |',
    ]
    for name, key in (('wall time (s)', 'wall_s'),
                      ('CPU of the watch\'s processes: entry point, audit, commands (s)',
                       'process_cpu_s'),
                      ('CPU of the whole node minus idle: adds dockerd, containerd, systemd (s)',
                       'node_cpu_s')):
        lines.append('| %s | %s | %s | %s |' % (name, result[key]['median'], result[key]['min'],
                                                result[key]['max']))
    share = 100 * result['node_cpu_s']['median'] / 900
    lines += ['', 'Idle CPU of the node (node_exporter, Prometheus, dockerd): %s s per second.'
              % result['idle_cpu_per_s'],
              'With the default period (900 s) the watch costs about %.4f %% of one core on '
              'such a node (node CPU median / 900 s).' % share, '']
    with open(os.path.join(args.out, 'watch-cost.md'), 'w') as handle:
        handle.write('\n'.join(lines))
    print('\n'.join(lines))


if __name__ == '__main__':
    main()
