# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container runtime values: Docker's daemon.json ``default-ulimits`` entries and the
``NAME=SOFT:HARD`` strings of Podman/CRI-O ``default_ulimits`` and ``docker --ulimit``.

Private to the collection (no public API): part of the limit model, ``model/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    ITEMS, UNLIMITED, Limit, LimitError, get_item, is_int)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.values import check_pair


def _docker_side(value):
    return -1 if value == UNLIMITED else value


def container_item(name, where='ulimits', unknown_where=None):
    """The Item of a container runtime's ulimit ``name`` (any letter case), or LimitError saying
    what the runtimes do with it. The names are go-units' (GO_UNITS_NAMES, docker/go-units
    ulimit.go ``ulimitNameMapping``), less rttime, which this collection does not manage.

    ``as`` is an item (limits.conf, systemd's LimitAS=) but no ulimit name there: ParseUlimit
    refuses it ("invalid ulimit type: as"), so ``docker run --ulimit``, ``dockerd
    --default-ulimit``, Podman (containers/common pkg/config validateUlimits: the whole
    containers.conf) and CRI-O (``crio --default-ulimits``, crio.conf) refuse it. dockerd does
    not check the names of daemon.json's ``default-ulimits`` (moby daemon/config: no ulimit
    validation; daemon/oci_linux.go withRlimits writes ``RLIMIT_`` + the upper-cased Name into
    every container's OCI spec), so there it is no go-units ulimit either: refused on purpose.
    ``unknown_where``: the place named for a name that is no item at all (default ``where``)."""
    lower = name.lower() if isinstance(name, str) else name
    if lower == 'rttime':
        raise LimitError('%s: rttime is a limit dockerd knows but gpufleet.tuning does not '
                         'manage' % where)
    item = get_item(lower, unknown_where or where)
    if not item.is_rlimit:
        raise LimitError('%s: %s is not a resource limit a container runtime can set'
                         % (where, item.name))
    if item.docker_name is None:
        raise LimitError('%s: %s is not a ulimit name go-units knows (docker/go-units ulimit.go '
                         'leaves it out): docker run --ulimit, dockerd --default-ulimit, Podman '
                         'and CRI-O refuse it ("invalid ulimit type: %s") and dockerd passes a '
                         'daemon.json entry unchecked to the runtime; set %s with systemd '
                         '(Limit%s=) or limits.conf instead'
                         % (where, item.name, item.name, item.name, item.rlimit))
    return item


def to_docker(item, limit):
    item = ITEMS[item] if isinstance(item, str) else item
    container_item(item.name, item.name)
    if limit.soft is None or limit.hard is None:
        raise LimitError('%s: Docker needs both soft and hard' % item.name)
    return {'Name': item.name, 'Soft': _docker_side(limit.soft), 'Hard': _docker_side(limit.hard)}


_INT64_MAX = 2 ** 63 - 1


def _go_json_field(entry, field):
    """The value Go's encoding/json puts in struct field ``field`` from a JSON object: an exact
    key match, else any key equal to it case-insensitively; of several, the last one read."""
    found = None
    for key, value in entry.items():
        if key == field or key.casefold() == field.casefold():
            found = (key, value)
    return found


def from_docker(name, entry, where='default-ulimits'):
    """A daemon.json ``default-ulimits`` entry -> (Item, Limit), as dockerd decodes it.

    dockerd decodes the entry into go-units' Ulimit with Go's encoding/json: the keys ``Name``,
    ``Soft`` and ``Hard`` match in any letter case (``name``, ``SOFT``); the rlimit is
    ``RLIMIT_`` + the upper-cased Name (``NOFILE`` is nofile); Soft and Hard are JSON integers
    that fit an int64. Refused on purpose although dockerd starts with them: a Name that is not
    the entry's key (dockerd sets the rlimit Name says but merges container ulimits by the key),
    a missing or null Soft/Hard (dockerd uses 0), values below -1 (the kernel receives them as
    huge unsigned numbers), rttime (not managed by this collection) and a Name go-units does not
    know, such as ``as`` (dockerd does not check daemon.json's names; see container_item).
    """
    if not isinstance(entry, dict):
        raise LimitError('%s.%s: must be an object with Name, Soft and Hard' % (where, name))
    found = _go_json_field(entry, 'Name')
    if found is None or not isinstance(found[1], str) or not found[1]:
        raise LimitError('%s.%s: "Name" must be %r (without it dockerd fails with "wrong '
                         'rlimit value")' % (where, name, str(name).lower()))
    entry_name = found[1]
    if entry_name.lower() != str(name).lower():
        raise LimitError('%s.%s: "Name" is %r: dockerd would set the %s limit Name gives while '
                         'merging by the key %r; make them the same'
                         % (where, name, entry_name, entry_name, name))
    item = container_item(entry_name, '%s.%s' % (where, name), where)
    sides = []
    for key in ('Soft', 'Hard'):
        found = _go_json_field(entry, key)
        value = found[1] if found else None
        if not is_int(value) or value < -1 or value > _INT64_MAX:
            raise LimitError('%s.%s.%s: must be an integer (-1 for unlimited), got %r'
                             % (where, name, key, value))
        sides.append(UNLIMITED if value == -1 else value)
    limit = Limit(sides[0], sides[1])
    check_pair(item, limit, '%s.%s' % (where, name))
    return item, limit


def to_ulimit_string(item, limit):
    """Limit -> ``nofile=SOFT:HARD`` (Podman/CRI-O default_ulimits, docker --ulimit)."""
    item = ITEMS[item] if isinstance(item, str) else item
    entry = to_docker(item, limit)
    return '%s=%d:%d' % (item.name, entry['Soft'], entry['Hard'])


def from_ulimit_string(text, where='default_ulimits'):
    """``NAME=SOFT[:HARD]`` -> (Item, Limit), as go-units ParseUlimit reads it (Podman's
    default_ulimits, CRI-O, docker --ulimit): the name in lower case exactly, no blanks, Go
    integers (a ``+`` sign is fine), a soft -1 only with a hard -1."""
    match = re.match(r'^([a-z]+)=([+-]?[0-9]+)(?::([+-]?[0-9]+))?$', str(text))
    if not match:
        raise LimitError('%s: %r is not NAME=SOFT[:HARD] as Podman reads it (lower-case name, '
                         'no blanks)' % (where, text))
    hard = match.group(3) if match.group(3) is not None else match.group(2)
    return from_docker(match.group(1), {'Name': match.group(1), 'Soft': int(match.group(2)),
                                        'Hard': int(hard)}, where)
