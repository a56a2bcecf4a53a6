# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules run, over the context registry: the probes (``effective``), the audit, the
drift watch, limits_profile's plan, run and undo. Private to the collection; docs/contexts.md
has the layers.
"""
