# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel ceilings: the sysctl.d drop-in and the live /proc/sys values (host/sysctl_conf.py
reads the configuration). Private to the collection; docs/contexts.md has the layers.
"""
