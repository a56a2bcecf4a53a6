# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel ceilings, declared once (issue 40): every sysctl the collection audits and sets,
with what differs per name. The lists the code uses are derived from :data:`KERNEL`:

* host/sysctl_conf.KNOWN: the bounds the kernel accepts, what the value bounds, its default;
* reports/kernel_ceilings.CEILINGS and NODE_EXPORTER: the audit's kernel rows, in this order,
  and node_exporter's name for each live value;
* run/effective.CEILINGS (``probed``): the ceilings effective_limits and limits_audit return;
* host/host_limits.SYSCTLS (``proof``): the ceilings a Docker probe's proof keeps;
* model/classify.CEILINGS (``cause``): the kernel ceilings a failure's text can name.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

INT_MAX = 2147483647
LONG_MAX = 9223372036854775807


class Ceiling(namedtuple('Ceiling', 'name low high what default exporter probed proof cause')):
    """One kernel ceiling: ``low``/``high`` the kernel accepts (its proc_handler's
    extra1/extra2 on 64-bit Linux), ``what`` it bounds, its ``default``, ``exporter``
    (node_exporter's metric, the collector that exports it); ``probed``, ``proof``, ``cause``:
    its place in run/effective.CEILINGS, host/host_limits.SYSCTLS and model/classify.CEILINGS
    (None: not there)."""

    __slots__ = ()


#: in report order (the audit's kernel rows)
KERNEL = (
    Ceiling('fs.file-max', 0, LONG_MAX, 'file handles open on the whole system (ENFILE "Too '
            'many open files in system")', 'about 10% of RAM in KiB; LONG_MAX on newer '
            'kernels and under systemd >= 240', ('node_filefd_maximum', 'filefd'),
            probed=2, proof=2, cause=2),
    Ceiling('fs.nr_open', 64, 2147483584, 'the highest RLIMIT_NOFILE any process can get (a '
            'hard nofile above it fails)', '1048576; systemd >= 240 raises it',
            ('node_sysctl_fs_nr_open', 'sysctl'), probed=1, proof=1, cause=None),
    Ceiling('vm.max_map_count', 0, INT_MAX, 'memory mappings per process: every shared tensor '
            'a DataLoader worker sends is one ("unable to mmap")', '65530',
            ('node_sysctl_vm_max_map_count', 'sysctl'), probed=None, proof=5, cause=1),
    Ceiling('fs.inotify.max_user_instances', 0, INT_MAX, 'inotify instances per user (file '
            'watchers of tools, IDEs, Ray)', '128',
            ('node_sysctl_fs_inotify_max_user_instances', 'sysctl'), probed=None, proof=None,
            cause=3),
    Ceiling('fs.inotify.max_user_watches', 0, INT_MAX, 'inotify watches per user', '8192; '
            'since Linux 5.11 1% of RAM, up to 1048576',
            ('node_sysctl_fs_inotify_max_user_watches', 'sysctl'), probed=None, proof=None,
            cause=4),
    Ceiling('kernel.pid_max', 301, 4194304, 'the highest process ID: processes and threads on '
            'the whole system', '32768 (1024 per CPU above 32 CPUs); systemd >= 243 sets '
            '4194304', ('node_processes_max_processes', 'processes'), probed=3, proof=3,
            cause=None),
    Ceiling('kernel.threads-max', 20, 1073741823, 'threads on the whole system (fork and '
            'pthread_create fail with EAGAIN)', 'from RAM (pages / 8 thread stacks)',
            ('node_processes_max_threads', 'processes'), probed=4, proof=4, cause=None),
)

NAMES = tuple(c.name for c in KERNEL)
BY_NAME = dict((c.name, c) for c in KERNEL)


def names(attribute):
    """The names whose ``attribute`` (``probed``, ``proof``, ``cause``) is set, in its order."""
    found = [c for c in KERNEL if getattr(c, attribute) is not None]
    return tuple(c.name for c in sorted(found, key=lambda c: getattr(c, attribute)))
