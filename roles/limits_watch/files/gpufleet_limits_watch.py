# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet-limits-watch: the node-side entry point of the drift watch (role limits_watch).

Installed next to a copy of the collection's module_utils
(``ansible_collections/gpufleet/tuning/plugins/module_utils/`` below this file's directory) and
run by gpufleet-limits-watch.service with ``python3 -I -S``: the standard library and those
files only, no Ansible on the node. The work is in module_utils/run/drift_watch.py, the Slurm
modes (``--mode slurm-health``, ``--mode slurm-prolog``, ``--mode slurm-epilog``) in module_utils/run/slurm_health.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch  # noqa: E402
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import slurm_health  # noqa: E402

if __name__ == '__main__':
    sys.exit(drift_watch.main(sys.argv[1:], __file__, slurm_health))
