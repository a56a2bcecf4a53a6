# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which daemon.json dockerd reads, and what dockerd makes of a flag that clashes with it: the
one place that decides both, for the tune (docker_plan), the audit (info.docker_report, which
the drift watch runs) and the _info module.

Plain Python (no Ansible import), runs on Python 3.8 targets.

* config_file(): the ``--config-file`` of the unit's effective ExecStart (docker.service with
  its drop-ins, ``--config-file=PATH`` or ``--config-file PATH``, also through ``$VAR``; the
  last one wins, as dockerd's flag parser does), else dockerd's default /etc/docker/daemon.json.
  Where docker.service is absent and the docker snap's ``snap.docker.dockerd.service`` is
  there, the snap's file ($SNAP_DATA/config/daemon.json), which the tune does not write.
* target(): the file the tune writes: the one dockerd reads when no path was given; a path
  given that is not the file a ``--config-file`` flag names is refused, naming the flag's
  file:line and both paths, before anything is written.
* dockerd_state(): ``systemctl show -p ActiveState,Result,NRestarts``, for the clash's message
  (dj.conflict_message: dockerd would refuse at its next restart, or has refused).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)

UNIT = 'docker.service'
CONFIG_FLAG = '--config-file'
SNAP_UNIT = 'snap.docker.dockerd.service'
# The snap's dockerd-wrapper runs dockerd --config-file="$SNAP_DATA/config/daemon.json";
# $SNAP_DATA is /var/snap/docker/REVISION, ``current`` links to the running revision.
SNAP_DAEMON_JSON = '/var/snap/docker/current/config/daemon.json'


class ConfigFileError(dj.DaemonJsonError):
    """A daemon.json path that is not the file dockerd reads, or a dockerd the tune does not
    manage (the snap's)."""

    kind = errors.REFUSED


def _snap_only(unit, root):
    return unit == UNIT and not sdpaths.unit_exists(UNIT, root) \
        and sdpaths.unit_exists(SNAP_UNIT, root)


def config_file(unit=UNIT, root=''):
    """The daemon.json dockerd reads: {'path', 'source', 'flag' ('file:line' of the
    --config-file flag, or None), 'unit', 'snap' (dockerd from the docker snap)}."""
    if _snap_only(unit, root):
        fragment = (dj.unit_files(SNAP_UNIT, root) or [SNAP_UNIT])[0]
        return dict(path=SNAP_DAEMON_JSON, flag=None, unit=SNAP_UNIT, snap=True,
                    source='%s: the docker snap\'s dockerd reads $SNAP_DATA/config/daemon.json'
                    % fragment)
    found = None
    for text, source in dj.command_texts(unit, root):
        for groups in dj._flag_values(text, CONFIG_FLAG):
            if ''.join(groups):
                found = (''.join(groups), source)
    if found is not None:
        return dict(path=found[0], flag=found[1], unit=unit, snap=False,
                    source='%s (%s)' % (found[1], CONFIG_FLAG))
    return dict(path=dj.DAEMON_JSON, flag=None, unit=unit, snap=False,
                source="dockerd's default (no %s in the ExecStart of %s)" % (CONFIG_FLAG, unit))


def _same(one, other):
    return os.path.normpath(one) == os.path.normpath(other)


def mismatch(path, found):
    """The message when ``path`` (a file named by the user) is not the file dockerd reads
    (``found``: config_file()), or '' when it is, or dockerd reads its default file."""
    if path is None or _same(path, found['path']):
        return ''
    if found['flag']:
        return ('%s passes %s %s to dockerd, so dockerd reads %s, not %s (the path given): '
                'leave the path option out to use the file dockerd reads, or name that file'
                % (found['flag'], CONFIG_FLAG, found['path'], found['path'], path))
    if found['snap']:
        return ('%s, not %s (the path given)' % (snap_message(found), path))
    return ''


def snap_message(found):
    return 'dockerd runs from the docker snap (%(source)s): it reads %(path)s' % found


def target(path=None, unit=UNIT, root=''):
    """(the daemon.json to write, config_file()). ``path``: the file the user named, or None
    for the one dockerd reads. Raises ConfigFileError, before anything is written, for a path
    that a --config-file flag contradicts, and for the snap's dockerd, which the tune neither
    writes nor restarts (guidance in the message)."""
    found = config_file(unit, root)
    if found['snap']:
        raise ConfigFileError(
            '%s; this collection does not write or restart the snap\'s dockerd (it restarts %s): '
            'set default-ulimits in that file and run "snap restart docker", or leave docker out '
            'of contexts' % (snap_message(found), UNIT))
    problem = mismatch(path, found)
    if problem:
        raise ConfigFileError(problem)
    return (found['path'] if path is None else path), found


def public(found):
    """config_file() as a module returns it: {path, source}."""
    return dict(path=found['path'], source=found['source'])


def dockerd_state(run, unit=UNIT):
    """dj.WOULD_REFUSE while ``unit`` runs (or starts), dj.HAS_REFUSED when it failed or
    stopped with an error, dj.STOPPED when it stopped cleanly, None when systemd cannot say.
    ``run(args)`` -> (rc, out, err)."""
    rc, out, _err = run(['systemctl', 'show', '-p', 'ActiveState,Result,NRestarts', unit])
    if rc != 0:
        return None
    values = dict(line.split('=', 1) for line in out.splitlines() if '=' in line)
    active, outcome = values.get('ActiveState'), values.get('Result')
    if active in ('active', 'reloading'):
        return dj.WOULD_REFUSE
    # Result keeps the last failure until a start succeeds: Restart= retrying (activating,
    # auto-restart) after dockerd refused is still a refusal
    if active == 'failed' or outcome not in (None, '', 'success'):
        return dj.HAS_REFUSED
    # while Restart= runs the next try (activating, start) Result reads success again; a
    # restart counter above 0 (flushed by every start a user asks for) says a start failed
    if active == 'activating' and values.get('NRestarts', '0') not in ('', '0'):
        return dj.HAS_REFUSED
    if active in ('activating', 'deactivating'):
        return dj.WOULD_REFUSE
    if active == 'inactive':
        return dj.STOPPED
    return None


def host_runner(host):
    """``run(args)`` for dockerd_state from an AnsibleModule (or the watch's LocalHost)."""
    return lambda args: host.run_command(args, environ_update=commands.c_env())


def clash_report(data, path, unit, run, root=''):
    """The audit's view of dj.clashes(): [{'key', 'flag', 'source', 'state', 'msg'}] for the
    daemon.json ``data`` read from ``path``; dockerd's state is asked only when there is one."""
    found = dj.clashes(data, unit, root)
    if not found:
        return []
    state = dockerd_state(run, unit) or dj.WOULD_REFUSE
    return [dict(key=key, flag=flag, source=source, state=state,
                 msg=dj.conflict_message([(key, flag, source)], path, state))
            for key, flag, source in found]
