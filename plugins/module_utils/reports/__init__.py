# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules report: the per-technology readers of the info modules and the audit
(``info``), probe results compared with a profile (``probe_results``), the sources behind a gap,
the fleet summary, the node exporter's textfile metrics, the DataLoader job's fit. Private to
the collection; docs/contexts.md has the layers.
"""
