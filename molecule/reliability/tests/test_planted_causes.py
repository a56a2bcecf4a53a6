"""Causes proven by acting on them (issue 32 item 3): a generator plants random overriding
sources on the converged node, one layout per seed, and checks the audit and the tune against
them.

For each layout: plant its sources (each lowers one context's item below the profile) and
decoys (lines that must not matter), apply them (re-exec, restarts), then audit the node and
run limits_profile in check mode as the role calls it (two ``ansible`` runs at once).
Asserted: the gaps are exactly the planted (context, item) pairs; the source of each gap
names the planted file:line (no other planted file, never a decoy); the tune refuses naming a
planted line when a source it refuses is planted, else passes. Then the test
does what the audit says: the named line is changed (commented out; a daemon.json entry set to
the profile; a --default-ulimit flag taken off the line) and the context's apply step
(docs/contexts.md "after a change") runs; a second round must show no gap and a tune that
passes. Finally every planted file is put back byte for byte and every restart undone.

Replay: PLANTED_SEED=N PLANTED_LAYOUTS=1 (layout i of a run uses seed PLANTED_SEED + i; a
failure prints its seed and layout). PLANTED_LAYOUTS (default 30) layouts run;
`make planted-causes LAYOUTS=200` runs more.
"""
import json
import os
import random
import re
import shlex
import subprocess
import time

import pytest

from conftest import UNIT, USER, node, output, snapshot, snapshot_diff
import scenario_support as support

LAYOUTS = int(os.environ.get('PLANTED_LAYOUTS') or 30)
SEED = int(os.environ.get('PLANTED_SEED') or int(time.time()) % 100000 * 1000)
UID = 1001
PROFILE = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
AUDIT = {'profile': PROFILE, 'user': USER, 'units': [UNIT], 'docker_image': 'tiny:latest'}
# limits_profile as the converge (the limits role) calls it, in check mode
TUNE = {'profile': PROFILE, 'domains': ['*', 'root'],
        'contexts': ['pam', 'systemd_system', 'systemd_user', 'docker'], 'units': [UNIT],
        'baseline_user': USER}
ITEMS = ('nofile', 'nproc', 'memlock')
# values below the profile (kernel units: memlock in bytes); the profile in the same units
LOW = {'nofile': (1024, 2048, 4096, 8192), 'nproc': (1024, 2048, 4096),
       'memlock': (65536, 1048576, 4194304)}
WANT = {'nofile': 16384, 'nproc': 8192, 'memlock': 8388608}
SYSTEMD_KEY = {'nofile': 'NOFILE', 'nproc': 'NPROC', 'memlock': 'MEMLOCK'}
DAEMON_JSON = '/etc/docker/daemon.json'
DOCKER_DROPIN_DIR = '/etc/systemd/system/docker.service.d'
DOCKERD = '/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock'
# directories a layout may create (outside the watched ones of conftest.snapshot)
EXTRA_DIRS = ['/usr/lib/systemd/system.conf.d', '/usr/lib/systemd/user.conf.d']

# kind -> (probed context, family). Families: 'session' sources reach a user manager too when
# it restarts (its PAM session, the system manager's defaults), so a layout plants either
# session or user sources, never both (see test_a_session_source_reaching_user_services).
KINDS = {
    'pam_user': ('login', 'session'),         # limits.d or limits.conf: trainer TYPE ITEM V
    'pam_group': ('login', 'session'),        # @trainer (a group line beats the profile's *)
    'system_etc': ('service', 'session'),     # /etc/systemd/system.conf.d/9x-*.conf
    'system_usr': ('service', 'session'),     # /usr/lib/systemd/system.conf.d/9x-*.conf
    'user_etc': ('user_manager', 'user'),     # /etc/systemd/user.conf.d/9x-*.conf
    'user_usr': ('user_manager', 'user'),     # /usr/lib/systemd/user.conf.d/9x-*.conf
    'user_unit_cap': ('user_manager', 'user'),  # user@.service.d Limit*= (caps the manager)
    'unit_dropin': ('unit:' + UNIT, 'unit'),  # UNIT.d/9x-*.conf Limit*=
    'docker_json': ('docker', 'docker'),      # /etc/docker/daemon.json's entry lowered
    'docker_config_file': ('docker', 'docker'),  # docker.service --config-file OTHER.json
    'docker_flag': ('docker', 'docker'),      # docker.service --default-ulimit ITEM=S:H
}
DOCKER_KINDS = ('docker_json', 'docker_config_file', 'docker_flag')
# what the tune (limits_profile, on_conflict fail) refuses: a file it does not own read after
# its own, a cap of every user manager, a flag that clashes with the file it would write. A
# user or group limits line is an override (on_override: warn); daemon.json it rewrites.
REFUSED = ('system_etc', 'system_usr', 'user_etc', 'user_usr', 'user_unit_cap', 'unit_dropin',
           'docker_flag')
# decoys: files that must not decide anything (a %group line is maxlogins only; a drop-in or
# limits.d file read before the profile's; a /usr/lib drop-in masked by /etc's of that name)
DECOYS = ('pam_percent', 'pam_star_early', 'system_early', 'system_usr_masked',
          'user_usr_masked')


def layout(seed):
    """The planted sources and decoys of a seed: [{kind, context, item, soft, hard, type,
    where}], [{kind, item, value}]. Deterministic: only ``seed`` decides."""
    rng = random.Random(seed)
    family = rng.choice(('session', 'user'))
    docker = rng.choice(DOCKER_KINDS + (None,))
    pool = [k for k, (_c, fam) in sorted(KINDS.items()) if fam in (family, 'unit')]
    sources, slots = [], set()
    for _attempt in range(rng.randint(2, 5)):
        kind = rng.choice(pool)
        context = KINDS[kind][0]
        free = [i for i in ITEMS if (context, i) not in slots]
        if not free:
            continue
        item = rng.choice(free)
        slots.add((context, item))
        sources.append(plant_values(rng, kind, context, item))
    if docker:
        for item in rng.sample(ITEMS, rng.randint(1, 2)):
            sources.append(plant_values(rng, docker, 'docker', item))
    for index, source in enumerate(sources):
        source['n'] = index
        source['prio'] = rng.randint(91, 99)
        source['where'] = rng.choice(('limits.conf', 'limits.d-early', 'limits.d-late'))
    # a decoy that restarts the user manager only with user sources (see family)
    kinds = [k for k in DECOYS if family == 'user' or not k.startswith('user_')]
    decoys = [dict(kind=kind, item=rng.choice(ITEMS), value=rng.choice((64, 512)))
              for kind in rng.sample(kinds, rng.randint(0, 2))]
    return sources, decoys


def plant_values(rng, kind, context, item):
    low = rng.choice(LOW[item])
    side = 'both'
    if kind in ('pam_user', 'pam_group'):
        side = rng.choice(('soft', 'hard', '-'))
    elif kind in ('system_etc', 'system_usr', 'user_etc', 'user_usr', 'unit_dropin'):
        side = rng.choice(('both', 'soft'))   # V, or V:PROFILE (soft below only)
    soft = low
    hard = WANT[item] if side in ('soft',) else low
    return dict(kind=kind, context=context, item=item, soft=soft, hard=hard, side=side)


def systemd_value(item, value):
    return '%dK' % (value // 1024) if item == 'memlock' else str(value)


def pam_value(item, value):
    return str(value // 1024) if item == 'memlock' else str(value)


class Plan(object):
    """What a layout writes: {path: text} for new files, {path: text} for changed existing
    files (their old bytes kept in a tar on the node), and where each source's line is."""

    def __init__(self, host, sources, decoys, seed):
        self.host, self.seed = host, seed
        self.new, self.changed = {}, {}
        self.lines = {}     # source n -> (path, line)
        self.decoy_paths = []
        self.restart = set()
        self.read = {}
        for source in sources:
            self.add(source)
        for decoy in decoys:
            self.add_decoy(decoy)

    def text(self, path):
        if path in self.new:
            return self.new[path]
        if path in self.changed:
            return self.changed[path]
        if path not in self.read:
            self.read[path] = output(self.host, 'cat %s' % path)
        return self.read[path]

    def append(self, path, line, existing=False):
        """Append ``line``; returns its line number."""
        text = self.text(path) if existing else self.new.get(path, '')
        if text and not text.endswith('\n'):
            text += '\n'
        text += line + '\n'
        (self.changed if existing else self.new)[path] = text
        return text.count('\n')

    def add(self, s):
        kind, item, n = s['kind'], s['item'], s['n']
        if kind in ('pam_user', 'pam_group'):
            domain = USER if kind == 'pam_user' else '@' + USER
            value = pam_value(item, s['soft'])
            line = '%s %s %s %s' % (domain, s['side'], item, value)
            if s['where'] == 'limits.conf':
                path, existing = '/etc/security/limits.conf', True
            else:
                path = '/etc/security/limits.d/%s-planted-%d.conf' % (
                    '05' if s['where'] == 'limits.d-early' else s['prio'], n)
                existing = False
                self.append(path, '# planted by test_planted_causes (seed %d)' % self.seed)
            self.lines[n] = (path, self.append(path, line, existing))
            return
        if kind in ('system_etc', 'system_usr', 'user_etc', 'user_usr'):
            base = '/etc/systemd' if kind.endswith('_etc') else '/usr/lib/systemd'
            scope = 'system' if kind.startswith('system') else 'user'
            path = '%s/%s.conf.d/%d-planted-%d.conf' % (base, scope, s['prio'], n)
            self.append(path, '[Manager]')
            value = systemd_value(item, s['soft'])
            if s['side'] == 'soft':
                value += ':' + systemd_value(item, s['hard'])
            self.lines[n] = (path, self.append(path, 'DefaultLimit%s=%s'
                                               % (SYSTEMD_KEY[item], value)))
            self.restart.add('reexec' if scope == 'system' else 'user')
            return
        if kind in ('user_unit_cap', 'unit_dropin'):
            unit = 'user@.service' if kind == 'user_unit_cap' else UNIT
            path = '/etc/systemd/system/%s.d/%d-planted-%d.conf' % (unit, s['prio'], n)
            self.append(path, '[Service]')
            value = systemd_value(item, s['soft'])
            if s['side'] == 'soft':
                value += ':' + systemd_value(item, s['hard'])
            self.lines[n] = (path, self.append(path, 'Limit%s=%s' % (SYSTEMD_KEY[item], value)))
            self.restart.add('reload')
            self.restart.add('user' if kind == 'user_unit_cap' else 'unit')
            return
        self.restart.update(('reload', 'docker'))
        if kind == 'docker_json':
            self.json_entry(DAEMON_JSON, s, existing=True)
        elif kind == 'docker_config_file':
            path = '/etc/docker/planted-%d.json' % self.seed
            if path not in self.new:
                base = json.loads(self.text(DAEMON_JSON))
                self.new[path] = json.dumps(base, indent=2) + '\n'
                self.docker_dropin(['--config-file %s' % path])
            self.json_entry(path, s, existing=False)
        elif kind == 'docker_flag':
            path = '/etc/docker/planted-%d.json' % self.seed
            if path not in self.new:
                # no default-ulimits in the file: with the flag too, dockerd would not start
                base = json.loads(self.text(DAEMON_JSON))
                base.pop('default-ulimits', None)
                self.new[path] = json.dumps(base, indent=2) + '\n'
            flag = '--default-ulimit %s=%d:%d' % (item, s['soft'], s['hard'])
            self.lines[n] = self.docker_dropin(['--config-file %s' % path, flag])

    def docker_dropin(self, options):
        """The ExecStart drop-in of docker.service (one a layout), with ``options`` added to its
        command; returns (path, line) of the ExecStart line."""
        path = '%s/95-planted-%d.conf' % (DOCKER_DROPIN_DIR, self.seed)
        text = self.new.get(path) or '[Service]\nExecStart=\nExecStart=%s\n' % DOCKERD
        lines = text.splitlines()
        for option in options:
            if option not in lines[2]:
                lines[2] += ' ' + option
        self.new[path] = '\n'.join(lines) + '\n'
        return (path, 3)

    def json_entry(self, path, s, existing):
        data = json.loads(self.text(path))
        data.setdefault('default-ulimits', {})[s['item']] = {
            'Name': s['item'], 'Soft': s['soft'], 'Hard': s['hard']}
        text = json.dumps(data, indent=2) + '\n'
        (self.changed if existing else self.new)[path] = text

    def json_lines(self, sources):
        """The line of each docker JSON source's entry (``"ITEM": {``), once every entry is in."""
        for s in sources:
            if s['kind'] in ('docker_json', 'docker_config_file'):
                path = DAEMON_JSON if s['kind'] == 'docker_json' else (
                    '/etc/docker/planted-%d.json' % self.seed)
                text = self.text(path)
                lines = text.splitlines()
                number = [i + 1 for i, line in enumerate(lines)
                          if line.strip().startswith('"%s": {' % s['item'])
                          and i > 0 and '"default-ulimits"' in '\n'.join(lines[:i])][0]
                self.lines[s['n']] = (path, number)

    def add_decoy(self, d):
        item, kind = d['item'], d['kind']
        if kind == 'pam_percent':
            path = '/etc/security/limits.d/95-planted-decoy.conf'
            self.append(path, '%%%s - %s %d' % (USER, item, d['value']))
        elif kind == 'pam_star_early':
            path = '/etc/security/limits.d/05-planted-decoy.conf'
            self.append(path, '* - %s %d' % (item, d['value']))
        else:
            base, scope, name = {
                'system_early': ('/etc/systemd', 'system', '10-planted-decoy.conf'),
                'system_usr_masked': ('/usr/lib/systemd', 'system', '90-gpufleet-tuning.conf'),
                'user_usr_masked': ('/usr/lib/systemd', 'user', '90-gpufleet-tuning.conf')}[kind]
            path = '%s/%s.conf.d/%s' % (base, scope, name)
            if path not in self.new:
                self.append(path, '[Manager]')
            self.append(path, 'DefaultLimit%s=%d' % (SYSTEMD_KEY[item], d['value']))
            self.restart.add('reexec' if scope == 'system' else 'user')
        self.decoy_paths.append(path)


def apply_command(restart):
    """The shell command that applies what a layout changed (the contexts' "after a change")."""
    steps = []
    if 'reexec' in restart:
        steps.append('systemctl daemon-reexec')
    elif restart:
        # a unit's files may have changed: always reload before a restart
        steps.append('systemctl daemon-reload')
    if 'user' in restart:
        steps.append('systemctl restart user@%d.service' % UID)
    if 'unit' in restart:
        steps.append('systemctl restart %s' % UNIT)
    if 'docker' in restart:
        steps.append("systemctl reset-failed docker.service; systemctl restart docker.service "
                     "&& timeout 60 sh -c 'until docker info >/dev/null 2>&1; do sleep 0.2; "
                     "done'")
    if steps:
        steps.append(SETTLE)
    return ' && '.join(steps) or 'true'


# After a re-exec and restarts: no job of the system manager left, and the user's manager
# (restarted) done starting, before the audit that follows. (A CI run once read a user
# service's limits before its exec, the manager's own: fixed in the probe, run/effective.py.)
SETTLE = ("timeout 60 sh -c 'while [ -n \"$(systemctl list-jobs --no-legend)\" ]; do "
          "sleep 0.1; done' && { runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%d timeout 60 "
          "systemctl --user is-system-running --wait >/dev/null || true; }" % (USER, UID))


def write_command(plan, tar):
    """One shell command: keep the old bytes of the changed files, write every file."""
    parts = ['set -e', 'tar -cpf %s %s 2>/dev/null' % (tar, ' '.join(sorted(plan.changed)))
             if plan.changed else 'true']
    for path, text in sorted(list(plan.new.items()) + list(plan.changed.items())):
        parts.append('mkdir -p %s' % shlex.quote(os.path.dirname(path)))
        parts.append('printf %%s %s > %s' % (shlex.quote(text), shlex.quote(path)))
    return '\n'.join(parts)


def restore_command(plan, tar, dirs_before):
    """Everything a layout wrote removed or put back (a directory it created removed too)."""
    parts = ['rm -f %s' % ' '.join(shlex.quote(p) for p in sorted(plan.new))]
    if plan.changed:
        parts.append('tar -xpf %s -C / && rm -f %s' % (tar, tar))
    for path in sorted(plan.new, reverse=True):
        directory = os.path.dirname(path)
        if directory not in dirs_before:
            parts.append('rmdir %s 2>/dev/null || true' % shlex.quote(directory))
    return '; '.join(parts)


def existing_dirs(host, paths):
    dirs = sorted(set(os.path.dirname(p) for p in paths))
    if not dirs:
        return set()
    out = output(host, 'for d in %s; do [ -d "$d" ] && echo "$d"; done; true' % ' '.join(dirs))
    return set(out.split())


def round_trip(host):
    """The audit and the tune's check (limits_profile in check mode as the role calls it), two
    ``ansible`` runs at once (both read-only): (audit, tune) results, each with ``failed``."""
    procs = []
    for module, args, check in (('limits_audit', AUDIT, False), ('limits_profile', TUNE, True)):
        command = support.ansible_command(host, [
            'ansible', '-m', 'gpufleet.tuning.' + module, '-a', json.dumps(args),
            '-e', 'ansible_python_interpreter=/usr/bin/python3'] + (['--check'] if check else [])
            + [host.backend.host])
        # plain JSON: no colours (molecule's verify sets ANSIBLE_FORCE_COLOR)
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK='minimal', ANSIBLE_NOCOLOR='1')
        env.pop('ANSIBLE_FORCE_COLOR', None)
        procs.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      universal_newlines=True, env=env))
    results = []
    for proc in procs:
        out, err = proc.communicate()
        out = re.sub(r'\x1b\[[0-9;]*m', '', out)
        match = re.search(r'^\S+ \| (SUCCESS|CHANGED|FAILED!) => ', out, re.M)
        if not match:
            raise AssertionError('ansible failed (%d): %s %s'
                                 % (proc.returncode, out[-3000:], err[-3000:]))
        result = json.JSONDecoder().raw_decode(out, match.end())[0]
        result['failed'] = match.group(1) == 'FAILED!'
        results.append(result)
    return results[0], results[1]


def act_command(actions):
    """Python run on the node: do what the audit names, on each (path, line, item, how):
    'comment' the line out, 'json' set the entry at that line to the profile, 'flag' take the
    item's --default-ulimit off that line. Line numbers stay as they were (nothing deleted)."""
    script = r'''
import json, re, sys
want = json.loads(sys.argv[2])
for path, line, item, how in json.loads(sys.argv[1]):
    text = open(path).read()
    lines = text.split('\n')
    if how == 'comment':
        lines[line - 1] = '# acted on by test_planted_causes: ' + lines[line - 1]
        text = '\n'.join(lines)
    elif how == 'flag':
        lines[line - 1] = re.sub(r' --default-ulimit %s=\S+' % item, '', lines[line - 1])
        text = '\n'.join(lines)
    else:
        name = re.match(r'\s*"([a-z]+)": \{', lines[line - 1]).group(1)
        data = json.loads(text)
        data['default-ulimits'][name].update(Soft=want[name], Hard=want[name])
        text = json.dumps(data, indent=2) + '\n'
    open(path, 'w').write(text)
'''
    return 'python3 -c %s %s %s' % (shlex.quote(script), shlex.quote(json.dumps(actions)),
                                    shlex.quote(json.dumps(WANT)))


# the contexts' apply step after a change (docs/contexts.md, "after a change")
APPLY = {'login': set(), 'ssh': set(), 'service': {'reexec'}, 'user_manager': {'reload', 'user'},
         'unit:' + UNIT: {'reload', 'unit'}, 'docker': {'reload', 'docker'}}
WHERE = re.compile(r'(/[\w@.\-/]+):(\d+)')
# the contexts whose value a limits line decides (login sessions, SSH sessions)
SESSIONS = ('login', 'ssh')


def named(text):
    """Every file:line a text names."""
    return [(path, int(line)) for path, line in WHERE.findall(text or '')]


def describe(seed, sources, decoys, plan):
    lines = ['seed %d (replay: PLANTED_SEED=%d PLANTED_LAYOUTS=1)' % (seed, seed)]
    for s in sources:
        path, line = plan.lines.get(s['n'], ('?', '?'))
        lines.append('  planted %-18s %-34s %-7s %s:%s (%s) soft %s hard %s' % (
            s['kind'], s['context'], s['item'], path, line, s['side'], s['soft'], s['hard']))
    for d in decoys:
        lines.append('  decoy   %-18s %-7s %s' % (d['kind'], d['item'], d['value']))
    return '\n'.join(lines)


TIMES = []
# the restarts owed since the last layout put its files back (see the test's finally)
PENDING = set()


@pytest.fixture(scope='module')
def clean_node(host):
    """The converged node's watched files and extra directories, before any layout; at the
    end, the restarts the last layout owes, and every service active again."""
    node(host, 'systemctl is-active user@%d.service docker.service %s' % (UID, UNIT))
    yield snapshot(host), output(host, 'ls -a %s 2>/dev/null; true' % ' '.join(EXTRA_DIRS))
    node(host, apply_command(PENDING | {'reexec', 'user', 'unit', 'docker'}))
    PENDING.clear()
    node(host, 'systemctl is-active user@%d.service docker.service %s' % (UID, UNIT))


@pytest.mark.parametrize('seed', [SEED + i for i in range(LAYOUTS)],
                         ids=lambda seed: 'seed-%d' % seed)
def test_planted_sources_are_named_and_acting_on_them_closes_the_gaps(host, clean_node, seed):
    started = time.time()
    sources, decoys = layout(seed)
    plan = Plan(host, sources, decoys, seed)
    plan.json_lines(sources)
    about = describe(seed, sources, decoys, plan)
    print('\n' + about)
    tar = '/root/planted-%d.tar' % seed
    dirs_before = existing_dirs(host, list(plan.new))
    restart, steps = set(plan.restart), set()
    marks = [('start', time.time())]
    try:
        # what the last layout owes and this one does not restart goes first (a user manager
        # restarted after this layout's PAM lines are in would take them: see family)
        node(host, apply_command(PENDING - restart))
        PENDING.clear()
        node(host, write_command(plan, tar))
        node(host, apply_command(restart))
        marks.append(('plant', time.time()))
        audit, tune = round_trip(host)
        marks.append(('round 1', time.time()))
        try:
            check_causes(sources, plan, audit, tune, about)
        except AssertionError as exc:
            # evidence for the next reader: is the node's answer stable (a product fault) or
            # did it change a moment later (the node was still settling)?
            again, _tune = round_trip(host)
            raise AssertionError('%s\na second audit at once: %s' % (exc, sorted(
                (r['context'], r['item'], r['actual'], r['gap']) for r in again['rows'])))
        # do what the audit says, for every gap: change the line it names, apply the context
        actions = []
        for row in audit['rows']:
            if not row['gap']:
                continue
            path, line = named(row['source'])[0] if row['context'] not in SESSIONS else [
                w for w in named(row['source'])
                if 'gpufleet-tuning' not in w[0] and not w[0].startswith('/etc/pam.d/')][0]
            how = ('flag' if path.startswith(DOCKER_DROPIN_DIR) else
                   'json' if path.endswith('.json') else 'comment')
            if [path, line, row['item'], how] not in actions:
                actions.append([path, line, row['item'], how])
            steps |= APPLY[row['context']]
        node(host, act_command(actions) + ' && ' + apply_command(steps))
        marks.append(('act', time.time()))
        audit, tune = round_trip(host)
        marks.append(('round 2', time.time()))
        gaps = [(r['context'], r['item'], r['actual'], r['source']) for r in audit['rows']
                if r['gap']]
        assert not gaps, '%s\nafter acting on %s, gaps remain: %s' % (about, actions, gaps)
        assert not tune.get('failed'), '%s\nafter acting on %s the tune still refuses: %s' % (
            about, actions, tune.get('msg'))
    finally:
        # the files go back now; the restarts that undo this layout run with the next
        # layout's (one restart of each service, not two) or at the end (clean_node)
        node(host, restore_command(plan, tar, dirs_before))
        PENDING.update(restart | steps | {'reload'})
        files, extra = clean_node
        now = snapshot(host)
        assert now == files, '%s\nnot restored: %s' % (about, snapshot_diff(files, now))
        assert output(host, 'ls -a %s 2>/dev/null; true' % ' '.join(EXTRA_DIRS)) == extra
        marks.append(('restore', time.time()))
        print('  times: ' + ', '.join('%s %.1f s' % (name, at - marks[i][1])
                                      for i, (name, at) in enumerate(marks[1:])))
        TIMES.append(time.time() - started)


def reached(sources, audit):
    """(context, source) for every context a planted source reaches: its own, and for a
    limits line the SSH sessions too where the node's sshd runs pam_limits (the ssh probe)."""
    probed = set(r['context'] for r in audit['rows'])
    return [(s['context'], s) for s in sources] + [
        ('ssh', s) for s in sources if s['context'] == 'login' and 'ssh' in probed]


def check_causes(sources, plan, audit, tune, about):
    rows = dict(((r['context'], r['item']), r) for r in audit['rows'])
    gaps = sorted((r['context'], r['item']) for r in audit['rows'] if r['gap'])
    planted = sorted(set((context, s['item']) for context, s in reached(sources, audit)))
    table = '\n'.join('  %s %s %s gap=%s | %s' % (r['context'], r['item'], r['actual'],
                                                  r['gap'], r['source'])
                      for r in audit['rows'] if r['gap'] or (r['context'], r['item']) in planted)
    report = '%s\naudit rows:\n%s' % (about, table)
    assert not audit.get('failed'), '%s\naudit failed: %s' % (about, audit.get('msg'))
    assert gaps == planted, '%s\ngaps %s, planted %s' % (report, gaps, planted)
    ours = set(plan.lines.values())
    decoy_files = set(plan.decoy_paths)
    for context, s in reached(sources, audit):
        row = rows[(context, s['item'])]
        where = plan.lines[s['n']]
        names = named(row['source'])
        assert where in names, '%s\n%s %s: the audit does not name the planted %s:%d' % (
            report, context, s['item'], where[0], where[1])
        others = [w for w in names if w != where and (w in ours or w[0] in decoy_files)]
        assert not others, '%s\n%s %s names other planted lines %s' % (
            report, context, s['item'], others)
        assert 'not applied yet' not in row['source'], report
    for row in audit['rows']:
        assert not any(p in row['source'] for p in decoy_files), (
            '%s\na decoy is named: %s' % (report, row))
    refused = [s for s in sources if s['kind'] in REFUSED]
    msg = tune.get('msg') or ''
    if refused:
        assert tune.get('failed'), '%s\nthe tune did not refuse %s' % (report, refused)
        in_msg = [w for w in named(msg) if w in ours]
        assert in_msg, '%s\nthe tune refuses without naming a planted line: %s' % (report, msg)
        # the tune names a planted line of a kind it refuses, and never a decoy
        kinds = set(s['kind'] for s in sources if plan.lines[s['n']] in in_msg)
        assert kinds & set(REFUSED), '%s\ntune: %s' % (report, msg)
    else:
        assert not tune.get('failed'), '%s\nthe tune refuses: %s' % (report, msg)
    assert not any(p in msg for p in decoy_files), '%s\ntune names a decoy: %s' % (report, msg)


def test_layouts_are_replayable_and_do_not_interfere():
    """The generator alone (no node): a seed gives the same layout every time; a layout never
    plants two sources for one context and item, never session and user sources together,
    at most one docker kind; over 2000 seeds every kind and decoy is planted."""
    seen = set()
    for seed in range(2000):
        sources, decoys = layout(seed)
        assert (sources, decoys) == layout(seed)
        slots = [(s['context'], s['item']) for s in sources]
        assert len(slots) == len(set(slots)), sources
        families = set(KINDS[s['kind']][1] for s in sources)
        assert not {'session', 'user'} <= families, sources
        assert len(set(s['kind'] for s in sources) & set(DOCKER_KINDS)) <= 1, sources
        if 'session' in families:
            assert not any(d['kind'].startswith('user_') for d in decoys), decoys
        for s in sources:
            low = s['soft'] < WANT[s['item']] or s['hard'] < WANT[s['item']]
            assert low, s
        seen.update(s['kind'] for s in sources)
        seen.update(d['kind'] for d in decoys)
    assert seen == set(KINDS) | set(DECOYS)


CASCADES = {
    # a limits line for the user: the systemd-user PAM session of the user manager applies it
    'pam_user': ('/etc/security/limits.d/95-planted-cascade.conf', 'trainer hard nproc 2048', 1,
                 set()),
    # a system manager default: a user manager starts with it
    'system_etc': ('/etc/systemd/system.conf.d/95-planted-cascade.conf',
                   '[Manager]\nDefaultLimitNPROC=2048', 2, {'reexec'}),
}


class NotNamed(AssertionError):
    """The audit does not name the planted line (the known failure below)."""


@pytest.mark.xfail(strict=True, raises=NotNamed, reason=(
    'known gap of the audit (issue 32.3 finding): a user manager takes its hard limits from '
    'its PAM session (a limits line for the user) and the system manager\'s defaults; a user '
    'service cannot get more, but the user_manager row names user.conf\'s line ("that file '
    'does not decide it here") instead of the line that lowered the manager'))
@pytest.mark.parametrize('kind', sorted(CASCADES))
def test_a_session_source_reaching_user_services_is_named(host, clean_node, kind):
    """Why a layout never plants session and user sources together: once the user manager
    restarts, a session source lowers what its user services get, and the audit does not say
    which line did."""
    path, text, line, restart = CASCADES[kind]
    node(host, apply_command(PENDING))
    PENDING.clear()
    try:
        node(host, 'printf %%s %s > %s && %s'
             % (shlex.quote(text + '\n'), path, apply_command(restart | {'user'})))
        audit, _tune = round_trip(host)
        row = [r for r in audit['rows'] if (r['context'], r['item']) == ('user_manager', 'nproc')]
        assert row and row[0]['gap'], audit['table']
        if (path, line) not in named(row[0]['source']):
            raise NotNamed('%s:%d not named: %s' % (path, line, row[0]['source']))
    finally:
        node(host, 'rm -f %s' % path)
        PENDING.update(restart | {'user', 'reload'})


def test_the_node_is_as_converged_after_the_layouts(host, clean_node):
    """After the last layout (its restarts too): no gap, the tune passes, every watched file
    as before. Prints the time the layouts took (CI keeps the whole run under an hour)."""
    node(host, apply_command(PENDING | {'reexec', 'user', 'unit', 'docker'}))
    PENDING.clear()
    audit, tune = round_trip(host)
    assert not [r for r in audit['rows'] if r['gap']], audit['table']
    assert not tune['failed'], tune.get('msg')
    assert snapshot(host) == clean_node[0]
    if TIMES:
        print('\nplanted causes: %d layouts in %.0f s (%.1f s each)'
              % (len(TIMES), sum(TIMES), sum(TIMES) / len(TIMES)))
