# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift watch: the node-side limits audit that a systemd timer runs (role limits_watch).

Plain Python (no Ansible import), runs on Python 3.8 targets with the collection's
module_utils copied to the node; no controller is involved. One run:

1. reads the profile file the role wrote (the profile the playbook applied, the user, units
   and images to probe);
2. runs the audit (module_utils/run/audit.py, through :func:`run_audit`, the one place that knows
   it) in a child process with a time limit, so that a crash or a hang of the audit is
   reported, not inherited;
3. writes node_exporter textfile metrics atomically (textfile_metrics.py): the limits per
   context and item, the gaps, compliance, the profile, or on failure the reason;
4. logs one journal line per gap, probe error and problem (the audit's ``problems``: a dockerd
   flag that clashes with daemon.json), on stderr with sd-daemon priority prefixes.

Exit status 0 when the audit ran and the metrics were written, 1 otherwise. The timer runs the
next audit either way (the unit sets StartLimitIntervalSec=0). docs/drift-watch.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import textfile_metrics as tm
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import watch_outlets

# Defaults of the entry point (the role passes its variables on the command line).
DEFAULT_PROFILE_FILE = '/etc/gpufleet-tuning/limits-watch.json'
DEFAULT_METRICS_DIR = '/var/lib/prometheus/node-exporter'
DEFAULT_TIMEOUT = 300
# sd-daemon(3) priority prefixes: journald stores the line with that priority.
ERR, WARNING, INFO = '<3>', '<4>', '<6>'
_SBIN = ('/sbin', '/usr/sbin', '/usr/local/sbin')


class ProfileError(Exception):
    """The profile file cannot be used: ``reason`` (profile_missing, profile_invalid), message."""

    def __init__(self, reason, msg):
        super(ProfileError, self).__init__(msg)
        self.reason = reason
        self.msg = msg


class LocalHost(object):
    """What the audit needs of an AnsibleModule (run_command, get_bin_path, warn), on the node
    itself."""

    def __init__(self):
        self.warnings = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        path = os.environ.get('PATH') or os.defpath
        dirs = path.split(os.pathsep) + [d for d in _SBIN if d not in path.split(os.pathsep)]
        found = shutil.which(name, path=os.pathsep.join(list(opt_dirs or []) + dirs))
        if required and not found:
            raise OSError('%s is not installed' % name)
        return found

    def run_command(self, args, environ_update=None, check_rc=False, data=None, **_kwargs):
        env = dict(os.environ)
        env.update(environ_update or {})
        # the node-side watch runs with no AnsibleModule (plain Python from a timer): this IS
        # the run_command it gives the audit, so ansible-test's "call run_command" cannot apply
        try:
            proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
                args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, close_fds=True)
        except OSError as exc:
            return 127, '', str(exc)
        out, err = proc.communicate(data.encode('utf-8') if data else None)
        return (proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace'))

    def warn(self, msg):
        self.warnings.append(msg)


def run_audit(host, params):
    """The node's audit: (result, warnings), or an exception with ``msg`` when it cannot run.
    The only call into the audit code; point it elsewhere when the audit moves."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
    return audit.audit(host, params)


def audit_failure_types():
    """The exception types the audit raises for an audit that cannot be made."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
    return (audit.AuditError,)


def probe_options(data, path):
    """The contexts' probe options of the profile file (``probe_options``, one mapping, as
    the limits_watch role writes it; the images an earlier role wrote at the top level, by the
    registry's names, under it), empty values left out: the audit reads them
    (effective.with_probe_options), so that no option is named here."""
    found = data.get('probe_options')
    found = {} if found is None else found
    if not isinstance(found, dict):
        raise ProfileError('profile_invalid', '%s: probe_options must be an object of probe '
                           'option name to value' % path)
    from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
    merged = dict((option.name, data[option.name]) for option in registry.PROBE_OPTIONS
                  if data.get(option.name) not in (None, ''))
    merged.update((name, value) for name, value in found.items() if value not in (None, ''))
    return merged


def read_profile(path):
    """The audit parameters from the profile file: profile, user, units, probe_options,
    timeout (and no reuse of an earlier probe: probe_max_age 0). ProfileError when the file is
    missing or not a valid profile."""
    try:
        with open(path, 'rb') as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if not os.path.exists(path):
            raise ProfileError('profile_missing', 'profile file %s does not exist (run the '
                               'limits_watch role)' % path)
        raise ProfileError('profile_missing', 'cannot read profile file %s: %s'
                           % (path, exc.strerror or exc))
    try:
        data = json.loads(raw.decode('utf-8'))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProfileError('profile_invalid', '%s: not JSON: %s' % (path, exc))
    if not isinstance(data, dict) or not isinstance(data.get('profile'), dict) \
            or not data['profile']:
        raise ProfileError('profile_invalid', '%s: no "profile" object with limits' % path)
    try:
        # pids is a cgroup limit, no rlimit: checked apart, as the audit does
        rlimits, pids = pids_model.split_profile(data['profile'])
        if pids is not None:
            pids_model.parse_profile_value(pids, '%s: profile.pids' % path, floor=False)
        model.parse_profile(rlimits, '%s: profile' % path, floor=False)
    except model.LimitError as exc:
        raise ProfileError('profile_invalid', str(exc))
    params = dict(profile=data['profile'], user=data.get('user') or 'root',
                  units=data.get('units') or [], probe_options=probe_options(data, path),
                  timeout=data.get('probe_timeout') or 60,
                  # the watch probes afresh every time: no proof of an earlier probe is kept on
                  # the node or passed in (limits_audit is read-only; issue 31 item 20)
                  probe_max_age=0, probe_proofs={}, sysctl=data.get('sysctl') or {})
    if not isinstance(params['sysctl'], dict):
        raise ProfileError('profile_invalid', '%s: sysctl must be an object of sysctl name to '
                           'minimum' % path)
    if not isinstance(params['user'], str) or not isinstance(params['units'], list) \
            or not all(isinstance(u, str) for u in params['units']) \
            or not isinstance(params['timeout'], int) or isinstance(params['timeout'], bool):
        raise ProfileError('profile_invalid', '%s: user must be a string, units a list of '
                           'strings, probe_timeout an integer' % path)
    return params


def child_main(stdin=None, stdout=None):
    """The child process: audit parameters as JSON on stdin, the outcome as JSON on stdout:
    {ok: true, result, warnings} or {ok: false, msg} for an audit that cannot be made. Anything
    else (an exception, a signal) is a crash, which the parent reports."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    params = json.loads(stdin.read())
    host = LocalHost()
    try:
        result, warnings = run_audit(host, params)
    except audit_failure_types() as exc:
        json.dump(dict(ok=False, msg=getattr(exc, 'msg', str(exc))), stdout)
        return 0
    # the findings are the one evaluation every outlet renders (reports/findings.py): without
    # them the outlets would evaluate the rows again, which carry no places
    keep = ('contexts', 'expected', 'gaps', 'errors', 'systemd_pending', 'pam_invalid',
            'problems', 'kernel', 'rows', 'findings', 'pids', 'core')
    json.dump(dict(ok=True, result=dict((k, result.get(k)) for k in keep),
                   warnings=list(warnings) + host.warnings), stdout)
    return 0


class Outcome(object):
    """One audit run: ``reason`` None when it ran, with its result, else why not and msg."""

    def __init__(self, reason=None, msg='', result=None, warnings=None):
        self.reason = reason
        self.msg = msg
        self.result = result
        self.warnings = warnings or []


def _stop(proc):
    """Stop the child and everything it started (its own session)."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def audit_in_child(command, params, timeout):
    """Run the audit in ``command`` (a child reading params on stdin) within ``timeout``
    seconds: an Outcome."""
    # a session of its own and a time limit, to stop a hung audit and all it started: what
    # run_command (no timeout, no process group) cannot do; no AnsibleModule here either
    try:
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True)
    except OSError as exc:
        return Outcome('crashed', 'cannot start the audit: %s' % exc)
    try:
        out, err = proc.communicate(json.dumps(params).encode('utf-8'), timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return Outcome('timeout', 'the audit did not finish within %s s; stopped it' % timeout)
    finally:
        if proc.returncode is None:
            _stop(proc)
    tail = err.decode('utf-8', 'replace').strip().splitlines()[-3:]
    if proc.returncode != 0:
        how = ('killed by signal %d' % -proc.returncode if proc.returncode < 0
               else 'exit status %d' % proc.returncode)
        said = ' | '.join(tail) or 'no output'
        return Outcome('crashed', 'the audit crashed (%s): %s' % (how, said))
    try:
        data = json.loads(out.decode('utf-8'))
        if not data['ok']:
            return Outcome('audit_failed', data['msg'])
        return Outcome(result=data['result'], warnings=data.get('warnings') or [])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return Outcome('crashed', 'the audit printed no result: %r'
                       % out.decode('utf-8', 'replace')[:200])


def gap_lines(result):
    """One journal line per finding the journal reports as a warning (findings.OUTLETS
    ['journal']: a gap, a setting not applied yet): context, item, status, short sides, what a
    new process gets against the profile, and the place that decides it."""
    lines = []
    for found in findings.of(result):
        if findings.action('journal', found) != 'warning':
            continue
        where = findings.where(found.get('place'))
        lines.append('below profile: context=%s item=%s sides=%s actual=%s expected=%s%s%s' % (
            found['context'], found['item'], '+'.join(found.get('short') or []),
            found.get('actual'), found.get('expected'),
            '' if found['status'] == findings.GAP else ' status=%s' % found['status'],
            ' at=%s' % where if where else ''))
    return lines


def problem_lines(result):
    """One journal line per problem the audit found in a context (a dockerd flag that clashes
    with daemon.json: dockerd would refuse, or has refused, to start), with its file:line."""
    return ['problem: context=%s: %s' % (found.get('context'), found.get('msg'))
            for found in result.get('problems') or []]


def log(priority, msg, stream=None):
    stream = stream or sys.stderr
    stream.write('%sgpufleet-limits-watch: %s\n' % (priority, msg))
    stream.flush()


def watch(args, child_command, clock=time.time):
    """One run of the watch (the parent): returns the exit status."""
    started = clock()
    try:
        params = read_profile(args.profile)
    except ProfileError as exc:
        outcome = Outcome(exc.reason, exc.msg)
    else:
        outcome = audit_in_child(child_command, params, args.timeout)
    duration = clock() - started

    if outcome.reason is None:
        text = tm.render_audit(outcome.result, list(params['profile']), clock(),
                               duration=duration, period=args.period)
    else:
        text = tm.render_failure(outcome.reason, tm.previous_last_success(args.metrics_dir),
                                 duration=duration, period=args.period)
    # components, NPD answer, NFD labels: from this same outcome (run/watch_outlets.py)
    extra, outlet_logs = watch_outlets.after_audit(args, outcome, clock(), LocalHost())
    text += extra
    status = 0
    if outcome.reason is not None:
        log(ERR, 'audit failed (%s): %s' % (outcome.reason, outcome.msg))
        status = 1
    else:
        for message in outcome.warnings:
            log(WARNING, message)
        for found in outcome.result.get('errors') or []:
            if found.get('kind') == 'busy':
                log(INFO, 'probe pending: context=%s: %s' % (found.get('context'), found.get('msg')))
            else:
                log(WARNING, 'probe failed: context=%s: %s' % (found.get('context'),
                                                               found.get('msg')))
        for line in gap_lines(outcome.result):
            log(WARNING, line)
        for line in problem_lines(outcome.result):
            log(ERR, line)
    for priority, line in outlet_logs:
        log({'err': ERR, 'warning': WARNING}.get(priority, INFO), line)
    try:
        path = tm.write_atomic(args.metrics_dir, text)
    except tm.MetricsWriteError as exc:
        log(ERR, 'metrics not written: %s' % exc)
        return 1
    if outcome.reason is None:
        errors = outcome.result.get('errors') or []
        busy = len([e for e in errors if e.get('kind') == 'busy'])
        log(INFO, 'audit done in %.1f s: %d gaps, %d probe errors, %d probes pending; wrote %s'
            % (duration, len(findings.failing('journal', findings.of(outcome.result))),
               len(errors) - busy, busy, path))
    return status


def parser(modes=None):
    parse = argparse.ArgumentParser(
        prog='gpufleet-limits-watch',
        description='Audit this node\'s limits against the applied profile and write '
                    'node_exporter textfile metrics (gpufleet.tuning drift watch).')
    parse.add_argument('--profile', default=DEFAULT_PROFILE_FILE,
                       help='the profile file the limits_watch role wrote')
    parse.add_argument('--metrics-dir', default=DEFAULT_METRICS_DIR,
                       help="node_exporter's --collector.textfile.directory")
    parse.add_argument('--timeout', type=int, default=None,
                       help='seconds the whole audit may take (default %d; Slurm modes: '
                            'slurm_health.py)' % DEFAULT_TIMEOUT)
    parse.add_argument('--period', type=int, default=None,
                       help='longest expected seconds between two audits (the timer period '
                            'plus its random delay), exported for the staleness alert')
    parse.add_argument('--state-dir', default=None,
                       help='where the component record and the node-problem-detector answer '
                            'are kept (none: neither is written)')
    parse.add_argument('--nfd-dir', default=None,
                       help="Node Feature Discovery's features.d: write the feature file there")
    parse.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    return modes.add_arguments(parse) if modes else parse


def main(argv, script, modes=None):
    """The entry point: ``script`` is the path of the file that was run (the child runs it
    again with --child). ``modes``: a module with ``add_arguments(parser)`` (a ``--mode``
    option) and ``run(args, child_command)`` for the modes other than ``metrics`` (the entry
    point passes run/slurm_health.py, which builds on this module)."""
    args = parser(modes).parse_args(argv)
    if args.child:
        return child_main()
    command = [sys.executable, '-I', '-S', os.path.abspath(script), '--child']
    if getattr(args, 'mode', 'metrics') != 'metrics':
        return modes.run(args, command)
    if args.timeout is None:
        args.timeout = DEFAULT_TIMEOUT
    return watch(args, command)
