# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limits.d entries pam_limits cannot read as a file, judged as Linux-PAM's
parse_config_file does (``fopen(path, "r")``, then ``getline``): one it cannot open fails the
session (PAM_SERVICE_ERR), except a missing one (ENOENT: a dangling link, a missing limits.conf)
from Linux-PAM 1.5.3 on; a directory is opened and no line read. Seen with ``runuser -l`` on
Debian 11 (1.4.0), 12 (1.5.2) and 13 (1.7.0): docs/limit-model.md. Used by pam_limits_conf's
``read_file`` and ``session_failures``. Plain Python, Python 3.8 targets.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

# Linux-PAM 1.5.3 and later skip a limits file fopen() finds missing (ENOENT: a dangling
# link); earlier ones (Debian 11 and 12: 1.4.0, 1.5.2) fail the session on it, as every version
# does on any other file it cannot open (parse_config_file returns PAM_SERVICE_ERR).
PAM_SKIPS_MISSING = (1, 5, 3)
FAILS = 'fails'
EMPTY = 'empty'
SESSIONS = 'su, sudo, runuser, ssh logins, the start of a user manager (user@UID.service)'


class SessionBreaker(IOError):
    """A limits file that pam_limits cannot open, so that every session that runs pam_limits
    fails to open: ``path``, ``reason`` (what it is, a clause after the path) and ``fix``."""

    def __init__(self, path, reason, fix):
        self.path = path
        self.reason = reason
        self.fix = fix
        IOError.__init__(self, '%s %s, so every session that runs pam_limits already fails to '
                               'open (%s). %s' % (path, reason, SESSIONS, fix))


def _skips_missing(pam_version):
    return pam_version is not None and tuple(pam_version) >= PAM_SKIPS_MISSING


def _version_text(pam_version):
    if pam_version is None:
        return 'Linux-PAM before 1.5.3 (this node\'s version is unknown)'
    return 'Linux-PAM %s' % '.'.join(str(part) for part in pam_version)


def entry_problem(path, pam_version=None, limits_conf=None):
    """What pam_limits does with ``path`` when it is not a plain readable file, as
    parse_config_file's fopen(path, "r") and fgets do: None (a file, or nothing there that it
    reads), (FAILS, reason, fix) when it cannot open it and fails every session, or (EMPTY,
    reason, fix) when it opens it and reads no line (a directory: fopen succeeds, reading
    fails). ``limits_conf`` (given) missing fails sessions before Linux-PAM 1.5.3 too.
    ``reason`` is a clause that follows the path (``is a directory: ...``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            return (FAILS, 'cannot be opened (%s): pam_limits fails the session then'
                    % os.strerror(exc.errno), 'Remove it (rm %s) or make it a file' % path)
        if _skips_missing(pam_version):
            return None
        if os.path.islink(path):
            return (FAILS, 'is a symbolic link to %s, which does not exist: pam_limits cannot '
                           'open it, and %s fails the session then (1.5.3 and later skip it)'
                    % (os.readlink(path), _version_text(pam_version)),
                    'Remove the link (rm %s) or point it at a limits file' % path)
        if limits_conf and os.path.abspath(path) == os.path.abspath(limits_conf):
            return (FAILS, 'is missing: %s fails the session then (1.5.3 and later go on '
                           'without it)' % _version_text(pam_version),
                    'Put it back (an empty file will do)')
        return None
    if stat.S_ISDIR(mode):
        return (EMPTY, 'is a directory: pam_limits opens it and reads no line from it',
                'remove it or rename it without .conf')
    if stat.S_ISFIFO(mode):
        return (FAILS, 'is a FIFO: pam_limits waits on it for a writer, so the session hangs',
                'Remove it (rm %s)' % path)
    if stat.S_ISSOCK(mode):
        return (FAILS, 'is a socket: pam_limits cannot open it and fails the session',
                'Remove it (rm %s)' % path)
    return None
