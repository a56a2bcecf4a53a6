# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Shared ``attributes:`` documentation for gpufleet.tuning modules, and the options several
    modules take with the same meaning, documented once here (the options declared in
    module_utils/core/options.py are documented by scripts/gen_option_docs.py in options.py)."""

    # Modules that change files: full check mode and diff mode.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
'''

    # Read-only _info modules.
    INFO = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Read-only; never changes the target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
'''

    # The backup option of the modules that write one file (docker_ulimits, podman_ulimits,
    # crio_ulimits, pam_limits, sysctl_ceilings, systemd_limits).
    FILE_BACKUP = r'''
options:
  backup:
    description: Keep a timestamped copy of the file when it changes.
    type: bool
    default: false
'''

    # The force option of docker_ulimits and podman_ulimits.
    RUNTIME_FORCE = r'''
notes:
  - Refuses, with nothing written, C(nofile) C(unlimited) and a hard C(nofile) above C(fs.nr_open)
    (the kernel caps C(nofile) there; not even O(force=true) writes them); unknown items and items
    that are not rlimits (C(maxlogins), C(priority), C(nonewprivs)); soft above hard; a missing soft
    or hard side with no existing entry to take it from; a value below its item's floor, with or
    without O(force) (docs/limit-model.md lists the floors); an O(shm_size) that is not a size; and,
    unless O(force=true), a hard value above what this host lets the container runtime set (PID 1's
    hard limit when root lacks CAP_SYS_RESOURCE, as in a container), where new containers would fail
    to start. The message names the option, C(ulimits.ITEM) or C(shm_size).
options:
  force:
    description:
      - Write hard values above what this host lets the container runtime set (PID 1's hard
        limit when root lacks CAP_SYS_RESOURCE, as in a container) with a warning instead of
        refusing them. C(nofile) C(unlimited) or above C(fs.nr_open) is always refused, as no
        container could start with it.
    type: bool
    default: false
'''

    # The mode of the file a module creates (pam_limits, sysctl_ceilings).
    FILE_MODE = r'''
options:
  mode:
    description: Mode of a newly created file. An existing file keeps its owner and mode.
    type: raw
    default: '0644'
'''

    # What a later file that overrides a requested value does (pam_limits, sysctl_ceilings,
    # systemd_limits).
    ON_CONFLICT = r'''
options:
  on_conflict:
    description:
      - What to do when a file read after the managed one (a later limits.d file, a later
        sysctl.d file, a drop-in systemd reads later) sets a requested entry to another value.
        C(fail) fails naming the file and line and writes nothing; C(warn) writes and warns.
    type: str
    choices: [fail, warn]
    default: fail
'''

    # The PAM limits files read (pam_limits, pam_limits_info).
    PAM_FILES = r'''
options:
  limits_conf:
    description: The main limits file (M(gpufleet.tuning.pam_limits) reads it for conflicts).
    type: path
    default: /etc/security/limits.conf
  limits_dir:
    description: The drop-in directory (M(gpufleet.tuning.pam_limits) reads it for conflicts).
    type: path
    default: /etc/security/limits.d
'''

    # The purge option of the modules that write a C(default_ulimits) table (crio_ulimits,
    # podman_ulimits).
    CONF_PURGE = r'''
options:
  purge:
    description: Remove C(default_ulimits) entries for items not in O(ulimits).
    type: bool
    default: false
'''
