"""Kill a module's write with SIGKILL at seeded random points; runs inside the node.

    python3 kill_writes.py SPEC.json    (prints a JSON report)

SPEC: payload (an AnsiballZ file of a module call that turns the target's ``old`` bytes into
its ``new`` bytes), target, old and new (files holding those bytes), seed, spread, window,
window_min, calibrations.

Calibration runs the payload to completion a few times from the old content while a thread polls
the target's directory for the module's temporary file (.NAME.XXXX.tmp, plugins/module_utils/
safe_file.py): that gives the run time and the write window (from the temporary file's first
sighting to the rename). Then each kill puts the old bytes back, starts the payload in its own
process group and SIGKILLs the group:
  spread  ``spread`` kills after a seeded delay drawn over the whole run time and 10% past it
          (most land while the module reads and plans, a few in the write or after it);
  window  ``window`` kills that wait for the temporary file to appear, then a seeded delay drawn
          over the measured write window (and a little past it); then, while fewer than
          ``window_min`` kills landed inside the write (a loaded machine stretches the run, and
          a delay can overshoot a short write), up to ``window`` more kills right after the
          temporary file appears ("window-now").
What is left is classified:
  old      the target holds the old bytes; ``temp`` lists the temporary file this kill left
           (then it landed inside the write, between mkstemp and the rename)
  new      the target holds the new bytes (the rename happened)
  partial  anything else: the failure this test exists to find
"""
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time


def read(path):
    with open(path, 'rb') as handle:
        return handle.read()


def put(path, data):
    """Reset the target to ``data`` (a plain rewrite: this is the set-up, not the test)."""
    with open(path, 'wb') as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def temps(directory, name):
    prefix = '.%s.' % name
    return set(n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith('.tmp'))


def start(payload):
    return subprocess.Popen([sys.executable, payload], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def calibrate(spec, directory, name, old, new):
    """(shortest run time, window start, window end) in seconds; the window is the median."""
    runs = []
    for attempt in range(spec['calibrations']):
        put(spec['target'], old)
        seen = []
        done = threading.Event()

        def watch(begin):
            while not done.is_set():
                if temps(directory, name):
                    seen.append(time.monotonic() - begin)
                time.sleep(0.0002)
        begin = time.monotonic()
        thread = threading.Thread(target=watch, args=(begin,))
        thread.start()
        proc = start(spec['payload'])
        rc = proc.wait()
        elapsed = time.monotonic() - begin
        done.set()
        thread.join()
        if rc != 0 or read(spec['target']) != new:
            raise SystemExit('calibration: the payload (rc %s) did not write the new content' % rc)
        if seen:
            runs.append((elapsed, min(seen), max(seen)))
        else:
            runs.append((elapsed, None, None))
    runs.sort()
    starts = sorted(r[1] for r in runs if r[1] is not None)
    ends = sorted(r[2] for r in runs if r[2] is not None)
    if not starts:
        raise SystemExit('calibration: the temporary file was never seen')
    return runs[0][0], starts[len(starts) // 2], ends[len(ends) // 2]


def kill_once(spec, directory, name, old, new, kind, delay):
    """Start the payload from the old content, SIGKILL it, classify what is left."""
    target = spec['target']
    put(target, old)
    before = temps(directory, name)
    proc = start(spec['payload'])
    if kind != 'spread':
        while proc.poll() is None and not temps(directory, name) - before:
            time.sleep(0.0002)
    time.sleep(delay)
    finished = proc.poll() is not None
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    data = read(target)
    left = sorted(temps(directory, name) - before)
    outcome = 'old' if data == old else 'new' if data == new else 'partial'
    return {'kind': kind, 'delay': round(delay, 4), 'outcome': outcome, 'temp': left,
            'finished_before_kill': finished, 'size': len(data)}


def main():
    spec = json.loads(read(sys.argv[1]))
    target = spec['target']
    directory, name = os.path.split(target)
    old, new = read(spec['old']), read(spec['new'])
    assert old != new
    leftovers_before = temps(directory, name)
    runtime, window_start, window_end = calibrate(spec, directory, name, old, new)
    rng = random.Random(spec['seed'])
    width = max(window_end - window_start, 0.002)
    plan = [('spread', rng.uniform(0.0, runtime * 1.1)) for index in range(spec['spread'])]
    plan += [('window', rng.uniform(0.0, width * 1.25)) for index in range(spec['window'])]
    kills = []
    for kind, delay in plan:
        kills.append(kill_once(spec, directory, name, old, new, kind, delay))
    # Top-up: on a loaded machine a seeded delay can overshoot a short write; kill right after
    # the temporary file appears until ``window_min`` kills landed inside the write.
    extra = 0
    while (sum(1 for k in kills if k['outcome'] == 'old' and k['temp']) < spec['window_min']
           and extra < spec['window']):
        kills.append(kill_once(spec, directory, name, old, new, 'window-now', 0.0))
        extra += 1
    put(target, old)
    report = {
        'runtime': round(runtime, 4),
        'window': [round(window_start, 4), round(window_end, 4)],
        'kills': kills,
        'count': len(kills),
        'old': sum(1 for k in kills if k['outcome'] == 'old'),
        'new': sum(1 for k in kills if k['outcome'] == 'new'),
        'partial': sum(1 for k in kills if k['outcome'] == 'partial'),
        'in_window': sum(1 for k in kills if k['outcome'] == 'old' and k['temp']),
        'by_kind': dict((kind, {
            'kills': sum(1 for k in kills if k['kind'] == kind),
            'in_window': sum(1 for k in kills if k['kind'] == kind and k['temp']),
            'new': sum(1 for k in kills if k['kind'] == kind and k['outcome'] == 'new'),
        }) for kind in ('spread', 'window', 'window-now')),
        'finished_before_kill': sum(1 for k in kills if k['finished_before_kill']),
        'leftovers': sorted(temps(directory, name) - leftovers_before),
    }
    print(json.dumps(report))


if __name__ == '__main__':
    main()
