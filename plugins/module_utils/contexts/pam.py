# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Login sessions: pam_limits reads limits.conf and limits.d/*.conf when a session opens.
Configured as ``pam``, probed as ``login`` (``runuser -l``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_stack
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option

LIMITS_CONF = '/etc/security/limits.conf'
LIMITS_DIR = '/etc/security/limits.d'


TARGET = LIMITS_DIR + '/90-gpufleet-tuning.conf'
#: the probed contexts whose sessions run pam_limits: a limits file every session fails on stops
#: them all (:meth:`Pam.problems`)
STOPPED_BY_PAM = ('login', 'ssh', 'user_manager')
PATH = Option('pam_path', 'path', default=TARGET, description=(
    'The limits.d file for login sessions.',))


class Pam(Context):
    name = 'pam'
    probe = 'login'
    task_limit = 'nproc'
    # argv[0] '-bash': a login shell's own error lines
    shown_by = r'^-bash: '
    kinds = ('rlimit', 'pids')
    pids_user_slice = True
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
                    request.limits, request.domains,
                    by_domain=self.domain_limits(request, host, ceiling))
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
        """What a new login gets now, the highest of the profile's domains (each side as
        :meth:`domain_current` has it)."""
        found = {}
        for now in (self.domain_current(request, host) or {}).values():
            for name, (limit, source) in now.items():
                sides = found.setdefault(name, {})
                for side in ('soft', 'hard'):
                    value = getattr(limit, side)
                    if value is not None and (side not in sides or
                                              model.exceeds(value, sides[side][0])):
                        sides[side] = (value, source.get(side))
        # each side with its own source (model.keep.side_source)
        return dict((name, (model.Limit(s.get('soft', (None,))[0], s.get('hard', (None,))[0]),
                            dict((side, v[1]) for side, v in s.items() if v[1])))
                    for name, s in found.items() if s)

    def domain_current(self, request, host):
        """{domain: {item: (Limit, source)}}: what a new login of each domain of the profile
        gets now, side by side: the limits lines that apply to it (file:line), and, for a side
        no line sets, what the session inherits from the process that opens it (pam_limits
        changes only what lines set, reference section 1), the highest of the ways a login
        opens: a login service (sshd, login, a getty: the system manager's defaults) and
        ``su -``/``runuser -l`` from this process (its own limits; su and runuser start soft
        nofile at 1024, seen here, so its soft nofile does not count). Groups and uid ranges
        are left out (unknown). None when the files cannot be read (the plan names them)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import (
            pam_limits_conf as conf)
        names = list(request.limits)
        try:
            version = pam_version(request, host)
            files = [f for f in (conf.read_file(path, version)
                                 for path in conf.pam_order(LIMITS_CONF, LIMITS_DIR)) if f]
        except (IOError, OSError, ValueError):
            return None
        result = {}
        base = None
        for domain, user in domain_user_pairs(request.domains):
            effective = conf.resolve(files, user, root_wildcards=root_wildcards())['effective']
            found = {}
            for name in names:
                entry = effective.get(name) or {}
                values, sources = {}, {}
                for side in ('soft', 'hard'):
                    value, source = entry.get(side), entry.get(side + '_source')
                    if value is None:
                        if base is None:
                            base = inherited(request, host, names)
                        if (name, side) in base:
                            value, source = base[(name, side)]
                    values[side] = value
                    if value is not None and source:
                        sources[side] = source
                soft, hard = values['soft'], values['hard']
                if soft is not None and hard is not None and model.exceeds(soft, hard):
                    soft = hard     # pam_limits clamps a soft value above the hard one
                if soft is not None or hard is not None:
                    # each side with its own source: a hard side kept cites the line that
                    # sets the hard side, not the soft one (model.keep.side_source)
                    found[name] = (model.Limit(soft, hard), sources)
            result[domain] = found
        return result

    def domain_limits(self, request, host, ceiling):
        """{domain: {item: Limit}} for each domain whose login is known: the profile
        kept at what the domain gets now on each side not named (model.keep), so that a plain
        value the domain already meets changes no value there. Every entry is written: the
        collection's line is what holds the value against an earlier line (a package's
        limits.d file) that would give less. Domains left out (groups, ranges) get the profile
        as asked. What was kept or lowered is in ``kept['pam']``."""
        now = self.domain_current(request, host) or {}
        result, records = {}, []
        for domain, current in now.items():
            limits = {}
            for name, asked in request.limits.items():
                have, source = current.get(name) or (None, None)
                top = ceiling.hard_ceiling(name)[0] if ceiling is not None else None
                limit, found = model.keep(name, asked, request.named.get(name, (False, False)),
                                          have, source, top)
                records.extend(r for r in found if r not in records)
                limits[name] = limit
            result[domain] = limits
        request.kept[self.name] = records
        return result

    def probe_command(self, user, uid, params):
        return probes.login_command(user)

    def report(self, auditor):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        report = info.pam_report(dict(user=auditor.user, limits_conf=LIMITS_CONF,
                                      limits_dir=LIMITS_DIR, root_wildcards='auto'),
                                 auditor.host)
        report['login_stack'] = login_stack()
        return report, ['%s: pam_limits reads only *.conf in %s, so no line of this file applies'
                        % (path, LIMITS_DIR) for path in report.get('ignored') or []] + [
                            found['msg'] for found in report.get('unread') or []]

    def problems(self, report):
        """The limits files pam_limits cannot open (pam_limits_conf.session_failures): every
        session that runs it fails, the node is broken: logins, ssh sessions and the user
        manager's own PAM session (``stops``)."""
        stops = [c.probe for c in self.registry if c.probe in STOPPED_BY_PAM]
        return [dict(source=found['path'], msg=found['msg'], state='broken', stops=stops,
                     advice=found.get('fix') or '')
                for found in (report or {}).get('session_errors') or []]

    def audit_probe(self, report, auditor):
        return True

    def configured(self, report):
        """What the limits files give a login session (pam_limits_conf.resolve), or, where the
        login service's stack runs no pam_limits or reads another file (``conf=``), that
        line's evidence for every item: the files then decide nothing (``why``, each side's
        place the stack line, the action that makes them apply)."""
        report = report or {}
        why, at, fix = stack_why(report.get('login_stack'))
        if why:
            return dict((item, dict(soft=None, hard=None, why=why, soft_place=at, hard_place=at,
                                    fix=fix))
                        for item in sorted(set(report.get('effective') or {}) | set(
                            model.RLIMIT_ITEMS)))
        return report.get('effective') or {}


#: the PAM service of the login probe (host/probes.py: ``runuser -l``)
LOGIN_SERVICE = 'runuser-l'


def login_stack(service=LOGIN_SERVICE, dirs=None):
    """Whether the login probe's PAM service runs pam_limits: {service, pam_file,
    pam_limits (file:line of its session line, includes followed, or None), conf (its
    ``conf=``, or None), commented}; None where the service has no PAM file."""
    args = {} if dirs is None else {'dirs': dirs}
    path = pam_stack.pam_file(service, **args)
    if not os.path.exists(path):
        return None
    lines, commented = pam_stack.pam_stack(service, **args)
    found = [line for line in lines if line.is_limits()]
    return dict(service=service, pam_file=path,
                pam_limits=found[0].where if found else None,
                conf=found[0].conf() if found else None, commented=commented)


def stack_why(stack):
    """(why the limits files do not reach a login session, the place that decides it
    {path, line}, the action that makes them apply), or ('', None, '') where they do."""
    if not stack:
        return '', None, ''
    if stack.get('pam_limits') is None:
        off = stack.get('commented') or []
        return ('%s (%s) has no session line with pam_limits%s, so limits.conf and %s do not '
                'apply to login sessions (runuser -l, su -)' % (
                    stack['pam_file'], stack['service'],
                    ' (%s is commented out)' % ', '.join(off) if off else '', LIMITS_DIR),
                dict(path=stack['pam_file'], line=None),
                'add "session required pam_limits.so" to %s' % stack['pam_file'])
    if stack.get('conf'):
        path, _sep, line = stack['pam_limits'].rpartition(':')
        return ('%s runs pam_limits with conf=%s: login sessions read that file only, not %s '
                'or %s/*.conf' % (stack['pam_limits'], stack['conf'], LIMITS_CONF, LIMITS_DIR),
                dict(path=path, line=int(line) if line.isdigit() else None),
                'drop conf= from %s' % stack['pam_limits'])
    return '', None, ''


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


#: the side su and runuser do not pass on: they start a session's soft nofile at 1024
SOFT_NOFILE = ('nofile', 'soft')


def inherited(request, host, names):
    """{(item, side): (value, source)} a login session starts with where no limits line sets
    the side: the highest of the login service's (the system manager's defaults) and this
    process's own (``su -``, ``runuser -l`` from here; not soft
    nofile, which they start at 1024; without systemd no login service starts from PID 1's
    soft nofile either)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_system
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
        systemd_live as sdlive)
    found = {}
    services = request.read('systemd_running', sdlive.systemd_running)
    for name, (limit, source) in systemd_system.manager_now(request, host, names).items():
        for side in ('soft', 'hard'):
            if getattr(limit, side) is not None and (services or (name, side) != SOFT_NOFILE):
                # without systemd, PID 1 starts no login service: its soft nofile is no login's
                found[(name, side)] = (getattr(limit, side),
                                       "no limits line: the login service's, %s" % source)
    su = (1024, 'no limits line: su - and runuser -l start soft nofile at 1024')
    if 'nofile' in names and (SOFT_NOFILE not in found or
                              not model.exceeds(found[SOFT_NOFILE][0], 1024)):
        found[SOFT_NOFILE] = su
    own = request.read('login_opener', lambda: host_limits.proc_limits('self'))
    for name in names:
        for side in ('soft', 'hard'):
            value = getattr(own.get(name), side, None)
            if value is None or (name, side) == SOFT_NOFILE:
                continue
            have = found.get((name, side))
            if have is None or model.exceeds(value, have[0]):
                found[(name, side)] = (value, 'no limits line: what su - and runuser -l from '
                                              'here pass on (/proc/self/limits)')
    return found


def domain_user_pairs(domains):
    """[(domain, user)]: a user each domain of the profile applies to: root for ``root``, an
    unprivileged user in no group for ``*``, the user itself for a user name; groups and
    ranges are left out (a member's value depends on its other lines)."""
    import pwd
    from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
    users = []
    for domain in domains:
        if domain == '*':
            users.append((domain, conf.User('gpufleet-any-user', 65533, 65533, [], [])))
            continue
        if domain[:1] in ('@', '%') or ':' in domain:
            continue
        try:
            entry = pwd.getpwnam(domain)
        except KeyError:
            continue
        users.append((domain, conf.User(entry.pw_name, entry.pw_uid, entry.pw_gid, [], [])))
    return users


CONTEXT = Pam()
