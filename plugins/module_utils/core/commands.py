# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one home of what the commands this collection runs share: the C-locale environment
(output parses the same on every node, as ansible.posix sysctl's ``LANG_ENV``), running a
command as a user against their user manager (``XDG_RUNTIME_DIR``) and the search path of the
node's binaries (``find_binary``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

# environ_update for every command whose output is parsed
C_ENV = {'LANG': 'C', 'LC_ALL': 'C'}
# systemctl/systemd-run also page and colour their output unless told not to
LIVE_ENV = dict(C_ENV, SYSTEMD_PAGER='', SYSTEMD_COLORS='0')
#: where the node's daemons and tools are looked for (root's usual PATH, sbin first): the one
#: search path of the files that look for a binary on the node
SEARCH_PATH = ('/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin')


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


def find_binary(name, root=''):
    """The first ``name`` on SEARCH_PATH below ``root`` (its path without ``root``), or None."""
    for directory in SEARCH_PATH:
        path = os.path.join(directory, name)
        if os.path.exists(root + path):
            return path
    return None
