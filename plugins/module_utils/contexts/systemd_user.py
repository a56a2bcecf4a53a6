# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""User services: each user manager (``user@UID.service``) takes ``DefaultLimit*=`` from
user.conf and its drop-ins, on top of the PAM session it runs in. Configured as
``systemd_user``, probed as ``user_manager`` (a transient service of the user's manager); a
change needs the running user managers restarted."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils import systemd_paths as sdpaths
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts.systemd_system import (
    manager_current, plan_manager)


class SystemdUser(Context):
    name = 'systemd_user'
    probe = 'user_manager'
    files = ('/etc/systemd/user.conf', '/etc/systemd/user.conf.d/*.conf')
    target = sdpaths.dropin_path(sdpaths.USER, None, sdpaths.DROPIN_NAME)
    session = True
    restart_rank = 2
    fallback = "the user manager's own limits"

    def detect(self, root=''):
        return sdlive.systemd_running(root) and sdpaths.unit_exists('user@.service', root)

    def plans(self, request, host, ceiling):
        return plan_manager(self.name, sdpaths.USER, request, host, ceiling)

    def current(self, label, request, host):
        return manager_current(sdpaths.USER, request, host)

    def act(self, change, actions, state, host):
        actions['user_managers'] = list(change.result.get('restart_required') or [])

    def owed(self, actions, state, host, policy):
        return [(unit, None) for unit in actions['user_managers']]

    def restart_context(self, unit):
        return self.probe if unit.startswith('user@') else None

    def probe_command(self, user, uid, params):
        return probes.user_probe_commands(user, uid, probes.PROBE_UNIT)[0]

    def run_probe(self, prober, user, uid, command):
        return prober.user_manager(user, uid)

    def report(self, auditor):
        from ansible_collections.gpufleet.tuning.plugins.module_utils import info
        return info.systemd_report(auditor.run, sdpaths.USER, auditor.user)

    def audit_probe(self, report, auditor):
        # probed only when the user's manager runs (systemd_report saw it)
        return auditor.user in report['user_managers']

    def configured(self, report):
        return (report or {}).get('manager', {}).get('configured') or {}


CONTEXT = SystemdUser()
