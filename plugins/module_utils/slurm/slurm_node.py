# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""This host as a Slurm node: the slurm.conf its slurmd reads, its NodeName, and what srun's
refusals of an ``--immediate`` job step mean. Private to the collection; no Ansible import, and
slurm_conf (the parser) only inside the functions that parse, so that the context registry can
detect the slurm context without loading it.

Where slurmd reads its configuration (SchedMD/slurm ``src/slurmd/slurmd/slurmd.c``,
``src/common/read_config.c``; slurm.conf(5) "CONFIGLESS"): ``-f FILE`` on its command line,
else ``SLURM_CONF`` in its environment, else the default file, except in configless mode
(``--conf-server HOST`` or no local file and a DNS SRV record), where slurmd fetches the files
from slurmctld and keeps them in a cache it rewrites (``/run/slurm/conf``; older releases
``SlurmdSpoolDir/conf-cache``). Ubuntu's older packages (slurm-llnl) use ``/etc/slurm-llnl``.

Which node slurmd is: ``-N NAME``, else the NodeName whose NodeHostname (which defaults to the
NodeName) is the host's short name, then its full name (``slurm_conf_get_aliased_nodename``).
NodeName, NodeHostname and NodeAddr are hostlists (``node[1-4,7]``) matched up by position.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import socket

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths as rtpaths

# slurmd's configless caches (22.05 and later; before), then the packaged files, in the order
# they are looked at when slurmd names no file.
CONFIGLESS_CACHES = ('/run/slurm/conf/slurm.conf', '/var/spool/slurmd/conf-cache/slurm.conf')
PACKAGED = ('/etc/slurm-llnl/slurm.conf', rtpaths.SLURM_CONF)
# slurmd's short options that take a value (getopt "cCdDf:hL:Mn:N:svVZ")
WITH_VALUE = 'fLnN'
# seconds an srun --immediate may wait for its allocation
IMMEDIATE = 5
MAX_HOSTS = 65536

# srun's words when --immediate could not start the step on the node now (slurm_errno.c,
# src/srun/libsrun/allocate.c): the node runs jobs, or it is down, drained or reserved.
BUSY = ('Requested nodes are busy', 'Immediate execution impossible', 'has been revoked')
UNAVAILABLE = ('Required node not available', 'ReqNodeNotAvail', 'are DOWN, DRAINED',
               'Nodes required for job are DOWN')


class NodeError(errors.Error):
    """This host's NodeName or slurm.conf cannot be found; ``where`` names the file:line."""

    kind = errors.HOST


class Slurmd(object):
    """The running slurmd: ``pid``, ``argv``, its options (``conf`` -f, ``node`` -N,
    ``conf_server`` --conf-server) and ``env_conf`` (SLURM_CONF in its environment)."""

    def __init__(self, pid, argv, env_conf=None):
        self.pid = pid
        self.argv = argv
        self.env_conf = env_conf
        self.conf = self.node = self.conf_server = None
        self.options(argv[1:])

    def options(self, args):
        index = 0
        while index < len(args):
            arg = args[index]
            index += 1
            if arg.startswith('--conf-server'):
                if '=' in arg:
                    self.conf_server = arg.split('=', 1)[1]
                elif index < len(args):
                    self.conf_server = args[index]
                    index += 1
                continue
            if not arg.startswith('-') or arg.startswith('--'):
                continue
            for pos, char in enumerate(arg[1:], 1):
                if char in WITH_VALUE:
                    value = arg[pos + 1:]
                    if not value and index < len(args):
                        value = args[index]
                        index += 1
                    if char == 'f':
                        self.conf = value
                    elif char == 'N':
                        self.node = value
                    break


def _read(path):
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'surrogateescape')


def running_slurmd(root=''):
    """The Slurmd of the oldest process named slurmd (under ``root``/proc), or None."""
    proc = root + '/proc'
    try:
        pids = sorted(int(name) for name in os.listdir(proc) if name.isdigit())
    except OSError:
        return None
    for pid in pids:
        base = '%s/%d/' % (proc, pid)
        try:
            if _read(base + 'comm').strip() != 'slurmd':
                continue
            argv = [a for a in _read(base + 'cmdline').split('\0') if a]
        except (IOError, OSError):
            continue
        env_conf = None
        try:
            for pair in _read(base + 'environ').split('\0'):
                if pair.startswith('SLURM_CONF='):
                    env_conf = pair[len('SLURM_CONF='):]
        except (IOError, OSError):
            pass
        return Slurmd(pid, argv or ['slurmd'], env_conf)
    return None


class Found(object):
    """Where slurmd's slurm.conf is: ``path`` (None when none is found), ``how`` it was
    found, ``configless`` (a cache slurmd rewrites), ``looked`` (what was looked at),
    ``slurmd`` (the running one, or None) and ``root`` (prefix of the files, for tests)."""

    def __init__(self, slurmd, root=''):
        self.slurmd = slurmd
        self.root = root
        self.path = None
        self.how = ''
        self.looked = []

    @property
    def configless(self):
        return self.path is not None and in_cache(self.path)

    @property
    def file(self):
        return self.root + self.path if self.path else None

    def warning(self):
        """The warning when slurmd runs and no slurm.conf was found, else None."""
        if self.path is not None or self.slurmd is None:
            return None
        return ('slurmd runs (pid %d: %s) but no slurm.conf it reads was found (looked at: %s): '
                'the slurm context and its slurm_job probe are left out; with configless Slurm '
                '(--conf-server) the cache appears once slurmd has fetched it' % (
                    self.slurmd.pid, ' '.join(self.slurmd.argv)[:200], '; '.join(self.looked)))


def in_cache(path):
    """Is ``path`` under one of slurmd's configless cache directories?"""
    return any(path.startswith(os.path.dirname(cache) + '/') for cache in CONFIGLESS_CACHES)


def find_conf(root='', slurmd=False):
    """The Found slurm.conf: slurmd's -f, its SLURM_CONF, the configless caches, Ubuntu's
    slurm-llnl file, /etc/slurm/slurm.conf, in that order. A file slurmd names (-f,
    SLURM_CONF) that does not exist is not replaced by another: slurmd does not read one.
    ``slurmd``: the running Slurmd, None for none, False to look for it under ``root``."""
    found = Found(running_slurmd(root) if slurmd is False else slurmd, root)
    named = []
    if found.slurmd is not None:
        if found.slurmd.conf:
            named.append((found.slurmd.conf, "slurmd's -f (pid %d)" % found.slurmd.pid))
        elif found.slurmd.env_conf:
            named.append((found.slurmd.env_conf,
                          "SLURM_CONF in slurmd's environment (pid %d)" % found.slurmd.pid))
    candidates = named or [(path, 'slurmd\'s configless cache' if in_cache(path)
                            else 'the packaged file') for path in CONFIGLESS_CACHES + PACKAGED]
    for path, how in candidates:
        found.looked.append('%s (%s)' % (path, how))
        if os.path.isfile(root + path):
            found.path, found.how = path, how
            return found
    return found


# --- hostlists and NodeName lines -------------------------------------------------------

def split_top(text):
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == '[':
            depth += 1
        elif char == ']':
            depth -= 1
        elif char == ',' and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part for part in parts if part]


def _range(spec, where):
    """The names of one bracket's ``1-4,07,10-12`` (zero padding kept)."""
    found = []
    for piece in spec.split(','):
        match = re.match(r'^(\d+)(?:-(\d+))?$', piece.strip())
        if not match:
            raise NodeError('%s: cannot read %r in a hostlist (Slurm takes [1-4,7])'
                            % (where, piece), where=where)
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low) or int(high) - int(low) >= MAX_HOSTS:
            raise NodeError('%s: the range %s in a hostlist is reversed or too large'
                            % (where, piece), where=where)
        width = len(low) if low.startswith('0') else 1
        found.extend('%0*d' % (width, n) for n in range(int(low), int(high) + 1))
    return found


def expand_hostlist(text, where):
    """The names of a hostlist (``node[1-4,7]``, ``rack[1-2]-n[01-02]``, ``a,b``); NodeError
    naming ``where`` (file:line) for one Slurm would not read."""
    if text.count('[') != text.count(']'):
        raise NodeError('%s: unbalanced brackets in the hostlist %r' % (where, text),
                        where=where)
    names = []
    for part in split_top(text):
        match = re.match(r'^([^\[\]]*)\[([^\[\]]*)\](.*)$', part)
        if not match:
            if '[' in part or ']' in part:
                raise NodeError('%s: cannot read the hostlist %r' % (where, text), where=where)
            names.append(part)
            continue
        for number in _range(match.group(2), where):
            names.extend(expand_hostlist(match.group(1) + number + match.group(3), where))
        if len(names) > MAX_HOSTS:
            raise NodeError('%s: the hostlist %r names more than %d nodes'
                            % (where, text, MAX_HOSTS), where=where)
    return names


def node_lines(config):
    """[(where, [(NodeName, NodeHostname, NodeAddr)])] of the NodeName lines of a parsed
    slurm.conf (slurm_conf.Config), NodeName=DEFAULT left out."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
    found = []
    for entry in config.entries:
        if entry.key != 'nodename' or entry.value.upper() == 'DEFAULT':
            continue
        pairs, rest = {}, entry.text
        while True:
            match = sc.PAIR.match(rest)
            if not match:
                break
            pairs[match.group(1).lower()] = (match.group(3) if match.group(3) is not None
                                             else match.group(4))
            rest = rest[match.end():]
        names = expand_hostlist(entry.value, entry.where)
        hosts = expand_hostlist(pairs.get('nodehostname') or entry.value, entry.where)
        addrs = expand_hostlist(pairs.get('nodeaddr') or pairs.get('nodehostname')
                                or entry.value, entry.where)
        if len(hosts) < len(names) or len(addrs) < len(names):
            raise NodeError('%s: NodeName=%s names %d nodes but NodeHostname %d and NodeAddr %d '
                            '(Slurm needs at least as many of each)' % (
                                entry.where, entry.value, len(names), len(hosts), len(addrs)),
                            where=entry.where)
        found.append((entry.where, list(zip(names, hosts, addrs))))
    return found


def host_names():
    """This host's names: the short one, then the full ones."""
    full = socket.gethostname()
    names = [full.split('.')[0], full]
    try:
        names.append(socket.getfqdn())
    except (socket.error, UnicodeError):
        pass
    return [n for i, n in enumerate(names) if n and n not in names[:i]]


def resolve_node(config, names, path, addresses=()):
    """This host's NodeName in ``config`` (parsed ``path``): the node whose NodeHostname is one
    of ``names`` (short name first), else whose NodeName is, else whose NodeAddr is one of
    ``names`` or ``addresses``. NodeError naming what was compared when none or several
    match."""
    lines = node_lines(config)
    for column, wanted in ((1, names), (0, names), (2, list(names) + list(addresses))):
        for name in wanted:
            hits = sorted(set(node[0] for where, nodes in lines for node in nodes
                              if node[column] == name))
            if len(hits) == 1:
                return hits[0]
            if hits:
                raise NodeError('%s: %s matches %d nodes (%s); start slurmd with -N NAME so that '
                                'the probe knows which one is this host'
                                % (path, name, len(hits), ', '.join(hits[:8])), where=path)
    return _no_node(lines, names, addresses, path)


def _no_node(lines, names, addresses, path):
    where = ', '.join(where for where, _nodes in lines) or 'no NodeName line'
    raise NodeError('%s: no NodeName is this host: none of %s is a NodeHostname, NodeName or '
                    'NodeAddr (read %s); slurmd would not start as this node either (slurmd -N '
                    'NAME names it)' % (path, ', '.join(list(names) + list(addresses)), where),
                    where=path)


def this_node(found):
    """This host's NodeName: slurmd's -N, else resolved in ``found``'s slurm.conf."""
    if found.slurmd is not None and found.slurmd.node:
        return found.slurmd.node
    if found.path is None:
        raise NodeError('no slurm.conf found (looked at: %s)' % '; '.join(found.looked))
    from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
    try:
        config = sc.parse(found.file)
    except (IOError, OSError) as exc:
        raise NodeError('%s: cannot read: %s' % (found.path, exc.strerror or exc))
    return resolve_node(config, host_names(), found.path)


def refusal(text):
    """('busy' | 'unavailable', srun's words) when ``text`` (srun's output) says that
    --immediate could not start the step on the node now, else None."""
    for reason, phrases in (('busy', BUSY), ('unavailable', UNAVAILABLE)):
        for phrase in phrases:
            if phrase.lower() in (text or '').lower():
                return reason, phrase
    return None


def show_job(text):
    """{key: value} of ``scontrol -o show job`` (one line of key=value pairs; a value runs
    to the next key, as Command= and StdErr= may hold spaces; StdErr and StdOut with Slurm's
    patterns filled in, slurm-%j.out in the working directory when the job named none)."""
    found = {}
    for match in re.finditer(r'(?:^|\s)([A-Za-z:/]+)=(.*?)(?=\s+[A-Za-z:/]+=|$)',
                             str(text or '').strip()):
        found.setdefault(match.group(1), match.group(2))
    return found


def exit_status(value):
    """An exit status as a shell reports it, from Slurm's ``CODE:SIGNAL`` (scontrol's and
    sacct's ExitCode; ``0:9``: killed by SIGKILL, 137) or a number; None for neither."""
    text = str(value if value is not None else '').strip()
    if ':' in text:
        code, signal = text.split(':', 1)
        if signal.isdigit() and int(signal):
            return 128 + int(signal)
        text = code
    return int(text) if text.isdigit() else None


def job_end(record):
    """(exit status, state) of a job's :func:`show_job` record: its ExitCode as
    :func:`exit_status`, its JobState, or its Reason while the job is COMPLETING (the Epilog
    runs then: NonZeroExitCode, OutOfMemory); (None, '') for none."""
    state = record.get('JobState', '')
    if state == 'COMPLETING' and record.get('Reason') not in (None, '', 'None'):
        state = record['Reason']
    return exit_status(record.get('ExitCode')), state
