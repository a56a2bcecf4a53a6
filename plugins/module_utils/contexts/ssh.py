# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SSH sessions: users log in over SSH, and sshd starts their processes. A session gets the
limits of sshd's own process (its unit, ``ssh.service`` on Debian/Ubuntu, ``sshd.service`` on
RHEL: ``Limit*=``, else the manager's defaults), changed by pam_limits only when sshd runs its
PAM stack (``UsePAM yes``) and ``/etc/pam.d/sshd`` (or a file it includes) has a ``session``
line with pam_limits. Either can differ from ``runuser -l`` (the ``login`` probe). Not
configured by a context of its own (the ``pam`` context and the units context write what it
reads); probed as ``ssh``.

The probe starts a real session through the node's sshd configuration and PAM stack, and
leaves nothing behind in the user's files: a second, temporary sshd (``sshd -D -e -f
/etc/ssh/sshd_config`` with ``-o`` options: 127.0.0.1 and a free port, a throwaway host key,
``AuthorizedKeysFile`` in a root-owned directory under /run) runs as a transient system
service (``systemd-run``) with every ``Limit*=`` set to the running sshd's own limits, as its
unit's manager started it; a throwaway key pair logs the user in
(``ssh -F /dev/null -o UserKnownHostsFile=/dev/null ... cat /proc/self/limits``); then the
service is stopped and the directory removed. ``systemd-run`` rather than ``prlimit``: the
same manager that started sshd sets the limits (raising a hard limit needs CAP_SYS_RESOURCE,
which root in a container may lack, and so would prlimit), and the temporary sshd and its
sessions are stopped as one unit. ``sshd -T -C user=...`` (documented in sshd(8)) gives the
configuration the temporary sshd applies to that connection, Match blocks included: the probe
checks it before it starts anything, and the report reads ``UsePAM`` from it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import socket
import tempfile
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam.pam_stack import pam_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts.ssh_sessions import (
    LIMITS_CONF, LIMITS_DIR, PAM_SERVICE, SSHD_CONFIG, fixes_for, predicted,
    stack_report, why_no_pam, why_not_read)

# Debian/Ubuntu first (where sshd.service is an alias of ssh.service), then RHEL
UNITS = ('ssh.service', 'sshd.service')
PROBE_UNIT = 'gpufleet-ssh-probe'
# where the temporary sshd's directory is made: root-owned and not world-writable, so that
# sshd's StrictModes accepts the AuthorizedKeysFile in it (/tmp is world-writable)
RUN_DIR = '/run'
# seconds the temporary sshd may take to listen
LISTEN_WAIT = 10


# --- sshd -----------------------------------------------------------------------------------

def parse_sshd_t(text):
    """``sshd -T`` output -> {keyword (lower case): [values]}."""
    found = {}
    for line in (text or '').splitlines():
        part = line.strip().split(None, 1)
        if part:
            found.setdefault(part[0].lower(), []).append(part[1] if len(part) > 1 else '')
    return found


def first(config, key, default=None):
    values = config.get(key)
    return values[0] if values else default


def server_options(port, hostkey, auth_dir, pidfile):
    """The ``-o`` options of the temporary sshd: only where and how it listens and which keys
    it takes; the node's sshd_config decides everything else (UsePAM, Match blocks, ...)."""
    return ['-o', 'ListenAddress=127.0.0.1:%d' % port, '-o', 'Port=%d' % port,
            '-o', 'HostKey=%s' % hostkey, '-o', 'AuthorizedKeysFile=%s/%%u' % auth_dir,
            '-o', 'PidFile=%s' % pidfile, '-o', 'UseDNS=no']


def server_command(sshd, config, options):
    """The temporary sshd, in the foreground, logging to stderr (the transient unit's journal).
    ``sshd`` is an absolute path: sshd re-executes itself for each connection."""
    return [sshd, '-D', '-e', '-f', config] + list(options)


def test_command(sshd, config, options, user, port):
    """``sshd -T -C``: the configuration the temporary sshd applies to ``user``'s connection
    from 127.0.0.1, Match blocks included."""
    return [sshd, '-T', '-f', config, '-C',
            'user=%s,host=localhost,addr=127.0.0.1,laddr=127.0.0.1,lport=%d' % (user, port)
            ] + list(options)


def client_command(key, port, user):
    """The session: ssh with no configuration file of the caller's (``-F /dev/null``), the
    throwaway key only, the throwaway host key accepted and recorded nowhere."""
    return ['ssh', '-F', '/dev/null', '-T', '-x', '-a', '-i', key, '-p', str(port),
            '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none',
            '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
            '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR',
            '-o', 'ConnectTimeout=10', '%s@127.0.0.1' % user, probes.CAT]


def limit_properties(limits):
    """``-p LimitX=SOFT:HARD`` for systemd-run, one per item of ``limits`` ({item: Limit})."""
    found = []
    for name in model.RLIMIT_ITEMS:
        limit = limits.get(name)
        if limit is not None and limit.soft is not None and limit.hard is not None:
            found.extend(['-p', '%s=%s' % (model.systemd_key(name), model.to_systemd(name, limit))])
    return found


def refusal(config, user):
    """Why sshd (as ``sshd -T -C`` shows its configuration for ``user``) would not let the
    probe's key in, or ''."""
    if first(config, 'pubkeyauthentication', 'yes') != 'yes':
        return 'PubkeyAuthentication is not yes for %s' % user
    methods = first(config, 'authenticationmethods', 'any')
    if methods not in ('any', 'publickey') and 'publickey' not in methods.split():
        return 'AuthenticationMethods %s asks more than a key of %s' % (methods, user)
    if user == 'root' and first(config, 'permitrootlogin', 'yes') in ('no', 'forced-commands-only'):
        return 'PermitRootLogin %s: root cannot log in over SSH' % first(config, 'permitrootlogin')
    return ''


def keys_file(config, auth_dir):
    """The AuthorizedKeysFile sshd applies (None: it is not the probe's own directory, a Match
    block of the node sets another: the probe would need the user's own files)."""
    value = ' '.join(config.get('authorizedkeysfile') or [])
    return value if value.split() and all(
        p.startswith(auth_dir + '/') for p in value.split()) else None


def sshd_binary(module=None, root=''):
    if module is not None:
        return module.get_bin_path('sshd', opt_dirs=list(commands.SEARCH_PATH))
    return commands.find_binary('sshd', root)


def sshd_unit(root=''):
    for unit in UNITS:
        if sdpaths.unit_exists(unit, root):
            return unit
    return None


def socket_unit(unit, root=''):
    """The socket unit that starts ``unit`` on a connection (``ssh.socket``), or None."""
    name = unit.rsplit('.', 1)[0] + '.socket'
    return name if sdpaths.unit_exists(name, root) else None


def free_port():
    """A TCP port of 127.0.0.1 nobody listens on now."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def listening(port, wait):
    """Does 127.0.0.1:``port`` accept a connection within ``wait`` seconds?"""
    end = time.time() + wait
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(1)
        try:
            sock.connect(('127.0.0.1', port))
            return True
        except (IOError, OSError):
            if time.time() >= end:
                return False
            time.sleep(0.1)
        finally:
            sock.close()


# --- where a session's value comes from -----------------------------------------------------

def use_pam_of(run, sshd):
    """sshd's UsePAM (``sshd -T``; UsePAM is not allowed in a Match block), or None with the
    reason when sshd -T fails (then taken as yes, sshd's default on every distribution that
    ships a PAM stack for it)."""
    rc, out, err = run(test_command(sshd, SSHD_CONFIG, [], 'root', 22))
    if rc == 0:
        return first(parse_sshd_t(out), 'usepam'), ''
    return None, 'sshd -T failed (UsePAM unknown, taken as yes): %s' % (err or out).strip()[:300]


# --- the record ------------------------------------------------------------------------------

class Ssh(Context):
    probe = 'ssh'
    task_limit = 'nproc'
    files = (SSHD_CONFIG, SSHD_CONFIG + '.d/*.conf', '/etc/pam.d/sshd', LIMITS_CONF,
             LIMITS_DIR + '/*.conf', '/etc/systemd/system/ssh.service.d/*.conf',
             '/etc/systemd/system/sshd.service.d/*.conf')
    fallback = "sshd's own limits (its unit or the manager default)"

    def detect(self, root=''):
        """sshd is installed (its binary and its configuration): otherwise no SSH session can
        start, and the context is not there (not an error)."""
        return sshd_binary(root=root) is not None and os.path.isfile(root + SSHD_CONFIG)

    def probe_command(self, user, uid, params):
        return client_command(os.path.join(RUN_DIR, PROBE_UNIT + '.XXXX', 'keys', 'client'),
                              'PORT', user)

    def run_probe(self, prober, user, uid, command):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        sshd = sshd_binary(prober.module)
        unit = sshd_unit()
        if sshd is None or not self.detect():
            raise probe_results.ProbeError(
                'sshd is not installed, so no SSH session can start here', kind=errors.NOT_RUNNING)
        if unit is None:
            raise probe_results.ProbeError(
                'sshd has no unit (%s), so no SSH session can start here' % ' or '.join(UNITS),
                kind=errors.NOT_RUNNING)
        own = self.sshd_limits(prober, unit)
        work = tempfile.mkdtemp(prefix=PROBE_UNIT + '.', dir=RUN_DIR)
        service = '%s-%d-%s.service' % (PROBE_UNIT, os.getpid(), os.path.basename(work)[-6:])
        started, made_privsep = False, None
        try:
            os.chmod(work, 0o755)
            keys, auth = os.path.join(work, 'keys'), os.path.join(work, 'auth')
            for path, mode in ((keys, 0o700), (auth, 0o755)):
                os.mkdir(path, mode)
                os.chmod(path, mode)    # whatever the umask: the user reads auth/USER
            for name in ('client', 'host'):
                prober.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', PROBE_UNIT,
                            '-f', os.path.join(keys, name)])
            with open(os.path.join(keys, 'client.pub')) as handle:
                public = handle.read()
            with open(os.path.join(auth, user), 'w') as handle:
                handle.write(public)
            os.chmod(os.path.join(auth, user), 0o644)
            port = free_port()
            options = server_options(port, os.path.join(keys, 'host'), auth,
                                     os.path.join(work, 'sshd.pid'))
            made_privsep = self.privsep_dir(prober, sshd, options)
            config = parse_sshd_t(prober.run(test_command(sshd, SSHD_CONFIG, options, user, port)))
            if keys_file(config, auth) is None:
                raise probe_results.ProbeError(
                    '%s applies AuthorizedKeysFile %s to %s (a Match block): the probe would need '
                    'the user\'s own files, so it does not log in' % (
                        SSHD_CONFIG, ' '.join(config.get('authorizedkeysfile') or []), user))
            refused = refusal(config, user)
            if refused:
                raise probe_results.ProbeError('%s: %s' % (SSHD_CONFIG, refused),
                                               kind=errors.NOT_RUNNING)
            prober.run(['systemd-run', '--quiet', '--collect', '--unit=' + service,
                        '--description=gpufleet ssh probe (temporary sshd)']
                       + limit_properties(own) + server_command(sshd, SSHD_CONFIG, options))
            started = True
            if not listening(port, LISTEN_WAIT):
                raise probe_results.ProbeError(
                    'the temporary sshd (%s) did not listen on 127.0.0.1:%d within %d s '
                    '(journalctl -u %s)' % (service, port, LISTEN_WAIT, service))
            return prober.proc(client_command(os.path.join(keys, 'client'), port, user),
                               self.probe)
        finally:
            if started:
                prober.execute(['systemctl', 'stop', service])
            shutil.rmtree(work, ignore_errors=True)
            if made_privsep:
                try:
                    os.rmdir(made_privsep)
                except OSError:
                    pass

    @staticmethod
    def sshd_limits(prober, unit):
        """{item: Limit} the sessions inherit: the running sshd's own (its main process), or,
        where sshd is socket-activated (``ssh.socket``, Ubuntu 22.10 and later) and not started
        yet, what its unit will start it with (``systemctl show``). NOT_RUNNING when neither
        runs: no SSH session can start."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
            systemd_live as sdlive)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
            systemd_paths as paths)
        try:
            return prober.unit(unit)
        except probe_results.ProbeError as exc:
            if exc.kind != errors.NOT_RUNNING or socket_unit(unit) is None:
                raise
        try:
            prober.run(['systemctl', 'is-active', '--quiet', socket_unit(unit)])
        except probe_results.ProbeError:
            raise probe_results.ProbeError(
                '%s and %s are not running, so no SSH session can start here'
                % (unit, socket_unit(unit)), kind=errors.NOT_RUNNING)
        return sdlive.live_limits(sdlive.parse_show(prober.run(
            ['systemctl', 'show', '--property=' + ','.join(
                sdlive.show_properties(model.RLIMIT_ITEMS, paths.UNIT_PREFIX)), unit])),
            paths.UNIT_PREFIX)

    @staticmethod
    def privsep_dir(prober, sshd, options):
        """sshd refuses to start without its privilege separation directory (Debian's unit
        makes /run/sshd, RuntimeDirectory=sshd); when ``sshd -t`` says it is missing (sshd not
        running), it is made and the path returned, to be removed afterwards."""
        rc, out, err = prober.execute([sshd, '-t', '-f', SSHD_CONFIG] + list(options))
        match = re.search(r'Missing privilege separation directory: (/\S+)', err + out)
        if rc != 0 and match:
            path = match.group(1)
            os.mkdir(path, 0o755)
            os.chmod(path, 0o755)
            return path
        return None

    def report(self, auditor):
        """What decides an SSH session's limits, or None where sshd is not installed: the
        unit and its running process, UsePAM, the pam_limits line of /etc/pam.d/sshd (or why
        there is none) and the limits lines that apply to the user."""
        if not self.detect():
            return None, []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import (
            pam_limits_conf as conf)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
            systemd_live as sdlive)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
            systemd_paths as paths)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
            systemd_precedence)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
        unit = sshd_unit()
        report = dict(sshd_config=SSHD_CONFIG, pam_file=pam_file(PAM_SERVICE), unit=unit,
                      running=False, use_pam=None, pam_limits=None, pam_limits_commented=[],
                      limits_files=[], effective={}, sshd={}, unit_configured={},
                      manager_configured={})
        warnings = []
        if unit is not None:
            state = sdlive.unit_live(auditor.run, unit)
            report['running'] = sdlive.is_active(state) and state.get('process') is not None
            report['socket'] = socket_unit(unit)
            if not report['running'] and report['socket']:
                # socket-activated and not started yet: the unit's limits are what it gets
                report['running'] = auditor.run(['systemctl', 'is-active', '--quiet',
                                                 report['socket']])[0] == 0
                report['sshd'] = sdlive.limits_dict(state.get('limits') or {})
            if state.get('process'):
                report['sshd'] = sdlive.limits_dict(state['process'])
            report['unit_configured'] = systemd_precedence.resolve_unit(unit).configured()
            report['manager_configured'] = systemd_precedence.resolve_manager(
                paths.SYSTEM).configured()
        use_pam, failed = use_pam_of(auditor.run, sshd_binary(auditor.host))
        if failed:
            warnings.append('ssh: ' + failed)
        report.update(stack_report(use_pam))
        if report['pam_limits'] is not None:
            limits_conf = report['pam_limits_conf']
            paths_read = ([limits_conf] if limits_conf
                          else conf.pam_order(LIMITS_CONF, LIMITS_DIR))
            try:
                version = versions.pam_version(auditor.host)
                files = [f for f in (conf.read_file(p, version) for p in paths_read) if f]
                user = info.lookup_user(auditor.user)
            except (IOError, OSError, KeyError, ValueError) as exc:
                warnings.append('ssh: cannot read the limits files: %s' % exc)
                files, user = [], None
            report['limits_files'] = [f.path for f in files]
            if user is not None:
                report['effective'] = conf.resolve(
                    files, user, root_wildcards=not info.debian_family())['effective']
        return report, warnings

    def audit_probe(self, report, auditor):
        return report is not None and report['running']

    def verified_with(self, configured, units, host):
        """``ssh``'s ``probes`` entry: ``context`` pam where sshd's stack runs pam_limits on
        limits.d; sshd's unit (in ``units``) where it runs none (its restart applies them);
        else, the pam context written, ``gap`` true and a ``cause`` naming the line and the
        fixes (probed all the same). None: no sshd, or nothing written decides it."""
        if not self.detect():
            return None
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
        use_pam, _failed = use_pam_of(
            lambda args: host.run_command(args, environ_update=commands.c_env()),
            sshd_binary(host))
        report = stack_report(use_pam)
        unit = sshd_unit()
        entry = dict(probe=self.probe, image=None, gap=False, cause=None)
        why = why_no_pam(report)
        if not why and not report['pam_limits_conf']:
            return dict(entry, context='pam') if 'pam' in configured else None
        if why and unit is not None and unit in [sdpaths.unit_name(u) for u in units]:
            return dict(entry, context='unit:' + unit, cause=(
                "%s; SSH sessions inherit sshd's own limits: %s's Limit*= (this profile), "
                'applied by the restart of %s (restart policy; running sessions keep theirs)'
                % (why, unit, unit)))
        if 'pam' not in configured:
            return None
        fixes = fixes_for(report, unit if why else None)
        return dict(entry, context='pam', gap=True, cause='%s; fix: %s' % (
            why_not_read(report), '; or '.join(fixes)))

    def restart_context(self, unit):
        """SSH sessions inherit sshd's own limits: its restart applies a change of them."""
        return self.probe if unit in UNITS else None

    def owed(self, actions, state, host, policy):
        """sshd's restart (its ``Limit*=`` changed), under the restart policy: with
        ``KillMode=process`` (Debian's, RHEL's) it leaves the sessions, so only ``never``
        defers it; else the unit's cgroup tells (systemd_live.unit_busy)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
        found = []
        for unit in actions.get('units') or []:
            if unit in UNITS:
                rc, out, _err = host.run_command(
                    ['systemctl', 'show', '--property=KillMode', '--value', unit],
                    environ_update=commands.live_env())
                found.append((unit, '' if rc == 0 and out.strip() == 'process' else None))
        return found

    def configured(self, report):
        return predicted(report)


CONTEXT = Ssh()
