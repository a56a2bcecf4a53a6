# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd: the unit-file editor, the precedence of drop-ins and managers, the names and search
paths, what the running manager has loaded, the planner of a drop-in, and the restarts
(``restarts``). Private to the collection; docs/contexts.md has the layers.
"""
