# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pack the collection's module_utils into one tar on the controller (role limits_watch).

    python3 pack_module_utils.py SOURCE_DIR DEST_TAR

Only ``*.py`` files (subpackages included), sorted, with fixed owner, mode and time, so the same sources give the same
archive and ansible.builtin.unarchive finds nothing to change on a node that has them: one
transfer per node instead of one copy per file.
"""
import io
import os
import sys
import tarfile


def sources(source):
    """The ``*.py`` files below ``source`` (subpackages such as ``contexts/`` included), as
    sorted paths relative to it."""
    found = []
    for directory, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith(('.', '__pycache__')))
        for name in files:
            if name.endswith('.py'):
                found.append(os.path.relpath(os.path.join(directory, name), source))
    return sorted(found)


def pack(source, dest):
    with tarfile.open(dest, 'w', format=tarfile.GNU_FORMAT) as archive:
        directories = sorted(set(os.path.dirname(name) for name in sources(source)) - {''})
        for name in directories:
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = 'root'
            archive.addfile(info)
        for name in sources(source):
            with open(os.path.join(source, name), 'rb') as handle:
                data = handle.read()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = 'root'
            archive.addfile(info, io.BytesIO(data))


if __name__ == '__main__':
    pack(sys.argv[1], sys.argv[2])
