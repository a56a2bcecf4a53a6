# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Login sessions: pam_limits reads limits.conf and limits.d/*.conf when a session opens.
Configured as ``pam``, probed as ``login`` (``runuser -l``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context

LIMITS_CONF = '/etc/security/limits.conf'
LIMITS_DIR = '/etc/security/limits.d'


class Pam(Context):
    name = 'pam'
    probe = 'login'
    files = (LIMITS_CONF, LIMITS_DIR + '/*.conf')
    path_option = 'pam_path'
    target = LIMITS_DIR + '/90-gpufleet-tuning.conf'
    session = True
    fallback = 'no limits line (inherited from the login service)'

    def detect(self, root=''):
        return os.path.isdir(root + '/etc/security')

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils import changes
        from ansible_collections.gpufleet.tuning.plugins.module_utils import pam_limits_plan
        from ansible_collections.gpufleet.tuning.plugins.module_utils import versions

        def plan():
            path = request.paths[self.path_option]
            try:
                entries = pam_limits_plan.profile_entries(request.limits, request.domains)
            except pam_limits_plan.PlanError as exc:
                raise changes.Failure(str(exc), pam_limits_plan.new_result(path),
                                      kind=exc.kind)
            return pam_limits_plan.plan_entries(
                entries, path, on_conflict=request.on_conflict, force=request.force,
                limits_conf=LIMITS_CONF, limits_dir=LIMITS_DIR, ceiling=ceiling,
                pam_version=versions.pam_version(host))
        return [(self.name, plan)]

    def probe_command(self, user, uid, params):
        return probes.login_command(user)

    def report(self, auditor):
        from ansible_collections.gpufleet.tuning.plugins.module_utils import info
        return info.pam_report(dict(user=auditor.user, limits_conf=LIMITS_CONF,
                                    limits_dir=LIMITS_DIR, root_wildcards='auto'),
                               auditor.host), []

    def audit_probe(self, report, auditor):
        return True

    def configured(self, report):
        return (report or {}).get('effective') or {}


CONTEXT = Pam()
