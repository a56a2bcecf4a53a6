# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one home of what the commands this collection runs share: the C-locale environment
(output parses the same on every node, as ansible.posix sysctl's ``LANG_ENV``) and running a
command as a user against their user manager (``XDG_RUNTIME_DIR``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# environ_update for every command whose output is parsed
C_ENV = {'LANG': 'C', 'LC_ALL': 'C'}
# systemctl/systemd-run also page and colour their output unless told not to
LIVE_ENV = dict(C_ENV, SYSTEMD_PAGER='', SYSTEMD_COLORS='0')


def c_env():
    """A copy of :data:`C_ENV` (callers may extend it)."""
    return dict(C_ENV)


def live_env():
    """A copy of :data:`LIVE_ENV`."""
    return dict(LIVE_ENV)


def as_user(user, uid, args):
    """Run ``args`` as ``user`` with their ``XDG_RUNTIME_DIR``, so that ``systemctl --user``
    (or ``systemd-run --user``) reaches their user manager as in their own session; systemctl
    itself finds the manager there. Works without a user D-Bus (no dbus-user-session) and
    without systemd-machined, unlike ``systemctl --user --machine=USER@``."""
    return ['runuser', '-u', user, '--', 'env', 'XDG_RUNTIME_DIR=/run/user/%d' % uid] + list(args)
