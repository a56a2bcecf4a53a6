"""Helpers for the systemd scenario's testinfra tests: the collection on sys.path, probes."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
    limits_model)  # noqa: E402
from scenario_support import checksums, run_module  # noqa: E402,F401  pylint: disable=unused-import

SYSTEM_DROPIN = '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'
USER_DROPIN = '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf'
UNIT = 'gpufleet-sleeper.service'
UNIT_DROPIN = '/etc/systemd/system/%s.d/90-gpufleet-tuning.conf' % UNIT
USER, UID = 'trainer', 1001


def proc_limits(host, pid):
    return limits_model.parse_proc_limits(host.file('/proc/%s/limits' % pid).content_string)


def system_service_limits(host, user=USER):
    """{item: Limit} of a fresh system service running as ``user``."""
    out = host.check_output('systemd-run --wait --pipe --quiet -p User=%s cat /proc/self/limits'
                            % user)
    return limits_model.parse_proc_limits(out)


def as_user(command):
    return "runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%d %s" % (USER, UID, command)


def user_service_limits(host):
    """{item: Limit} of a fresh service of the user's user manager (user@UID's child).

    systemd-run --user --wait/--pipe needs a user D-Bus; the node has none, so the probe runs
    as a plain transient user service and its /proc/MAINPID/limits is read.
    """
    host.run(as_user('systemctl --user stop gpufleet-probe.service'))
    host.check_output(as_user('systemd-run --user --quiet --unit=gpufleet-probe /bin/sleep 60'))
    pid = host.check_output(as_user('systemctl --user show -p MainPID --value gpufleet-probe'))
    try:
        return proc_limits(host, pid.strip())
    finally:
        host.run(as_user('systemctl --user stop gpufleet-probe.service'))


@pytest.fixture
def module(host):
    return lambda name, args, check=False, diff=False: run_module(host, name, args, check, diff)
