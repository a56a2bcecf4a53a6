# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Shared ``attributes:`` documentation for gpufleet.tuning modules."""

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
    # crio_ulimits).
    FILE_BACKUP = r'''
options:
  backup:
    description: Keep a timestamped copy of the file when it changes.
    type: bool
    default: false
'''

    # The force option of docker_ulimits and podman_ulimits.
    RUNTIME_FORCE = r'''
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
