# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limit model, private to the collection: the one place that knows resource-limit items,
their units and syntaxes. One file per concern:

* ``items``: the items, ``Limit`` (a soft/hard pair), ``LimitError``, comparison;
* ``values``: the value grammar of profiles (sizes, durations, soft/hard), readable forms;
* ``pam``, ``systemd``, ``containers`` (Docker and Podman), ``proc``: one format each, to and
  from kernel units.

``limits_model`` (in this package) re-exports them all: callers import that, the model's
files one another. ``job_demand`` (the shape of a training job) and ``container_limits`` (a
container's limits) are here too. Private to the collection; docs/contexts.md has the layers.

Plain Python (no Ansible import), runs on Python 3.8 targets.

Internally every value is held in the *kernel's* units, the ones /proc/PID/limits shows:
bytes for size items, seconds for cpu, a count for the rest, the raw RLIMIT_NICE value
(20 - nice) for nice, or the UNLIMITED marker. Each configuration format converts to and from
that representation here and nowhere else:

* profile values (what users write in playbooks): ints, ``unlimited``, human sizes such as
  ``64MiB``/``8G`` (base 1024, as systemd and Docker read them), durations such as ``90min``;
  a bare number uses limits.conf units (KiB for size items, minutes for cpu);
* limits.conf (pam_limits): KiB, minutes, nice value, ``unlimited``;
* systemd (``LimitNOFILE=``/``DefaultLimitNOFILE=``): ``SOFT:HARD``, ``infinity``, bytes with
  K/M/G/... suffixes, seconds, nice value with a sign or raw value;
* Docker daemon.json ``default-ulimits``: ``{"Name", "Soft", "Hard"}`` in kernel units, -1 for
  unlimited; Podman/CRI-O ``default_ulimits``: ``"name=SOFT:HARD"``;
* /proc/PID/limits rows.
"""
