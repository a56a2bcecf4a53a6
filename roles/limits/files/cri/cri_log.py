# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A container's stdout and stderr from its CRI log file, the file containerd's CRI writes at
the pod's ``log_directory``/the container's ``log_path`` (the kubelet's format: one
``TIMESTAMP STREAM TAG TEXT`` line per chunk, TAG ``F`` for a full line and ``P`` for a partial
one that the next chunk continues; kubernetes/cri-api ``pkg/apis/runtime/v1/api.proto``,
``ContainerConfig.log_path``). Plain Python for cri_client.py's ``run`` and ``last``,
unit-tested."""
from __future__ import absolute_import, division, print_function

import time

__metaclass__ = type


def read_cri_log(path, settle=2.0):
    """stdout and stderr of a container from its CRI log file (``TIME STREAM P|F TEXT`` lines,
    P a partial line to be joined with the next). The last line may land just after the
    container's exit: wait up to ``settle`` seconds for a full line at the end."""
    deadline = time.time() + settle
    while True:
        try:
            with open(path, 'rb') as handle:
                data = handle.read().decode('utf-8', 'replace')
        except (IOError, OSError):
            data = ''
        if data.endswith('\n') or time.time() >= deadline:
            break
        time.sleep(0.1)
    return parse_cri_log(data)


def tail_cri_log(path, limit):
    """stdout and stderr of the last ``limit`` bytes of a CRI log file (a line the cut falls
    in is left out: its start is not there); ('', '') for a log that cannot be read."""
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, 2)
            start = max(0, handle.tell() - limit)
            # one byte before the cut: whether it falls at the start of a line
            handle.seek(max(0, start - 1))
            data = handle.read()
    except (IOError, OSError):
        return '', ''
    if start:
        data = data.partition(b'\n')[2]
    return parse_cri_log(data.decode('utf-8', 'replace'))


def parse_cri_log(text):
    """(stdout, stderr) from the text of a CRI log file."""
    streams = {'stdout': [], 'stderr': []}
    for line in text.split('\n'):
        parts = line.split(' ', 3)
        if len(parts) < 3 or parts[1] not in streams:
            continue
        content = parts[3] if len(parts) == 4 else ''
        streams[parts[1]].append(content if parts[2] == 'P' else content + '\n')
    return ''.join(streams['stdout']), ''.join(streams['stderr'])
