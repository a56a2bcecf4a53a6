# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container runtimes: Docker (daemon.json, dockerd's --config-file and flags), Podman and CRI-O
(containers.conf, crio.conf), containerd (its CRI config and OCI base specs), their planners and
their live state. Private to the collection; docs/contexts.md has the layers.
"""
