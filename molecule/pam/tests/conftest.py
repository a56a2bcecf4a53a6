"""Helpers for the PAM scenario's testinfra tests: the collection on sys.path, login probes."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))

from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model  # noqa: E402


def login_limits(host, user, how='su'):
    """{item: Limit} that a real login session of ``user`` gets."""
    if how == 'su':
        cmd = "su - %s -c 'cat /proc/self/limits'" % user
    else:
        cmd = "runuser -l %s -c 'cat /proc/self/limits'" % user
    return limits_model.parse_proc_limits(host.check_output(cmd))


def run_module(host, module, args, check=False):
    """Run a collection module on the node through `ansible`; returns (ok, result).

    ok comes from ansible's exit status (0 ok, 2 failed): the result tree of ansible-core 2.19
    does not carry the "failed" key.
    """
    runner = host.backend.ansible_runner
    with tempfile.TemporaryDirectory() as tree:
        cmd = ['ansible', '--tree', tree, '-m', module, '-a', json.dumps(args)]
        if runner.inventory_file:
            cmd += ['-i', runner.inventory_file]
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
    # ansible prints warnings instead of keeping them in the result tree
    result.setdefault('warnings', [' '.join(proc.stdout.split())])
    return proc.returncode == 0, result


@pytest.fixture
def limits(host):
    return lambda user, how='su': login_limits(host, user, how)


@pytest.fixture
def module(host):
    return lambda name, args, check=False: run_module(host, name, args, check)


@pytest.fixture
def pristine_security(host):
    """Snapshot /etc/security before a test that edits it, restore it afterwards."""
    host.check_output('tar -C /etc -cf /root/security-snapshot.tar security')
    yield
    host.check_output('rm -rf /etc/security && tar -C /etc -xf /root/security-snapshot.tar')


def checksums(host, paths):
    return dict((p, host.file(p).sha256sum if host.file(p).exists else None) for p in paths)
