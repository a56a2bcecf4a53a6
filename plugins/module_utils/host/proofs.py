# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reuse of a container probe's result: limits_audit's ``probe_max_age``. Private to the
collection.

A new Docker container costs the node about as much CPU as a whole ``ansible -m ping`` of it
(dockerd, containerd, a shim, runc and the kernel's namespaces; benchmarks/results.md), so an
audit that starts one on every node every time cannot stay near the ping floor. What a new
container's limits are is decided by a few things only: the running dockerd and containerd
(which process, started when, with which limits: the shim and runc inherit containerd's, and
dockerd puts ``default-ulimits`` and its flags into each container's spec), daemon.json, the
runtime binaries, the kernel's ceilings and the probe command itself (image and options), on
this boot. :func:`docker_key` digests all of them; a probe's output with that key and its
time is a proof (:func:`proof`), reused while the key is unchanged and the proof is younger
than the asked age (:func:`reusable`). Anything that could change the answer (a restart of
either daemon, a ``prlimit`` on one, an edit of daemon.json, a runtime upgrade, a sysctl, a
reboot, another image tag) changes the key, and the next audit starts a container again. The
converge's verification never reuses.

Nothing here writes: limits_audit is read-only, so the node keeps no proof. The audit returns
the proof it made (``proofs``) and takes earlier ones as an option (``probe_proofs``); the
audit playbook keeps them per host on the controller (issue 31 item 20).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import json
import math
import os
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits

#: binaries whose replacement (a package upgrade) could change what a new container gets
RUNTIME_BINARIES = ('runc', 'containerd-shim-runc-v2', 'docker-init', 'dockerd', 'containerd')
DAEMONS = ('dockerd', 'containerd')


def _read(path, mode='r'):
    try:
        with open(path, mode) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def process(pid, root=''):
    """[pid, start time in clock ticks since boot, /proc/PID/limits text] or None."""
    start = host_limits.start_ticks(pid, root)
    try:
        limits = host_limits.proc_limits_text(pid, root)
    except (IOError, OSError):
        return None
    return None if start is None else [int(pid), start, limits]


def daemons(names=DAEMONS, root=''):
    """{name: [process(), ...]} of the running processes whose comm is one of ``names``."""
    found = dict((name, []) for name in names)
    try:
        entries = os.listdir(root + '/proc')
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        comm = (_read('%s/proc/%s/comm' % (root, entry)) or '').strip()
        if comm in found:
            seen = process(entry, root)
            if seen is not None:
                found[comm].append(seen)
    for name in found:
        found[name].sort()
    return found


def binary(name):
    """(path, inode, size, mtime) of the first ``name`` on the search path, or None."""
    for directory in commands.SEARCH_PATH:
        path = os.path.join(directory, name)
        try:
            info = os.stat(path)
        except OSError:
            continue
        return [os.path.realpath(path), info.st_ino, info.st_size, int(info.st_mtime)]
    return None


def digest(path):
    data = _read(path, 'rb')
    return hashlib.sha256(data).hexdigest() if data is not None else None


def docker_key(command, daemon_json, root=''):
    """The digest of what decides the limits of a new container of ``command``, or None when
    no dockerd runs (nothing to reuse: the probe itself reports why it fails). ``root``
    prefixes /proc (tests)."""
    running = daemons(root=root)
    if not running['dockerd']:
        return None
    data_root = '/var/lib/docker'
    text = _read(daemon_json)
    if text:
        try:
            data_root = json.loads(text).get('data-root') or data_root
        except (ValueError, AttributeError):
            pass
    parts = dict(
        command=list(command),
        boot=(_read('%s/proc/sys/kernel/random/boot_id' % root) or '').strip(),
        daemons=running,
        daemon_json=digest(daemon_json),
        # the tags -> image IDs of the classic image store (absent with containerd's store)
        images=sorted((path, digest(path)) for path in
                      glob.glob(os.path.join(data_root, 'image', '*', 'repositories.json'))),
        binaries=dict((name, binary(name)) for name in RUNTIME_BINARIES),
        ceilings=host_limits.ceilings(root))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode('utf-8')).hexdigest()


def proof(key, output, now=None):
    """A new proof: {key, output, proved_at (epoch seconds)}; limits_audit returns it
    (``proofs``) for the controller to keep and pass back (``probe_proofs``)."""
    return dict(key=key, output=output, proved_at=(now or time.time)())


def reusable(proof, key, max_age, now=None):
    """(output, proved at: epoch seconds) of ``proof`` (one the controller passed back) when it
    was made under ``key`` (the key computed now) less than ``max_age`` seconds ago, else
    None. Anything malformed is not reusable (the probe runs)."""
    if not key or not max_age or max_age <= 0 or not isinstance(proof, dict):
        return None
    if proof.get('key') != key:
        return None
    output = proof.get('output')
    try:
        at = float(proof.get('proved_at'))
    except (TypeError, ValueError):
        return None
    if math.isnan(at) or not isinstance(output, str):
        return None
    age = (now or time.time)() - at
    if age < 0 or age > max_age:
        return None
    return output, at
