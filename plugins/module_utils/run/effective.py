# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Effective limits: the probes that show what a new process gets in each context where a
workload can start, and the comparison with a profile. Plain Python (Ansible only for the
options' check, validated()); the probes run commands through the AnsibleModule they are given.

A probe is a command whose output is a /proc/PID/limits text; the module runs them, this file
builds them, parses their output and compares. Values are in kernel units (limits_model).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import shlex
import subprocess
import time
from concurrent import futures

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import ceilings
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes
# pylint: disable-next=unused-import
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports.probe_results import (  # noqa: F401
    ProbeError, ProbeFailure, from_public, gap_table, human_limit, parse_probe, public_limits,
    regressions, side_gap)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)

# Contexts in report order (the registry's). ``unit:NAME`` contexts (a running unit's main
# process) come after.
CONTEXTS = registry.PROBED
CEILINGS = ceilings.names('probed')


def unit_context(unit):
    return registry.UNIT_PREFIX + sdpaths.unit_name(unit)


def gaps(expected, observed):
    """Where a context gives less than the profile.

    ``expected``: {item: Limit} (parse_profile; a side may be None); ``observed``:
    {context: {item: Limit}} for the contexts that were probed. Returns a list of
    {context, item, expected, actual, sides} (limits as {soft, hard} dicts, ``sides`` the
    names of the sides below target) in context then item order.
    """
    result = []
    for context in ordered(observed):
        limits = observed[context]
        for item in sorted(expected):
            want = expected[item]
            got = limits.get(item)
            sides = [side for side in ('soft', 'hard')
                     if side_gap(getattr(want, side), getattr(got, side) if got else None)]
            if sides:
                result.append(dict(context=context, item=item, expected=want.as_dict(),
                                   actual=got.as_dict() if got else None, sides=sides))
    return result


def ordered(contexts):
    """Context names in report order: the known ones first, then units by name."""
    known = [c for c in registry.PROBED if c in contexts]
    return known + sorted(c for c in contexts if c not in registry.PROBED)


class Prober(object):
    def __init__(self, module, timeout=60, grace=30, max_age=0, proofs=None, prove=False):
        self.module = module
        self.timeout = timeout
        # limits_audit's probe_max_age: a context whose run_probe can reuse a proof
        # (module_utils/host/proofs.py) may, for this many seconds, reuse one of ``proofs``
        # ({context: proof}, limits_audit's probe_proofs, kept by the controller); with
        # ``prove``, ``made`` gets {context: the proof of this call's result} (new, or the
        # reused one) for the controller to keep. Nothing is written on the node.
        # ``reused``: {context: when the reused proof was made (epoch seconds)}
        self.max_age = max_age
        self.proofs = proofs if isinstance(proofs, dict) else {}
        self.prove = prove
        self.made = {}
        self.reused = {}
        # the profile's items (effective.probe sets them): what a pending probe reports
        self.items = None
        # seconds past ``timeout`` (which `timeout` enforces on the command itself) that a
        # process the command left may keep its output open
        self.grace = grace
        self.timeout_bin = module.get_bin_path('timeout')
        # limits_audit's: the container contexts also probe a non-root process
        # (contexts/_nonroot.py); what such extra probes found goes to ``extra[context]``
        self.nonroot = False
        self.extra = {}

    def execute(self, args):
        """(rc, stdout, stderr) of ``args`` in the C locale, stdin from /dev/null.

        Not AnsibleModule.run_command: its read loop ends when a 1 s select() finds nothing and
        the process has exited by the poll() after it, dropping output written in between (a
        login probe then "printed no limits" with exit 0); with probes in threads under load
        that window is wide enough to be hit. communicate() reads every pipe to its end (a
        process left holding them past the timeout is killed and reported)."""
        # the module's environment as it is: no guess at which PYTHONPATH entries are
        # AnsiballZ's own (its layout is ansible's internal business)
        env = dict(os.environ)
        env.update(commands.c_env())
        try:
            # not run_command, for the reasons above (ansible-test 2.21's pylint asks for it)
            proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
                args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, close_fds=True)
        except OSError as exc:
            return 127, '', '%s: %s' % (args[0], exc.strerror or exc)
        try:
            out, err = proc.communicate(timeout=self.timeout + self.grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                out, err = proc.communicate(timeout=1)
            except subprocess.TimeoutExpired:
                out, err = b'', b''
            proc.stdout.close()
            proc.stderr.close()
            return (124, out.decode('utf-8', 'replace'),
                    'its output was still open %d s after the start (a process it left holds '
                    'it); killed' % (self.timeout + self.grace))
        return proc.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')

    def run(self, command):
        """stdout of ``command``; ProbeError with its output when it fails."""
        full = list(command)
        if self.timeout_bin:
            full = [self.timeout_bin, str(self.timeout)] + full
        binary = self.module.get_bin_path(command[0])
        if not binary:
            raise ProbeError('%s is not installed' % command[0])
        rc, out, err = self.execute(full)
        if rc != 0:
            raise ProbeError('%s failed (rc %d): %s' % (' '.join(shlex.quote(c) for c in command),
                                                        rc, (err or out).strip()[:500]))
        return out

    def proc(self, command, where):
        out = self.run(command)
        try:
            return parse_probe(out, where)
        except model.LimitError as exc:
            raise ProbeError(str(exc))

    def pid_limits(self, pid, where):
        try:
            text = host_limits.proc_limits_text(pid)
        except (IOError, OSError) as exc:
            raise ProbeError('%s: cannot read /proc/%s/limits: %s' % (where, pid, str(exc)))
        try:
            return parse_probe(text, where)
        except model.LimitError as exc:
            raise ProbeError(str(exc))

    def require_user_manager(self, user, uid):
        """ProbeError (NOT_RUNNING) unless ``user``'s user manager runs."""
        manager = 'user@%d.service' % uid
        try:
            self.run(['systemctl', 'is-active', '--quiet', manager])
        except ProbeError:
            raise ProbeError('%s is not running, so no user service of %s can start; keep it '
                             'running with `loginctl enable-linger %s`' % (manager, user, user),
                             kind=errors.NOT_RUNNING)

    def user_manager(self, user, uid, probe=None):
        """{item: Limit} of a new user service of ``user``'s manager (``probe``: the context
        it is reported as, the systemd_user record's probed name)."""
        self.require_user_manager(user, uid)
        unit = '%s-%d.service' % (probes.PROBE_UNIT, os.getpid())
        start, show, stop = probes.user_probe_commands(user, uid, unit)
        try:
            return self.pid_limits(self.user_service_pid(start, show, unit, user),
                                   probe or unit)
        except ProbeError as exc:
            # A manager without linger stops with its user's last session: one that stopped
            # between the check and the start (a concurrent audit's login probe of the same
            # user ended) is not running, not a probe error ("Transport endpoint is not
            # connected" in the watch scenario while a re-tune probed root's manager).
            if exc.kind != errors.NOT_RUNNING:
                self.require_user_manager(user, uid)
            raise
        finally:
            self.execute(stop)

    def user_service_pid(self, start, show, unit, user):
        """The main PID of a probe service of ``user``'s manager (user_probe_commands), once
        it runs its program: before its exec it is the manager's fork, with the manager's own
        limits and cgroup (a loaded CI node read the manager's limits there: seed 40443002)."""
        self.run(start)
        pid = self.run(show).strip()
        if not pid.isdigit() or pid == '0':
            raise ProbeError('the probe service %s of %s has no main process' % (unit, user))
        deadline = time.time() + self.timeout
        while not probes.has_exec(pid, probes.USER_PROBE_PROGRAM):
            if time.time() > deadline:
                raise ProbeError('the probe service %s of %s did not start %s within %d s'
                                 % (unit, user, probes.USER_PROBE_PROGRAM, self.timeout))
            time.sleep(0.01)
        return pid

    def unit(self, unit):
        pid = self.run(sdlive.main_pid_command(unit)).strip()
        if not pid.isdigit() or pid == '0':
            raise ProbeError('%s is not running' % unit, kind=errors.NOT_RUNNING)
        return self.pid_limits(pid, unit_context(unit))


def outcome_of(call):
    """``call()``'s value, or the ProbeError it raised (any other error propagates)."""
    try:
        return call()
    except ProbeError as exc:
        return exc


def run_probes(calls, parallel=True):
    """The outcome of each probe of ``calls`` (outcome_of), in their order.

    In parallel, each probe runs in its own thread: the probes are commands (a login session,
    a transient service, a user service, a container) that wait on other processes, so their
    times overlap and a call costs about its slowest probe instead of their sum. The results
    are the same as one after another: each probe starts its own new process and reads its
    limits, and the outcomes are reported in the same order."""
    if not parallel or len(calls) < 2:
        return [outcome_of(call) for call in calls]
    with futures.ThreadPoolExecutor(max_workers=len(calls)) as pool:
        running = [pool.submit(outcome_of, call) for call in calls]
        return [done.result() for done in running]


#: effective_limits' options that are declared elsewhere (the contexts' choices and their
#: probes' options from the registry, those limits_audit shares): composed, and documented by
#: scripts/gen_option_docs.py
#: the probes' options limits_audit takes too (documented once, a doc fragment)
PROBES = opts.Group('PROBES', opts.PROBE_COMMON + (registry.PROBE_MAP,) + registry.PROBE_OPTIONS)
OPTIONS = (registry.PROBED_OPTION, opts.RUN_OPTIONS, PROBES)


def argument_spec():
    """effective_limits' options (also limits_restart's ``verify``), with the registry's
    probed contexts and probe options as they are now (a record registered after import)."""
    spec = opts.spec(OPTIONS)
    spec['contexts']['choices'] = list(registry.PROBED)
    for option in registry.PROBE_OPTIONS:
        spec.setdefault(option.name, option.spec())
    spec.update(
        expect=dict(type='dict'),
        baseline=dict(type='dict'),
        parallel=dict(type='bool', default=True),
    )
    return spec


def validated(params, field):
    """``params`` checked against argument_spec() with its defaults filled in, and as probe()
    checks them before it starts anything, or a ProbeFailure naming ``field``.OPTION
    (limits_restart's ``verify``, checked before any restart)."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    outcome = ArgumentSpecValidator(argument_spec()).validate(dict(params or {}))
    if outcome.error_messages:
        raise ProbeFailure('%s: %s' % (field, '; '.join(outcome.error_messages)), {})
    try:
        params = with_probe_options(outcome.validated_parameters)
        checked(params)
    except ProbeFailure as exc:
        raise ProbeFailure('%s.%s' % (field, exc.msg), {})
    return params


#: the Python types of the option types a probe option may have (checked without Ansible: the
#: drift watch runs the audit with the standard library only)
PROBE_OPTION_TYPES = {'str': str, 'path': str, 'list': list, 'dict': dict, 'int': int,
                      'bool': bool}


def probe_option_value(option, value):
    """``value`` of ``option`` from ``probe_options``, checked as its own option is (type,
    elements, choices), or a ProbeFailure naming ``probe_options.NAME``."""
    field = 'probe_options.%s' % option.name
    wanted = PROBE_OPTION_TYPES.get(option.type)
    if wanted is None or not isinstance(value, wanted) or (
            wanted is int and isinstance(value, bool)):
        raise ProbeFailure('%s: must be a %s, not %r' % (field, option.type, value), {})
    if option.type == 'list' and option.elements:
        element = PROBE_OPTION_TYPES.get(option.elements)
        for index, item in enumerate(value):
            if element is None or not isinstance(item, element):
                raise ProbeFailure('%s[%d]: must be a %s, not %r'
                                   % (field, index, option.elements, item), {})
    if option.choices is not None and value not in option.choices:
        raise ProbeFailure('%s: %r is none of %s' % (field, value, ', '.join(
            str(choice) for choice in option.choices)), {})
    return value


def unset(option, value):
    """Is ``value`` of a probe option ``option`` unset (null, empty or its default)?"""
    return value is None or value == '' or value == option.default


def with_probe_options(params):
    """``params`` (a new dict) with every probe option of the registry's records
    (contexts.PROBE_OPTIONS, read now) filled in: its own option where set (:func:`unset`),
    else its entry in ``probe_options`` (converted and checked as its own option is), else
    null or its default. The one place the mapping is read: effective_limits, limits_audit,
    limits_restart's and limits_profile's ``verify`` and the drift watch pass the contexts'
    options as that mapping, never by name. ProbeFailure names ``probe_options.NAME`` for a
    name no record owns or a value of the wrong type."""
    mapping = params.get('probe_options') or {}
    if not isinstance(mapping, dict):
        raise ProbeFailure('probe_options: must be a mapping of probe option name to value, '
                           'not %s' % type(mapping).__name__, {})
    known = registry.PROBE_OPTIONS
    names = [option.name for option in known]
    for name in sorted(mapping, key=str):
        if name not in names:
            raise ProbeFailure('probe_options.%s: no context has this probe option (%s)'
                               % (name, ', '.join(names)), {})
    given = dict((option.name, probe_option_value(option, mapping[option.name]))
                 for option in known if mapping.get(option.name) is not None)
    merged = dict(params)
    for option in known:
        own = params.get(option.name)
        if unset(option, own) and option.name in given:
            merged[option.name] = given[option.name]
        elif own is None:
            merged[option.name] = option.spec().get('default')
    return merged


def checked(params):
    """(expected {item: Limit} or None, uid): the probe request's own checks (an image for
    each context that needs one, the expected profile, the user), before anything runs; a
    ProbeFailure names the option."""
    for record in registry.REGISTRY:
        image = record.image_option
        if image and record.probe in params['contexts'] and not params[image]:
            raise ProbeFailure('contexts has %s, so %s is required' % (record.probe, image), {})
        if record.probe in params['contexts']:
            try:
                record.check_probe_params(params)
            except model.LimitError as exc:
                raise ProbeFailure(exc.msg, {})
    expected = None
    if params['expect'] is not None:
        try:
            # pids (the cgroup pids.max, no rlimit) is checked, not probed here: the audit
            # probes it (run/pids_audit.py)
            rest, pids_value = pids_model.split_profile(params['expect'])
            if pids_value is not None:
                pids_model.parse_profile_value(pids_value, 'expect.pids', floor=False)
            expected = model.parse_profile(rest, 'expect', floor=False)
        except model.LimitError as exc:
            raise ProbeFailure(str(exc), {})
    try:
        uid = pwd.getpwnam(params['user']).pw_uid
    except KeyError:
        raise ProbeFailure('user: %s does not exist on this host' % params['user'], {})
    return expected, uid


def probe(host, params):
    """effective_limits' result: probes each context in a new process. ``host``: the
    AnsibleModule (run_command, get_bin_path). params: contexts, user, the contexts' probe
    options (by name or in probe_options: with_probe_options; a name left out is unset),
    run_options, units, expect, baseline, timeout and parallel (run the probes
    at the same time; default true)."""
    result = dict(changed=False, contexts={}, errors=[], gaps=[], regressions=[], table='',
                  ceilings=dict((name, host_limits.sysctl(name)) for name in CEILINGS))
    try:
        params = with_probe_options(params)
        expected, uid = checked(params)
    except ProbeFailure as exc:
        raise ProbeFailure(exc.msg, result)
    if expected is not None:
        result['expected'] = public_limits(expected)
    user = params['user']

    prober = Prober(host, params.get('timeout') or 60, max_age=params.get('probe_max_age') or 0,
                    proofs=params.get('probe_proofs'), prove=params.get('prove', False))
    prober.items = sorted(expected) if expected else None
    prober.nonroot = params.get('nonroot', False)
    observed = {}
    plan = []
    for context in registry.PROBED:
        if context not in params['contexts']:
            continue
        record = registry.probed(context)
        command = record.probe_command(user, uid, params)
        plan.append((context, command,
                     lambda r=record, c=command: r.run_probe(prober, user, uid, c)))
    for unit in params['units']:
        unit = sdpaths.unit_name(unit)
        command = sdlive.main_pid_command(unit)
        plan.append((unit_context(unit), command, lambda u=unit: prober.unit(u)))

    outcomes = run_probes([probe for _context, _command, probe in plan],
                          params.get('parallel', True))
    for (context, command, _probe), outcome in zip(plan, outcomes):
        entry = dict(command=' '.join(shlex.quote(c) for c in command), limits={})
        entry.update(prober.extra.get(context) or {})
        if isinstance(outcome, ProbeError):
            error = dict(context=context, msg=str(outcome), kind=outcome.kind)
            error.update(getattr(outcome, 'detail', None) or {})
            result['errors'].append(error)
        else:
            observed[context] = outcome
            entry['limits'] = public_limits(outcome)
            if context in prober.reused:
                at = prober.reused[context]
                entry['reused'] = dict(
                    proved_at=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(at)),
                    age_s=int(max(0, time.time() - at)))
        result['contexts'][context] = entry

    if prober.prove:
        result['proofs'] = dict(prober.made)
    if expected is not None:
        result['gaps'] = gaps(expected, observed)
        result['table'] = gap_table(result['gaps']) if result['gaps'] else ''
        for context, entry in sorted((params['baseline'] or {}).items()):
            if context in observed and isinstance(entry, dict):
                before = from_public(entry.get('limits'))
                for found in regressions(before, observed[context], expected):
                    found['context'] = context
                    result['regressions'].append(found)
    return result
