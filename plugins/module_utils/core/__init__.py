# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files, errors and commands: the errors the modules report, lossless text decoding, atomic writes
with owner, mode and label kept, the environment of the commands run on the node, planned
changes (a file's before and after, written later). Private to the collection; docs/contexts.md
has the layers.
"""
