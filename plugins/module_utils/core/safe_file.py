# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe reads and atomic writes of configuration files, shared by every module.

Writes go to a temporary file in the target's own directory (same file system), which gets the
target's owner and mode (or the given mode for a new file), is fsync'ed, and is then renamed over
the target: readers see the old file or the new one, never a partial one. Plain Python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import shutil
import tempfile
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors


class FileError(errors.Error):
    """A file that cannot be read or written; the message names the path."""

    kind = errors.HOST


def read_bytes(path):
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise FileError('%s: cannot read: %s' % (path, exc.strerror or exc))


def mode_of(path, default=0o644):
    """The permission bits of the file at ``path``, or ``default`` when it is not there: the
    mode a rewrite keeps (the one helper for this fact)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return default


def backup_path(path):
    return '%s.%s.%s~' % (path, os.getpid(), time.strftime('%Y-%m-%d@%H:%M:%S'))


STALE_AFTER = 3600
#: backups of one file kept: the oldest (the file as it was before the collection's first
#: write, which a way back restores from) and the newest ones up to this count
KEEP_BACKUPS = 5
_BACKUP_RE = re.compile(r'^\.(\d+)\.(\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d)~$')


def backups(path):
    """The backups of ``path`` (``NAME.PID.DATE~``), oldest first."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = []
    for other in names:
        match = other.startswith(name) and _BACKUP_RE.match(other[len(name):])
        if match:
            found.append((match.group(2), int(match.group(1)), os.path.join(directory, other)))
    return [full for _date, _pid, full in sorted(found)]


def prune_backups(path, keep=KEEP_BACKUPS):
    """Remove the backups of ``path`` beyond the oldest and the ``keep - 1`` newest (they
    were never pruned: issue 31). Returns the paths removed."""
    found = backups(path)
    doomed = found[1:-(keep - 1)] if keep > 1 else found[1:]
    removed = []
    for old in doomed:
        try:
            os.unlink(old)
            removed.append(old)
        except OSError:
            pass
    return removed


def remove_stale_temporaries(path, now=None):
    """Remove temporary files an interrupted write of ``path`` left (.NAME.XXXX.tmp, older than
    an hour, so never one a running write still uses). Returns the paths removed."""
    directory = os.path.dirname(os.path.abspath(path))
    prefix = '.%s.' % os.path.basename(path)
    now = time.time() if now is None else now
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith('.tmp')):
            continue
        full = os.path.join(directory, name)
        try:
            if now - os.lstat(full).st_mtime > STALE_AFTER:
                os.unlink(full)
                removed.append(full)
        except OSError:
            pass
    return removed


def write_atomic(path, data, mode=0o644, backup=False, make_dirs=True, dir_mode=0o755):
    """Write ``data`` (bytes) to ``path`` atomically, keeping an existing file's owner and mode.

    Returns the backup file's path (when ``backup`` and the file existed) or None.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        if not make_dirs:
            raise FileError('%s: directory %s does not exist' % (path, directory))
        try:
            os.makedirs(directory, dir_mode)
        except OSError as exc:
            raise FileError('%s: cannot create directory %s: %s' % (path, directory, exc.strerror))
    try:
        current = os.stat(path)
    except OSError:
        current = None
    backup_file = None
    if backup and current is not None:
        backup_file = backup_path(path)
        try:
            shutil.copy2(path, backup_file)
        except (IOError, OSError) as exc:
            raise FileError('%s: cannot write backup %s: %s' % (path, backup_file, exc))
        prune_backups(path)
    remove_stale_temporaries(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.tmp',
                                   dir=directory)
    except OSError as exc:
        raise FileError('%s: cannot create a temporary file in %s: %s'
                        % (path, directory, exc.strerror))
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if current is not None:
            os.chmod(tmp, current.st_mode & 0o7777)
            try:
                os.chown(tmp, current.st_uid, current.st_gid)
            except OSError:
                pass  # not root: the file stays ours, as it was
        else:
            os.chmod(tmp, mode)
        os.rename(tmp, path)
    except (IOError, OSError) as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise FileError('%s: cannot write: %s' % (path, getattr(exc, 'strerror', None) or exc))
    fsync_directory(directory)
    return backup_file


def fsync_directory(directory):
    """Make a rename in ``directory`` durable (best effort: some file systems refuse it)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def remove(path, backup=False):
    """Remove a file (used for state=absent of a whole drop-in). Returns the backup path."""
    if not os.path.exists(path):
        return None
    backup_file = None
    if backup:
        backup_file = backup_path(path)
        shutil.copy2(path, backup_file)
        prune_backups(path)
    os.unlink(path)
    return backup_file
