"""Helpers for the limits_refusals scenario: run the role with extra variables, probes."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SCENARIO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
    limits_model)  # noqa: E402
from scenario_support import ansible_command, checksums  # noqa: E402

USER = 'trainer'
FILES = ['/etc/security/limits.d/90-gpufleet-tuning.conf',
         '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf',
         '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf',
         '/etc/docker/daemon.json']
BASE = {'limits_contexts': ['pam', 'systemd_system', 'systemd_user', 'docker'],
        'limits_verify_user': USER, 'limits_verify_docker_image': 'tiny:latest'}
BASELINE = {'nofile': {'soft': 16384, 'hard': 16384}, 'nproc': 8192, 'memlock': '8MiB'}


def run_role(host, **variables):
    """Run role.yml with BASE plus ``variables``; returns (rc, whitespace-normalised output)."""
    extra = dict(BASE, **variables)
    cmd = ansible_command(host, ['ansible-playbook', os.path.join(SCENARIO, 'role.yml'),
                                 '-e', json.dumps(extra), '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, ' '.join(proc.stdout.replace('\\n', ' ').split())


def login_limits(host, user=USER):
    return limits_model.parse_proc_limits(
        host.check_output("runuser -l %s -c 'cat /proc/self/limits'" % user))


def service_limits(host, user=USER):
    return limits_model.parse_proc_limits(host.check_output(
        'systemd-run --wait --pipe --quiet -p User=%s cat /proc/self/limits' % user))


def container_limits(host):
    return limits_model.parse_proc_limits(host.check_output(
        'docker run --rm --network=none tiny:latest cat /proc/self/limits'))


def as_user(command):
    return 'runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/1001 %s' % (USER, command)


def user_service_limits(host):
    """Limits of a fresh transient service of trainer's user manager (after restarting the
    manager, so that its own PAM session reads the limits files as they are now)."""
    host.check_output('systemctl restart user@1001.service')
    host.run(as_user('systemctl --user stop gpufleet-test-probe.service'))
    host.check_output(as_user('systemd-run --user --quiet --unit=gpufleet-test-probe sleep 60'))
    pid = host.check_output(as_user('systemctl --user show -p MainPID --value '
                                    'gpufleet-test-probe')).strip()
    try:
        return limits_model.parse_proc_limits(host.file('/proc/%s/limits' % pid).content_string)
    finally:
        host.run(as_user('systemctl --user stop gpufleet-test-probe.service'))


@pytest.fixture
def unchanged(host):
    """Asserts after the test that no managed file changed (sha256 and mtime)."""
    before = checksums(host, FILES)
    mtimes = dict((p, host.file(p).mtime) for p in FILES)
    yield
    assert checksums(host, FILES) == before
    assert dict((p, host.file(p).mtime) for p in FILES) == mtimes


@pytest.fixture
def site_file(host):
    """Writes a foreign limits.d file for the test; removed afterwards."""
    written = []

    def write(name, text):
        path = '/etc/security/limits.d/' + name
        host.check_output("printf '%%s' '%s' > %s" % (text, path))
        written.append(path)
        return path
    yield write
    for path in written:
        host.run('rm -f %s' % path)
