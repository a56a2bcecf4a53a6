# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's own state, read and never written: its hard ceilings and kernel settings
(``host_limits``), package versions, the commands a probe runs, the proofs kept of probes, the
paths where runtimes keep their files. Private to the collection; docs/contexts.md has the
layers.
"""
