# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the running host allows: kernel ceilings, PID 1's limits, capabilities. Plain Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings as ceilings_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model

CAP_SYS_RESOURCE = 24
#: the kernel ceilings a Docker probe's proof keeps (host/proofs.py; model/ceilings.py)
SYSCTLS = ceilings_model.names('proof')


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def sysctl(name, root=''):
    """A sysctl's live integer (sysctl_conf reads /proc/sys), or None."""
    return sysctl_conf.as_int(sysctl_conf.live(sysctl_conf.normalize(name), root))


def ceilings(root=''):
    return dict((name, sysctl(name, root)) for name in SYSCTLS)


def start_ticks(pid, root=''):
    """When process ``pid`` started, in clock ticks since boot (/proc/PID/stat's 22nd field),
    or None: with the boot ID it names one process of this boot for good."""
    text = _read('%s/proc/%s/stat' % (root, pid))
    try:
        return int(text.rsplit(')', 1)[1].split()[19]) if text else None
    except (IndexError, ValueError):
        return None


def proc_limits_text(pid='1', root=''):
    """The text of /proc/PID/limits; IOError/OSError when it cannot be read."""
    with open('%s/proc/%s/limits' % (root, pid)) as handle:
        return handle.read()


def proc_limits(pid='1', root=''):
    """{item: Limit} of a process, or {} when unreadable (the one reader of /proc/PID/limits)."""
    try:
        text = proc_limits_text(pid, root)
    except (IOError, OSError):
        return {}
    return model.parse_proc_limits(text) if text else {}


def has_cap(cap, pid='self', root=''):
    """Is capability ``cap`` in the effective set of ``pid``?"""
    text = _read('%s/proc/%s/status' % (root, pid)) or ''
    for line in text.splitlines():
        if line.startswith('CapEff:'):
            return bool(int(line.split()[1], 16) & (1 << cap))
    return False


class Ceiling(object):
    """What login services can set on this host for a hard limit.

    Raising a hard limit above the current one needs CAP_SYS_RESOURCE; without it (a container,
    a restricted host) login sessions cannot go above the hard limit their service inherited,
    which is PID 1's at most. nofile can never go above fs.nr_open.
    """

    def __init__(self, root=''):
        self.nr_open = sysctl('fs.nr_open', root)
        self.pid1 = proc_limits('1', root)
        self.can_raise = has_cap(CAP_SYS_RESOURCE, 'self', root)

    def hard_ceiling(self, item):
        """(ceiling, reason) for an item's hard limit; ceiling None means no known ceiling."""
        item = model.ITEMS[item] if isinstance(item, str) else item
        candidates = []
        if item.name == 'nofile' and self.nr_open:
            candidates.append((self.nr_open, 'fs.nr_open is %d' % self.nr_open))
        if not self.can_raise and item.name in self.pid1:
            hard = self.pid1[item.name].hard
            if hard != model.UNLIMITED:
                candidates.append((hard, 'the host lacks CAP_SYS_RESOURCE and PID 1 runs with '
                                         'hard %s %s' % (item.name, model.format_human(item, hard))))
        if not candidates:
            return None, None
        return min(candidates, key=lambda c: c[0])


def forced(message, force, refused, warnings):
    """The one rule for a value above what the host lets a setter set: written with a warning
    under ``force``, else refused (naming the flag and the role's variable)."""
    if force:
        warnings.append(message + ' (written because force=true)')
    else:
        refused.append(message + ' (set force=true to write it anyway; limits role: '
                       'limits_force: true)')


def check_request(request, ceiling, force, field='limits', setter='systemd',
                  consequence='services would fail to start'):
    """(errors, warnings) for requested values that would not work on this host.

    ``request``: {item: Limit}; ``field`` names the option in messages (limits.nofile),
    ``setter`` who raises the limit (systemd, the container runtime) and ``consequence`` what
    happens if it cannot. nofile is never unlimited and never above fs.nr_open; a hard value
    above what the host lets ``setter`` set is refused unless ``force``.
    """
    errors, warnings = [], []
    for name, limit in sorted((request or {}).items()):
        item = model.ITEMS[name]
        if name == 'nofile' and model.UNLIMITED in (limit.hard, limit.soft):
            errors.append('%s.nofile: unlimited is not possible for nofile (%s); the kernel '
                          'caps it at fs.nr_open (%s)'
                          % (field, model.UNLIMITED_MEANS, ceiling.nr_open or 'unknown'))
            continue
        if name == 'nofile' and ceiling.nr_open and limit.hard is not None and \
                model.exceeds(limit.hard, ceiling.nr_open):
            errors.append('%s.nofile: hard %s is above fs.nr_open (%d)'
                          % (field, limit.hard, ceiling.nr_open))
            continue
        top, reason = ceiling.hard_ceiling(item)
        if top is not None and limit.hard is not None and model.exceeds(limit.hard, top):
            forced('%s.%s: hard %s is above what this host lets %s set: %s; %s'
                   % (field, name, model.format_human(item, limit.hard), setter, reason,
                      consequence), force, errors, warnings)
    return errors, warnings
