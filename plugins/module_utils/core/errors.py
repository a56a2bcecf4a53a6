# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error hierarchy of the collection's module_utils.

Every error raised here is an :class:`Error`: ``msg`` is the text a module fails with (it names
what the user wrote, ``profile.nofile: ...``, ``limits[2].value: ...``, or ``file:line:col``),
``where`` the place when it is known apart from the text, and ``kind`` one of:

- ``bad_input``: a value, item or option the caller gave that cannot be accepted;
- ``unparsable``: a file on the host that cannot be read as its format;
- ``refused``: a request a guard refuses (above a ceiling, overridden by a later file);
- ``host``: the host cannot do what was asked (a command failed, a file cannot be written);
- ``not_running``: a host problem where the service a check needs does not run (a probe of a
  stopped unit or user manager): the limits role reports it as "not verified", not as a failure;
- ``busy``: the service runs but cannot start the check now without waiting (a Slurm node that
  runs jobs, or is drained: ``srun --immediate`` was refused): the check is *pending*, reported
  with what is configured and how long it waited, not as a failure.

Roles and callers select on ``kind``, never on the message text.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

BAD_INPUT = 'bad_input'
UNPARSABLE = 'unparsable'
REFUSED = 'refused'
HOST = 'host'
NOT_RUNNING = 'not_running'
BUSY = 'busy'
KINDS = (BAD_INPUT, UNPARSABLE, REFUSED, HOST, NOT_RUNNING, BUSY)


class Error(Exception):
    """Base class: ``msg``, ``where`` (field or file:line, or None) and ``kind``."""

    kind = BAD_INPUT

    def __init__(self, msg, where=None, kind=None):
        super(Error, self).__init__(msg)
        self.msg = msg
        self.where = where
        if kind is not None:
            self.kind = kind

    def __str__(self):
        return str(self.msg)


def kind_of(exc):
    """The kind of any exception: its own for an :class:`Error`, ``host`` for the rest
    (IOError, OSError: the host could not do it)."""
    return exc.kind if isinstance(exc, Error) else HOST
