"""Helpers for the default scenario's testinfra tests: the collection on sys.path, probes."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
    limits_model)  # noqa: E402
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit  # noqa: E402

USER, UID = 'trainer', 1001
# What converge.yml sets, in kernel units.
EXPECTED = {'nofile': Limit(16384, 16384), 'nproc': Limit(8192, 8192),
            'memlock': Limit(8 * 1024 ** 2, 8 * 1024 ** 2)}
FILES = ['/etc/security/limits.d/90-gpufleet-tuning.conf',
         '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf',
         '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf',
         '/etc/docker/daemon.json']


def parse(text):
    return limits_model.parse_proc_limits(text)


def profile_part(limits):
    return dict((item, limits[item]) for item in EXPECTED)


def short_of(limits):
    """The sides of the profile's items below what converge.yml asks: [] when ``limits`` meet
    it. A plain profile value is a minimum (issue 31): a context keeps any higher soft or hard
    value it had, so a context may have more than the profile, never less."""
    return ['%s %s %s < %s' % (item, side, getattr(limits[item], side), getattr(want, side))
            for item, want in sorted(EXPECTED.items()) for side in ('soft', 'hard')
            if limits_model.exceeds(getattr(want, side), getattr(limits[item], side))]


def pid1_limit(host, item):
    """PID 1's Limit for ``item``: in these nodes its hard nofile (20000, the sandbox's ceiling)
    is what systemd gave every service and login before the role ran, and what they keep."""
    return parse(host.file('/proc/1/limits').content_string)[item]


def as_user(command):
    return 'runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%d %s' % (USER, UID, command)


def user_service_limits(host):
    """Limits of a fresh transient service of trainer's user manager."""
    host.run(as_user('systemctl --user stop gpufleet-test-probe.service'))
    host.check_output(as_user('systemd-run --user --quiet --unit=gpufleet-test-probe sleep 60'))
    pid = host.check_output(as_user('systemctl --user show -p MainPID --value '
                                    'gpufleet-test-probe')).strip()
    try:
        return parse(host.file('/proc/%s/limits' % pid).content_string)
    finally:
        host.run(as_user('systemctl --user stop gpufleet-test-probe.service'))
