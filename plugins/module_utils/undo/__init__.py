# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The undo of one file the collection wrote, planned and never written (``undo_files``). Private
to the collection; docs/contexts.md has the layers.
"""
