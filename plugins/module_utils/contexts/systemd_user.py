# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""User services: each user manager (``user@UID.service``) takes ``DefaultLimit*=`` from
user.conf and its drop-ins, on top of the PAM session it runs in. Configured as
``systemd_user``, probed as ``user_manager`` (a transient service of the user's manager); a
change needs the running user managers restarted."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts.systemd_system import (
    Manager, plan_manager)


class SystemdUser(Manager):
    name = 'systemd_user'
    scope = sdpaths.USER
    probe = 'user_manager'
    pids_user_slice = True
    #: DefaultTasksMax= in user.conf.d: on cgroup v2 a user service gets its manager's default
    pids_dropin = True
    files = ('/etc/systemd/user.conf', '/etc/systemd/user.conf.d/*.conf')
    target = sdpaths.dropin_path(sdpaths.USER, None, sdpaths.DROPIN_NAME)
    session = True
    restart_rank = 2
    fallback = "the user manager's own limits"

    def detect(self, root=''):
        return sdlive.systemd_running(root) and sdpaths.unit_exists('user@.service', root)

    def plans(self, request, host, ceiling):
        [(label, plan)] = plan_manager(self, self.scope, request, host, ceiling)

        def capped_plan():
            from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
            change = plan()
            caps = manager_unit_caps(change.result.get('limits') or {})
            if caps:
                change.result.setdefault('conflicts', []).extend(caps)
                message = ('user services cannot get the profile: ' + '; '.join(
                    c['reason'] for c in caps))
                if request.on_conflict == 'fail':
                    raise changes.Failure(message + ' (nothing written; change that line, or '
                                          'set on_conflict=warn; limits role: '
                                          'limits_on_conflict: warn)', change.result)
                change.warnings.append(message)
            return change
        return [(label, capped_plan)]

    def act(self, change, actions, state, host):
        actions['user_managers'] = list(change.result.get('restart_required') or [])

    def owed(self, actions, state, host, policy):
        return [(unit, None) for unit in actions['user_managers']]

    def restart_context(self, unit):
        return self.probe if unit.startswith('user@') else None

    def pids_post(self, pids, label, change):
        """``DefaultTasksMax=`` in user.conf's drop-in where user.conf (or systemd's built-in
        15%) gives user services less (pids_plan.add_default); each running user manager that
        says it runs less is owed a restart (under the restart policy: it reads user.conf when
        it starts), unless a later file keeps the value below (a conflict, not a restart)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import pids_plan
        change = pids_plan.add_default(change, pids.value, pids.kernel_max, scope=self.scope)
        if any(c.get('item') == 'pids' for c in change.result.get('conflicts') or []):
            return change
        wanted = pids.value.resolve(pids.kernel_max)
        stale = [unit for unit, now in sorted(pids.user_defaults().items())
                 if now is not None and pids_model.below(now.resolve(pids.kernel_max), wanted)]
        if stale:
            owed = set(change.result.get('restart_required') or []) | set(stale)
            change.result['restart_required'] = sorted(owed)
            change.result['reexec_required'] = True
            change.result.setdefault('pids', {})['stale_user_managers'] = stale
        return change

    def pids_advice(self, owner, decides=''):
        """Where a user service's own cgroup decides, its manager's DefaultTasksMax= (no file:
        the built-in 15%, or our user.conf.d drop-in that a running manager has not read yet);
        a user's slice that decides is the generic advice's."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import tasks_max
        unit = tasks_max.unit_of_cgroup(decides) or ''
        if owner in ('', 'ours') and '/user@' in decides and unit.endswith('.service'):
            return ('run limits_profile with pids in the profile and contexts: [systemd_user]: '
                    'it writes DefaultTasksMax= in user.conf.d and restarts the user managers '
                    'that run less (under its restart policy)')
        return None

    def pids_chain(self, prober, probe, user, uid, params):
        """A transient service of the user's manager, read from the host (its main PID)."""
        import os
        prober.require_user_manager(user, uid)
        unit = '%s-pids-%d.service' % (probes.PROBE_UNIT, os.getpid())
        start, show, stop = probes.user_probe_commands(user, uid, unit)
        try:
            return self.pid_chain(prober.user_service_pid(start, show, unit, user), unit)
        finally:
            prober.execute(stop)

    def probe_command(self, user, uid, params):
        return probes.user_probe_commands(user, uid, probes.PROBE_UNIT)[0]

    def run_probe(self, prober, user, uid, command):
        return prober.user_manager(user, uid, self.probe)

    def report(self, auditor):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        report, warnings = info.systemd_report(auditor.run, sdpaths.USER, auditor.user)
        configured = (report.get('manager') or {}).get('configured') or {}
        # capped below user.conf's defaults, or below the profile the audit checks against:
        # the line that caps the manager is then what decides a user service's value (and
        # what the tune would refuse to write past), not "the user manager's own limits"
        caps = manager_unit_caps(wanted_by(configured, auditor.params.get('profile')))
        report['manager_unit_caps'] = caps
        return report, list(warnings) + [c['reason'] for c in caps]

    def not_applied(self, report, host):
        """The user manager reports other values than user.conf (systemctl --user show)."""
        found = {}
        for entry in (report or {}).get('pending') or []:
            found.setdefault((self.probe, entry['item']), entry['action'])
        return found

    def audit_probe(self, report, auditor):
        # probed only when the user's manager runs (systemd_report saw it)
        return auditor.user in report['user_managers']

    def configured(self, report):
        """user.conf's defaults, except where a ``Limit*=`` of user@.service caps the user
        manager below them (``manager_unit_caps``): a user service then gets that hard limit
        (soft clamped to it), and that line decides the value."""
        found = dict((report or {}).get('manager', {}).get('configured') or {})
        for cap in (report or {}).get('manager_unit_caps') or []:
            entry = dict(found.get(cap['item']) or {})
            soft = entry.get('soft')
            entry.update(hard=cap['hard'], source=cap['path'], line=cap['line'],
                         soft=cap['hard'] if soft is None or _above(soft, cap['hard']) else soft)
            found[cap['item']] = entry
        return found


MANAGER_UNIT = 'user@.service'


def wanted_by(configured, profile):
    """{item: {soft, hard}} a user service is meant to get: user.conf's defaults
    (``configured``), raised to the profile's rlimit items (as the user wrote them; an item
    that is not an rlimit, pids, or a value that cannot be read is left to the audit's own
    checks)."""
    wanted = dict(configured or {})
    for name, value in sorted((profile or {}).items()):
        if name not in model.RLIMIT_ITEMS:
            continue
        try:
            limit = model.parse_profile({name: value}, 'profile', floor=False)[name]
        except model.LimitError:
            continue
        entry = dict(wanted.get(name) or {})
        for side in ('soft', 'hard'):
            value = getattr(limit, side)
            if value is not None and (entry.get(side) is None
                                      or model.exceeds(value, entry[side])):
                entry[side] = value
        wanted[name] = entry
    return wanted


def _above(value, top):
    return model.exceeds(value, top)


def manager_unit_caps(wanted, root=''):
    """The ``Limit*=`` lines of user@.service (its unit file and drop-ins) whose hard value is
    below what ``wanted`` ({item: {soft, hard}} for user services) asks: a user manager runs
    with them, and no user service gets more than its manager's hard limit, whatever
    user.conf says. [{item, path, line, value, reason}]."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_precedence
    try:
        settings = systemd_precedence.resolve_unit(MANAGER_UNIT, root).settings
    except (systemd_conf.ConfError, model.LimitError, IOError, OSError):
        return []
    caps = []
    for name, entry in sorted(wanted.items()):
        setting = settings.get(name)
        want = [entry.get(side) for side in ('soft', 'hard') if entry.get(side) is not None]
        if setting is None or setting.limit.hard is None or not want:
            continue
        top = max(want, key=lambda v: (v == model.UNLIMITED, v if v != model.UNLIMITED else 0))
        if model.exceeds(top, setting.limit.hard):
            caps.append(dict(
                item=name, path=setting.path, line=setting.line, value=setting.text,
                hard=setting.limit.hard,
                reason='%s:%s: %s caps every user manager (%s) at hard %s %s, so its user '
                       'services cannot get %s %s' % (
                           setting.path, setting.line, setting.text, MANAGER_UNIT, name,
                           model.format_human(name, setting.limit.hard), name,
                           model.format_human(name, top))))
    return caps


CONTEXT = SystemdUser()
