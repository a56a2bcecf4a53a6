# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe commands: each starts a new process in one context and prints the
/proc/PID/limits text it got. The contexts (contexts/) pick theirs; effective runs them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands

PROBE_UNIT = 'gpufleet-effective-probe'
CAT = 'cat /proc/self/limits'


#: login shells that run no command (a service account's): the probe gives its own shell
NO_LOGIN_SHELLS = ('nologin', 'false')


def login_shell(user):
    """``user``'s login shell (the passwd entry), or None where the user is not known."""
    import pwd
    try:
        return pwd.getpwnam(user).pw_shell
    except KeyError:
        return None


def login_command(user, shell=None):
    """A login session of ``user`` through PAM (runuser's ``-l`` stack runs pam_limits). A
    service account whose shell runs nothing (nologin, false: ``shell``, else its passwd
    entry's) gets /bin/sh for the probe's command (``-s``): the same PAM session, so the
    limits its processes get under ``runuser -u`` or ``sudo -u`` are measured rather than a
    probe that fails."""
    shell = login_shell(user) if shell is None else shell
    if shell and shell.rstrip('/').rsplit('/', 1)[-1] in NO_LOGIN_SHELLS:
        return ['runuser', '-l', '-s', '/bin/sh', user, '-c', CAT]
    return ['runuser', '-l', user, '-c', CAT]


def service_command(user):
    """A transient system service running as ``user`` (systemd's defaults, no PAM)."""
    return ['systemd-run', '--wait', '--pipe', '--quiet', '--collect', '-p', 'User=%s' % user,
            'cat', '/proc/self/limits']


#: the program of the user manager's probe service (its comm once the manager exec'd it)
USER_PROBE_PROGRAM = 'sleep'


def has_exec(pid, program):
    """Has process ``pid`` exec'd ``program`` (its comm, /proc/PID/comm)? A service's main
    process is the manager's fork until then, with the manager's own limits: systemd applies
    the unit's ``Limit*=`` in the child just before the exec, and a plain transient service's
    start job completes at the fork. False when the process is gone."""
    try:
        with open('/proc/%s/comm' % pid) as handle:
            return handle.read().strip() == program[:15]
    except (IOError, OSError):
        return False


def user_probe_commands(user, uid, unit):
    """(start, main pid, stop) commands of a transient service of ``user``'s user manager.

    ``systemd-run --user --wait --pipe`` needs a user D-Bus, which many nodes lack; a plain
    transient service is started and its /proc/MAINPID/limits read instead.
    """
    return (commands.as_user(user, uid, ['systemd-run', '--user', '--quiet', '--collect',
                                         '--unit=%s' % unit, USER_PROBE_PROGRAM, '120']),
            commands.as_user(user, uid, ['systemctl', '--user', 'show', '-p', 'MainPID',
                                         '--value', unit]),
            commands.as_user(user, uid, ['systemctl', '--user', 'stop', unit]))


def container_command(runtime, image, run_options=None):
    """A new container of ``runtime`` (docker or podman) from ``image``."""
    return ([runtime, 'run', '--rm', '--network=none'] + list(run_options or [])
            + [image, 'cat', '/proc/self/limits'])
