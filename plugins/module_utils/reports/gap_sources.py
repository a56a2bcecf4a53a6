# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cause of each gap in the limits role's failure table (roles/limits/tasks/failed.yml,
issue 31.10): for a probed context and item below the profile, the file and line that the
limits_profile call named for that context and item, from what it already returned
(``per_context``): a later line that overrides the profile's (conflicts), a narrower limits
line that wins for some users (overrides), a line the tool skips (invalid), the line systemd
takes the value from (configured), else the profile's own file. The user manager's own PAM
session applies the limits lines too, so its gaps also look at the pam context's lines.

Controller-side only (the filter plugins/filter/limits_failures.py), plain Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

#: the probe whose gaps also come from another context's lines (systemd-user's PAM session)
ALSO = {'user_manager': ('pam',)}
#: what a row says when no call returned a file for its context
UNKNOWN = 'no file returned for this context'


def _contexts(probe, profile_result):
    """The limits_profile contexts whose files decide ``probe`` (its ``probes`` map; a unit
    is probed under its own name)."""
    named = [entry.get('context') for entry in profile_result.get('probes') or []
             if entry.get('probe') == probe]
    if not named and probe in (profile_result.get('per_context') or {}):
        named = [probe]
    return named + [c for c in ALSO.get(probe, ()) if c not in named]


def _where(record):
    path, line = record.get('path'), record.get('line')
    return '%s:%s' % (path, line) if path and line else (path or '')


def _about(record, item):
    """Whether a conflicts, overrides or invalid record is about ``item`` (pam lines name it
    as ``item``, systemd's as ``item`` or a ``key`` such as DefaultLimitNOFILE)."""
    if record.get('item') is not None:
        return record.get('item') == item
    return str(record.get('key') or '').upper().endswith('LIMIT' + item.upper())


def _place(record):
    path, line = record.get('path'), record.get('line')
    return dict(path=str(path), line=int(line) if line is not None else None) if path else None


def _causes(per, item):
    """[(cause text, place)] of the records of one context about ``item``."""
    found = []
    for key in ('conflicts', 'overrides'):
        for record in per.get(key) or []:
            if _about(record, item) and record.get('kind', 'narrower') == 'narrower':
                reason = str(record.get('reason') or '')
                where = _where(record)
                found.append((reason if not where or where in reason
                              else '%s: %s' % (where, reason or 'overrides the profile'),
                              _place(record)))
    for record in per.get('invalid') or []:
        if _about(record, item):
            found.append(('%s: %s' % (_where(record), record.get('problem', 'skipped')),
                          _place(record)))
    return found


def evidence(probe, item, profile_result):
    """The tune's evidence of ``probe``'s gap in ``item``: {source (the cause text), place
    ({path, line} of the line that decides, or None), fix (what the context's own record says
    closes it, or '')}: a context no written file reaches says why itself (ssh: sshd's stack,
    with the fix); else the records of the limits_profile result (``profile_result``) about that
    item, joined by '; ', placed at the first; else where the value is configured; else the
    profile's file (see the module docstring)."""
    for entry in (profile_result or {}).get('probes') or []:
        if entry.get('probe') == probe and entry.get('gap') and entry.get('cause'):
            return dict(source=entry['cause'], place=None, fix='')
    per_context = (profile_result or {}).get('per_context') or {}
    contexts = _contexts(probe, profile_result or {})
    found = []
    for context in contexts:
        for cause in _causes(per_context.get(context) or {}, item):
            if cause[0] not in [text for text, _place in found]:
                found.append(cause)
    if found:
        return dict(source='; '.join(text for text, _place in found),
                    place=next((at for _text, at in found if at), None), fix='')
    for context in contexts:
        per = per_context.get(context) or {}
        configured = (per.get('configured') or {}).get(item)
        if isinstance(configured, dict) and configured.get('source'):
            record = dict(path=configured['source'], line=configured.get('line'))
            where = _where(record)
            return dict(source='%s (%s)' % (where, configured['value'])
                        if configured.get('value') else where, place=_place(record), fix='')
        if per.get('path'):
            return dict(source='%s (the profile\'s file; no later line overrides it)'
                        % per['path'], place=_place(dict(path=per['path'])), fix='')
    return dict(source=UNKNOWN, place=None, fix='')


def source(probe, item, profile_result):
    """The cause text of :func:`evidence`."""
    return evidence(probe, item, profile_result)['source']


def sources(gaps, profile_result):
    """{(context, item): cause} for the verification's ``gaps`` (effective_limits')."""
    return dict(((gap['context'], gap['item']), source(gap['context'], gap['item'],
                                                       profile_result))
                for gap in gaps or [])
