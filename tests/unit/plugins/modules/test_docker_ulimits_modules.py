"""The docker_ulimits, podman_ulimits and their _info modules, run as Ansible runs them (a
Python process with an arguments file) against files in a temporary directory."""
import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
COLLECTIONS = os.path.join(ROOT, 'build', 'collections')


def run_module(tmp_path, name, args, check=False, diff=True):
    argsfile = tmp_path / ('args-%s.json' % name)
    params = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    argsfile.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': params}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', name + '.py'),
                           str(argsfile)], env=env, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    start = proc.stdout.find('{')
    assert start >= 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout[start:])
    # ansible-core 2.19 returns warnings as objects; keep their messages.
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w
                          for w in result.get('warnings', [])]
    return result


def digest(path):
    with open(str(path), 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


FOREIGN = """{
  "storage-driver": "vfs",
  "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
  "log-opts": {"max-size": "10m"},
  "registry-mirrors": ["https://mirror.example"]
}
"""
ULIMITS = {'nofile': {'soft': 4096, 'hard': 8192}, 'memlock': 'unlimited', 'nproc': 10000}


@pytest.fixture
def daemon_json(tmp_path):
    path = tmp_path / 'etc' / 'docker' / 'daemon.json'
    path.parent.mkdir(parents=True)
    path.write_text(FOREIGN)
    os.chmod(str(path), 0o600)
    return path


def test_docker_merge_check_diff_idempotence_backup(tmp_path, daemon_json):
    args = {'path': str(daemon_json), 'ulimits': ULIMITS, 'shm_size': '2G', 'backup': True}
    before = digest(daemon_json)

    checked = run_module(tmp_path, 'docker_ulimits', args, check=True)
    assert checked['changed'] is True and checked['restart_required'] is True
    assert digest(daemon_json) == before, 'check mode must not write'
    assert '"default-shm-size": "2G"' in checked['diff']['after']
    assert checked['diff']['before'] == FOREIGN

    result = run_module(tmp_path, 'docker_ulimits', args)
    assert result['changed'] is True, result
    data = json.loads(daemon_json.read_text())
    assert list(data) == ['storage-driver', 'runtimes', 'log-opts', 'registry-mirrors',
                          'default-ulimits', 'default-shm-size']
    assert data['runtimes'] == {'nvidia': {'path': 'nvidia-container-runtime',
                                           'runtimeArgs': []}}
    assert data['default-ulimits'] == {
        'nofile': {'Name': 'nofile', 'Soft': 4096, 'Hard': 8192},
        'memlock': {'Name': 'memlock', 'Soft': -1, 'Hard': -1},
        'nproc': {'Name': 'nproc', 'Soft': 10000, 'Hard': 10000}}
    assert data['default-shm-size'] == '2G'
    assert stat.S_IMODE(os.stat(str(daemon_json)).st_mode) == 0o600, 'mode must be kept'
    assert open(result['backup_file']).read() == FOREIGN
    assert set(result['running_containers']) == {'count', 'live_restore'}

    after = digest(daemon_json)
    again = run_module(tmp_path, 'docker_ulimits', dict(args, shm_size='2048M'))
    assert again['changed'] is False and again['restart_required'] is False
    assert 'backup_file' not in again
    assert digest(daemon_json) == after


def test_docker_creates_file_and_directory(tmp_path):
    path = tmp_path / 'new' / 'docker' / 'daemon.json'
    result = run_module(tmp_path, 'docker_ulimits', {'path': str(path), 'shm_size': '1G'})
    assert result['changed'] is True
    assert path.read_text() == '{\n  "default-shm-size": "1G"\n}\n'
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644


@pytest.mark.parametrize('content, args, message', [
    ('{\n  "storage-driver": "vfs"\n  "debug": true\n}\n', {'ulimits': {'nofile': 1024}},
     r'daemon.json:3:3: invalid JSON'),
    ('{\n  "default-ulimits": {\n    "core": {"Soft": 0, "Hard": 0}\n  }\n}\n',
     {'ulimits': {'nofile': 1024}}, r'daemon.json:3:5: default-ulimits.core: "Name" must be'),
    (FOREIGN, {'ulimits': {'nofile': {'soft': 9000, 'hard': 100}}},
     r'^ulimits.nofile: soft 9000 is above hard 100'),
    (FOREIGN, {'ulimits': {'nofile': 'lots'}}, r'^ulimits.nofile: nofile needs a whole number'),
    (FOREIGN, {'ulimits': {'fds': 1}}, r"^ulimits.fds: unknown limit item 'fds'"),
    (FOREIGN, {'ulimits': {'maxlogins': 10}}, r'not a resource limit'),
    (FOREIGN, {'ulimits': {'nofile': {'hard': 10000}}}, r'^ulimits.nofile: give both soft and hard'),
    (FOREIGN, {'ulimits': {'nofile': 0}}, r'^ulimits.nofile: soft nofile 0 is below the floor'),
    (FOREIGN, {'shm_size': 'huge'}, r"^shm_size: 'huge' is not a size"),
])
def test_docker_refusals_leave_the_file_untouched(tmp_path, daemon_json, content, args, message):
    daemon_json.write_text(content)
    before = digest(daemon_json)
    result = run_module(tmp_path, 'docker_ulimits', dict(args, path=str(daemon_json)))
    assert result.get('failed') is True, result
    import re
    assert re.search(message, result['msg']), result['msg']
    assert digest(daemon_json) == before
    assert sorted(os.listdir(str(daemon_json.parent))) == ['daemon.json'], 'no temp files left'


def test_docker_repairs_an_entry_it_replaces(tmp_path, daemon_json):
    daemon_json.write_text('{"default-ulimits": {"nofile": {"Soft": 1, "Hard": 2}}}')
    result = run_module(tmp_path, 'docker_ulimits',
                        {'path': str(daemon_json), 'ulimits': {'nofile': 2048}})
    assert result['changed'] is True
    assert any('replacing the unreadable' in w for w in result['warnings'])
    assert json.loads(daemon_json.read_text())['default-ulimits']['nofile']['Name'] == 'nofile'


def test_docker_missing_side_from_existing_entry(tmp_path, daemon_json):
    daemon_json.write_text('{"default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1024, '
                           '"Hard": 2048}}}')
    run_module(tmp_path, 'docker_ulimits',
               {'path': str(daemon_json), 'ulimits': {'nofile': {'hard': 4096}}})
    assert json.loads(daemon_json.read_text())['default-ulimits']['nofile'] == \
        {'Name': 'nofile', 'Soft': 1024, 'Hard': 4096}


def test_docker_info_reports_sources_and_problems(tmp_path, daemon_json):
    daemon_json.write_text('{\n  "live-restore": true,\n  "default-ulimits": {\n'
                           '    "nofile": {"Name": "nofile", "Soft": 10, "Hard": 20}\n  },\n'
                           '  "default-shm-size": "1G"\n}\n')
    info = run_module(tmp_path, 'docker_ulimits_info', {'path': str(daemon_json)})
    assert info['changed'] is False
    assert info['config']['default_ulimits']['nofile'] == {
        'soft': 10, 'hard': 20, 'human': '10:20', 'source': str(daemon_json) + ':4:5'}
    assert info['config']['shm_size'] == {'value': '1G', 'bytes': 1024 ** 3,
                                          'source': str(daemon_json) + ':6:3'}
    assert info['config']['live_restore'] is True
    assert info['problems'] == [] and info['flag_conflicts'] == []
    # which file dockerd reads, and why (module_utils/runtimes/dockerd_config.py)
    assert set(info['config_file']) == {'path', 'source'}
    daemon_json.write_text('{"a": }')
    info = run_module(tmp_path, 'docker_ulimits_info', {'path': str(daemon_json)})
    assert info['problems'] == [str(daemon_json) + ':1:7: invalid JSON: Expecting value']


# --- Podman --------------------------------------------------------------------------------

DROPIN_FOREIGN = """# written by hand, keep me
[engine]
events_logger = "file"   # journald is not there

[containers]
log_size_max = -1
default_ulimits = [
  "core=0:0",   # no cores
]
"""


def test_podman_merge_check_diff_idempotence(tmp_path):
    path = tmp_path / 'containers.conf.d' / '90-gpufleet-tuning.conf'
    path.parent.mkdir()
    path.write_text(DROPIN_FOREIGN)
    args = {'path': str(path), 'ulimits': ULIMITS, 'shm_size': '2G'}
    before = digest(path)
    checked = run_module(tmp_path, 'podman_ulimits', args, check=True)
    assert checked['changed'] is True and digest(path) == before
    result = run_module(tmp_path, 'podman_ulimits', args)
    assert result['changed'] is True
    assert result['default_ulimits'] == ['core=0:0', 'nofile=4096:8192', 'memlock=-1:-1',
                                         'nproc=10000:10000']
    assert result['restart_required'] is False
    assert path.read_text() == (
        '# written by hand, keep me\n[engine]\nevents_logger = "file"   # journald is not there\n'
        '\n[containers]\nshm_size = "2147483648"\nlog_size_max = -1\ndefault_ulimits = '
        '["core=0:0", "nofile=4096:8192", "memlock=-1:-1", "nproc=10000:10000"]\n')
    after = digest(path)
    again = run_module(tmp_path, 'podman_ulimits', args)
    assert again['changed'] is False and digest(path) == after


def test_podman_creates_the_dropin(tmp_path):
    path = tmp_path / 'etc' / 'containers' / 'containers.conf.d' / '90-gpufleet-tuning.conf'
    result = run_module(tmp_path, 'podman_ulimits', {'path': str(path), 'ulimits': {'nofile': 2048}})
    assert result['changed'] is True
    assert path.read_text() == '[containers]\ndefault_ulimits = ["nofile=2048:2048"]\n'


@pytest.mark.parametrize('content, args, message', [
    ('[containers]\ndefault_ulimits = ["core=0:0", "nofile=many"]\n', {'ulimits': {'nproc': 5000}},
     r"90-gpufleet-tuning.conf:2:32: default_ulimits: 'nofile=many' is not NAME=SOFT"),
    ('[containers]\ndefault_ulimits = ["core=0:0",\n', {'ulimits': {'nproc': 5000}},
     r'90-gpufleet-tuning.conf:2:19: unterminated array'),
    ('[containers]\ndefault_ulimits = [1024]\n', {'ulimits': {'nproc': 5000}},
     r'90-gpufleet-tuning.conf:2:20: default_ulimits holds strings only'),
    ('[containers]\nshm_size = "lots"\n', {'shm_size': '1G', 'ulimits': {'nofile': 'x'}},
     r'^ulimits.nofile'),
    ('', {'ulimits': {'nofile': {'soft': 10, 'hard': 5}}}, r'soft 10 is above hard 5'),
])
def test_podman_refusals_leave_the_file_untouched(tmp_path, content, args, message):
    import re
    path = tmp_path / '90-gpufleet-tuning.conf'
    path.write_text(content)
    before = digest(path)
    result = run_module(tmp_path, 'podman_ulimits', dict(args, path=str(path)))
    assert result.get('failed') is True, result
    assert re.search(message, result['msg']), result['msg']
    assert digest(path) == before


def test_podman_info_reads_the_given_config(tmp_path):
    conf = tmp_path / 'containers.conf'
    conf.write_text('[containers]\ndefault_ulimits = ["nofile=10:20"]\nshm_size = "1g"\n')
    # Podman reads "1g" as 10**9 bytes (powers of 1000 in containers.conf).
    argsfile_env = dict(os.environ)
    os.environ['CONTAINERS_CONF'] = str(conf)
    try:
        info = run_module(tmp_path, 'podman_ulimits_info', {})
    finally:
        os.environ.clear()
        os.environ.update(argsfile_env)
    assert info['files'] == [str(conf)]
    assert info['config']['default_ulimits']['nofile'] == {
        'soft': 10, 'hard': 20, 'human': '10:20', 'source': str(conf) + ':2:20'}
    assert info['config']['shm_size'] == {'bytes': 10 ** 9, 'source': str(conf) + ':3:12'}
    assert info['config']['default_ulimits_append'] is None     # no {append=...} given
