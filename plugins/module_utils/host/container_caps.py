# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a non-root process in a new container gets for locked memory (issue 33 item 4).

A process can lock (mlock, RDMA registration through ``ibv_reg_mr``) at most RLIMIT_MEMLOCK
unless CAP_IPC_LOCK is in its effective set. A non-root process in a container does not have
it effective even when the container is started with ``--cap-add IPC_LOCK`` (it is in the
bounding set only), so the runtime's memlock is all it gets and NCCL falls back to TCP without
an error (NVIDIA/nvidia-container-toolkit#2037). The probe starts one more container as
``NONROOT`` and reads its /proc/self/limits and /proc/self/status (``cat``, no shell);
:func:`parse` reads the memlock and the capability sets, :func:`annotate` says it on the
audit's memlock rows. Plain Python."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model

#: the user and group of the non-root probe (nobody:nogroup on Debian, nobody on RHEL)
NONROOT = '65534:65534'
CAP_IPC_LOCK = 14
CAP_SETS = ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')


def command(runtime, image, run_options=None):
    """A new container of ``runtime`` from ``image`` whose process runs as NONROOT (after the
    probe's own run options, so that this user wins) and prints its limits and status."""
    return ([runtime, 'run', '--rm', '--network=none'] + list(run_options or [])
            + ['--user', NONROOT, image, 'cat', '/proc/self/limits', '/proc/self/status'])


def has_cap(mask, cap):
    """True when capability number ``cap`` is in a /proc/PID/status mask (hex text)."""
    try:
        return bool(int(mask, 16) >> cap & 1)
    except (TypeError, ValueError):
        return False


def parse(output):
    """{user, uid, memlock: {soft, hard, human} or None, caps: {CapEff: hex, ...}, ipc_lock
    (effective), ipc_lock_bounding} of the non-root probe's output (/proc/self/limits then
    /proc/self/status); ValueError when it holds neither."""
    limits = model.parse_proc_limits(output or '')
    caps, uid = {}, None
    for line in (output or '').splitlines():
        key, _sep, value = line.partition(':')
        if key in CAP_SETS:
            caps[key] = value.strip()
        elif key == 'Uid':
            uid = (value.split() or [None])[0]
    if not limits or 'CapEff' not in caps:
        raise ValueError('the non-root probe printed no limits and capabilities (%r)'
                         % (output or '').strip()[:200])
    memlock = limits.get('memlock')
    return dict(
        user=NONROOT, uid=int(uid) if uid and uid.isdigit() else None, caps=caps,
        memlock=dict(soft=memlock.soft, hard=memlock.hard,
                     human=model.format_limit('memlock', memlock)) if memlock else None,
        ipc_lock=has_cap(caps['CapEff'], CAP_IPC_LOCK),
        ipc_lock_bounding=has_cap(caps.get('CapBnd'), CAP_IPC_LOCK))


def note(found):
    """The sentence a memlock row of the context gets from ``found`` (parse(), or
    {error: text} when the non-root probe failed)."""
    if found.get('error'):
        return 'non-root process not probed: %s' % found['error']
    limit = (found.get('memlock') or {}).get('human', '(none)')
    if found.get('ipc_lock'):
        return ('a non-root process (uid %s) has CAP_IPC_LOCK effective: it can lock memory past '
                'memlock %s' % (found.get('uid'), limit))
    return ('a non-root process (uid %s) gets memlock %s and CAP_IPC_LOCK is not in its '
            'effective set%s, so this memlock is all it can lock (RDMA registration; NCCL '
            'falls back to TCP without an error when it is too small)' % (
                found.get('uid'), limit, ' (only in its bounding set: --cap-add does not reach '
                'a non-root user)' if found.get('ipc_lock_bounding') else ''))


def annotate(rows, contexts):
    """Add ``note`` (note()) to the memlock rows of the contexts whose entry in ``contexts``
    (effective.probe's) has a ``nonroot`` probe."""
    for row in rows:
        found = (contexts.get(row['context']) or {}).get('nonroot')
        if found and row['item'] == 'memlock':
            row['note'] = note(found)
    return rows


def like(probe_command):
    """The non-root twin of a container probe command (probes.container_command's form:
    ``RUNTIME run ... IMAGE cat /proc/self/limits``): the same runtime, options and image."""
    if list(probe_command[-2:]) != ['cat', '/proc/self/limits'] or len(probe_command) < 5:
        raise ValueError('not a container probe command: %r' % (probe_command,))
    return command(probe_command[0], probe_command[-3], probe_command[4:-3])
