# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd's names and search paths: unit names, the manager and unit directories in
precedence order (systemd 252, merged and split /usr), the drop-ins systemd picks and the file a
unit is loaded from. Every function that touches the file system takes ``root``."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors

SYSTEM = 'system'
USER = 'user'
MANAGER_SECTION = 'Manager'
MANAGER_PREFIX = 'DefaultLimit'
UNIT_PREFIX = 'Limit'
DROPIN_NAME = '90-gpufleet-tuning.conf'

# Where systemd 252 looks, most important first (CONF_PATHS and the unit search path, merged /usr).
MANAGER_DIRS = ('/etc/systemd', '/run/systemd', '/usr/local/lib/systemd', '/usr/lib/systemd')
UNIT_DIRS = ('/etc/systemd/system.control', '/run/systemd/system.control',
             '/run/systemd/transient', '/run/systemd/generator.early', '/etc/systemd/system',
             '/etc/systemd/system.attached', '/run/systemd/system',
             '/run/systemd/system.attached', '/run/systemd/generator',
             '/usr/local/lib/systemd/system', '/usr/lib/systemd/system',
             '/run/systemd/generator.late',
             # split /usr (Debian or Ubuntu upgraded in place): last, so that on merged /usr,
             # where it is /usr/lib/systemd/system again, it never wins a name
             '/lib/systemd/system')
# Sections in which each unit type accepts Limit*= (systemd.exec(5)).
UNIT_SECTIONS = {'service': 'Service', 'socket': 'Socket', 'mount': 'Mount', 'swap': 'Swap'}
_UNIT_NAME_RE = re.compile(r'^[A-Za-z0-9:_.\\@-]+\.(service|socket|mount|swap)$')


class ConfError(errors.Error, ValueError):
    """A request or a file the editor cannot handle; the message names the field or file:line."""

    kind = errors.UNPARSABLE


# --- names and paths ---------------------------------------------------------------------

#: the prefix of a unit's probed context name (``unit:NAME``: contexts/units.py)
UNIT_CONTEXT_PREFIX = 'unit:'


def unit_name(name):
    """``docker`` -> ``docker.service`` (a name without a unit type is a service); no checks."""
    if '.' not in name.rsplit('@', 1)[-1] or name.endswith('@'):
        name = name + '.service'
    return name


def normalize_unit(name):
    """``docker`` -> ``docker.service``; refuses names systemd would refuse or cannot limit."""
    if not isinstance(name, str) or not name:
        raise ConfError('unit: a unit name is required')
    name = unit_name(name)
    if '/' in name or not _UNIT_NAME_RE.match(name):
        raise ConfError('unit: %r is not a unit name that takes Limit*= settings (service, '
                        'socket, mount or swap)' % name)
    return name


def is_template(unit):
    """``train@.service``: a template, whose drop-in reaches every instance; systemd cannot
    start, restart or show a template itself."""
    return unit.rsplit('.', 1)[0].endswith('@')


def unit_section(unit):
    return UNIT_SECTIONS[unit.rsplit('.', 1)[1]]


def manager_main(scope):
    return '/etc/systemd/%s.conf' % scope


def dropin_path(scope=None, unit=None, name=DROPIN_NAME):
    """The drop-in this collection manages for a manager scope or a unit."""
    if unit:
        return '/etc/systemd/system/%s.d/%s' % (normalize_unit(unit), name)
    return '/etc/systemd/%s.conf.d/%s' % (scope, name)


def _is_masked(real):
    try:
        return os.path.islink(real) and os.path.realpath(real) == '/dev/null'
    except OSError:
        return False


def list_dropins(dirs, root=''):
    """``*.conf`` files in ``dirs`` (most important first) as systemd picks them: one per file
    name (the first directory wins), sorted by file name, masked ones left out.
    Returns host paths."""
    chosen = {}
    for directory in dirs:
        try:
            names = os.listdir(root + directory)
        except OSError:
            continue
        for name in names:
            if name.startswith('.') or not name.endswith('.conf') or name in chosen:
                continue
            real = os.path.join(root + directory, name)
            if _is_masked(real):
                chosen[name] = None
                continue
            if not os.path.isfile(real):
                continue
            chosen[name] = directory + '/' + name
    return [chosen[name] for name in sorted(chosen) if chosen[name] is not None]


def manager_files(scope, root=''):
    """(main file, [drop-ins]) for the system or user manager, host paths."""
    if scope not in (SYSTEM, USER):
        raise ConfError('scope: must be system or user, got %r' % (scope,))
    dirs = ['%s/%s.conf.d' % (d, scope) for d in MANAGER_DIRS]
    return manager_main(scope), list_dropins(dirs, root)


def unit_names(unit):
    """Names whose drop-in directories apply to ``unit``: the unit, its template, its type."""
    names = [unit]
    base, suffix = unit.rsplit('.', 1)
    if '@' in base:
        template = base.split('@', 1)[0] + '@.' + suffix
        if template != unit:
            names.append(template)
    # foo-bar-baz.service also reads foo-bar-.service.d and foo-.service.d (v246+).
    parts = base.split('@', 1)[0].split('-')
    for count in range(len(parts) - 1, 0, -1):
        names.append('-'.join(parts[:count]) + '-.' + suffix)
    names.append(suffix)
    return names


def unit_files(unit, root=''):
    """(fragment or None, [drop-ins]) for a unit, host paths."""
    unit = normalize_unit(unit)
    fragment = None
    base, suffix = unit.rsplit('.', 1)
    candidates = [unit]
    if '@' in base and not base.endswith('@'):
        candidates.append(base.split('@', 1)[0] + '@.' + suffix)
    for name in candidates:
        for directory in UNIT_DIRS:
            path = '%s/%s' % (directory, name)
            if os.path.isfile(root + path) or _is_masked(root + path):
                fragment = path
                break
        if fragment:
            break
    if fragment and _is_masked(root + fragment):
        fragment = None
    dirs = []
    for directory in UNIT_DIRS:
        for name in unit_names(unit):
            dirs.append('%s/%s.d' % (directory, name))
    return fragment, list_dropins(dirs, root)


def unit_exists(unit, root=''):
    """Is there a file named ``unit`` in the unit search path?"""
    return any(os.path.exists(root + os.path.join(d, unit)) for d in UNIT_DIRS)
