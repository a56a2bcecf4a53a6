# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limit model's public face: every name of the ``model`` subpackage (private to the
collection), where each concern has its own file (see ``model/__init__.py``):

* ``model.items``: items, ``Limit``, ``LimitError``, comparison in kernel units;
* ``model.values``: the profile value grammar and readable forms;
* ``model.pam``, ``model.systemd``, ``model.containers``, ``model.proc``: one format each.

Callers keep ``from ...module_utils import limits_model as model``; the model's own files import
one another directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# pylint: disable=unused-import
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (  # noqa: F401
    GO_UNITS_NAMES, ITEM_NAMES, ITEMS, RLIMIT_ITEMS, RLIM_INFINITY, UNLIMITED, Item, Limit,
    LimitError, compare, exceeds, get_item, is_unlimited)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.values import (  # noqa: F401
    UNLIMITED_MEANS, check_floor, check_pair, format_human, format_limit, format_size,
    parse_duration, parse_go_size, named_sides, parse_limit, parse_profile,
    parse_runtime_request, parse_shm_size, parse_size, parse_value, profile_sides)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.floors import (  # noqa: F401
    FLOORS, floor_of)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.keep import (  # noqa: F401
    Kept, keep)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.pam import (  # noqa: F401
    from_limits_conf, to_limits_conf)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.systemd import (  # noqa: F401
    from_systemd_config, from_systemd_show, item_from_systemd_key, systemd_key, to_systemd)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.containers import (  # noqa: F401
    container_item, from_docker, from_ulimit_string, to_docker, to_ulimit_string)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.proc import (  # noqa: F401
    parse_proc_limits)
