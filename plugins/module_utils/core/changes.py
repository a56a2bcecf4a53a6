# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planned file changes, shared by the single-format modules and limits_profile.

A planner reads one file, applies the guards and returns a Change: the path, the text before
and after, the module result fields and the warnings. Nothing is written by a planner, so
limits_profile can plan every format, fail on the first guard with nothing changed, and only
then write. ``finish`` is the single-format modules' tail: warnings, diff, check mode, write.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec


class Failure(errors.Error):
    """What a module fails with: ``msg`` for fail_json and the result fields known so far.
    ``kind`` says why (errors.KINDS): a guard's refusal unless the cause says otherwise."""

    kind = errors.REFUSED

    def __init__(self, msg, result=None, kind=None, **extra):
        super(Failure, self).__init__(msg, kind=kind)
        self.result = dict(result or {})
        self.result.update(extra)


class Change(object):
    """One file's planned content. ``new`` None means the file is removed."""

    def __init__(self, path, result, current=None, new=None, changed=None, mode=0o644):
        self.path = path
        self.result = result
        self.current = current          # text, or None when the file does not exist
        self.new = new                  # text, or None to remove the file
        self.changed = (new != current) if changed is None else changed
        self.mode = mode
        self.warnings = []
        self.encode = text_codec.encode_text

    def diff(self):
        return dict(before=self.current or '', after=self.new or '',
                    before_header=self.path if self.current is not None else '/dev/null',
                    after_header=self.path if self.new is not None else '/dev/null')

    def writable(self):
        """None, or why the file cannot be written (checked before anything is written)."""
        directory = os.path.dirname(os.path.abspath(self.path))
        while not os.path.isdir(directory):
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        if not os.access(directory, os.W_OK | os.X_OK):
            return '%s: cannot write: directory %s is not writable (read-only?)' % (
                self.path, directory)
        return None

    def apply(self, backup=False):
        """Write (or remove) the file; records backup_file in the result. Raises Failure."""
        try:
            if self.new is None:
                backup_file = safe_file.remove(self.path, backup=backup)
            else:
                backup_file = safe_file.write_atomic(self.path, self.encode(self.new),
                                                     mode=self.mode, backup=backup)
        except (safe_file.FileError, IOError, OSError) as exc:
            raise Failure(str(exc), self.result)
        if backup_file:
            self.result['backup_file'] = backup_file
        return backup_file

    def undo(self):
        """Put the content from before ``apply`` back (limits_profile's all-or-nothing)."""
        if self.current is None:
            if os.path.exists(self.path):
                os.unlink(self.path)
        else:
            safe_file.write_atomic(self.path, self.encode(self.current), mode=self.mode)


class Written(object):
    """A file an earlier call wrote, as limits_profile's ``files`` records it (``path``,
    ``backup_file``, ``created``): :meth:`undo` puts it back from its backup, or removes it
    when that call created it; duck-typed with Change for :func:`undo_all`."""

    def __init__(self, path, backup_file=None, created=False):
        self.path = path
        self.backup_file = backup_file
        self.created = created

    def undo(self):
        if self.backup_file:
            data = safe_file.read_bytes(self.backup_file)
            if data is None:
                raise OSError('its backup %s is gone' % self.backup_file)
            safe_file.write_atomic(self.path, data,
                                   mode=os.stat(self.backup_file).st_mode & 0o7777)
        elif self.created:
            if os.path.lexists(self.path):
                os.unlink(self.path)
        else:
            raise OSError('no backup of it was made')


def undo_all(written):
    """Put back every file of ``written`` ([(context, Change)], in write order), the last
    written first; returns their paths, each failed one with why."""
    restored = []
    for _context, change in reversed(written):
        try:
            change.undo()
            restored.append(change.path)
        except (IOError, OSError, safe_file.FileError) as exc:
            restored.append('%s (NOT restored: %s)' % (change.path, exc))
    return restored


def warn(module, message):
    """``module.warn`` with the node's name first: Ansible prints a module's warnings without
    the host they come from, and on a fleet a warning that names no host is no use."""
    import socket
    module.warn('%s: %s' % (socket.gethostname(), message))


def finish(module, change, backup=False, after_write=None):
    """Exit a single-format module: warnings, result, diff, then the write unless check mode.
    ``after_write(result)``, when given, runs after a write (what the write owes: a restart)."""
    for message in change.warnings:
        warn(module, message)
    result = change.result
    result['changed'] = change.changed
    if change.changed and module._diff:
        result['diff'] = change.diff()
    if change.changed and not module.check_mode:
        try:
            change.apply(backup)
        except Failure as exc:
            module.fail_json(msg=exc.msg, **exc.result)
        if after_write is not None:
            after_write(result)
    module.exit_json(**result)


def run_guarded(module, planner, *args):
    """``planner(*args)``, turning a Failure into fail_json."""
    try:
        return planner(*args)
    except Failure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
