# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where core dumps go on this node, and whether a profile's ``core`` limit lets them fill the
root filesystem (issue 33 item 3; gpustack#3094: 55 GB of core files). Read only, plain Python.

``kernel.core_pattern`` decides (core(5)): a pipe (``|/usr/lib/systemd/systemd-coredump ...``,
apport, another handler) gets the core on its standard input; any other pattern is a file
name, relative ones in the crashing process's working directory. systemd-coredump stores
cores in /var/lib/systemd/coredump (``Storage=external``, its default) and removes old ones
to keep the store under ``MaxUse=`` (coredump.conf(5): by default 10% of the filesystem, at
most 4 GiB). :func:`root_risk` is the one judgement (the audit's ``core`` section and
limits_profile's warning both call it)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sdconf
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)

PATTERN = '/proc/sys/kernel/core_pattern'
MOUNTINFO = '/proc/self/mountinfo'
COREDUMP_STORE = '/var/lib/systemd/coredump'
APPORT_STORE = '/var/lib/apport/coredump'
# coredump.conf(5): the first main file found, then the drop-ins of all directories sorted by
# file name (a name in an earlier directory hides the same name in a later one)
COREDUMP_DIRS = ('/etc/systemd', '/run/systemd', '/usr/local/lib/systemd', '/usr/lib/systemd')
COREDUMP_KEYS = ('Storage', 'ProcessSizeMax', 'ExternalSizeMax', 'MaxUse', 'KeepFree')
# coredump.conf(5): MaxUse= defaults to 10% of the store's filesystem, capped at 4G
DEFAULT_MAX_USE_SHARE = 10
DEFAULT_MAX_USE_TOP = 4 * 1024 ** 3
#: a profile's soft ``core`` above this (or unlimited) is a large core limit
LARGE_CORE = 1024 ** 3
_SIZE = re.compile(r'^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]?)i?B?\s*$', re.I)


def _read(path, root=''):
    try:
        with open(root + path) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def systemd_size(text):
    """A coredump.conf size (``4G``, ``500M``, bytes; base 1024) -> bytes, 'infinity', or None."""
    text = (text or '').strip()
    if text == 'infinity':
        return 'infinity'
    found = _SIZE.match(text)
    if not found:
        return None
    factor = 1024 ** ' KMGTPE'.index((found.group(2) or ' ').upper())
    return int(float(found.group(1)) * factor)


def coredump_settings(root=''):
    """{key: {value, source: file:line}} of coredump.conf's [Coredump] keys that are set: the
    first main file found, then the drop-ins as systemd picks them (systemd_paths.list_dropins,
    read with systemd_conf: the parser of every other systemd file here)."""
    files = [d + '/coredump.conf' for d in COREDUMP_DIRS
             if os.path.isfile(root + d + '/coredump.conf')][:1]
    files.extend(sdpaths.list_dropins([d + '/coredump.conf.d' for d in COREDUMP_DIRS], root))
    found = {}
    for path in files:
        try:
            conf = sdconf.read_conf(path, root)
        except sdconf.ConfError:
            continue
        for statement in conf.statements if conf is not None else []:
            if statement.kind == 'assignment' and statement.section == 'Coredump' and \
                    statement.key in COREDUMP_KEYS:
                found[statement.key] = dict(value=statement.value,
                                            source='%s:%d' % (path, statement.line))
    return found


def mount_of(path, root=''):
    """{path, mount, fstype, device, on_root, size_bytes, free_bytes} of the filesystem that holds
    ``path`` (its nearest existing directory), from /proc/self/mountinfo and statvfs."""
    existing = path
    while existing != '/' and not os.path.isdir(root + existing):
        existing = os.path.dirname(existing) or '/'
    real = os.path.realpath(root + existing)[len(root):] or '/'
    best = dict(mount='/', fstype=None, device=None)
    for line in (_read(MOUNTINFO, root) or '').splitlines():
        left, _sep, right = line.partition(' - ')
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 2:
            continue
        mount = fields[4].replace('\\040', ' ')
        inside = real == mount or real.startswith(mount.rstrip('/') + '/')
        if inside and len(mount) >= len(best['mount']):
            best = dict(mount=mount, fstype=tail[0], device=tail[1])
    found = dict(path=path, on_root=best['mount'] == '/', size_bytes=None, free_bytes=None, **best)
    try:
        stat = os.statvfs(root + existing)
        found.update(size_bytes=stat.f_blocks * stat.f_frsize,
                     free_bytes=stat.f_bavail * stat.f_frsize)
    except OSError:
        pass
    return found


def _systemd_coredump(report, root):
    settings = coredump_settings(root)
    storage = (settings.get('Storage') or {}).get('value') or 'external'
    report['coredump'] = dict(storage=storage, settings=settings, store=None, cap=None)
    if storage == 'none':
        report['lands'] = ('systemd-coredump logs the crash and stores no core (Storage=none, %s)'
                           % settings['Storage']['source'])
        return
    if storage == 'journal':
        report['lands'] = ('systemd-coredump stores cores in the journal (Storage=journal, %s), '
                           'each at most JournalSizeMax= (767M by default), the journal under '
                           "journald's own size limits" % settings['Storage']['source'])
        return
    store = mount_of(COREDUMP_STORE, root)
    report['store'] = store
    explicit = systemd_size((settings.get('MaxUse') or {}).get('value'))
    if isinstance(explicit, int):
        cap = dict(bytes=explicit, source='MaxUse=%s (%s)' % (
            settings['MaxUse']['value'], settings['MaxUse']['source']))
    elif store['size_bytes']:
        cap = dict(bytes=min(store['size_bytes'] // DEFAULT_MAX_USE_SHARE, DEFAULT_MAX_USE_TOP),
                   source='the default MaxUse= (10%% of %s, at most 4G)' % store['mount'])
    else:
        cap = None
    report['coredump'].update(store=COREDUMP_STORE, cap=cap)
    report['lands'] = ('systemd-coredump stores cores in %s (on %s, %s)%s' % (
        COREDUMP_STORE, store['mount'], store['fstype'] or 'unknown type',
        ', old ones removed above %s' % model.format_size(cap['bytes']) + ' (%s)' % cap['source']
        if cap else ''))


def read(root=''):
    """Where a crashing process's core goes: ``pattern`` (kernel.core_pattern), ``kind``
    (``pipe``, ``path``, ``relative``, ``empty`` or ``unknown``: unreadable), ``handler`` (a
    pipe's program: ``systemd-coredump``, ``apport`` or its path), ``store`` (mount_of the
    directory cores are written to, where it is known), ``coredump`` (systemd-coredump's
    storage, its coredump.conf settings with file:line and the store's cap) and ``lands``,
    a sentence."""
    text = _read(PATTERN, root)
    report = dict(pattern=None, source=PATTERN, kind='unknown', handler=None, store=None,
                  coredump=None, lands='%s cannot be read' % PATTERN)
    if text is None:
        return report
    pattern = text.rstrip('\n')
    report['pattern'] = pattern
    if not pattern.strip():
        report.update(kind='empty', lands='the pattern is empty: the kernel names no core file')
    elif pattern.startswith('|'):
        try:
            program = shlex.split(pattern[1:])[0]
        except (ValueError, IndexError):
            program = pattern[1:].split()[0] if pattern[1:].split() else ''
        name = os.path.basename(program)
        report.update(kind='pipe', handler=name if name in ('systemd-coredump', 'apport')
                      else program)
        if name == 'systemd-coredump':
            _systemd_coredump(report, root)
        elif name == 'apport':
            report['store'] = mount_of(APPORT_STORE, root)
            report['lands'] = ('apport writes cores to %s and reports to /var/crash (on %s); its '
                               'own clean-up is not read here'
                               % (APPORT_STORE, report['store']['mount']))
        else:
            report['lands'] = 'the pipe handler %s decides where cores go' % program
    elif pattern.startswith('/'):
        folders = pattern.split('/')[:-1]
        cut = next((i for i, part in enumerate(folders) if '%' in part), len(folders))
        directory = '/'.join(folders[:cut]) or '/'
        report.update(kind='path', store=mount_of(directory, root))
        report['lands'] = 'cores are written to %s (on %s, %s), no size cap' % (
            pattern, report['store']['mount'], report['store']['fstype'] or 'unknown type')
    else:
        report.update(kind='relative', lands=(
            'cores are written as %s in the crashing process\'s working directory (which '
            'filesystem depends on where each job runs), no size cap' % pattern))
    return report


def large_core(limit):
    """True when ``limit``'s soft side (what a process dumps without asking) is unlimited or
    above LARGE_CORE (a Limit, or None: not set)."""
    return limit is not None and limit.soft is not None and model.exceeds(limit.soft, LARGE_CORE)


def root_risk(limit, where):
    """The warning for a profile whose ``core`` (``limit``, a Limit or None) is large
    (large_core) while cores land with no size cap on the root filesystem (a path pattern on
    /) or in each process's working directory (a relative pattern), from ``where`` (read());
    '' otherwise (systemd-coredump keeps its store under MaxUse=, and other handlers decide
    themselves)."""
    if not large_core(limit) or not where:
        return ''
    size = model.format_human('core', limit.soft)
    store = where.get('store') or {}
    if where.get('kind') == 'path' and store.get('on_root'):
        return ('core %s: kernel.core_pattern %s writes cores to the root filesystem with no size '
                'cap, so a few crashes of large processes can fill it; %s'
                % (size, where['pattern'], ADVICE))
    if where.get('kind') == 'relative':
        return ("core %s: kernel.core_pattern %s writes cores into each crashing process's "
                'working directory with no size cap (the root filesystem for a job started '
                'there); %s' % (size, where['pattern'], ADVICE))
    return ''


#: what takes the risk of large cores away (root_risk's warning and the audit's finding)
ADVICE = ('set core lower in the profile (0 or a few GiB), or point kernel.core_pattern at '
          'systemd-coredump or a path on a filesystem set aside for cores')


def section(profile_limits, root=''):
    """The audit's ``core`` section: read() with ``core_limit`` (the profile's core, readable,
    or None) and ``warning`` (root_risk). ``profile_limits``: the parsed profile {item: Limit}."""
    where = read(root)
    limit = (profile_limits or {}).get('core')
    where['core_limit'] = model.format_limit('core', limit) if limit is not None else None
    where['warning'] = root_risk(limit, where)
    where['advice'] = ADVICE if where['warning'] else ''
    return where


def profile_warning(profile, root=''):
    """limits_profile's warning for ``profile`` (as the user wrote it; one not parsed is
    refused elsewhere): root_risk of its ``core`` item, or ''."""
    if not isinstance(profile, dict):
        return ''
    try:
        limit = model.parse_profile(profile, 'profile', floor=False).get('core')
    except model.LimitError:
        return ''
    if not large_core(limit):
        return ''
    return root_risk(limit, read(root))
