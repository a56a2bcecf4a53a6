# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm health check and prolog: the drift watch's audit, judged for a Slurm node.

Three modes of the watch's entry point (drift_watch.py dispatches to :func:`main`):

``slurm-health``
    slurmd's ``HealthCheckProgram`` (or a site's NHC calling it): runs the node's audit (the
    watch's profile file, :func:`drift_watch.audit_in_child` with a time limit) for the contexts
    jobs depend on, prints one line and exits with a Nagios code (0 ok, 1 warning, 2 critical,
    3 unknown). A gap drains the node with a one-line reason that starts with
    :data:`MARKER`; a node is resumed only when its current reason starts with that marker
    (a drain of ours) and the audit found no gap. A node drained for another reason is left
    alone. An audit that cannot run in time (3) changes nothing.

``slurm-prolog``
    slurmd's ``Prolog`` (root, ``SLURM_JOB_USER``, ``SLURM_JOB_ID``): the same audit for the
    job's user; a gap drains the node with the same reason and exits 1, so slurmd fails the
    launch (slurm.conf(5) Prolog: the node is drained and the job requeued, held unless
    ``nohold_on_prolog_fail``; slurmctld keeps a drain reason that is already set, so ours
    stays and the health check can resume the node). An audit that cannot run exits 0: the
    job is not failed for the check's own trouble.

``slurm-epilog``
    slurmd's ``Epilog`` (root, after the job): for a job that did not end with exit status 0,
    reads the tail of the job's own output file as the job's user, answers why it died
    (model/classify.answer in the slurm_job context, with the audit's findings for the job's
    user and the job's exit code and state from ``scontrol show job``) and appends the answer
    to that file, as the prolog does. It always exits 0 (a failed Epilog drains the node).

What drains is the audit's findings (reports/findings.py) whose findings.OUTLETS['slurm_health']
cell is ``drain`` (a gap, a setting not applied yet, a context where no session opens), for the
contexts jobs depend on and the node-wide ones (kernel ceilings, a broken PAM stack); their
values and file:line come with them; nothing is judged or read out of text here. docs/slurm.md "Health check and prolog".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import subprocess
import sys

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import failure_text
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch
from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_node

#: the start of every drain reason this check sets: the only drains it lifts
MARKER = 'gpufleet:'
#: Nagios plugin exit codes (NHC and NPD read the same)
OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
NAMES = {OK: 'OK', WARNING: 'WARNING', CRITICAL: 'CRITICAL', UNKNOWN: 'UNKNOWN'}
#: the contexts a job depends on
DEFAULT_CONTEXTS = (registry.SLURM.probe,)
#: contexts judged from the audit's prediction, never probed here: a probe job (srun) cannot
#: start on a drained or busy node, so a node drained for it could never be proved fixed
PREDICTED = (registry.SLURM.probe,)
#: slurmd kills HealthCheckProgram after 60 s (slurm.conf(5); HealthCheckTimeout from 26.05)
DEFAULT_HEALTH_TIMEOUT = 40
#: a Prolog should finish within MessageTimeout (default 10 s, slurm.conf(5))
DEFAULT_PROLOG_TIMEOUT = 8
#: how much of a failed job's output the epilog reads (its end: the error)
TAIL_BYTES = 65536
#: longest reason set: one line in `sinfo -R`
MAX_REASON = 160


def drained_by(found, contexts):
    """The findings that drain the node (findings.OUTLETS['slurm_health']), in ``contexts``
    order, then the node-wide ones: a kernel ceiling, and a context where no session opens
    (whatever context: the node is broken for every job)."""
    draining = findings.failing('slurm_health', found)
    ordered = [f for context in contexts for f in draining if f['context'] == context]
    return ordered + [f for f in draining if f not in ordered and (
        f['context'] == findings.KERNEL or f['status'] == findings.NODE_BROKEN)]


def phrase(entry):
    """``<context> <item> <have> < <want> (<file:line>)`` of one finding: its first short
    side (soft before hard), the values as the audit printed them, the place the finding
    names; ``<context> <item> <status> (<file>)`` for a finding with no value."""
    side = (entry.get('short') or ['soft'])[0]
    where = findings.where(entry.get('place'))
    if entry.get('actual') is None or entry['status'] == findings.NODE_BROKEN:
        text = '%s %s %s' % (entry['context'], entry['item'], entry['status'].replace('_', ' '))
    else:
        index = 1 if side == 'hard' else 0
        have = str(entry.get('actual') or '?').split(':')
        want = str(entry.get('expected') or '?').split(':')
        text = '%s %s %s%s < %s' % (
            entry['context'], entry['item'], 'hard ' if side == 'hard' else '',
            have[min(index, len(have) - 1)], want[min(index, len(want) - 1)])
    return '%s (%s)' % (text, where) if where else text


def reason(gaps, limit=MAX_REASON):
    """The drain reason for the gap rows: the first gap, ``+N more`` for the others, cut to
    ``limit`` characters (the file path shortened from its left first)."""
    first = phrase(gaps[0])
    more = ' +%d more' % (len(gaps) - 1) if len(gaps) > 1 else ''
    text = '%s %s%s' % (MARKER, first, more)
    if len(text) <= limit:
        return text
    head, sep, where = first.rpartition(' (')
    if sep:
        room = limit - len('%s %s (...%s' % (MARKER, head, more))
        if room > 8:
            return '%s %s (...%s%s' % (MARKER, head, where[-room:], more)
    return text[:limit - 3] + '...'


def ours(current):
    """Was the node's current drain reason set by this check?"""
    return (current or '').startswith(MARKER)


def read_node(host, node):
    """(drained, reason) of ``node`` from `scontrol show node`: drained when its State has
    DRAIN (DRAINING, DRAINED); the reason without Slurm's ``[user@time]`` suffix."""
    rc, out, err = host.run_command(['scontrol', 'show', 'node', node])
    if rc != 0:
        raise NodeStateError('scontrol show node %s failed (exit %d): %s'
                             % (node, rc, (err or out).strip()[:200]))
    state, why = '', ''
    for line in out.splitlines():
        line = line.strip()
        if line.startswith('Reason='):
            why = re.sub(r'\s*\[[^\]]*@[^\]]*\]$', '', line[len('Reason='):]).strip()
        for word in line.split():
            if word.startswith('State='):
                state = word[len('State='):]
    if not state:
        raise NodeStateError('scontrol show node %s printed no State' % node)
    return 'DRAIN' in state.upper(), why


class NodeStateError(Exception):
    pass


def node_name(environ):
    """slurmd's name for this node: SLURMD_NODENAME (set for HealthCheckProgram and Prolog),
    else the NodeName of slurm.conf that names this host."""
    if environ.get('SLURMD_NODENAME'):
        return environ['SLURMD_NODENAME']
    return slurm_node.this_node(slurm_node.find_conf())


def update(host, node, state, why=None):
    """`scontrol update NodeName=N State=STATE [Reason=...]`: '' when done, else the error."""
    args = ['scontrol', 'update', 'NodeName=%s' % node, 'State=%s' % state]
    if why is not None:
        args.append('Reason=%s' % why)
    rc, out, err = host.run_command(args)
    return '' if rc == 0 else 'scontrol update failed (exit %d): %s' % (rc, (err or out).strip()[:200])


def judge(outcome, contexts):
    """(code, sentence, findings that drain) of an audit outcome (drift_watch.Outcome) for
    ``contexts``: 3 when the audit did not run, 2 with a finding that drains
    (:func:`drained_by`), 1 when a context's probe failed or gave nothing (not proved either
    way), 0 otherwise."""
    if outcome.reason is not None:
        return UNKNOWN, 'gpufleet audit did not run (%s): %s' % (outcome.reason, outcome.msg), []
    found = findings.of(outcome.result)
    draining = drained_by(found, contexts)
    if draining:
        return CRITICAL, reason(draining), draining
    failed = [f for f in found if f['context'] in contexts
              and findings.action('slurm_health', f) == 'warn']
    missing = [c for c in contexts if not any(f['context'] == c for f in found)]
    if failed or missing:
        said = '; '.join(sorted(set('%s: %s' % (f['context'], f.get('cause') or f['status'])
                                    for f in failed)))
        return WARNING, 'gpufleet: not verified: %s' % (
            said or 'no audit row for %s' % ', '.join(missing))[:MAX_REASON], []
    return OK, 'gpufleet: %s meet the profile' % ', '.join(contexts), []


def act(host, node, code, sentence, prolog=False):
    """Drain or resume ``node`` for the verdict; returns what was done (a short text)."""
    if code in (UNKNOWN, WARNING):
        return 'node state unchanged'
    try:
        drained, current = read_node(host, node)
    except NodeStateError as exc:
        return 'node state unknown: %s' % exc
    if code == CRITICAL:
        if drained and not ours(current):
            return 'already drained by another reason (%s): left alone' % current
        if drained and current == sentence:
            return 'already drained by gpufleet'
        return update(host, node, 'DRAIN', sentence) or 'drained %s' % node
    if drained and ours(current) and not prolog:
        return update(host, node, 'RESUME') or 'resumed %s (was: %s)' % (node, current)
    if drained:
        return 'drained by another reason (%s): left alone' % current
    return ''


def job_file(environ, record=None):
    """The batch job's own stderr (else stdout) file: the one its record names (``record``:
    `scontrol -o show job`'s StdErr, StdOut, patterns filled in by Slurm; the only place that
    names slurm-%j.out, the file of a job submitted without -o/-e, whose Epilog environment
    names none), else as the Prolog's environment names it (SLURM_JOB_STDERR,
    SLURM_JOB_STDOUT: prolog_epilog.html), with %j, %J and %u filled in; None for a job that
    named none, a relative path or other % patterns."""
    shown = (record or {}).get('StdErr') or (record or {}).get('StdOut') or ''
    if shown.startswith('/'):
        return shown
    path = environ.get('SLURM_JOB_STDERR') or environ.get('SLURM_JOB_STDOUT') or ''
    job = environ.get('SLURM_JOB_ID') or ''
    for pattern, value in (('%j', job), ('%J', job), ('%u', environ.get('SLURM_JOB_USER') or '')):
        path = path.replace(pattern, value)
    if not path.startswith('/') or '%' in path:
        return None
    return path


def as_the_job_user(environ):
    """A preexec_fn that drops to the job's user (SLURM_JOB_UID, SLURM_JOB_GID), or None when
    the environment does not name them."""
    uid, gid = environ.get('SLURM_JOB_UID') or '', environ.get('SLURM_JOB_GID') or ''
    if not uid.isdigit() or not gid.isdigit():
        return None

    def drop():
        os.setgroups([])
        os.setgid(int(gid))
        os.setuid(int(uid))
    return drop


def read_job_tail(environ, record=None, size=TAIL_BYTES):
    """The last ``size`` bytes of the job's file (:func:`job_file`), read as the job's user
    (the path is the user's: never read as root); '' when there is none."""
    path, drop = job_file(environ, record), as_the_job_user(environ)
    if path is None or drop is None:
        return ''
    try:
        # slurmd runs the epilog with no AnsibleModule (plain Python): see tell_job
        done = subprocess.run(  # pylint: disable=ansible-bad-function
            ['tail', '-c', str(size), path], preexec_fn=drop, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ''
    return done.stdout.decode('utf-8', 'replace') if done.returncode == 0 else ''


def job_record(host, job):
    """The job's record, ``scontrol -o show job`` (slurm_node.show_job); {} when slurmctld
    does not answer."""
    rc, out, _err = host.run_command(['scontrol', '-o', 'show', 'job', str(job)])
    return slurm_node.show_job(out) if rc == 0 else {}


def epilog(args, child_command, environ, host):
    """The epilog mode (see the module docstring): one line on stdout, always exit 0."""
    job = environ.get('SLURM_JOB_ID') or ''
    record = job_record(host, job) if job else {}
    status, state = slurm_node.job_end(record)
    if status == 0:
        sys.stdout.write('OK: job %s ended with exit status 0\n' % job)
        return 0
    text = read_job_tail(environ, record)
    found = []
    try:
        params = drift_watch.read_profile(args.profile)
    except drift_watch.ProfileError:
        params = None
    if params is not None:
        params['user'] = environ.get('SLURM_JOB_USER') or params['user']
        params['probe_only'] = []
        params['units'] = []
        outcome = drift_watch.audit_in_child(child_command, params,
                                             args.timeout or DEFAULT_PROLOG_TIMEOUT)
        if outcome.reason is None:
            found = findings.of(outcome.result)
    evidence = dict((k, v) for k, v in (('exit_status', status), ('job_state', state))
                    if v not in (None, ''))
    answer = classify.answer(text, registry.SLURM.job_context(), found, evidence)
    line = '%sjob %s (%s, exit status %s): %s' % (
        failure_text.EPILOG_TOLD, job or '?', state or '?', status if status is not None else '?', answer['summary'])
    if answer['fix']:
        line += '; fix: %s' % answer['fix'][0]
    told = tell_job(environ, line, record)
    sys.stdout.write('%s%s\n' % (line, '; told the job in %s' % told if told else ''))
    sys.stdout.flush()
    return 0


def tell_job(environ, line, record=None):
    """Append ``line`` to the job's file (:func:`job_file`) as the job's user (SLURM_JOB_UID,
    SLURM_JOB_GID; the path is the user's: never written as root). The file written, or ''."""
    path, drop = job_file(environ, record), as_the_job_user(environ)
    if path is None or drop is None:
        return ''
    # slurmd runs the prolog with no AnsibleModule (plain Python), and run_command cannot drop
    # to the job's user before the write: ansible-test's "call run_command" cannot apply
    try:
        done = subprocess.call(  # pylint: disable=ansible-bad-function
            ['/bin/sh', '-c', 'printf "%s\\n" "$1" >> "$2"', 'sh', line, path],
            preexec_fn=drop, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ''
    return path if done == 0 else ''


def run(args, child_command, environ=None, host=None):
    """One run of the health check (``args.mode`` slurm-health) or prolog (slurm-prolog):
    prints one line, returns the exit status."""
    environ = os.environ if environ is None else environ
    host = host or drift_watch.LocalHost()
    if args.mode == 'slurm-epilog':
        return epilog(args, child_command, environ, host)
    prolog = args.mode == 'slurm-prolog'
    contexts = [c for c in (args.contexts or ','.join(DEFAULT_CONTEXTS)).split(',') if c]
    timeout = args.timeout or (DEFAULT_PROLOG_TIMEOUT if prolog else DEFAULT_HEALTH_TIMEOUT)
    try:
        params = drift_watch.read_profile(args.profile)
    except drift_watch.ProfileError as exc:
        outcome = drift_watch.Outcome(exc.reason, exc.msg)
    else:
        if prolog:
            params['user'] = environ.get('SLURM_JOB_USER') or params['user']
        params['probe_only'] = [c for c in contexts if c not in PREDICTED]
        params['units'] = [u for u in params['units'] if 'unit:%s' % u in contexts]
        outcome = drift_watch.audit_in_child(child_command, params, timeout)
    code, sentence, _gaps = judge(outcome, contexts)
    try:
        node = node_name(environ)
    except Exception as exc:  # pylint: disable=broad-except  # any failure: no node to act on
        node, done = None, 'no node name: %s' % getattr(exc, 'msg', exc)
    if node is not None:
        done = act(host, node, code, sentence, prolog)
    line = '%s: %s' % (NAMES[code], sentence)
    if prolog and environ.get('SLURM_JOB_ID'):
        line += ' (job %s of %s)' % (environ['SLURM_JOB_ID'], environ.get('SLURM_JOB_USER') or '?')
    if prolog and code == CRITICAL:
        # the job's output says why it did not start (Slurm shows it no Prolog output)
        told = tell_job(environ, '%sjob %s not started on %s: %s' % (
            failure_text.PROLOG_TOLD, environ.get('SLURM_JOB_ID') or '?', node, sentence))
        done += '; told the job in %s' % told if told else ''
    sys.stdout.write(line + ('; %s' % done if done else '') + '\n')
    sys.stdout.flush()
    if prolog:
        return 1 if code == CRITICAL else 0
    return code


def add_arguments(parse):
    """The options of the Slurm modes on the watch's parser."""
    parse.add_argument('--mode', choices=('metrics', 'slurm-health', 'slurm-prolog',
                                          'slurm-epilog'),
                       default='metrics',
                       help='metrics: the timer\'s audit (default); slurm-health: slurmd\'s '
                            'HealthCheckProgram (Nagios exit codes, drain/resume); '
                            'slurm-prolog: slurmd\'s Prolog (fails the job on a gap); '
                            'slurm-epilog: slurmd\'s Epilog (tells a failed job why it died)')
    parse.add_argument('--contexts', default=None,
                       help='Slurm modes: comma-separated contexts to judge (default %s)'
                            % ','.join(DEFAULT_CONTEXTS))
    return parse
