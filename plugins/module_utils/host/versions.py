# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The versions of the tools on the node whose reading rules differ by release: Podman
(containers/common) and Linux-PAM. Read-only; private to the collection.

* Podman reads ``/etc/containers/containers.conf.d/*.conf`` drop-ins from containers/common's
  pull request #615 (merged 2021-06-10, after Podman 3.2.0 of 2021-06-09), so from Podman 3.3 on;
  Debian 11's Podman 3.0.1 reads only ``/usr/share/containers/containers.conf`` and
  ``/etc/containers/containers.conf``.
* Linux-PAM's pam_limits reads the value as the fourth word before 1.6 and as the rest of the
  line from 1.6 on; it applies ``rttime`` from 1.7.1 on (pam_limits_conf.split_fields).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import read_bytes

PODMAN_DROPINS_SINCE = (3, 3)
DPKG_STATUS = '/var/lib/dpkg/status'
# The binary packages that carry pam_limits.so (Debian/Ubuntu, then RPM distributions).
PAM_DEB_PACKAGES = ('libpam-modules', 'libpam0g')
PAM_RPM_PACKAGE = 'pam'

_VERSION_RE = re.compile(r'(?<![0-9.])([0-9]+)\.([0-9]+)(?:\.([0-9]+))?')


def parse_version(text):
    """The first ``N.N[.N]`` in ``text`` -> a tuple of ints, or None. A Debian epoch
    (``1:``) and revision (``-9+deb11u1``) around it are ignored."""
    text = str(text or '')
    text = re.sub(r'^\s*[0-9]+:', '', text)
    match = _VERSION_RE.search(text)
    if not match:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


def format_version(version):
    return '.'.join(str(part) for part in version) if version else 'unknown'


def podman_version(host, root=''):
    """Podman's version, or None when there is no podman or nothing says: dpkg's status file
    (package podman), else ``podman --version`` (``podman version 3.0.1``). dpkg comes first
    because podman reads every containers.conf before it answers, and fails on a broken one.
    ``host``: the AnsibleModule."""
    version = dpkg_version('podman', root)
    if version is not None or host is None or root:
        return version
    binary = host.get_bin_path('podman')
    if not binary:
        return None
    rc, out, _err = host.run_command([binary, '--version'], environ_update=commands.c_env())
    if rc != 0:
        return None
    return parse_version(out)


def podman_reads_dropins(version):
    """Does this Podman read containers.conf.d drop-ins? An unknown version is taken to."""
    return version is None or tuple(version[:2]) >= PODMAN_DROPINS_SINCE


def dpkg_versions(root=''):
    """{package: version text} of the installed packages in dpkg's status file ({} without
    dpkg)."""
    raw = read_bytes(root + DPKG_STATUS)
    if raw is None:
        return {}
    found = {}
    for stanza in re.split(r'\n\s*\n', raw.decode('utf-8', 'replace')):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] in (' ', '\t') or ':' not in line:
                continue
            key, value = line.split(':', 1)
            fields[key.strip().lower()] = value.strip()
        if 'installed' in fields.get('status', '').split() and fields.get('package'):
            found[fields['package']] = fields.get('version', '')
    return found


def dpkg_version(package, root=''):
    """The installed version of a Debian package from dpkg's status file, or None."""
    version = dpkg_versions(root).get(package)
    return None if version is None else parse_version(version)


def pam_version(host=None, root=''):
    """Linux-PAM's installed version as (major, minor[, patch]), or None when unknown: dpkg's
    status file (libpam-modules), else ``rpm -q pam`` when ``host`` (the AnsibleModule) is
    given and has rpm."""
    for package in PAM_DEB_PACKAGES:
        version = dpkg_version(package, root)
        if version is not None:
            return version
    if host is not None and not root:
        rpm = host.get_bin_path('rpm')
        if rpm:
            rc, out, _err = host.run_command([rpm, '-q', '--qf', '%{VERSION}', PAM_RPM_PACKAGE],
                                             environ_update=commands.c_env())
            if rc == 0:
                return parse_version(out)
    return None
