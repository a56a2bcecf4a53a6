# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet-limits-components: the package hooks' check of the drift watch (role limits_watch).

Run by apt's ``DPkg::Post-Invoke`` (/etc/apt/apt.conf.d/80gpufleet-limits-watch) and dnf's
post-transaction-actions plugin after a package transaction: when the version or the unit files
of dockerd, containerd, runc, slurmd or systemd differ from what the watch recorded, it starts
gpufleet-limits-watch.service at once (without waiting for it), which audits the node and
records the change. Writes nothing itself; always exits 0 (a package transaction must never
fail because of it). The work is in module_utils/run/watch_outlets.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch  # noqa: E402
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import watch_outlets  # noqa: E402


def main(argv):
    state_dir = ([a for a in argv if a != '-v'] or ['/var/lib/gpufleet-tuning/watch'])[0]
    try:
        changed, said = watch_outlets.check_components(drift_watch.LocalHost(), state_dir)
    except Exception as exc:  # pylint: disable=broad-except
        changed, said = True, 'component check failed: %s' % exc
    if changed or '-v' in argv:    # quiet on the usual apt run that changed none of them
        sys.stderr.write('gpufleet-limits-watch: %s\n' % said)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
