# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Login sessions: pam_limits reads limits.conf and limits.d/*.conf when a session opens.
Configured as ``pam``, probed as ``login`` (``runuser -l``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option

LIMITS_CONF = '/etc/security/limits.conf'
LIMITS_DIR = '/etc/security/limits.d'


TARGET = LIMITS_DIR + '/90-gpufleet-tuning.conf'
PATH = Option('pam_path', 'path', default=TARGET, description=(
    'The limits.d file for login sessions.',))


class Pam(Context):
    name = 'pam'
    probe = 'login'
    files = (LIMITS_CONF, LIMITS_DIR + '/*.conf')
    path = PATH
    target = TARGET
    session = True
    fallback = 'no limits line (inherited from the login service)'

    def detect(self, root=''):
        return os.path.isdir(root + '/etc/security')

    def plans(self, request, host, ceiling):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
        from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan

        def plan():
            path = request.paths[self.path_option]
            try:
                entries = pam_limits_plan.profile_entries(
                    self.limits(self.name, request, host, ceiling), request.domains)
            except pam_limits_plan.PlanError as exc:
                raise changes.Failure(str(exc), pam_limits_plan.new_result(path),
                                      kind=exc.kind)
            return pam_limits_plan.plan_entries(
                entries, path, on_conflict=request.on_conflict, force=request.force,
                limits_conf=LIMITS_CONF, limits_dir=LIMITS_DIR, ceiling=ceiling,
                pam_version=pam_version(request, host), prune=request.domains)
        return [(self.name, plan)]

    def undo_plans(self, request, host):
        """Its file without the lines of the domains it writes; removed when nothing else
        is left."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
        return [(self.name, lambda: undo_files.undo_pam(
            request.paths[self.path_option], request.domains, versions.pam_version(host)))]

    def current(self, label, request, host):
        """What a login of each domain gets now, the highest of the domains: the limits lines
        that apply to it (file:line), or, for a hard side no line sets, what the login service
        inherits (the system manager's defaults, read only when a line is missing)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
            limits_model as model)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import (
            pam_limits_conf as conf)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_system
        names = list(request.limits)
        try:
            version = pam_version(request, host)
            files = [f for f in (conf.read_file(path, version)
                                 for path in conf.pam_order(LIMITS_CONF, LIMITS_DIR)) if f]
        except (IOError, OSError, ValueError):
            return {}   # the plan names the file it cannot read
        sets = [conf.resolve(files, user, root_wildcards=root_wildcards())['effective']
                for user in domain_users(request.domains)]
        # the soft side a session starts with is not the service's (su - starts at 1024 under
        # a shell of 20000): only lines count there; a hard side no line sets is inherited
        unset = [n for n in names if any((e.get(n) or {}).get('hard') is None for e in sets)]
        base = systemd_system.manager_now(request, host, unset)
        found = {}
        for effective in sets:
            for name in names:
                entry = effective.get(name) or {}
                for side in ('soft', 'hard'):
                    value, source = entry.get(side), entry.get(side + '_source')
                    if value is None and side == 'hard' and name in base:
                        value, source = base[name][0].hard, base[name][1]
                    have = found.setdefault(name, {}).get(side)
                    if value is not None and (have is None or model.exceeds(value, have[0])):
                        found[name][side] = (value, source)
        # each side with its own source: a hard side kept cites the line that sets the hard
        # side, not the soft one (model.keep.side_source)
        return dict((name, (model.Limit(s.get('soft', (None,))[0], s.get('hard', (None,))[0]),
                            dict((side, v[1]) for side, v in s.items())))
                    for name, s in found.items() if s)

    def probe_command(self, user, uid, params):
        return probes.login_command(user)

    def report(self, auditor):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        report = info.pam_report(dict(user=auditor.user, limits_conf=LIMITS_CONF,
                                      limits_dir=LIMITS_DIR, root_wildcards='auto'),
                                 auditor.host)
        return report, ['%s: pam_limits reads only *.conf in %s, so no line of this file applies'
                        % (path, LIMITS_DIR) for path in report.get('ignored') or []] + [
                            found['msg'] for found in report.get('unread') or []]

    def problems(self, report):
        """The limits files pam_limits cannot open (pam_limits_conf.session_failures): every
        session that runs it fails, the node is broken."""
        return [dict(source=found['path'], msg=found['msg'], state='broken')
                for found in (report or {}).get('session_errors') or []]

    def audit_probe(self, report, auditor):
        return True

    def configured(self, report):
        return (report or {}).get('effective') or {}


def pam_version(request, host):
    """The node's Linux-PAM version, read once a call (a parse of dpkg's status file)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
    return request.read('pam_version', lambda: versions.pam_version(host))


def session_errors(request, host):
    """The limits files that make every session that runs pam_limits fail now
    (pam_limits_conf.session_failures, as the node's Linux-PAM reads them), [SessionBreaker]."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import (
        pam_limits_conf as conf)
    if not os.path.isdir(os.path.dirname(LIMITS_CONF)):
        return []
    return conf.session_failures(LIMITS_CONF, LIMITS_DIR, pam_version(request, host))


def root_wildcards():
    """Do ``*`` and ``@group`` lines apply to root? Not on Debian and Ubuntu (limits.conf(5))."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
    return not info.debian_family()


def domain_users(domains):
    """A user each domain of the profile applies to: root for ``root``, an unprivileged user
    in no group for ``*``, the user itself for a user name; groups and ranges are left out (a
    member's value depends on its other lines)."""
    import pwd
    from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
    users = []
    for domain in domains:
        if domain == '*':
            users.append(conf.User('gpufleet-any-user', 65533, 65533, [], []))
            continue
        if domain[:1] in ('@', '%') or ':' in domain:
            continue
        try:
            entry = pwd.getpwnam(domain)
        except KeyError:
            continue
        users.append(conf.User(entry.pw_name, entry.pw_uid, entry.pw_gid, [], []))
    return users


CONTEXT = Pam()
