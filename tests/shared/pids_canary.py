"""The pids canary (issue 33): a Python program of the user that starts N threads, each a task
of its cgroup (pids.max) and of the user's RLIMIT_NPROC, and fails with the error DataLoader
workers hit ("can't start new thread"). Run as `python3 pids_canary.py N`; exit 1 when a thread
cannot start. Used by molecule/systemd/tests/test_pids.py and the VM lane
(tests/vm/pids-canary.yml)."""
import sys
import threading

n = int(sys.argv[1])
stop = threading.Event()
started = []
try:
    for _ in range(n):
        t = threading.Thread(target=stop.wait)
        t.start()
        started.append(t)
except RuntimeError as exc:
    stop.set()
    print('started %d of %d threads: %s' % (len(started), n, exc))
    sys.exit(1)
stop.set()
print('started %d threads' % n)
