# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DataLoader check's container context: the SELinux label of its bind mounts
(docs/dataloader-check.md, "SELinux").

On a node with SELinux enabled (RHEL, Rocky, Fedora), a container's process runs as
``container_t`` and cannot read a bind-mounted host directory that keeps its own label: the
smoke test then fails on its script or its dataset with ``Permission denied``, whatever the
limits. ``:z`` makes Docker and Podman relabel the mount with the shared ``container_file_t``
label (every container may use it); ``:Z`` with a label private to this one container. Both
engines accept either option on a node without SELinux and do nothing there.

Plain Python (no Ansible import) so tests/unit can test it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

SETTINGS = ('auto', 'z', 'Z', 'none')
FIELD = 'dataloader_check_container_selinux_label'


def selinux_enabled(enforce_exists, selinuxenabled_rc=None):
    """Is SELinux enabled on the node? ``enforce_exists``: /sys/fs/selinux/enforce exists
    (selinuxfs is mounted, which the kernel does only with SELinux enabled, enforcing or
    permissive); ``selinuxenabled_rc``: the exit status of libselinux's ``selinuxenabled``
    (0 enabled, 1 disabled; None or 127 when the node has no such command). Either says
    enabled: a node without the SELinux utilities still has its selinuxfs."""
    return bool(enforce_exists) or selinuxenabled_rc == 0


def dataloader_check_selinux_label(setting, enforce_exists=False, selinuxenabled_rc=None):
    """The volume option for the bind mounts ('' = none, 'z' or 'Z') from
    ``dataloader_check_container_selinux_label``: ``auto`` is ``z`` where SELinux is enabled
    on the node and none elsewhere; ``z``, ``Z`` and ``none`` are taken as given. Anything
    else raises ValueError naming the field (the argument spec's choices catch it first)."""
    if setting not in SETTINGS:
        raise ValueError('%s: %r is not one of %s' % (FIELD, setting, ', '.join(SETTINGS)))
    if setting == 'auto':
        return 'z' if selinux_enabled(enforce_exists, selinuxenabled_rc) else ''
    return '' if setting == 'none' else setting


def dataloader_check_volume(source, target, label='', read_only=False):
    """One ``--volume`` value: ``SOURCE:TARGET[:ro][,z|Z]`` (Docker and Podman syntax)."""
    options = (['ro'] if read_only else []) + ([label] if label else [])
    return '%s:%s%s' % (source, target, (':' + ','.join(options)) if options else '')


class FilterModule(object):
    """gpufleet.tuning filters for the dataloader_check role's container context."""

    def filters(self):
        return {
            'dataloader_check_selinux_label': dataloader_check_selinux_label,
            'dataloader_check_volume': dataloader_check_volume,
        }
