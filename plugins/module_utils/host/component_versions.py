# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The versions of the daemons whose upgrade can change the limits new processes get, and the
hashes of their unit files: what the drift watch records to see a package upgrade (issue 34
item 5). Read-only; the watch (run/watch_outlets.py) keeps the last record.

An upgrade changes what new containers get without anyone editing a limits file: Docker 25
removed ``LimitNOFILE=infinity`` from docker.service and containerd 2.x from containerd.service,
so containers then start with soft nofile 1024 (moby #51485; fleets got it through security
updates). The record per component is

* ``version``: the installed package's version (dpkg's status file, or ``rpm -q``), which a
  security update changes even when ``--version`` does not; else the first line of the
  binary's own version output (a tarball install). A component with neither is not recorded;
* ``units``: sha256 of each of its unit files and drop-ins (``NAME.service`` and
  ``NAME.service.d/*.conf`` in systemd's unit directories) and ``units_sha256`` over all of them.

:func:`compare` tells a new record from the last one: the one judgement of "changed", used by
the watch and by the package hooks' quick check alike.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import read_bytes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host.versions import dpkg_versions


class Component(object):
    """One recorded daemon: its binary names, packages (Debian, RPM), units, version command."""

    def __init__(self, name, binaries, deb, rpm, units, version_args=('--version',)):
        self.name = name
        self.binaries = binaries
        self.deb = deb
        self.rpm = rpm
        self.units = units
        self.version_args = version_args


#: what is recorded, in this order (docs/drift-watch.md)
COMPONENTS = (
    Component('dockerd', ('dockerd',), ('docker-ce', 'docker.io', 'moby-engine'),
              ('docker-ce', 'moby-engine', 'docker'), ('docker.service', 'docker.socket')),
    Component('containerd', ('containerd',), ('containerd.io', 'containerd'),
              ('containerd.io', 'containerd'), ('containerd.service',)),
    # containerd.io bundles runc: its package version is then containerd.io's
    Component('runc', ('runc',), ('runc', 'containerd.io'), ('runc', 'containerd.io'), ()),
    Component('slurmd', ('slurmd',), ('slurmd', 'slurm-wlm'), ('slurm-slurmd', 'slurm'),
              ('slurmd.service',), ('-V',)),
    # systemd's unit of interest is user@.service: it starts the user managers of sessions
    Component('systemd', ('systemctl',), ('systemd',), ('systemd',), ('user@.service',)),
)
NAMES = tuple(c.name for c in COMPONENTS)
#: systemd's unit search path for the system manager, highest precedence first
UNIT_DIRS = ('/etc/systemd/system', '/run/systemd/system', '/usr/local/lib/systemd/system',
             '/usr/lib/systemd/system', '/lib/systemd/system')
_SHORT = 12


def rpm_versions(host, packages):
    """{package: [epoch:]version-release} of those of ``packages`` rpm knows as installed."""
    rpm = host.get_bin_path('rpm') if host is not None else None
    if not rpm or not packages:
        return {}
    _rc, out, _err = host.run_command(
        [rpm, '-q', '--qf', '%{NAME} %{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n'] + sorted(packages),
        environ_update=commands.c_env())
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in packages:
            found[parts[0]] = re.sub(r'^0:', '', parts[1])
    return found


def unit_files(unit, root=''):
    """The unit's file and drop-ins that exist, each real file once (``/lib`` is often
    ``/usr/lib``), as paths without ``root``."""
    paths, seen = [], set()
    for directory in UNIT_DIRS:
        candidates = [os.path.join(directory, unit)] + sorted(
            p[len(root):] for p in glob.glob(os.path.join(root + directory, unit + '.d', '*.conf')))
        for path in candidates:
            full = root + path
            if not os.path.isfile(full):
                continue
            real = os.path.realpath(full)
            if real in seen:
                continue
            seen.add(real)
            paths.append(path)
    return paths


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


def unit_hashes(component, root=''):
    """{path: sha256} of the component's unit files and drop-ins."""
    hashes = {}
    for unit in component.units:
        for path in unit_files(unit, root):
            data = read_bytes(root + path)
            if data is not None:
                hashes[path] = sha256_of(data)
    return hashes


def combined_hash(hashes):
    """One sha256 over the paths and hashes (a moved or removed drop-in changes it too); ''
    when the component has no unit file."""
    if not hashes:
        return ''
    return sha256_of(''.join('%s %s\n' % (p, hashes[p]) for p in sorted(hashes)).encode('utf-8'))


def own_version(host, component):
    """The first line of the binary's version output, or None (no binary, it failed)."""
    for name in component.binaries:
        binary = host.get_bin_path(name, opt_dirs=list(commands.SEARCH_PATH))
        if not binary:
            continue
        rc, out, err = host.run_command([binary] + list(component.version_args),
                                        environ_update=commands.c_env())
        lines = (out or err or '').strip().splitlines()
        if rc == 0 and lines:
            return lines[0].strip()[:120]
    return None


def read_components(host, root=''):
    """{component: {version, package, source, units, units_sha256}} for each component found
    on the node (by package, else by binary). ``host``: what run_command and get_bin_path
    (the AnsibleModule, drift_watch.LocalHost); None reads the files only."""
    debs = dpkg_versions(root)
    wanted = set(p for c in COMPONENTS for p in c.rpm)
    rpms = {} if debs or root else rpm_versions(host, wanted)
    record = {}
    for component in COMPONENTS:
        entry = None
        for package in component.deb:
            if package in debs:
                entry = dict(version=debs[package], package=package, source='dpkg')
                break
        if entry is None:
            for package in component.rpm:
                if package in rpms:
                    entry = dict(version=rpms[package], package=package, source='rpm')
                    break
        if entry is None and host is not None and not root:
            version = own_version(host, component)
            if version is not None:
                entry = dict(version=version, package='', source='binary')
        if entry is None:
            continue
        entry['units'] = unit_hashes(component, root)
        entry['units_sha256'] = combined_hash(entry['units'])
        record[component.name] = entry
    return record


def short(digest):
    return (digest or '')[:_SHORT]


def compare(previous, current, now):
    """The new state and the changes: ``previous`` the last state ({} for none), ``current``
    from :func:`read_components`. Each component keeps ``changed`` (the time a change was
    first seen, None before any) and ``previous`` (its record before that change). A component
    that appears or disappears after the first record is a change too. The first record of a
    node is no change (there is nothing to compare with)."""
    state, changes = {}, []
    first = not previous
    for name in NAMES:
        old = previous.get(name)
        new = current.get(name)
        if new is None:
            if old is not None and old.get('version') is not None:
                changes.append(dict(component=name, what='removed', before=_brief(old),
                                    after=None))
                state[name] = dict(version=None, package='', source='', units={},
                                   units_sha256='', seen=now, changed=now, previous=_brief(old))
            elif old is not None:
                state[name] = old       # still gone: the removal stays on record
            continue
        entry = dict(new)
        if old is None or old.get('version') is None:
            entry.update(seen=now, changed=None if first else now,
                         previous=None if old is None else old.get('previous'))
            if not first:
                changes.append(dict(component=name, what='appeared', before=None,
                                    after=_brief(new)))
        elif (old.get('version'), old.get('units_sha256')) != (new['version'], new['units_sha256']):
            what = 'version' if old.get('version') != new['version'] else 'units'
            if what == 'version' and old.get('units_sha256') != new['units_sha256']:
                what = 'version+units'
            entry.update(seen=now, changed=now, previous=_brief(old))
            changes.append(dict(component=name, what=what, before=_brief(old), after=_brief(new),
                                files=changed_files(old.get('units') or {}, new['units'])))
        else:
            entry.update(seen=old.get('seen', now), changed=old.get('changed'),
                         previous=old.get('previous'))
        state[name] = entry
    return state, changes


def _brief(entry):
    return dict(version=entry.get('version'), units_sha256=entry.get('units_sha256') or '')


def changed_files(before, after):
    """The unit files added, removed or changed between two ``units`` maps, sorted."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def describe(change):
    """One journal line for a change."""
    before, after = change.get('before') or {}, change.get('after') or {}
    if change['what'] == 'appeared':
        return 'component appeared: %s %s' % (change['component'], after.get('version'))
    if change['what'] == 'removed':
        return 'component removed: %s (was %s)' % (change['component'], before.get('version'))
    text = 'component changed: %s' % change['component']
    if 'version' in change['what']:
        text += ' version %s -> %s' % (before.get('version'), after.get('version'))
    if 'units' in change['what']:
        text += ' unit files %s -> %s (%s)' % (
            short(before.get('units_sha256')) or 'none', short(after.get('units_sha256')) or 'none',
            ', '.join(change.get('files') or []))
    return text


def differs(previous, current):
    """Would :func:`compare` report a change? (the package hooks' quick check)"""
    return bool(previous) and bool(compare(previous, current, 0)[1])
