# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning the kernel ceilings' sysctl.d drop-in (the sysctl_ceilings module): requested
minimums -> the file's new text, what is kept, what a later file would override; then the
live values written where /proc/sys is writable. Plain Python; nothing is written by
:func:`plan_change` (the module's ``changes.finish`` writes, then :func:`apply_live`).

A plain value is a minimum (docs/limit-model.md): the value written is the highest of the
minimum, the live value and the value the configuration sets now, so nothing is lowered unless
asked with ``{value: N, exact: true}``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf as conf

PATH = '/etc/sysctl.d/90-gpufleet-tuning.conf'
HEADER = ('# Managed by gpufleet.tuning.sysctl_ceilings: kernel ceilings for training jobs.\n'
          '# Other lines and comments are kept as they are.\n')
#: prefix of /proc/sys and the configuration directories (unit tests point it at a tree)
ROOT = ''


class Want(object):
    """One requested sysctl: ``key`` (normalised), ``name`` (dotted), ``asked``, ``exact``."""

    def __init__(self, field, key, asked, exact):
        self.field = field
        self.key = key
        self.name = conf.dotted(key)
        self.asked = asked
        self.exact = exact


def parse_request(sysctl, state, root='', job=None):
    """[Want] from the module's ``sysctl`` option and ``job`` (job_sysctl: a training job's
    kernel needs, minimums; for a key in both the higher minimum wins, an exact entry of
    ``sysctl`` wins); changes.Failure naming the field, before anything is read from or
    written to the configuration."""
    wants = []
    for option, given in (('sysctl', sysctl), ('job_sysctl', job or {})):
        if not isinstance(given, dict):
            raise changes.Failure('%s: a mapping of sysctl name to minimum' % option,
                                  kind=errors.BAD_INPUT)
        seen = {}
        for name in sorted(given, key=str):
            try:
                want = _want('%s.%s' % (option, name), name, given[name], state, root)
                if want.key in seen:
                    raise conf.ConfError('%s: the same sysctl as %s.%s'
                                         % (want.field, option, seen[want.key]))
            except conf.ConfError as exc:
                raise changes.Failure(str(exc), kind=errors.BAD_INPUT)
            seen[want.key] = name
            earlier = [w for w in wants if w.key == want.key]
            if not earlier:
                wants.append(want)
            elif not earlier[0].exact and state == 'present' and want.asked > earlier[0].asked:
                wants[wants.index(earlier[0])] = want
    return wants


def _want(field, name, spec, state, root):
    key = conf.check_name(field, name, root)
    exact = False
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(['value', 'exact']))
        if unknown or 'value' not in spec:
            raise conf.ConfError('%s: a mapping takes value and exact (got %s)'
                                 % (field, ', '.join(sorted(spec, key=str)) or 'nothing'))
        exact = spec.get('exact') in (True, 'true', 'yes')
        spec = spec['value']
    value = conf.check_value(field, key, spec) if state == 'present' else None
    return Want(field, key, value, exact)


def met(want, live, before):
    """Does the node hold a plain minimum already, now and at boot: the live value at least
    ``asked``, and the line that decides it at boot too (no line: the kernel's default, which
    the live value is unless someone ran ``sysctl -w``)? Then no line is written for it."""
    if want.exact or live is None or live < want.asked:
        return False
    configured = conf.as_int(before.value) if before is not None else None
    return configured is None or configured >= want.asked


def choose(want, live, before):
    """(value to write, action, source) for one Want: ``live`` the /proc/sys value (int or
    None), ``before`` the Assignment that decides it now (or None)."""
    configured = conf.as_int(before.value) if before is not None else None
    if want.exact:
        higher = [v for v in (live, configured) if v is not None and v > want.asked]
        return want.asked, ('lowered' if higher else 'written'), None
    value, action, source = want.asked, 'written', None
    if configured is not None and configured > value:
        value, action, source = configured, 'kept', before.where
    if live is not None and live > value:
        value, action, source = live, 'kept', conf.proc_path(want.key)
    return value, action, source


def edit_text(current, wants, values, state):
    """The file's new text: each wanted key's last line replaced in place (or appended),
    every other line kept byte for byte; None when state=absent leaves only the header."""
    if current is None and state == 'present' and not [w for w in wants if w.key in values]:
        return None         # every minimum met: no file of ours to create
    text = current if current is not None else HEADER
    lines = text.splitlines(True)
    for want in wants:
        owned = []
        for index, line in enumerate(lines):
            try:
                parsed = conf.parse_line(line)
            except conf.ConfError:
                continue
            if parsed and parsed[0] == want.key and not conf.is_glob(parsed[0]):
                owned.append(index)
        if state == 'absent':
            for index in reversed(owned):
                del lines[index]
            continue
        if want.key not in values:
            continue        # met: the node holds the minimum already, no line of ours
        new_line = '%s = %d\n' % (want.name, values[want.key])
        if owned:
            last = owned[-1]
            parsed = conf.parse_line(lines[last])
            if conf.as_int(parsed[1]) != values[want.key] or parsed[2]:
                lines[last] = new_line
        else:
            if lines and not lines[-1].endswith('\n'):
                lines[-1] += '\n'
            lines.append(new_line)
    new = ''.join(lines)
    if state == 'absent' and not [line for line in lines if line.strip()
                                  and line.strip()[0] not in conf.COMMENTS]:
        if new.replace(HEADER, '', 1).strip() == '':
            return None
    return new


def plan_change(params, root=None):
    """The Change of the module's file; changes.Failure on bad input or a conflict (with
    on_conflict=fail), with nothing written."""
    root = ROOT if root is None else root
    path = params['path']
    state = params['state']
    if os.path.dirname(path) not in conf.DIRS or not path.endswith('.conf'):
        raise changes.Failure('path: %s is not read at boot: systemd-sysctl reads *.conf files '
                              'in %s' % (path, ', '.join(conf.DIRS)), kind=errors.BAD_INPUT)
    wants = parse_request(params['sysctl'], state, root, params.get('job_sysctl'))
    current = conf.read_text(root + path)
    before, problems = conf.parse_files(conf.config_files(root))
    values, rows = {}, []
    for want in wants:
        live = conf.as_int(conf.live(want.key, root))
        decided = conf.resolve(before, want.key)['winner']
        row = dict(name=want.name, asked=want.asked, exact=want.exact, live=live,
                   configured=decided.as_dict() if decided else None)
        if state == 'present' and met(want, live, decided):
            row.update(value=None, action='met', kept_from=None)
        elif state == 'present':
            value, action, source = choose(want, live, decided)
            values[want.key] = value
            row.update(value=value, action=action, kept_from=source)
        rows.append(row)
    new = edit_text(current, wants, values, state)
    after, _bad = conf.parse_files(conf.config_files(root, overlay={path: new}))
    conflicts = []
    for want, row in zip(wants, rows):
        resolved = conf.resolve(after, want.key)
        winner = resolved['winner']
        row['source'] = winner.where if winner else None
        row['boot_value'] = conf.as_int(winner.value) if winner else None
        if state == 'present' and want.key in values and (
                winner is None or winner.path != path) and row['boot_value'] != values[want.key]:
            conflicts.append(dict(name=want.name, source=winner.where if winner else None,
                                  value=winner.value if winner else None, ours=values[want.key],
                                  msg=conflict_message(want, winner, path, values[want.key])))
    result = dict(path=path, sysctl=rows, conflicts=conflicts, invalid=problems)
    if conflicts and params.get('on_conflict', 'fail') == 'fail':
        raise changes.Failure('; '.join(c['msg'] for c in conflicts) + ' (nothing written; '
                              'remove or change that line, or set on_conflict=warn)', result)
    change = changes.Change(path, result, current, new, mode=_mode(params.get('mode')))
    for row in rows:
        if row.get('action') == 'kept':
            change.warnings.append('%s: kept %d from %s (above the minimum %d asked)'
                                   % (row['name'], row['value'], row['kept_from'], row['asked']))
        elif row.get('action') == 'lowered':
            change.warnings.append('%s: lowered to %d as asked (exact); the node had %s'
                                   % (row['name'], row['value'],
                                      max(v for v in (row['live'], conf.as_int(
                                          (row['configured'] or {}).get('value'))) if v is not None)))
    change.warnings.extend(c['msg'] + ' (written because on_conflict=warn)' for c in conflicts)
    if state == 'present':
        plan_live(change, wants, root)
    else:
        result.update(apply={}, not_applied={}, applied={}, configured_not_applied=[])
    return change


def conflict_message(want, winner, path, ours):
    if winner is None:
        return ('%s: a later line excludes %s from every sysctl file, so %s would never set '
                'it to %d' % (want.field, want.name, path, ours))
    return ('%s: %s sets %s = %s after %s (which would set %d); it wins at boot'
            % (want.field, winner.where, want.name, winner.value, path, ours))


def _mode(mode):
    if mode is None:
        return 0o644
    return int(str(mode), 8) if not isinstance(mode, int) else mode


def plan_live(change, wants, root):
    """Which live values differ from what the configuration now sets, and whether they can
    be written: the result's ``apply`` ({name: value}), ``not_applied`` ({name: reason}),
    ``applied`` (set by :func:`apply_live`)."""
    result = change.result
    result['apply'], result['not_applied'], result['applied'] = {}, {}, {}
    for want, row in zip(wants, result['sysctl']):
        if row.get('boot_value') is None or row['boot_value'] == row['live']:
            row['applied'] = row.get('boot_value') is not None
            continue
        why = conf.writable(want.key, root)
        if why:
            result['not_applied'][want.name] = why
            row['applied'] = False
            row['not_applied'] = why
            change.warnings.append('%s: configured, not applied: %s = %d is in %s but the '
                                   'kernel has %s (%s); it applies at the next boot or '
                                   'systemd-sysctl run where /proc/sys is writable'
                                   % (want.field, row['name'], row['boot_value'], row['source'],
                                      row['live'], why))
        else:
            result['apply'][want.name] = row['boot_value']
    result['configured_not_applied'] = sorted(result['not_applied'])


def reboot_required(result, apply=True):
    """Whether a configured value reaches the running kernel only at the next boot: one that
    cannot be written here (``configured_not_applied``: a read-only /proc/sys), or, where the
    module does not apply (``apply`` false), one that differs from the live value."""
    return bool(result.get('configured_not_applied')) or (not apply and bool(result.get('apply')))


def _write(name, value, root):
    with open(conf.proc_path(conf.normalize(name), root), 'w') as handle:
        handle.write('%d\n' % value)


def apply_live(result, root=None):
    """Write the planned live values into /proc/sys (sysctl -w), before the file: a value the
    kernel refuses (EINVAL, for a sysctl whose bounds the plan cannot know) fails naming the
    sysctl with the values written before it put back, so nothing is left changed. Raises
    changes.Failure."""
    root = ROOT if root is None else root
    done = []
    for row in result['sysctl']:
        name = row['name']
        if name not in result['apply']:
            continue
        value = result['apply'][name]
        try:
            _write(name, value, root)
        except (IOError, OSError) as exc:
            reason = 'the kernel refuses the value' if exc.errno == errno.EINVAL else exc.strerror
            for earlier, before in reversed(done):
                if before is None:
                    continue
                try:
                    _write(earlier['name'], before, root)
                    earlier['live'] = before
                    earlier['applied'] = False
                    result['applied'].pop(earlier['name'], None)
                except (IOError, OSError):
                    pass
            raise changes.Failure('sysctl.%s: writing %d to %s failed: %s (nothing written; the '
                                  'live value is still %s)'
                                  % (name, value, conf.proc_path(conf.normalize(name)), reason,
                                     row['live']), result)
        done.append((row, row['live']))
        row['live'] = conf.as_int(conf.live(conf.normalize(name), root))
        row['applied'] = row['live'] == value
        result['applied'][name] = value


NR_OPEN = 'fs.nr_open'


class RaiseFirst(changes.Change):
    """limits_profile's kernel drop-in where the profile's hard nofile is above the live
    ``fs.nr_open`` (issue 43 item 5): fs.nr_open is written live (:func:`apply_live`) and then
    the drop-in, before any file of the profile, so that no login, service or container is
    asked for a nofile the kernel refuses (pam_limits then fails the session). The drop-in is
    the whole plan of the limits role's kernel ceilings (sysctl_ceilings, which runs next,
    finds it written and applies the others). :meth:`undo` puts the file and the live value
    back (limits_profile's all or nothing)."""

    def __init__(self, change, row):
        changes.Change.__init__(self, change.path, change.result, change.current, change.new,
                                changed=True, mode=change.mode)
        self.warnings = list(change.warnings)
        self.row = row

    def apply(self, backup=False):
        apply_live(dict(sysctl=[self.row], applied={},
                        apply={NR_OPEN: self.result['apply'][NR_OPEN]}))
        try:
            written = changes.Change.apply(self, backup)
        except changes.Failure:
            _write(NR_OPEN, self.row['before'], ROOT)       # nothing left changed
            raise
        self.result['applied'][NR_OPEN] = self.row['live']
        return written

    def undo(self):
        changes.Change.undo(self)
        _write(NR_OPEN, self.row['before'], ROOT)


def nr_open_first(change, hard):
    """``change`` (plan_change's, or None) as a :class:`RaiseFirst` when the hard nofile
    ``hard`` (an int, or None) is above the live fs.nr_open and the plan raises fs.nr_open to
    at least it, live, here (/proc/sys writable); else None (the guards then refuse a hard
    nofile above the live value, as before)."""
    if change is None or not isinstance(hard, int) or \
            NR_OPEN not in (change.result.get('apply') or {}):
        return None
    row = [r for r in change.result['sysctl'] if r['name'] == NR_OPEN][0]
    if row['live'] is None or hard <= row['live'] or change.result['apply'][NR_OPEN] < hard:
        return None
    return RaiseFirst(change, dict(row, before=row['live']))
