"""Helpers for the docker scenario's testinfra tests: the collection on sys.path, running
collection modules and playbooks on the node through ansible, probing real containers."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SCENARIO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))

from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model  # noqa: E402
from ansible_collections.gpufleet.tuning.plugins.module_utils.limits_model import Limit  # noqa: E402

DAEMON_JSON = '/etc/docker/daemon.json'
PODMAN_DROPIN = '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'
# What converge.yml sets, in kernel units.
EXPECTED = {
    'nofile': Limit(8192, 16384),
    'memlock': Limit(4 * 1024 ** 2, 8 * 1024 ** 2),
    'nproc': Limit(30000, 60000),
}
EXPECTED_SHM = 1024 ** 3
CONVERGE_ARGS = {
    'ulimits': {'nofile': {'soft': 8192, 'hard': 16384},
                'memlock': {'soft': '4MiB', 'hard': '8MiB'},
                'nproc': {'soft': 30000, 'hard': 60000}},
    'shm_size': '1G',
}
PODMAN = 'podman run --rm --network=none localhost/tiny:latest'
DOCKER = 'docker run --rm --network=none tiny:latest'


def container_limits(host, runner):
    return limits_model.parse_proc_limits(host.check_output('%s cat /proc/self/limits' % runner))


def container_shm_kib(host, runner):
    """Size of /dev/shm in KiB, from df in the container."""
    lines = host.check_output('%s df -k /dev/shm' % runner).splitlines()
    return int(lines[-1].split()[1])


def _ansible(host, cmd_tail):
    runner = host.backend.ansible_runner
    cmd = list(cmd_tail)
    if runner.inventory_file:
        cmd[1:1] = ['-i', runner.inventory_file]
    return cmd


def run_module(host, module, args, check=False):
    """Run a collection module on the node through `ansible`; returns (ok, result)."""
    with tempfile.TemporaryDirectory() as tree:
        cmd = _ansible(host, ['ansible', '--tree', tree, '-m', module, '-a', json.dumps(args)])
        if check:
            cmd.append('--check')
        cmd.append(host.backend.host)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        files = os.listdir(tree)
        if proc.returncode not in (0, 2) or not files:
            raise RuntimeError('ansible failed (%d): %s' % (proc.returncode, proc.stdout))
        with open(os.path.join(tree, files[0])) as handle:
            result = json.load(handle)
    result['output'] = proc.stdout
    return proc.returncode == 0, result


def run_playbook(host, playbook):
    cmd = _ansible(host, ['ansible-playbook', os.path.join(SCENARIO, playbook),
                          '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture
def module(host):
    return lambda name, args, check=False: run_module(host, name, args, check)


def checksum(host, path):
    return host.file(path).sha256sum if host.file(path).exists else None
