# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm.conf: a lossless reader and editor of the lines that decide which resource limits a
Slurm job takes from the submitting shell. Private to the collection; no Ansible import.

The reader follows SchedMD/slurm ``src/common/parse_config.c`` (slurm-22-05-8-1 and master):

- ``_get_next_line``: a ``#`` not preceded by an odd number of backslashes starts a comment
  (removed *before* continuations are joined); a line ending in an odd number of backslashes
  (blanks after them allowed) continues on the next one; then ``\\X`` becomes ``X``.
- ``keyvalue_pattern``: ``KEY[op]=VALUE`` with KEY ``[[:alnum:]_.]+``, VALUE ``"..."`` or a
  run of non-blanks; keys are case-insensitive (``_conf_hashtbl_index``); a key given twice
  keeps the last value. After the pair only blanks may follow ("Parse error in file %s line
  %d"), except on the node, partition and node-set lines whose handler reads more pairs.
- ``_parse_include_directive``: ``Include FILE`` (``include`` in any case, then blanks),
  FILE relative to slurm.conf's directory, ``%c`` replaced by the lower-cased ClusterName.
  A missing file fails the whole parse (slurmd retries ``stat`` for 60 s, then exits); a glob
  is not expanded (22.05 looks for a file named ``*``; 23.02 and later refuse it: "Slurm does
  not support glob parsing").

``src/common/slurm_rlimits_info.c`` (``parse_rlimits``) reads PropagateResourceLimits(Except):
``ALL``, ``NONE`` (exactly, upper case) or names split at ``, \\t\\n``, each with an optional
``RLIMIT_`` prefix, upper case; an unknown name stops the daemons ("Bad rlimit name").
``read_config.c`` uses Except when it is set and then ignores PropagateResourceLimits
silently; slurm.conf(5) calls them mutually exclusive, so both set is refused here.
``src/slurmd/slurmstepd/ulimits.c`` (``_set_limit``): a propagated limit sets the task's soft
limit to the submit shell's soft limit, capped at slurmd's hard limit; a limit not propagated
keeps slurmd's (the task inherits slurmstepd's, which inherits slurmd's).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths

SLURM_CONF = runtime_paths.SLURM_CONF

# slurm_rlimits_info.c, in its order: Slurm's name -> the limit model's item
RLIMITS = (('CPU', 'cpu'), ('FSIZE', 'fsize'), ('DATA', 'data'), ('STACK', 'stack'),
           ('CORE', 'core'), ('RSS', 'rss'), ('NPROC', 'nproc'), ('NOFILE', 'nofile'),
           ('MEMLOCK', 'memlock'), ('AS', 'as'))
ITEM_OF = dict(RLIMITS)
RLIMIT_OF = dict((item, name) for name, item in RLIMITS)

PROPAGATE = 'propagateresourcelimits'
EXCEPT = 'propagateresourcelimitsexcept'
# keys whose handler reads the rest of the line as more KEY=VALUE pairs (S_P_LINE/S_P_EXPLINE)
LINE_KEYS = ('nodename', 'partitionname', 'downnodes', 'frontendname', 'nodeset')
MARK = '# gpufleet.tuning: the profile\'s limits come from slurmd, not from the submit shell\n'

PAIR = re.compile(r'[ \t\n\r\f\v]*([A-Za-z0-9_.]+)[ \t\n\r\f\v]*([-*+/]?)='
                  r'[ \t\n\r\f\v]*(?:"([^"]*)"|([^ \t\n\r\f\v]+))(?=[ \t\n\r\f\v]|$)')
INCLUDE = re.compile(r'include[ \t\n\r\f\v]', re.IGNORECASE)


class SlurmConfError(errors.Error):
    """slurm.conf that Slurm would not read; ``where`` is file:line."""

    kind = errors.UNPARSABLE


def strip_comment(line):
    """``_strip_comments``: cut at the first ``#`` after an even number of backslashes."""
    backslashes = 0
    for index, char in enumerate(line):
        if char == '#' and backslashes % 2 == 0:
            return line[:index]
        backslashes = backslashes + 1 if char == '\\' else 0
    return line


def strip_continuation(line):
    """``_strip_continuation``: (text, continued). An odd run of backslashes at the end
    (blanks after it allowed) continues the line; the last backslash and what follows go."""
    end = len(line)
    while end > 0 and line[end - 1].isspace():
        end -= 1
    run = 0
    while end - run > 0 and line[end - run - 1] == '\\':
        run += 1
    if run % 2 == 1:
        return line[:end - 1], True
    return line, False


def strip_escapes(line):
    """``_strip_escapes``: ``\\X`` -> ``X``."""
    out = []
    index = 0
    while index < len(line):
        if line[index] == '\\':
            index += 1
            if index >= len(line):
                break
        out.append(line[index])
        index += 1
    return ''.join(out)


class Entry(object):
    """One logical line: ``number`` (its first physical line, 1-based), ``count`` physical
    lines, ``text`` as Slurm reads it, and its first pair (``key`` lower-cased, ``name`` as
    written, ``value``), or ``include``."""

    def __init__(self, path, number, count, text):
        self.path = path
        self.number = number
        self.count = count
        self.text = text
        self.key = self.name = self.value = self.include = None

    @property
    def where(self):
        return '%s:%d' % (self.path, self.number)


def logical_lines(text, path):
    """[Entry] of ``text`` as ``_get_next_line`` joins it (blank logical lines left out)."""
    physical = text.splitlines(True)
    found = []
    index = 0
    while index < len(physical):
        start = index
        parts = []
        while index < len(physical):
            part, continued = strip_continuation(strip_comment(physical[index]))
            parts.append(part)
            index += 1
            if not continued:
                break
        joined = strip_escapes(''.join(parts))
        if joined.strip():
            found.append(Entry(path, start + 1, index - start, joined))
    return found


def read_pairs(entry):
    """Read ``entry``'s first KEY=VALUE (and, on node/partition lines, the rest); raises
    SlurmConfError when anything but blanks is left, as ``s_p_parse_file`` does."""
    match = PAIR.match(entry.text)
    if not match:
        raise SlurmConfError('%s: cannot read %r: slurm.conf(5) lines are Key=Value'
                             % (entry.where, entry.text.strip()[:80]), where=entry.where)
    entry.name = match.group(1)
    entry.key = match.group(1).lower()
    entry.value = match.group(3) if match.group(3) is not None else match.group(4)
    rest = entry.text[match.end():]
    if entry.key in LINE_KEYS:
        while True:
            more = PAIR.match(rest)
            if not more:
                break
            rest = rest[more.end():]
    if rest.strip():
        raise SlurmConfError('%s: cannot read %r after %s=%s (Slurm stops here: "Parse error '
                             'in file ... line %d")' % (entry.where, rest.strip()[:80],
                                                        entry.name, entry.value, entry.number),
                             where=entry.where)


class Config(object):
    """A parsed slurm.conf with its includes: ``files`` {path: text}, ``entries`` in reading
    order, ``settings`` {key: the Entry that gives the key its value (the last one)}."""

    def __init__(self):
        self.files = {}
        self.entries = []
        self.settings = {}

    def get(self, key):
        return self.settings.get(key.lower())


def read_file(path):
    with open(path, 'rb') as handle:
        data = handle.read()
    return data.decode('utf-8', 'surrogateescape')


def parse(path=SLURM_CONF, reader=read_file, config=None, depth=0):
    """Config of ``path`` and every file it includes; raises SlurmConfError naming file:line."""
    config = config or Config()
    if depth > 16:
        raise SlurmConfError('%s: includes nest deeper than 16 files (a loop?)' % path,
                             where=path)
    text = reader(path)
    config.files[path] = text
    for entry in logical_lines(text, path):
        body = entry.text.lstrip()
        if INCLUDE.match(body):
            include_file(config, entry, body, path, reader, depth)
            continue
        read_pairs(entry)
        config.entries.append(entry)
        config.settings[entry.key] = entry
    return config


def include_file(config, entry, body, path, reader, depth):
    words = body.split()
    if len(words) > 2:
        raise SlurmConfError('%s: cannot read %r after Include %s' % (
            entry.where, ' '.join(words[2:])[:80], words[1]), where=entry.where)
    name = words[1]
    if '%c' in name:
        cluster = config.get('ClusterName')
        if cluster is None:
            raise SlurmConfError('%s: Include %s needs ClusterName (for %%c) before it'
                                 % (entry.where, name), where=entry.where)
        name = name.replace('%c', cluster.value.lower())
    target = name if name.startswith('/') else os.path.join(os.path.dirname(path), name)
    if '*' in name:
        raise SlurmConfError('%s: Include %s: Slurm does not expand globs (22.05 looks for a '
                             'file of that name, 23.02 and later skip it with an error); name '
                             'each file' % (entry.where, name), where=entry.where)
    try:
        parse(target, reader, config, depth + 1)
    except (IOError, OSError) as exc:
        raise SlurmConfError('%s: Include %s: %s (slurmd and slurmctld do not start without '
                             'it)' % (entry.where, target, exc.strerror or exc),
                             where=entry.where)
    entry.include = target


def rlimit_names(entry):
    """The rlimit names of a PropagateResourceLimits(Except) value (``parse_rlimits``):
    'ALL', 'NONE' or a list of names; SlurmConfError for an unknown name."""
    value = entry.value
    if value in ('ALL', 'NONE'):
        return value
    names = []
    for token in re.split(r'[, \t\n]+', value):
        if not token:
            continue
        name = token[len('RLIMIT_'):] if token.startswith('RLIMIT_') else token
        if name not in ITEM_OF:
            raise SlurmConfError('%s: %s=%s: %r is not a limit Slurm knows (%s); slurmd and '
                                 'slurmctld stop on it ("Bad rlimit name")' % (
                                     entry.where, entry.name, value, token,
                                     ', '.join(n for n, _i in RLIMITS)), where=entry.where)
        names.append(name)
    return names


def propagated(config):
    """({Slurm rlimit name: True when the submit shell's soft limit is propagated}, the Entry
    that decides, or None for the default ALL). Raises SlurmConfError for both options set
    or an unknown name."""
    both = config.get(EXCEPT), config.get(PROPAGATE)
    if both[0] is not None and both[1] is not None:
        raise SlurmConfError(
            '%s: %s and %s: %s are both set; slurm.conf(5) says they are mutually exclusive '
            '(Slurm uses the first and ignores the second without a word): keep one'
            % (both[0].where, both[0].name, both[1].where, both[1].name),
            where=both[0].where)
    entry = both[0] or both[1]
    if entry is None:
        return dict((name, True) for name, _item in RLIMITS), None
    names = rlimit_names(entry)
    listed = True if names == 'ALL' else False if names == 'NONE' else None
    flag = entry.key == PROPAGATE
    result = {}
    for name, _item in RLIMITS:
        on_list = listed if listed is not None else name in names
        # parse_rlimits: NONE flips the flag and sets it for every limit
        result[name] = (flag == on_list) if names != 'NONE' else (not flag)
    return result, entry


def plan_text(config, items, path=SLURM_CONF):
    """(file, new text, what) that stops propagating the profile's ``items`` (limit model
    names), or (None, None, '') when none of them is propagated. The line that decides is
    edited in place (its value only); with no such line one is appended to ``path``."""
    flags, entry = propagated(config)
    wanted = [RLIMIT_OF[item] for item in items if item in RLIMIT_OF]
    leaking = [name for name in wanted if flags[name]]
    if not leaking:
        return None, None, ''
    if entry is None:
        text = config.files[path]
        if text and not text.endswith('\n'):
            text += '\n'
        line = 'PropagateResourceLimitsExcept=%s\n' % ','.join(leaking)
        return path, text + MARK + line, 'add ' + line.strip()
    if entry.key == EXCEPT:
        names = rlimit_names(entry)
        # ALL propagates nothing (nothing leaks then); NONE propagates everything
        value = ','.join((names if isinstance(names, list) else []) + leaking)
    else:
        names = rlimit_names(entry)
        current = [n for n, _i in RLIMITS] if names == 'ALL' else names
        value = ','.join(n for n in current if n not in leaking) or 'NONE'
    return entry.path, replace_value(config, entry, value), '%s: %s=%s' % (
        entry.where, entry.name, value)


def replace_value(config, entry, value):
    """The text of ``entry``'s file with its value replaced, every other byte kept."""
    if entry.count != 1:
        raise SlurmConfError('%s: %s continues over %d lines; edit it by hand'
                             % (entry.where, entry.name, entry.count), where=entry.where)
    lines = config.files[entry.path].splitlines(True)
    line = lines[entry.number - 1]
    match = PAIR.match(line)
    if match is None or '\\' in line[:match.end()]:
        raise SlurmConfError('%s: %s is written in a form this editor does not rewrite; edit '
                             'it by hand' % (entry.where, entry.name), where=entry.where)
    group = 3 if match.group(3) is not None else 4
    lines[entry.number - 1] = line[:match.start(group)] + value + line[match.end(group):]
    return ''.join(lines)


def job_limit(propagate, slurmd, submit_soft):
    """The Limit a job task gets (``ulimits.c``): slurmd's Limit, or with ``propagate`` the
    submit shell's soft value capped at slurmd's hard one (kernel units, model.UNLIMITED)."""
    if not propagate or submit_soft is None:
        return slurmd
    soft = slurmd.hard if model.exceeds(submit_soft, slurmd.hard) else submit_soft
    return model.Limit(soft, slurmd.hard)
