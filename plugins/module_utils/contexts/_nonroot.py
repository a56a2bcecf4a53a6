# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container contexts' non-root probe (issue 33 item 4; host/container_caps.py): after a
container probe, with ``prober.nonroot`` (limits_audit sets it), one more container of the same
runtime, options and image as a non-root user, its memlock and capabilities kept in
``prober.extra[context]['nonroot']`` for the context's entry. Its failure is reported there,
not as the context's."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import container_caps
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results


def probe(prober, context, command):
    """Run the non-root twin of ``command`` when ``prober.nonroot`` is set."""
    if not getattr(prober, 'nonroot', False):
        return
    args = container_caps.like(command)
    started = time.time()
    try:
        found = container_caps.parse(prober.run(args))
    except (probe_results.ProbeError, ValueError) as exc:
        found = dict(error=str(exc))
    found.update(command=' '.join(shlex.quote(a) for a in args),
                 seconds=round(time.time() - started, 2))
    prober.extra.setdefault(context, {})['nonroot'] = found
