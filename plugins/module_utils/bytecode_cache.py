# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load the collection's module_utils from the AnsiballZ payload compiled once, and cached.

A module runs from a zip file that ansible copies to the node on every call. Python's zipimport
compiles every module in it from source, and up to Python 3.11 it compiles each one twice: once
when it works out the module's file name, once when it runs it. For the collection's own
module_utils that is about half of what a rerun costs the node beyond ansible's ping.

`install()` puts a finder in front of `sys.meta_path` that handles this collection's
module_utils only, and only when they come from a zip file (an AnsiballZ payload; a test run
from a checkout imports them as usual). It reads a module's source from the zip, compiles it
once, and, when the module runs as root, keeps the code in `CACHE_DIR`, keyed by a SHA-256 of
the Python's bytecode magic number, the module's name and its source. A later run whose payload
holds the same source loads that code instead of compiling: a changed source has another key,
so a stale entry is never used.

The cache is best effort and guarded: the directory must be a directory (not a link) owned by
the user the module runs as, with no group or other permission bits, checked on the open
directory that the entries are then read from and written through (no race between check and
use). Entries are written to a temporary name and renamed, so a reader never sees half of one.
Anything that goes wrong falls back to compiling. Entries untouched for `MAX_AGE_DAYS` are
removed when a new one is written (a collection upgrade writes new ones). Set
GPUFLEET_BYTECODE_CACHE=0 in the module's environment to compile every time instead (the
finder still compiles each module once).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import importlib.util
import marshal
import os
import stat
import sys
import time

PACKAGE = 'ansible_collections.gpufleet.tuning.plugins.module_utils'
CACHE_DIR = '/var/cache/gpufleet/bytecode'
MAX_AGE_DAYS = 30
_SUFFIX = '.code'


class _Cache:
    """Compiled code kept in a directory the module's user alone owns; every failure is a miss."""

    def __init__(self, path):
        self.fd = None
        self.pruned = False
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, 'O_NOFOLLOW', 0))
        except OSError:
            return
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            os.close(fd)
            return
        self.fd = fd

    def load(self, key):
        if self.fd is None:
            return None
        try:
            fd = os.open(key + _SUFFIX, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0), dir_fd=self.fd)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                return None
            with os.fdopen(os.dup(fd), 'rb') as handle:
                return marshal.loads(handle.read())
        except (OSError, ValueError, EOFError, TypeError):
            return None
        finally:
            os.close(fd)

    def store(self, key, code):
        if self.fd is None:
            return
        temporary = '.%s.%d.tmp' % (key, os.getpid())
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0),
                         0o600, dir_fd=self.fd)
            with os.fdopen(fd, 'wb') as handle:
                handle.write(marshal.dumps(code))
            os.rename(temporary, key + _SUFFIX, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except (OSError, ValueError):
            try:
                os.unlink(temporary, dir_fd=self.fd)
            except OSError:
                pass
            return
        if not self.pruned:
            self.pruned = True
            self.prune()

    def prune(self):
        """Remove entries (and leftover temporary files) written more than MAX_AGE_DAYS ago."""
        oldest = time.time() - MAX_AGE_DAYS * 86400
        try:
            names = os.listdir(self.fd)
        except OSError:
            return
        for name in names:
            try:
                if os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mtime < oldest:
                    os.unlink(name, dir_fd=self.fd)
            except OSError:
                pass


class _Loader:
    """Runs a module of the payload from code compiled once (or loaded from the cache)."""

    def __init__(self, finder, fullname, filename, source):
        self.finder = finder
        self.fullname = fullname
        self.filename = filename
        self.source = source

    def create_module(self, spec):
        return None

    def get_code(self, fullname):
        key = hashlib.sha256(b'\0'.join((importlib.util.MAGIC_NUMBER, fullname.encode('utf-8'),
                                         self.source))).hexdigest()
        code = self.finder.cache.load(key) if self.finder.cache else None
        if code is not None:
            fix = getattr(__import__('_imp'), '_fix_co_filename', None)
            if fix is not None:
                fix(code, self.filename)
            return code
        code = compile(self.source, self.filename, 'exec', dont_inherit=True)
        if self.finder.cache:
            self.finder.cache.store(key, code)
        return code

    def exec_module(self, module):
        exec(self.get_code(module.__name__), module.__dict__)

    def get_source(self, fullname):
        return self.source.decode('utf-8')

    def get_filename(self, fullname):
        return self.filename

    def is_package(self, fullname):
        return self.filename.endswith('__init__.py')


class _Finder:
    """Finds this collection's module_utils in the payload zip; leaves every other name alone."""

    def __init__(self, archive, importer, cache):
        self.archive = archive
        self.importer = importer
        self.cache = cache

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PACKAGE + '.'):
            return None
        relative = fullname.replace('.', '/')
        for inner, package in ((relative + '/__init__.py', True), (relative + '.py', False)):
            try:
                source = self.importer.get_data(inner)
            except OSError:
                continue
            filename = os.path.join(self.archive, inner)
            spec = importlib.util.spec_from_loader(
                fullname, _Loader(self, fullname, filename, source), origin=filename,
                is_package=package)
            spec.has_location = True
            if package:
                spec.submodule_search_locations = [os.path.join(self.archive, relative)]
            return spec
        return None

    def invalidate_caches(self):
        return None


def install(cache_dir=CACHE_DIR):
    """Put the finder in front of sys.meta_path when this file was loaded from a zip; else nothing.

    Returns the finder, or None (not in a zip, or installed already).
    """
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return None
    importer = globals().get('__loader__')
    archive = getattr(importer, 'archive', None)
    if not archive or not hasattr(importer, 'get_data'):
        return None
    cache = None
    if os.environ.get('GPUFLEET_BYTECODE_CACHE', '1') != '0' and os.geteuid() == 0:
        cache = _Cache(cache_dir)
        if cache.fd is None:
            cache = None
    finder = _Finder(archive, importer, cache)
    sys.meta_path.insert(0, finder)
    return finder
