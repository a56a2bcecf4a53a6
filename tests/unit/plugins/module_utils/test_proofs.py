"""The reuse of a Docker probe (module_utils/proofs.py, limits_audit's probe_max_age): the key
changes with everything that decides a new container's limits, a proof is reused only under
the same key and within the age, and the Docker context runs a container only when it must."""
import os
import stat

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import effective, proofs
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker

LIMITS = ('Limit                     Soft Limit           Hard Limit           Units     \n'
          'Max open files            16384                16384                files     \n'
          'Max processes             8192                 8192                 processes \n')


def fake_process(proc, pid, comm, start='1000', limits=LIMITS):
    base = proc / str(pid)
    base.mkdir(parents=True, exist_ok=True)
    (base / 'comm').write_text(comm + '\n')
    fields = ['S'] + ['0'] * 18 + [start] + ['0'] * 10
    (base / 'stat').write_text('%d (%s) %s\n' % (pid, comm, ' '.join(fields)))
    (base / 'limits').write_text(limits)


@pytest.fixture
def node(tmp_path):
    proc = tmp_path / 'proc'
    fake_process(proc, 100, 'dockerd')
    fake_process(proc, 200, 'containerd')
    fake_process(proc, 300, 'bash')
    (proc / 'sys' / 'kernel' / 'random').mkdir(parents=True)
    (proc / 'sys' / 'kernel' / 'random' / 'boot_id').write_text('boot-1\n')
    (proc / 'sys' / 'fs').mkdir(parents=True)
    (proc / 'sys' / 'fs' / 'nr_open').write_text('1048576\n')
    daemon_json = tmp_path / 'daemon.json'
    daemon_json.write_text('{"default-ulimits": {}}\n')
    return proc, daemon_json


COMMAND = ['docker', 'run', '--rm', '--network=none', 'tiny:latest', 'cat', '/proc/self/limits']


def key(node, command=None):
    proc, daemon_json = node
    return proofs.docker_key(command or COMMAND, str(daemon_json), root=str(proc.parent))


def test_key_is_stable_and_names_the_daemons(node):
    first = key(node)
    assert first and first == key(node)
    assert [p[0] for p in proofs.daemons(root=str(node[0].parent))['dockerd']] == [100]
    assert [p[0] for p in proofs.daemons(root=str(node[0].parent))['containerd']] == [200]


@pytest.mark.parametrize('change', [
    'restart dockerd', 'restart containerd', 'prlimit containerd', 'prlimit dockerd',
    'edit daemon.json', 'another image', 'another option', 'reboot', 'sysctl',
    'a second containerd'])
def test_key_changes_with_what_decides_a_new_container(node, change):
    proc, daemon_json = node
    before = key(node)
    command = COMMAND
    if change == 'restart dockerd':
        (proc / '100').rename(proc / '101')
        fake_process(proc, 101, 'dockerd', start='5000')
    elif change == 'restart containerd':
        fake_process(proc, 200, 'containerd', start='5000')      # the same PID, a new start
    elif change.startswith('prlimit'):
        pid = 200 if change.endswith('containerd') else 100
        (proc / str(pid) / 'limits').write_text(LIMITS.replace('16384                16384',
                                                               '1024                 16384'))
    elif change == 'edit daemon.json':
        daemon_json.write_text('{"default-ulimits": {"nofile": {}}}\n')
    elif change == 'another image':
        command = COMMAND[:4] + ['tiny:v2'] + COMMAND[5:]
    elif change == 'another option':
        command = COMMAND[:4] + ['--ulimit=nofile=1:1'] + COMMAND[4:]
    elif change == 'reboot':
        (proc / 'sys' / 'kernel' / 'random' / 'boot_id').write_text('boot-2\n')
    elif change == 'sysctl':
        (proc / 'sys' / 'fs' / 'nr_open').write_text('2097152\n')
    elif change == 'a second containerd':
        fake_process(proc, 400, 'containerd')
    assert key(node, command) != before


def test_no_dockerd_no_key(node):
    proc, daemon_json = node
    (proc / '100' / 'comm').write_text('sleep\n')
    assert proofs.docker_key(COMMAND, str(daemon_json), root=str(proc.parent)) is None


class Clock(object):
    def __init__(self, now=1000.0):
        self.value = now

    def __call__(self):
        return self.value


def test_store_reuses_only_the_same_key_within_the_age(tmp_path):
    clock = Clock()
    store = proofs.Store(str(tmp_path / 'cache'), now=clock)
    assert store.store('docker', 'k1', LIMITS)
    path = tmp_path / 'cache' / 'probe-docker.json'
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(tmp_path / 'cache')).st_mode) == 0o700
    clock.value = 1100.0
    assert store.load('docker', 'k1', 3600) == (LIMITS, 1000.0)
    assert store.load('docker', 'k2', 3600) is None             # something changed
    assert store.load('docker', 'k1', 0) is None                # reuse off
    assert store.load('docker', 'k1', 99) is None               # older than asked
    assert store.load('docker', None, 3600) is None             # no key: no reuse
    clock.value = 900.0
    assert store.load('docker', 'k1', 3600) is None             # made "in the future"
    path.write_text('{not json')
    assert store.load('docker', 'k1', 3600) is None
    assert not store.store('docker', None, LIMITS)


def test_store_that_cannot_write_says_so(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    assert not proofs.Store(str(blocker / 'cache')).store('docker', 'k', LIMITS)


class NoBinaries(object):
    @staticmethod
    def get_bin_path(name):
        return None


class Prober(effective.Prober):
    """A Prober whose container runs are counted, not started."""

    def __init__(self, max_age, record, output=LIMITS):
        effective.Prober.__init__(self, NoBinaries(), max_age=max_age, record=record)
        self.runs = []
        self.output = output

    def run(self, command):
        self.runs.append(command)
        return self.output


@pytest.fixture
def keyed(monkeypatch, tmp_path):
    current = {'key': 'k1'}
    monkeypatch.setattr(proofs, 'CACHE_DIR', str(tmp_path / 'cache'))
    monkeypatch.setattr(proofs, 'docker_key', lambda command, path: current['key'])
    return current


def test_docker_context_starts_a_container_only_when_it_must(keyed):
    context = docker.CONTEXT
    first = Prober(3600, True)
    limits = context.run_probe(first, 'root', 0, COMMAND)
    assert limits['nofile'].soft == 16384 and len(first.runs) == 1 and first.reused == {}
    again = Prober(3600, True)
    assert context.run_probe(again, 'root', 0, COMMAND) == limits
    assert again.runs == [] and list(again.reused) == ['docker']
    keyed['key'] = 'k2'                                          # e.g. containerd restarted
    changed = Prober(3600, True)
    context.run_probe(changed, 'root', 0, COMMAND)
    assert len(changed.runs) == 1 and changed.reused == {}
    fresh = Prober(0, False)                                     # probe_max_age 0
    context.run_probe(fresh, 'root', 0, COMMAND)
    assert len(fresh.runs) == 1 and fresh.reused == {}


def test_check_mode_reads_but_does_not_record(keyed, tmp_path):
    context = docker.CONTEXT
    context.run_probe(Prober(3600, False), 'root', 0, COMMAND)
    assert not (tmp_path / 'cache' / 'probe-docker.json').exists()


def test_a_key_that_changes_during_the_probe_is_not_recorded(keyed, tmp_path):
    class Restarting(Prober):
        def run(self, command):
            keyed['key'] = 'after-restart'
            return Prober.run(self, command)
    context = docker.CONTEXT
    context.run_probe(Restarting(3600, True), 'root', 0, COMMAND)
    assert not (tmp_path / 'cache' / 'probe-docker.json').exists()


def test_a_probe_without_limits_fails_and_is_not_recorded(keyed, tmp_path):
    with pytest.raises(effective.ProbeError):
        docker.CONTEXT.run_probe(Prober(3600, True, output='oops'), 'root', 0, COMMAND)
    assert not (tmp_path / 'cache' / 'probe-docker.json').exists()
