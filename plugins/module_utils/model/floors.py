# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is never written, and what is never lowered without being asked.

* ``FLOORS``: per item, the lowest soft or hard value the collection writes, with or without
  ``force``; below it logins, sudo, sshd or systemd stop working (docs/limit-model.md says why
  for each). ``values.check_floor`` refuses a value below it, naming the field.
* ``keep`` (model/keep.py): a profile value is a minimum unless the profile names the side.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


_KIB = 1024
_MIB = 1024 * 1024
_GIB = 1024 * _MIB

#: item -> (floor in kernel units, why). Items not listed have no floor (0 is a sane value:
#: core 0 turns core dumps off; nice, rtprio and priority 0 are the defaults).
FLOORS = {
    'nofile': (1024, "the kernel's default soft limit, which sshd, sudo and systemd are built "
                     'for; a profile of nofile 0 stopped every login, sudo included'),
    'nproc': (1024, 'it counts every process and thread of the user across all sessions: at 1 '
                    'no login can start a program'),
    'stack': (8 * _MIB, "the kernel's default soft stack size, which programs are built and "
                        'tested with'),
    'memlock': (64 * _KIB, "the kernel's default before Linux 5.16"),
    'as': (_GIB, 'programs reserve address space when they start (CUDA far more): below it they '
                 'fail to start'),
    'data': (_GIB, 'programs allocate their heap against it: below it they fail to start'),
    'fsize': (_GIB, 'a write past it kills the writer with SIGXFSZ (logs, downloads, '
                    'checkpoints)'),
    'cpu': (3600, 'a process past it is killed (SIGXCPU, then SIGKILL): a login shell or user '
                  'manager that lives for days reaches any small value'),
    'sigpending': (1024, 'signals queued beyond it fail (sigqueue returns EAGAIN)'),
    'maxlogins': (4, 'pam_limits refuses every login of the user at 0 and a second session at '
                     '1'),
    'maxsyslogins': (4, 'pam_limits refuses every login on the host at 0 and a second session '
                        'at 1'),
}


def floor_of(item):
    """(floor, why) for ``item`` (an Item or its name), or (None, None)."""
    name = item if isinstance(item, str) else item.name
    return FLOORS.get(name, (None, None))
