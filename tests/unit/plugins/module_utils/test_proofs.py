"""The reuse of a Docker probe (module_utils/host/proofs.py, limits_audit's probe_max_age): the key
changes with everything that decides a new container's limits, a proof is reused only under
the same key and within the age, and the Docker context runs a container only when it must.
The proofs are passed in and returned (limits_audit's probe_proofs and proofs), never kept on
the node: nothing here opens a file for writing (issue 31 item 20)."""
import ast
import builtins
import os
import time

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import proofs
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
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


def test_a_proof_is_reused_only_under_the_same_key_within_the_age():
    clock = Clock()
    made = proofs.proof('k1', LIMITS, clock)
    assert made == dict(key='k1', output=LIMITS, proved_at=1000.0)
    clock.value = 1100.0
    assert proofs.reusable(made, 'k1', 3600, clock) == (LIMITS, 1000.0)
    assert proofs.reusable(made, 'k2', 3600, clock) is None     # something changed
    assert proofs.reusable(made, 'k1', 0, clock) is None        # reuse off
    assert proofs.reusable(made, 'k1', 99, clock) is None       # older than asked
    assert proofs.reusable(made, None, 3600, clock) is None     # no key: no reuse
    clock.value = 900.0
    assert proofs.reusable(made, 'k1', 3600, clock) is None     # made "in the future"


@pytest.mark.parametrize('proof', [
    None, 'text', [], {}, dict(key='k1', output=LIMITS), dict(key='k1', proved_at=1000.0),
    dict(key='k1', output=LIMITS, proved_at='soon'), dict(key='k1', output=7, proved_at=1000.0),
    dict(key='k1', output=LIMITS, proved_at=float('nan'))])
def test_a_malformed_proof_is_not_reused(proof):
    assert proofs.reusable(proof, 'k1', 3600, Clock(1100.0)) is None


class NoBinaries(object):
    @staticmethod
    def get_bin_path(name):
        return None


class Prober(effective.Prober):
    """A Prober whose container runs are counted, not started."""

    def __init__(self, max_age, passed=None, output=LIMITS, prove=True):
        effective.Prober.__init__(self, NoBinaries(), max_age=max_age, proofs=passed,
                                  prove=prove)
        self.runs = []
        self.output = output

    def run(self, command):
        self.runs.append(command)
        return self.output


@pytest.fixture
def keyed(monkeypatch):
    current = {'key': 'k1'}
    monkeypatch.setattr(proofs, 'docker_key', lambda command, path: current['key'])
    return current


def test_docker_context_starts_a_container_only_when_it_must(keyed):
    context = docker.CONTEXT
    first = Prober(3600)
    limits = context.run_probe(first, 'root', 0, COMMAND)
    assert limits['nofile'].soft == 16384 and len(first.runs) == 1 and first.reused == {}
    made = first.made['docker']
    assert made['key'] == 'k1' and made['output'] == LIMITS
    again = Prober(3600, {'docker': made})                      # the proof passed back
    assert context.run_probe(again, 'root', 0, COMMAND) == limits
    assert again.runs == [] and again.reused == {'docker': made['proved_at']}
    assert again.made == {'docker': made}                       # kept as it was
    keyed['key'] = 'k2'                                          # e.g. containerd restarted
    changed = Prober(3600, {'docker': made})
    context.run_probe(changed, 'root', 0, COMMAND)
    assert len(changed.runs) == 1 and changed.reused == {}
    assert changed.made['docker']['key'] == 'k2'
    fresh = Prober(0, {'docker': changed.made['docker']})        # probe_max_age 0
    context.run_probe(fresh, 'root', 0, COMMAND)
    assert len(fresh.runs) == 1 and fresh.reused == {}


def test_a_proof_older_than_the_age_is_probed_afresh(keyed):
    old = dict(key='k1', output=LIMITS, proved_at=time.time() - 7200)
    prober = Prober(3600, {'docker': old})
    docker.CONTEXT.run_probe(prober, 'root', 0, COMMAND)
    assert len(prober.runs) == 1 and prober.reused == {}
    assert prober.made['docker']['proved_at'] > old['proved_at']


def test_a_passed_proof_without_limits_is_probed_afresh(keyed):
    bad = dict(key='k1', output='oops', proved_at=time.time())
    prober = Prober(3600, {'docker': bad})
    docker.CONTEXT.run_probe(prober, 'root', 0, COMMAND)
    assert len(prober.runs) == 1 and prober.made['docker']['output'] == LIMITS


def test_without_reuse_or_proofs_no_key_is_computed(monkeypatch):
    def no_key(command, path):
        raise AssertionError('no key wanted')
    monkeypatch.setattr(proofs, 'docker_key', no_key)
    prober = Prober(0, prove=False)
    docker.CONTEXT.run_probe(prober, 'root', 0, COMMAND)
    assert len(prober.runs) == 1 and prober.made == {}


def test_a_key_that_changes_during_the_probe_gives_no_proof(keyed):
    class Restarting(Prober):
        def run(self, command):
            keyed['key'] = 'after-restart'
            return Prober.run(self, command)
    prober = Restarting(3600)
    docker.CONTEXT.run_probe(prober, 'root', 0, COMMAND)
    assert prober.made == {}


def test_a_probe_without_limits_fails_and_gives_no_proof(keyed):
    prober = Prober(3600, output='oops')
    with pytest.raises(effective.ProbeError):
        docker.CONTEXT.run_probe(prober, 'root', 0, COMMAND)
    assert prober.made == {}


# issue 31 item 20: limits_audit is read-only, so the proofs live on the controller and no
# code path of proofs.py (or of the Docker context's probe) writes a file on the node.
WRITERS = ('write_atomic', 'makedirs', 'mkdir', 'rename', 'replace', 'remove', 'unlink',
           'chmod', 'chown', 'fdopen', 'mkstemp', 'NamedTemporaryFile', 'copyfile', 'move')


def test_proofs_has_no_write_call():
    """Statically: every open() of proofs.py reads (its mode a literal r or rb, or _read's
    ``mode`` parameter whose callers pass only those), and nothing else that writes is called."""
    with open(proofs.__file__) as handle:
        tree = ast.parse(handle.read())
    modes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, 'id', '')
            assert name not in WRITERS, (node.lineno, name)
            if name == 'open' and isinstance(node.func, ast.Name):
                mode = node.args[1] if len(node.args) > 1 else None
                assert mode is None or isinstance(mode, ast.Name) and mode.id == 'mode' \
                    or isinstance(mode, ast.Constant) and mode.value in ('r', 'rb'), node.lineno
                assert not node.keywords, node.lineno
            if name == '_read':
                modes.extend(a.value for a in node.args[1:])
    assert set(modes) <= {'r', 'rb'}
    assert 'safe_file' not in [getattr(n, 'name', None) for n in ast.walk(tree)
                               if isinstance(n, ast.alias)]
    assert not hasattr(proofs, 'Store') and not hasattr(proofs, 'CACHE_DIR')


def test_no_code_path_opens_a_file_for_writing(node, monkeypatch):
    """At run time: the key, the reuse and the Docker context's probe (fresh, reused, a changed
    key) open files for reading only and call nothing that writes."""
    opened = []
    real_open = open

    def spy_open(path, mode='r', *args, **kwargs):
        opened.append((str(path), mode))
        return real_open(path, mode, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError('a write on the node: %r' % (args,))
    monkeypatch.setattr(builtins, 'open', spy_open)
    for name in ('rename', 'replace', 'remove', 'unlink', 'mkdir', 'makedirs', 'chmod',
                 'open', 'write'):
        monkeypatch.setattr(os, name, refuse)
    proc, daemon_json = node
    root = str(proc.parent)
    real_key = proofs.docker_key
    monkeypatch.setattr(proofs, 'docker_key',
                        lambda command, path: real_key(command, str(daemon_json), root=root))
    first = Prober(3600)
    docker.CONTEXT.run_probe(first, 'root', 0, COMMAND)
    again = Prober(3600, dict(first.made))
    docker.CONTEXT.run_probe(again, 'root', 0, COMMAND)
    assert again.runs == [] and again.reused
    (proc / '200' / 'limits').write_text(LIMITS.replace('16384                16384',
                                                        '1024                 16384'))
    changed = Prober(3600, dict(first.made))
    docker.CONTEXT.run_probe(changed, 'root', 0, COMMAND)
    assert len(changed.runs) == 1
    assert proofs.reusable(first.made['docker'], 'other', 3600) is None
    assert opened and all(mode in ('r', 'rb') for _path, mode in opened), opened


class Host(object):
    check_mode = True

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/usr/bin/' + name


def test_the_probe_result_returns_the_proof_and_reuses_a_passed_one(keyed, monkeypatch):
    """effective.probe (limits_audit's call): ``proofs`` in the result, ``probe_proofs`` in."""
    runs = []
    monkeypatch.setattr(effective.Prober, 'run', lambda self, command: runs.append(1) or LIMITS)
    params = dict(contexts=['docker'], user='root', docker_image='tiny:latest',
                  podman_image=None, run_options=[], units=[], expect={'nofile': 16384},
                  baseline=None, timeout=5, probe_max_age=3600, prove=True)
    first = effective.probe(Host(), params)
    assert runs == [1] and first['proofs']['docker']['key'] == 'k1'
    assert 'reused' not in first['contexts']['docker']
    again = effective.probe(Host(), dict(params, probe_proofs=first['proofs']))
    assert runs == [1] and again['proofs'] == first['proofs']
    assert again['contexts']['docker']['reused']['age_s'] < 60
    assert again['contexts']['docker']['limits'] == first['contexts']['docker']['limits']
    plain = effective.probe(Host(), dict(params, probe_max_age=0, prove=False,
                                         probe_proofs=first['proofs']))
    assert runs == [1, 1] and 'proofs' not in plain               # effective_limits' result
