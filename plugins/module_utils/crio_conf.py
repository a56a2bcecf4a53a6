# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CRI-O's ``default_ulimits``: a ``/etc/crio/crio.conf.d`` drop-in of the collection's own.

CRI-O reads ``crio.conf`` then the drop-ins of ``crio.conf.d`` in lexical order, a later file
overriding an earlier one; ``[crio.runtime] default_ulimits`` is a list of ``NAME=SOFT:HARD``
strings parsed by go-units (``docs/crio.conf.5.md``); a change needs a CRI-O restart.
CRI-O is not packaged in Debian 12: this is tested against the documented syntax only.
Plain Python (no Ansible import), runs on Python 3.8 targets.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.tuning.plugins.module_utils import limits_model as model

DROPIN = '/etc/crio/crio.conf.d/90-gpufleet-tuning.conf'
HEADER = '# Managed by gpufleet.tuning (limits_profile): default ulimits of CRI-O containers.\n'


def _value(value):
    # go-units' ParseUlimit takes -1 for unlimited
    return '-1' if value == model.UNLIMITED else str(value)


def entries(limits):
    """{item: Limit} -> ['nofile=65536:65536', ...] for the rlimit items (sorted by name)."""
    result = []
    for name in sorted(limits):
        item = model.ITEMS[name]
        limit = limits[name]
        if not item.is_rlimit or item.kind not in ('count', 'size', 'time'):
            continue
        soft = limit.soft if limit.soft is not None else limit.hard
        hard = limit.hard if limit.hard is not None else limit.soft
        result.append('%s=%s:%s' % (name, _value(soft), _value(hard)))
    return result


def render(limits):
    """The drop-in's text."""
    return '%s[crio.runtime]\ndefault_ulimits = [\n%s]\n' % (
        HEADER, ''.join('  %s,\n' % json.dumps(e) for e in entries(limits)))
