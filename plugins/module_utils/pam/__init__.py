# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Linux-PAM's pam_limits: the lossless limits.conf editor and resolver (``pam_limits_conf``) and
the planner of a limits file (``pam_limits_plan``). Private to the collection; docs/contexts.md
has the layers.
"""
