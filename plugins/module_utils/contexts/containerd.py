# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd: the CRI runtime under Docker and Kubernetes; its containers inherit the limits
of containerd's own process, so the profile goes into ``containerd.service``'s ``Limit*=``
(the units context). Configured as ``containerd``, probed as ``unit:containerd.service``."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context


class Containerd(Context):
    name = 'containerd'
    units = ('containerd.service',)
    files = ('/etc/systemd/system/containerd.service.d/*.conf',)

    def detect(self, root=''):
        return sdpaths.unit_exists('containerd.service', root)


CONTEXT = Containerd()
