# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The undo of one file the collection wrote, planned and never written (run/profile_undo.py
runs them for limits_profile ``state=absent``; each context's ``undo_plans`` picks its own):
its own files removed (the PAM file keeps the lines of domains it does not manage), and in
files it does not own only its keys and lines: daemon.json's ``default-ulimits`` and
``default-shm-size`` back to their value in the oldest backup (``NAME.PID.DATE~``, the file
before the collection's first write), else removed; slurm.conf's added lines removed byte for
byte; containerd's base spec and config.toml restored from their oldest backup when it differs
only in what the collection writes there, else left and reported. Every Change's result
carries ``undo``: {action, detail, backup}. Private to the collection.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json
import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec

#: prefix of the systemd paths (unit tests point it at a temporary tree)
ROOT = ''

REMOVED, RESTORED, EDITED, NOT_UNDONE = 'removed', 'restored', 'edited', 'not_undone'


def backups(path):
    """The backups of ``path`` the collection wrote, oldest first (safe_file's, which keeps
    the oldest when it prunes them)."""
    return safe_file.backups(path)


def oldest_backup(path):
    found = backups(path)
    return found[0] if found else None


def read_text(path):
    """The file's text, or None when it does not exist; changes.Failure naming it otherwise."""
    try:
        return text_codec.decode_bytes(safe_file.read_bytes(path))
    except safe_file.FileError as exc:
        raise changes.Failure(str(exc), dict(path=path), kind=exc.kind)


def tidy_backups(written):
    """After an undo that succeeded (its restarts done: until then a failed restart puts the
    files back from these backups), the backups it can prove are the collection's go:
    every backup of a file of the collection's that the undo removed (its drop-ins, its
    limits.d and sysctl.d files: copies of the collection's own file, which is gone), and the
    backup this undo wrote of a file it edited or restored (a copy of what it took back). The
    earlier backups of a file that stays (daemon.json, slurm.conf, containerd's files, a
    limits.d file with other lines) are kept: the oldest is the file before the collection's
    first write, and safe_file keeps at most KEEP_BACKUPS of each. ``written``:
    [(context, Change)] the undo wrote. Returns {removed: [paths], kept: [paths]}."""
    removed, kept = [], []
    for _context, found in written:
        if found.new is None:                 # the file is gone: a file of the collection's
            doomed = backups(found.path)
        else:
            doomed = [found.result['backup_file']] if found.result.get('backup_file') else []
        for path in doomed:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
        kept.extend(path for path in backups(found.path) if path not in removed)
    return dict(removed=removed, kept=kept)


def change(path, current, new, action, detail, backup=None, result=None):
    """A Change whose result says what the undo does (``undo``)."""
    result = dict(result or {}, path=path)
    result['undo'] = dict(action=action, detail=detail, backup=backup)
    return changes.Change(path, result, current, new,
                          changed=(new != current) and action != NOT_UNDONE,
                          mode=safe_file.mode_of(path))


def not_undone(path, current, detail, backup=None):
    """What is left as it is, and why (a warning)."""
    found = change(path, current, current, NOT_UNDONE, detail, backup)
    found.warnings.append('%s: not undone: %s' % (path, detail))
    return found


def remove_owned(path, what='the collection\'s file'):
    """The Change that removes a file the collection owns, or None when it is not there."""
    current = read_text(path)
    if current is None:
        return None
    return change(path, current, None, REMOVED, '%s removed' % what)


# --- systemd ------------------------------------------------------------------------------

def remove_dropin(path, host, scope=None, unit=None):
    """A manager's or a unit's drop-in removed, with what the removal owes (systemd_plan's
    live_check: a re-exec, user managers, a daemon-reload and the unit's restart)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan
    found = remove_owned(ROOT + path, 'drop-in')
    if found is None:
        return None
    found.result.update(reexec_required=False, daemon_reload_required=False,
                        restart_required=[])
    systemd_plan.live_check(host.run_command, found.result, scope, unit, {}, True)
    return found


def unit_dropins(dropin, units=(), every=True):
    """{unit: drop-in path} of ``units`` and, with ``every``, of every unit that has the
    collection's drop-in."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
        systemd_paths as sdpaths)
    base = ROOT + '/etc/systemd/system'
    found = {}
    try:
        entries = sorted(os.listdir(base)) if every else []
    except OSError:
        entries = []
    for entry in entries:
        if entry.endswith('.d') and os.path.isfile(os.path.join(base, entry, dropin)):
            try:
                unit = sdpaths.normalize_unit(entry[:-2])
            except errors.Error:
                continue
            found[unit] = '/etc/systemd/system/%s/%s' % (entry, dropin)
    for unit in units:
        unit = sdpaths.unit_name(unit)
        found.setdefault(unit, '/etc/systemd/system/%s.d/%s' % (unit, dropin))
    return found


# --- PAM -------------------------------------------------------------------------------------

def pam_text(text, domains, pam_version=None):
    """The limits file without the lines of ``domains`` (and the collection's header): None
    when nothing else is left (the file goes), else the other lines byte for byte."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
    from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan
    out = [line.raw for line in conf.parse(text, None, pam_version).lines
           if not (line.kind in ('entry', 'invalid', 'nolimit') and line.domain in domains)]
    new = ''.join(out)
    if new.startswith(pam_limits_plan.HEADER):
        new = new[len(pam_limits_plan.HEADER):]
    return new if new.strip() else None


def undo_pam(path, domains, pam_version=None):
    current = read_text(path)
    if current is None:
        return None
    new = pam_text(current, domains, pam_version)
    if new is None:
        return change(path, current, None, REMOVED, 'only the lines of %s were left: file '
                      'removed' % ', '.join(domains))
    return change(path, current, new, EDITED, 'the lines of %s removed, the other lines kept'
                  % ', '.join(domains))


# --- Docker ----------------------------------------------------------------------------------

def daemon_json(path, unit='docker.service'):
    """daemon.json with ``default-ulimits`` and ``default-shm-size`` as in its oldest backup
    (the file before the collection's first write), or removed when there is none or the
    backup has not got them; every other key as it is. The backup's own bytes when that makes
    the whole file the backup's."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
        docker_daemon_json as dj)
    current = read_text(path)
    if current is None:
        return None
    keys = (dj.ULIMITS_KEY, dj.SHM_KEY)
    try:
        data = dj.parse(current, path)
        backup = oldest_backup(path)
        earlier, earlier_text = {}, None
        if backup is not None:
            earlier_text = read_text(backup)
            earlier = dj.parse(earlier_text or '', backup)
    except dj.DaemonJsonError as exc:
        raise changes.Failure('%s (nothing changed)' % exc, dict(path=path), kind=exc.kind)
    new = dj.DaemonJson(data, indent=getattr(data, 'indent', dj.DEFAULT_INDENT))
    said = []
    for key in keys:
        if key in earlier:
            new[key] = earlier[key]
            said.append('%s restored from %s' % (key, backup))
        elif key in new:
            del new[key]
            said.append('%s removed (%s)' % (key, 'not in the oldest backup %s' % backup
                                             if backup else 'no backup'))
    conflicts = dj.clashes(new, unit)
    if conflicts:
        raise changes.Failure(dj.conflict_message(conflicts, path) + ' (nothing changed)',
                              dict(path=path))
    if new == data:
        text = current
    elif earlier_text is not None and new == earlier:
        text = earlier_text
    else:
        text = text_codec.decode_bytes(dj.render(new))
    action = RESTORED if any(key in earlier for key in keys) else REMOVED
    found = change(path, current, text, action, '; '.join(said) or 'none of %s set'
                   % ', '.join(keys), backup if action == RESTORED else None,
                   dict(restart_required=text != current,
                        default_ulimits=new.get(dj.ULIMITS_KEY, {}),
                        default_shm_size=new.get(dj.SHM_KEY)))
    found.config = new
    return found


# --- Slurm -----------------------------------------------------------------------------------

def slurm_text(text):
    """(text without the lines the collection added: its comment and the
    PropagateResourceLimitsExcept= line after it, [the lines removed])."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
    lines = text.splitlines(True)
    out, removed, index = [], [], 0
    while index < len(lines):
        pair = lines[index:index + 2]
        if (len(pair) == 2 and pair[0] == sc.MARK
                and pair[1].startswith('PropagateResourceLimitsExcept=')):
            removed.extend(pair)
            index += 2
            continue
        out.append(lines[index])
        index += 1
    return ''.join(out), removed


def undo_slurm(path):
    current = read_text(path)
    if current is None:
        return None
    new, removed = slurm_text(current)
    if removed:
        return change(path, current, new, EDITED, 'removed: %s' % ' '.join(
            line.strip() for line in removed if not line.startswith('#')))
    backup = oldest_backup(path)
    earlier = read_text(backup) if backup else None
    if earlier is not None and earlier != current:
        return not_undone(path, current, 'no line this collection added; a value it edited '
                          'in place (PropagateResourceLimits*) is not put back: compare with %s '
                          'and edit by hand, then restart slurmd' % backup, backup)
    return None


# --- containerd (CRI) ------------------------------------------------------------------------

def only_rlimits_differ(current, earlier):
    """Do two base specs differ only in process.rlimits?"""
    try:
        now, then = json.loads(current), json.loads(earlier)
    except ValueError:
        return False
    for spec in (now, then):
        if isinstance(spec, dict) and isinstance(spec.get('process'), dict):
            spec['process'].pop('rlimits', None)
    return now == then


def only_spec_lines_differ(current, earlier):
    """Do two config.toml texts differ only in lines that name base_runtime_spec?"""
    for line in difflib.ndiff(earlier.splitlines(), current.splitlines()):
        if line[:2] in ('- ', '+ ') and line[2:].strip() and 'base_runtime_spec' not in line:
            return False
    return True


def restore_from_backup(path, same_else, what):
    """``path`` restored from its oldest backup when ``same_else(current, backup text)``, else
    left and reported; None when it is the backup already or missing."""
    current = read_text(path)
    if current is None:
        return None
    backup = oldest_backup(path)
    if backup is None:
        return not_undone(path, current, 'no backup of it from before the collection\'s first '
                          'write: %s left as it is; compare with `ctr oci spec` / `containerd '
                          'config default` and edit by hand, then restart containerd' % what)
    earlier = read_text(backup)
    if earlier == current:
        return None
    if earlier is None or not same_else(current, earlier):
        return not_undone(path, current, 'it differs from its oldest backup %s in more than %s: '
                          'left as it is; compare and edit by hand, then restart containerd'
                          % (backup, what), backup)
    return change(path, current, earlier, RESTORED, '%s restored from %s' % (what, backup),
                  backup)


def undo_containerd(config):
    """[(path, Change)]: every handler's base spec, config.toml, and the base spec the
    collection created (containerd_create_spec) when config.toml no longer names it."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
        containerd_cri_conf as cc)
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
        oci_base_spec as oci)
    text = read_text(config)
    if text is None:
        return []
    try:
        data = cc.parse(text, config)[0]
        specs = sorted(set(p for p in cc.handlers(data, cc.version_of(data, config)).values()
                           if p))
    except errors.Error as exc:
        raise changes.Failure('%s (nothing changed)' % exc.msg, dict(path=config), kind=exc.kind)
    found = []
    for spec in specs:
        if spec == oci.DEFAULT_PATH:
            continue
        found.append((spec, restore_from_backup(spec, only_rlimits_differ,
                                                'process.rlimits')))
    config_change = restore_from_backup(config, only_spec_lines_differ,
                                        'the base_runtime_spec lines')
    found.append((config, config_change))
    after = config_change.new if config_change is not None else text
    if oci.DEFAULT_PATH in specs and oci.DEFAULT_PATH not in (after or ''):
        found.append((oci.DEFAULT_PATH, remove_owned(oci.DEFAULT_PATH, 'the base spec the '
                                                     'collection created')))
    elif oci.DEFAULT_PATH in specs:
        current = read_text(oci.DEFAULT_PATH)
        if current is not None:
            found.append((oci.DEFAULT_PATH, not_undone(
                oci.DEFAULT_PATH, current, '%s still names it: left as it is' % config)))
    return [(path, c) for path, c in found if c is not None]
