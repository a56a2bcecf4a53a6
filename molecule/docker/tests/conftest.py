"""Helpers for the docker scenario's testinfra tests: the collection on sys.path, running
collection modules and playbooks on the node through ansible, probing real containers."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SCENARIO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
    limits_model)  # noqa: E402
import scenario_support as support  # noqa: E402
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit  # noqa: E402

DAEMON_JSON = '/etc/docker/daemon.json'
PODMAN_DROPIN = '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'
# Where podman_ulimits writes on a Podman before 3.3, which reads no drop-in (Debian 11).
PODMAN_MAIN = '/etc/containers/containers.conf'
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


def run_module(host, module, args, check=False):
    """Run a collection module on the node; returns (ok, result), result['output'] printed."""
    return support.run_module(host, module, args, check)[:2]


def run_playbook(host, playbook):
    return support.run_playbook(host, os.path.join(SCENARIO, playbook))


@pytest.fixture
def module(host):
    return lambda name, args, check=False: run_module(host, name, args, check)


def podman_reads_dropins(host):
    version = host.check_output('podman --version').split()[-1]
    return tuple(int(part) for part in version.split('.')[:2]) >= (3, 3)


@pytest.fixture(scope='module')
def podman_conf(host):
    """The file our Podman settings are in: the drop-in, or where Podman reads none (before
    3.3), /etc/containers/containers.conf (tasks/podman_conf.yml)."""
    return PODMAN_DROPIN if podman_reads_dropins(host) else PODMAN_MAIN


def checksum(host, path):
    return host.file(path).sha256sum if host.file(path).exists else None
