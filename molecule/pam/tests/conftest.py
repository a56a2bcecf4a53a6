"""Helpers for the PAM scenario's testinfra tests: the collection on sys.path, login probes."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
    limits_model)  # noqa: E402
from scenario_support import checksums, run_module  # noqa: E402,F401  pylint: disable=unused-import


def login_limits(host, user, how='su'):
    """{item: Limit} that a real login session of ``user`` gets."""
    if how == 'su':
        cmd = "su - %s -c 'cat /proc/self/limits'" % user
    else:
        cmd = "runuser -l %s -c 'cat /proc/self/limits'" % user
    return limits_model.parse_proc_limits(host.check_output(cmd))


@pytest.fixture
def limits(host):
    return lambda user, how='su': login_limits(host, user, how)


@pytest.fixture
def module(host):
    return lambda name, args, check=False: run_module(host, name, args, check)[:2]


@pytest.fixture
def pristine_security(host):
    """Snapshot /etc/security before a test that edits it, restore it afterwards."""
    host.check_output('tar -C /etc -cf /root/security-snapshot.tar security')
    yield
    host.check_output('rm -rf /etc/security && tar -C /etc -xf /root/security-snapshot.tar')
