"""Run the Molecule scenarios and the other node suites of `make test` in parallel lanes.

Each job is a Molecule scenario on one node image (``molecule:DISTRO:SCENARIO``) or a named
command (``cmd:NAME:COMMAND``). ``molecule@LINE:DISTRO:SCENARIO`` and ``cmd@LINE:NAME:COMMAND``
run with the tools of another ansible-core line: the venv .venv-LINE of this checkout (make
venv-2.21) comes first on PATH, so its molecule, ansible-playbook, pytest and bundled collections
are the ones used (docs/supported-versions.md); without @LINE, those on PATH (.venv). Jobs run LANES at a time, longest first (by the wall times of
the last run here, build/suites/timings.json, else those in tests/suite-timings.json, else in
the order given). Every Molecule job gets a node
name suffix and an ephemeral directory of its own (GPUFLEET_NODE_SUFFIX,
MOLECULE_EPHEMERAL_DIRECTORY), so the same scenario can run on two images at once; a LAB_PREFIX
given to the run becomes LAB_PREFIX-NAME for each command job (each lab script has its own
default prefix otherwise).

The output of each job goes to build/suites/NAME.log; a failed job's log tail is printed when
it ends. At the end a table of wall times is printed and written to build/suites/timings.md.
Exit status 1 when any job failed (the others still run to the end, so that one CI run shows
every failure).

    python3 scripts/run_suites.py --lanes 2 molecule:debian12:pam molecule:debian11:pam \
        'cmd:fleet-test:tests/reliability/fleet_test.sh' molecule@2.21:debian12:default
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, 'build', 'suites')
TAIL = 150


class Job(object):
    def __init__(self, spec, default_distro, env_for):
        self.spec = spec
        kind, _sep, rest = spec.partition(':')
        kind, _sep, line = kind.partition('@')
        line_env = self.line_env(spec, line)
        if kind == 'molecule':
            distro, _sep, scenario = rest.partition(':')
            if not distro or not scenario:
                raise SystemExit('bad job %r: molecule[@LINE]:DISTRO:SCENARIO' % spec)
            # the line in the name, the node's name and the Molecule state: the same scenario
            # can run on two lines at once
            self.name = '%s-%s' % (distro, scenario) + ('-core%s' % line if line else '')
            self.command = ['molecule', 'test', '-s', scenario]
            self.env = {
                'MOLECULE_DISTRO': distro,
                'MOLECULE_IMAGE': 'gpufleet-node:%s' % distro,
                'GPUFLEET_NODE_SUFFIX': os.environ.get('GPUFLEET_NODE_SUFFIX', '') + (
                    '' if distro == default_distro else '-%s' % distro) + (
                    '-core%s' % line.replace('.', '') if line else ''),
                'MOLECULE_EPHEMERAL_DIRECTORY': os.path.join(OUT, 'molecule', self.name),
            }
            self.env.update(env_for(distro))
            self.env.update(line_env)
        elif kind == 'cmd':
            name, _sep, command = rest.partition(':')
            if not re.match(r'^[\w.-]+$', name) or not command:
                raise SystemExit('bad job %r: cmd:NAME:COMMAND' % spec)
            self.name = name
            self.command = ['bash', '-c', command]
            # each command's lab names its containers LAB_PREFIX-N: a prefix given to the whole
            # run gets the job's name, so two labs of the run never share a node
            self.env = ({'LAB_PREFIX': '%s-%s' % (os.environ['LAB_PREFIX'], name)}
                        if os.environ.get('LAB_PREFIX') else {})
            self.env.update(line_env)
        else:
            raise SystemExit('bad job %r: molecule[@LINE]:DISTRO:SCENARIO or cmd[@LINE]:NAME:COMMAND'
                             % spec)
        self.log = os.path.join(OUT, self.name + '.log')
        self.rc = None
        self.seconds = None

    @staticmethod
    def line_env(spec, line):
        """PATH and VIRTUAL_ENV for the venv of ansible-core line LINE (empty: the caller's)."""
        if not line:
            return {}
        if not re.match(r'^\d+\.\d+$', line):
            raise SystemExit('bad job %r: @LINE is an ansible-core line such as 2.21' % spec)
        venv = os.path.join(ROOT, '.venv-%s' % line)
        if not os.access(os.path.join(venv, 'bin', 'ansible-playbook'), os.X_OK):
            raise SystemExit('job %r: no ansible-core %s venv in %s (make venv-%s)'
                             % (spec, line, venv, line))
        return {'PATH': os.path.join(venv, 'bin') + os.pathsep + os.environ.get('PATH', ''),
                'VIRTUAL_ENV': venv}

    def run(self):
        start = time.time()
        env = dict(os.environ, **self.env)
        with open(self.log, 'w') as log:
            log.write('$ %s\n' % ' '.join(self.command))
            if 'VIRTUAL_ENV' in self.env:
                log.write('# with the tools of %s\n' % self.env['VIRTUAL_ENV'])
            log.flush()
            try:
                self.rc = subprocess.call(self.command, cwd=ROOT, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            except OSError as exc:  # no molecule on PATH: the job fails, the lane goes on
                log.write('cannot start %s: %s\n' % (self.command[0], exc))
                self.rc = 127
        self.seconds = time.time() - start


def tail(path, lines):
    with open(path, errors='replace') as handle:
        return ''.join(handle.readlines()[-lines:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--lanes', type=int, default=int(os.environ.get('LANES', '2')))
    parser.add_argument('--default-distro', default=os.environ.get('MOLECULE_DISTRO', 'debian12'))
    parser.add_argument('--distro-env', action='append', default=[],
                        help='DISTRO:KEY=VALUE, an environment variable for that image only')
    parser.add_argument('jobs', nargs='+')
    args = parser.parse_args()

    extra = {}
    for item in args.distro_env:
        distro, _sep, pair = item.partition(':')
        key, _sep, value = pair.partition('=')
        if not distro or not key:
            raise SystemExit('bad --distro-env %r: DISTRO:KEY=VALUE' % item)
        extra.setdefault(distro, {})[key] = value

    os.makedirs(os.path.join(OUT, 'molecule'), exist_ok=True)
    jobs = [Job(spec, args.default_distro, lambda d: extra.get(d, {})) for spec in args.jobs]
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise SystemExit('two jobs have the same name: %s' % ' '.join(names))

    # Longest first: the wall times of the last run here, else those measured when the suites
    # last changed (tests/suite-timings.json, committed), else the order given.
    history_path = os.path.join(OUT, 'timings.json')
    history = {}
    for path in (os.path.join(ROOT, 'tests', 'suite-timings.json'), history_path):
        try:
            with open(path) as handle:
                history.update(json.load(handle))
        except (OSError, ValueError):
            pass
    queue = sorted(jobs, key=lambda job: -history.get(job.name, 0))
    lock = threading.Lock()
    started = time.time()

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                job = queue.pop(0)
                print('[%6.0fs] start %s' % (time.time() - started, job.name), flush=True)
            job.run()
            with lock:
                verdict = 'passed' if job.rc == 0 else 'FAILED (exit %d)' % job.rc
                print('[%6.0fs] %s %s in %.0fs (log: %s)' % (
                    time.time() - started, job.name, verdict, job.seconds,
                    os.path.relpath(job.log, ROOT)), flush=True)
                if job.rc != 0:
                    print('----- last %d lines of %s -----\n%s-----' % (
                        TAIL, job.name, tail(job.log, TAIL)), flush=True)

    threads = [threading.Thread(target=lane) for _lane in range(max(1, args.lanes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    total = time.time() - started
    rows = ['| job | result | wall s |', '| --- | --- | ---: |']
    for job in sorted(jobs, key=lambda job: -job.seconds):
        rows.append('| %s | %s | %.0f |' % (job.name, 'passed' if job.rc == 0 else 'failed',
                                            job.seconds))
    rows.append('| (all, %d lanes) | | %.0f |' % (args.lanes, total))
    table = '\n'.join(rows)
    print(table)
    with open(os.path.join(OUT, 'timings.md'), 'w') as handle:
        handle.write(table + '\n')
    try:
        with open(history_path) as handle:
            measured = json.load(handle)
    except (OSError, ValueError):
        measured = {}
    measured.update((job.name, round(job.seconds)) for job in jobs)
    with open(history_path, 'w') as handle:
        json.dump(measured, handle, indent=1, sort_keys=True)
    failed = [job.name for job in jobs if job.rc != 0]
    if failed:
        print('failed: %s' % ' '.join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
