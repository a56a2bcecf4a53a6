"""Issue 41 item 5, why did my job die, on a real node: each canary fails for real (real PAM
sessions, systemd's slices and memory cgroup, real PyTorch, Docker's /dev/shm), and the answer
of playbooks/classify_failure.yml (the audit's findings of the node, read-only) names the
ceiling, the value the job had and the file:line that set it. The site files the canaries
plant are removed at the end, so that the scenario's later tests see the node as before.

- nofile: a limits.d line gives the canary user soft nofile 1024; the DataLoader smoke test
  (2000 tensors per sample) runs out of descriptors in a login session;
- memlock: the same file gives memlock 64 KiB; mlock() of 1 MiB fails with ENOMEM;
- pids: a user-UID.slice drop-in caps the user's tasks at 40; 200 threads cannot start;
- memory: a service with MemoryMax=64M allocates 512 MiB and the OOM killer takes it;
- shm: the DataLoader check's container job at Docker's default 64 MiB /dev/shm (converge)
  carries the answer; RemoveIPC: test_removeipc.py classifies its job's failure."""
import base64
import json
import os
import sys

import pytest

ROOT = os.environ.get('MOLECULE_PROJECT_DIRECTORY',
                      os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
from container_support import MB, classify, classify_unit, results  # noqa: E402

USER = 'gpufleet-canary'
PYTHON = '/opt/gpufleet/pytorch/bin/python'
SMOKE = '/usr/local/libexec/gpufleet/dataloader_smoke.py'
LIMITS = '/etc/security/limits.d/95-gpufleet-canary.conf'
OOM_UNIT = 'gpufleet-canary-oom.service'
MLOCK = ("import ctypes, mmap, os; size = 1 << 20; buf = mmap.mmap(-1, size); "
         "addr = ctypes.addressof(ctypes.c_char.from_buffer(buf)); "
         "libc = ctypes.CDLL(None, use_errno=True); "
         "rc = libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(size)); "
         "err = ctypes.get_errno(); "
         "print('mlock: %s' % os.strerror(err) if rc else 'locked'); raise SystemExit(rc and 1)")
# daemon threads: the program ends when the 41st cannot start (a slice of 40 tasks)
THREADS = ("import threading; stop = threading.Event(); "
           "[threading.Thread(target=stop.wait, daemon=True).start() for _ in range(200)]")


@pytest.fixture(scope='module')
def canary(host):
    """The canary user and its site limits (limits.d line 1 nofile, line 2 memlock, and a
    user slice drop-in, line 2 TasksMax), all removed at the end."""
    host.check_output('id %s || useradd -m -s /bin/bash %s' % (USER, USER))
    uid = int(host.check_output('id -u %s' % USER))
    host.check_output("printf '%s - nofile 1024\\n%s - memlock 64\\n' > %s"
                      % (USER, USER, LIMITS))
    dropin = '/etc/systemd/system/user-%d.slice.d/95-gpufleet-canary.conf' % uid
    host.check_output("mkdir -p %s && printf '[Slice]\\nTasksMax=40\\n' > %s && "
                      "systemctl daemon-reload" % (os.path.dirname(dropin), dropin))
    yield dict(uid=uid, dropin=dropin)
    host.run('rm -f %s %s /etc/systemd/system/%s; systemctl daemon-reload; '
             'systemctl stop user@%d.service; rm -f /dev/shm/torch_* 2>/dev/null; true'
             % (LIMITS, dropin, OOM_UNIT, uid))


def login(host, command):
    return host.run("runuser -l %s -c %s" % (USER, json.dumps(command)))


def test_nofile_canary_is_named_with_its_limits_line(host, canary, tmp_path):
    run = login(host, '%s %s --data-dir /tmp/gpufleet-canary-data --tensors-per-sample 2000 '
                      '--num-workers 2 --samples 8 --timeout 60' % (PYTHON, SMOKE))
    record = json.loads([l for l in run.stdout.splitlines() if l.startswith('{')][-1])
    assert record['ok'] is False and record['nofile_soft'] == 1024, record['error']
    found = classify(host, USER, '%s\n%s\n' % (record['traceback'], record['error']), 'login',
                     tmp_path)
    assert (found['verdict'], found['ceiling'], found['value']) == ('limit', 'nofile', '1024'), \
        found['summary']
    assert found['place'] == LIMITS + ':1', found
    assert any(e.startswith('the audit: login nofile is 1024:') for e in found['evidence'])


def test_memlock_canary_is_named_with_its_limits_line(host, canary, tmp_path):
    run = login(host, "python3 -c %s" % json.dumps(MLOCK))
    assert run.rc == 1 and run.stdout.strip() == 'mlock: Cannot allocate memory', run.stdout
    found = classify(host, USER, run.stdout, 'login', tmp_path)
    assert (found['ceiling'], found['place']) == ('memlock', LIMITS + ':2'), found['summary']


def test_pids_canary_is_named_with_the_slice_drop_in(host, canary, tmp_path):
    run = login(host, "python3 -c %s" % json.dumps(THREADS))
    assert run.rc == 1 and "can't start new thread" in run.stderr, run.stdout + run.stderr
    found = classify(host, USER, run.stderr, 'login', tmp_path)
    assert (found['ceiling'], found['value']) == ('pids.max', '40'), found['summary']
    assert found['place'] == canary['dropin'] + ':2', found


def test_a_memory_cgroup_kill_is_named_memory_at_memory_max(host, canary, tmp_path):
    """A job wrapper (a shell that stays, as launchers do) in a service with MemoryMax=64M:
    its python child allocates 512 MiB and the OOM killer takes it. classify_unit reads the
    unit's journal, its memory cgroup's oom_kill (memory.events, or memory.oom_control on
    cgroup v1) and the line that sets MemoryMax."""
    unit = '/etc/systemd/system/%s' % OOM_UNIT
    text = ('[Service]\nType=exec\nUser=%s\nMemorySwapMax=0\nMemoryMax=64M\n'
            'ExecStart=/bin/sh -c \'python3 -c "a = bytearray(512 << 20)"; echo exit=$?; '
            'exec sleep 600\'\n' % USER)
    host.check_output('echo %s | base64 -d > %s && systemctl daemon-reload && '
                      'systemctl restart %s' % (base64.b64encode(text.encode()).decode(), unit,
                                                OOM_UNIT))
    host.check_output('timeout 60 sh -c "until journalctl -u %s -o cat | grep -q ^exit=; do '
                      'sleep 0.5; done"' % OOM_UNIT)
    assert 'exit=137' in host.check_output('journalctl -u %s -o cat' % OOM_UNIT)
    found = classify_unit(host, OOM_UNIT, tmp_path)
    host.run('systemctl stop %s' % OOM_UNIT)
    assert (found['verdict'], found['ceiling']) == ('limit', 'memory'), found['summary']
    assert (found['value'], found['place']) == ('67108864', unit + ':5'), found
    assert any(e.startswith("the job's memory cgroup counted") for e in found['evidence'])
    assert not any('nofile' in fix or 'nproc' in fix for fix in found['fix'])


def test_the_container_job_at_docker_s_default_shm_carries_the_shm_answer(host):
    run = results(host, 'container-before')['contexts']['container']
    found = run['answer']
    assert (found['verdict'], found['ceiling'], found['context']) == ('limit', 'shm', 'docker')
    assert found['value'] == 64 * MB
    assert any('limits_docker_shm_size' in fix for fix in found['fix'])
