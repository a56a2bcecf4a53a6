"""make bench-profile: where the controller's and the nodes' time goes in the idempotent rerun
and the audit, against the ping floor (issue 42 item 1). Writes benchmarks/profile.json and
benchmarks/profile.md.

On N lab nodes over SSH (lab/lab.sh with LAB_SSH=1, containers BENCH_PREFIX-1..N as
scripts/bench.py starts them, with its settings: forks = N, pipelining on), after one converge
of `tune_gpu_nodes.yml --tags limits` and one audit (each node's Docker proof recorded, as
bench.py's audit phase), three phases, each RUNS times plainly and RUNS times under py-spy:

  ping     ansible gpu_nodes -m ansible.builtin.ping          (the floor)
  rerun    playbooks/tune_gpu_nodes.yml --tags limits          (nothing to change)
  audit    playbooks/audit_limits.yml                          (the Docker proof reused)

* The plain runs give the wall time, the controller CPU (getrusage of the ansible process and
  what it waited for: workers, ssh clients) and the nodes' CPU (their cgroups), per host, and,
  through benchmarks/callback_plugins/task_cpu.py, the controller CPU of each task (main
  process and workers) with its results' JSON size.
* The py-spy runs (`py-spy record --subprocesses`, from PYSPY, the venv `make bench-profile`
  makes) sample the Python stacks of ansible-playbook and its workers; each sample is put in
  the category of its deepest frame that a rule of CATEGORIES names (module payload build,
  connection plugin, result parsing, result queue, templating, callbacks, ...). The same runs
  use benchmarks/ssh_timed.sh as Ansible's ssh_executable, whose ssh_timed.py records each
  ssh client's CPU time (its own Python is left out of the samples). The samples give shares, not
  seconds (py-spy counts a process that waits for a CPU, or polls, as active, and the nodes
  keep this machine's CPUs busy): a category's CPU seconds per host are its share of the
  main process's samples times the main process's CPU (task_cpu.py's end reading), or its
  share of the workers' samples times the workers' CPU less the ssh clients'. What the
  process spends after the callback's end reading (exit) is the plain runs' controller CPU
  less both.

Node CPU per context of one audit: benchmarks/watch-cost.md (`make bench-watch` runs the same
audit code per context).

    BENCH_PREFIX=gpufleet-bench-speed python3 benchmarks/profile_run.py --nodes 4 --runs 3
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'scripts'))
import bench  # noqa: E402  pylint: disable=wrong-import-position

PYSPY = os.environ.get('PYSPY', os.path.join(bench.ROOT, 'build', 'profile-venv', 'bin', 'py-spy'))

#: (category, what a frame "function (file:line)" contains): a sample's category is the one of
#: its deepest frame that any rule names, the first rule that names that frame
CATEGORIES = [
    ('module payload build (AnsiballZ)', ('ansible/executor/module_common.py',)),
    ('connection plugin (ssh: exec, pipes)', ('ansible/plugins/connection/',)),
    ('module result parsing (JSON)', ('_parse_returned_data',)),
    ('result queue (pickle, worker to main)', ('multiprocessing/queues.py', 'send_task_result',
                                               'multiprocessing/connection.py', 'pickle')),
    ('templating (Jinja2)', ('ansible/template/', 'jinja2/', 'ansible/_internal/_templating/')),
    ('callbacks', ('ansible/plugins/callback/', 'callback_plugins/')),
    ('worker start (fork)', ('multiprocessing/popen_fork.py', 'multiprocessing/process.py',
                             'multiprocessing/context.py')),
    ('imports', ('<frozen importlib', 'importlib/')),
    ('collection plugins (lookup, filter, action)', ('gpufleet/tuning/plugins/',)),
    ('inventory and variables', ('ansible/inventory/', 'ansible/vars/')),
    ('playbook objects (YAML, attribute validation)', ('ansible/parsing/', 'ansible/playbook/',
                                                       'yaml/')),
    ('strategy loop', ('ansible/plugins/strategy/', 'ansible/executor/play_iterator.py')),
    ('task executor (other)', ('ansible/executor/task_executor.py',)),
    ('action plugin (other)', ('ansible/plugins/action/',)),
]
OTHER = 'other Python'
OUTSIDE = 'ssh client processes'


def category(frames):
    """The category of one sample (frames root first)."""
    for frame in reversed(frames):
        for name, marks in CATEGORIES:
            if any(mark in frame for mark in marks):
                return name
    return OTHER


def in_worker(frames):
    return any('executor/process/worker.py' in frame for frame in frames)


def read_raw(path):
    """{(category, 'main' or 'workers'): samples} of a py-spy raw (collapsed) file."""
    found = {}
    with open(path) as handle:
        for line in handle:
            stack, _sep, count = line.rstrip('\n').rpartition(' ')
            if not stack or not count.isdigit():
                continue
            frames = stack.split(';')
            if any('ssh_timed.py' in frame for frame in frames):
                continue        # the measuring wrapper, not Ansible
            key = (category(frames), 'workers' if in_worker(frames) else 'main')
            found[key] = found.get(key, 0) + int(count)
    return found


def plugin_loads(path):
    """{file: samples} of the workers' samples in which Ansible's plugin loader imports a
    plugin file that is not ansible-core's (the collection's lookups and filters): the file
    is the first module the loader's frame runs."""
    found = {}
    with open(path) as handle:
        for line in handle:
            stack, _sep, count = line.rstrip('\n').rpartition(' ')
            if not stack or not count.isdigit():
                continue
            frames = stack.split(';')
            if not in_worker(frames):
                continue
            for number, frame in enumerate(frames):
                if 'PluginLoader._load_module_source' not in frame:
                    continue
                loaded = [f for f in frames[number + 1:] if f.startswith('<module> (')]
                name = loaded[0][len('<module> ('):].rsplit(':', 1)[0] if loaded else ''
                if name and 'ansible/' not in name:
                    found[name] = found.get(name, 0) + int(count)
                break
    return found


def commands(report_dir):
    ping = ['ansible', 'gpu_nodes', '-m', 'ansible.builtin.ping']
    rerun = ['ansible-playbook', os.path.join(bench.ROOT, 'playbooks', 'tune_gpu_nodes.yml'),
             '--tags', 'limits']
    audit = ['ansible-playbook', os.path.join(bench.ROOT, 'playbooks', 'audit_limits.yml'),
             '-e', 'audit_reports_dir=%s' % report_dir]
    return [('ping', ping), ('rerun', rerun), ('audit', audit)]


def one_run(nodes, command, profile=None, rate=250, ssh_times=None):
    """(wall s, controller CPU s, node CPU s, task_cpu JSON or None, invocations) of one run;
    under py-spy (its samples in ``profile``) when given; each ssh client's CPU time appended
    to ``ssh_times`` when given."""
    command = [command[0], '-i', bench.INVENTORIES['ssh']] + command[1:]
    if profile:
        command = [PYSPY, 'record', '--subprocesses', '--nonblocking', '--rate', str(rate),
                   '--format', 'raw', '--output', profile, '--'] + command
    with tempfile.NamedTemporaryFile(suffix='.json') as counts, \
            tempfile.NamedTemporaryFile(suffix='.json') as tasks:
        env = bench.ansible_env(nodes, counts.name, 'ssh')
        env.update(ANSIBLE_CALLBACKS_ENABLED='invocations,task_cpu', BENCH_TASK_CPU_FILE=tasks.name)
        if ssh_times:
            env.update(ANSIBLE_SSH_EXECUTABLE=os.path.join(HERE, 'ssh_timed.sh'),
                       BENCH_SSH_TIMES=ssh_times)
        node_before, own_before = bench.node_cpu_s(nodes), bench.controller_cpu_s()
        start = time.monotonic()
        proc = subprocess.run(command, env=env, cwd=bench.ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        wall = time.monotonic() - start
        node_after, own_after = bench.node_cpu_s(nodes), bench.controller_cpu_s()
        if proc.returncode != 0:
            raise SystemExit('%s failed (%d):\n%s' % (' '.join(command), proc.returncode,
                                                      proc.stdout[-6000:]))
        with open(tasks.name) as handle:
            text = handle.read()
        with open(counts.name) as handle:
            hosts = json.loads(handle.read() or '{}')
    node = node_after - node_before if None not in (node_before, node_after) else None
    return wall, own_after - own_before, node, (json.loads(text) if text else None), hosts


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 4) if values else None


def profile_phase(nodes, name, command, runs, rate, work):
    bench.log('N=%d %s: %d plain runs' % (nodes, name, runs))
    plain = [one_run(nodes, command) for _run in range(runs)]
    for wall, own, node, _tasks, hosts in plain:
        changed = sum(h['changed'] for h in hosts.values())
        if name == 'rerun' and changed:
            raise SystemExit('the rerun changed %d things: not an idempotent rerun' % changed)
        bench.log('  %.2f s, controller %.2f CPU s, nodes %s CPU s' % (
            wall, own, '%.2f' % node if node is not None else '?'))
    samples, ssh_cpu, ssh_calls, loads, ssh_bytes = {}, [], [], {}, []
    bench.log('N=%d %s: %d runs under py-spy' % (nodes, name, runs))
    for number in range(runs):
        path = os.path.join(work, '%s-%d.txt' % (name, number))
        times = os.path.join(work, '%s-%d.ssh' % (name, number))
        if os.path.exists(times):
            os.unlink(times)
        one_run(nodes, command, profile=path, rate=rate, ssh_times=times)
        for key, count in read_raw(path).items():
            samples[key] = samples.get(key, 0) + count
        for key, count in plugin_loads(path).items():
            loads[key] = loads.get(key, 0) + count
        calls = ssh_records(times)
        ssh_cpu.append(sum(c[0] for c in calls))
        ssh_calls.append(len(calls))
        ssh_bytes.extend(c[1:] for c in calls if c[1] is not None)
    ctl = median([p[1] for p in plain]) / nodes
    ssh = median(ssh_cpu) / nodes
    # the callback's end reading: the main process's own CPU and its workers' (ssh clients in)
    main = median([p[3]['main_cpu_s'] for p in plain if p[3]]) / nodes
    workers = median([p[3]['workers_cpu_s'] for p in plain if p[3]]) / nodes
    cpu = dict(main=main, workers=max(workers - ssh, 0.0))
    total = float(sum(samples.values())) or 1.0
    where_total = dict((where, float(sum(c for (_cat, w), c in samples.items() if w == where))
                        or 1.0) for where in ('main', 'workers'))
    split = dict(('%s|%s' % (cat, where), round(cpu[where] * count / where_total[where], 4))
                 for (cat, where), count in samples.items())
    python = main + cpu['workers']
    imports = dict((name, round(cpu['workers'] * count / where_total['workers'], 4))
                   for name, count in loads.items())
    tasks = task_table([p[3] for p in plain if p[3]], nodes)
    return dict(phase=name, nodes=nodes, runs=runs, rate=rate,
                wall_s=median([p[0] for p in plain]),
                controller_cpu_s_per_host=round(ctl, 4),
                node_cpu_s_per_host=(round(median([p[2] for p in plain]) / nodes, 4)
                                     if median([p[2] for p in plain]) is not None else None),
                ssh_clients_cpu_s_per_host=round(ssh, 4),
                main_cpu_s_per_host=round(main, 4), workers_cpu_s_per_host=round(workers, 4),
                exit_cpu_s_per_host=round(ctl - main - workers, 4),
                ssh_clients_per_host=median(ssh_calls) / nodes,
                # with pipelining what an ssh client is sent is the module's payload, and what
                # it gives back the module's result (and the become marker)
                ssh_sent_kib=(round(median([b[0] for b in ssh_bytes]) / 1024.0, 1)
                              if ssh_bytes else None),
                ssh_received_kib=(round(median([b[1] for b in ssh_bytes]) / 1024.0, 1)
                                  if ssh_bytes else None),
                python_cpu_s_per_host=round(python, 4),
                sampled_active_s_per_host=round(total / (runs * rate * nodes), 4),
                samples=int(total), categories=split, plugin_imports=imports, tasks=tasks)


def ssh_records(path):
    """(CPU seconds, bytes sent, bytes received) of each ssh client a run started
    (ssh_timed.py's lines "user system sent received"; the bytes None where a line has none)."""
    found = []
    try:
        with open(path) as handle:
            for line in handle:
                parts = line.split()
                try:
                    found.append((float(parts[0]) + float(parts[1]),
                                  int(parts[2]) if len(parts) > 3 else None,
                                  int(parts[3]) if len(parts) > 3 else None))
                except (IndexError, ValueError):
                    continue
    except (IOError, OSError):
        pass
    return found


def ssh_times(path):
    """The CPU seconds of each ssh client a run started."""
    return [record[0] for record in ssh_records(path)]


def task_table(reports, nodes):
    """Each task's medians over the runs, per host."""
    if not reports:
        return []
    rows = []
    for number, task in enumerate(reports[0]['tasks']):
        same = [r['tasks'][number] for r in reports if len(r['tasks']) > number
                and r['tasks'][number]['name'] == task['name']]
        rows.append(dict(
            name=task['name'], action=task['action'], play=task['play'],
            delegated=task['delegated'], run_once=task.get('run_once', False),
            results=task['results'],
            main_cpu_s_per_host=round(median([t['main_cpu_s'] for t in same]) / nodes, 4),
            workers_cpu_s_per_host=round(median([t['workers_cpu_s'] for t in same]) / nodes, 4),
            wall_s=median([t['wall_s'] for t in same]),
            result_kib_per_result=(round(median([t['result_bytes'] / t['results']
                                                 for t in same]) / 1024.0, 1)
                                   if task['results'] else None)))
    return rows


def markdown(data):
    phases = data['phases']
    names = [p['phase'] for p in phases]
    lines = [
        '# Profile: where the rerun and the audit spend their time (`make bench-profile`)', '',
        'Written by `benchmarks/profile_run.py` %s at commit %s: %d lab nodes over SSH on this '
        '%d-CPU machine (forks = N, pipelining on), %d plain runs and %d runs under py-spy '
        '(%d Hz, `--subprocesses`) per phase, medians of the plain runs; load %s at the end. The '
        'nodes share the controller\'s CPUs: read the shares and the CPU seconds, not the wall '
        'time. A real fleet pays the controller\'s part once per host and each node its own.'
        % (data['date'], data['commit'], data['nodes'], data['cpus'], phases[0]['runs'],
           phases[0]['runs'], phases[0]['rate'], data['load']), '',
        '## Per host', '',
        '| | %s |' % ' | '.join(names), '| --- |%s' % (' ---: |' * len(names)),
        '| wall s (the whole run) | %s |' % ' | '.join('%.2f' % p['wall_s'] for p in phases),
        '| x ping (wall) | %s |' % ' | '.join(
            '%.2f' % (p['wall_s'] / phases[0]['wall_s']) for p in phases),
        '| controller CPU s per host | %s |' % ' | '.join(
            '%.3f' % p['controller_cpu_s_per_host'] for p in phases),
        '| x ping (controller CPU) | %s |' % ' | '.join(
            '%.2f' % (p['controller_cpu_s_per_host'] / phases[0]['controller_cpu_s_per_host'])
            for p in phases),
        '| ssh clients per host | %s |' % ' | '.join(
            '%.1f' % p['ssh_clients_per_host'] for p in phases),
        '| KiB sent per ssh client (median; with pipelining the module\'s payload) | %s |'
        % ' | '.join('%s' % p.get('ssh_sent_kib') for p in phases),
        '| KiB received per ssh client (median; the module\'s result) | %s |'
        % ' | '.join('%s' % p.get('ssh_received_kib') for p in phases),
        '| node CPU s per host | %s |' % ' | '.join(
            '%.3f' % p['node_cpu_s_per_host'] if p['node_cpu_s_per_host'] is not None else '?'
            for p in phases), '',
        '## Controller CPU per host, by what runs', '',
        'CPU seconds per host: the ssh clients\' from benchmarks/ssh_timed.py (ssh_timed.sh as '
        'Ansible\'s ssh_executable); the main process\'s and the workers\' CPU (task_cpu.py, the '
        'workers\' less the ssh clients\') each split by the shares of the categories in '
        'that process\'s py-spy samples; exit is the rest of the plain runs\' controller '
        'CPU. `main` is the ansible process, `workers` the forked worker per host and task. '
        'A sample counts in the '
        'category of its deepest frame that a rule of `CATEGORIES` in the script names '
        '(`imports` in a worker: modules the worker imports after the fork, each task again).', '',
        '| category | where | %s |' % ' | '.join(names),
        '| --- | --- |%s' % (' ---: |' * len(names))]
    keys = sorted(set(k for p in phases for k in p['categories']),
                  key=lambda k: -max(p['categories'].get(k, 0) for p in phases))
    for key in keys:
        cat, where = key.split('|')
        lines.append('| %s | %s | %s |' % (cat, where, ' | '.join(
            '%.3f' % p['categories'].get(key, 0) for p in phases)))
    lines.append('| %s | ssh | %s |' % (OUTSIDE, ' | '.join(
        '%.3f (%.1f clients)' % (p['ssh_clients_cpu_s_per_host'], p['ssh_clients_per_host'])
        for p in phases)))
    lines.append('| exit (after the last callback) | main | %s |' % ' | '.join(
        '%.3f' % p['exit_cpu_s_per_host'] for p in phases))
    lines.append('| **controller CPU per host** (plain runs) | | %s |' % ' | '.join(
        '**%.3f**' % p['controller_cpu_s_per_host'] for p in phases))
    plugins = sorted(set(k for p in phases for k in p.get('plugin_imports', {})),
                     key=lambda k: -max(p.get('plugin_imports', {}).get(k, 0) for p in phases))
    if plugins:
        lines += ['', '## Plugin files the workers import', '',
                  'Part of `imports | workers` above: the samples in which a worker (forked per '
                  'host and task, after the main process imported what it had) imports a plugin '
                  'file of the collection through Ansible\'s plugin loader, to resolve a lookup '
                  'or a filter its templating names, with what that file imports in turn; CPU '
                  's per host, scaled as above.', '',
                  '| plugin file | %s |' % ' | '.join(names),
                  '| --- |%s' % (' ---: |' * len(names))]
        for name in plugins:
            lines.append('| %s | %s |' % (name, ' | '.join(
                '%.3f' % p.get('plugin_imports', {}).get(name, 0) for p in phases)))
    for phase in phases:
        if not phase['tasks']:
            continue
        lines += ['', '## Tasks of the %s' % phase['phase'], '',
                  'From benchmarks/callback_plugins/task_cpu.py in the plain runs: each task\'s '
                  'controller CPU per host (a worker\'s CPU, with the ssh client it waited for, '
                  'counts in the task that ran it), its wall time and its results\' JSON size. '
                  '`startup` is from the process start to the first task.', '',
                  '| task | action | main CPU s/host | workers CPU s/host | wall s | results '
                  '| KiB/result |', '| --- | --- | ---: | ---: | ---: | ---: | ---: |']
        for task in phase['tasks']:
            lines.append('| %s | %s%s | %.4f | %.4f | %.3f | %d | %s |' % (
                task['name'].replace('|', '\\|'), task['action'],
                ' (delegated)' if task['delegated'] else '',
                task['main_cpu_s_per_host'], task['workers_cpu_s_per_host'], task['wall_s'],
                task['results'], '%.1f' % task['result_kib_per_result']
                if task['result_kib_per_result'] is not None else ''))
    lines += ['', 'Node CPU per context of one audit: [watch-cost.md](watch-cost.md) (the '
              'same audit code, run per context by `make bench-watch`).', '']
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--nodes', type=int, default=int(os.environ.get('NODES', '4')))
    parser.add_argument('--runs', type=int, default=int(os.environ.get('RUNS', '3')))
    parser.add_argument('--rate', type=int, default=250, help='py-spy samples per second')
    parser.add_argument('--reuse-lab', action='store_true',
                        help='the lab of N nodes is up and tuned (set-up skipped, kept after)')
    parser.add_argument('--out', default=HERE)
    parser.add_argument('--keep-raw', metavar='DIR', help='keep the py-spy and ssh files here')
    args = parser.parse_args()
    if not os.access(PYSPY, os.X_OK):
        raise SystemExit('no py-spy at %s (make bench-profile installs it; PYSPY names another)'
                         % PYSPY)
    report_dir = os.path.join(bench.LAB_DIR, 'audit')
    phases = commands(report_dir)
    try:
        if not args.reuse_lab:
            bench.lab('down', args.nodes)
            bench.lab('up', args.nodes)
        bench.log('converge, ping and audit once (untimed)')
        one_run(args.nodes, phases[1][1])
        one_run(args.nodes, phases[0][1])
        one_run(args.nodes, phases[2][1])
        with tempfile.TemporaryDirectory(prefix='gpufleet-profile-') as work:
            if args.keep_raw:
                os.makedirs(args.keep_raw, exist_ok=True)
                work = args.keep_raw
            found = [profile_phase(args.nodes, name, command, args.runs, args.rate, work)
                     for name, command in phases]
    finally:
        if not args.reuse_lab:
            bench.lab('down', args.nodes)
    meta = bench.versions()
    data = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
                commit=meta['commit'], cpus=meta['cpus'], ansible_core=meta['ansible_core'],
                nodes=args.nodes, load='%.2f' % os.getloadavg()[0], phases=found)
    with open(os.path.join(args.out, 'profile.json'), 'w') as handle:
        json.dump(data, handle, indent=1)
        handle.write('\n')
    text = markdown(data)
    with open(os.path.join(args.out, 'profile.md'), 'w') as handle:
        handle.write(text)
    print(text)


if __name__ == '__main__':
    main()
