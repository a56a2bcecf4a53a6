# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where CRI-O, Podman and Slurm keep the files the contexts read and write. One small module,
so that the context registry knows every context's files and default target without importing
the parsers (crio_conf, containers_conf, slurm_conf): a context's parser is imported only when
that context is present and planned, which keeps an idempotent rerun's node-side imports to the
contexts a node has."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# CRI-O: crio.conf, then crio.conf.d in lexical order; the collection's own drop-in sorts late.
CRIO_MAIN = '/etc/crio/crio.conf'
CRIO_DROPIN_DIR = '/etc/crio/crio.conf.d'
CRIO_DROPIN = CRIO_DROPIN_DIR + '/90-gpufleet-tuning.conf'
# Podman (containers/common): the main files root's Podman reads, in order, and the
# collection's containers.conf drop-in.
CONTAINERS_MAIN_FILES = ('/usr/share/containers/containers.conf', '/etc/containers/containers.conf')
CONTAINERS_DROPIN_DIR = '/etc/containers/containers.conf.d'
CONTAINERS_DROPIN = CONTAINERS_DROPIN_DIR + '/90-gpufleet-tuning.conf'
# Slurm: the file slurmctld and slurmd read (Debian's slurm-wlm packages).
SLURM_CONF = '/etc/slurm/slurm.conf'
