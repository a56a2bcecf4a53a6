"""Shared helpers for the Molecule scenarios' testinfra tests (molecule/*/tests/conftest.py).

Each scenario's conftest puts build/collections and this directory on sys.path, then imports
what it needs from here.
"""
import json
import re
import os
import subprocess
import tempfile


def ansible_command(host, command):
    """``command`` (a list starting with ansible or ansible-playbook) aimed at the node."""
    runner = host.backend.ansible_runner
    command = list(command)
    if runner.inventory_file:
        command[1:1] = ['-i', runner.inventory_file]
    return command


def run_module(host, module, args, check=False, diff=False):
    """Run a collection module on the node through `ansible`; returns (ok, result, output).

    ``ok`` comes from ansible's exit status (0 ok, 2 failed): the result tree of ansible-core
    2.19 does not carry the "failed" key, and warnings are printed rather than kept, so the
    printed output is returned too (and stored as result['output']).
    """
    with tempfile.TemporaryDirectory() as tree:
        # no -a for no arguments: '{}' would reach ansible as raw params
        cmd = ansible_command(host, ['ansible', '--tree', tree, '-m', module]
                              + (['-a', json.dumps(args)] if args else []))
        if check:
            cmd.append('--check')
        if diff:
            cmd.append('--diff')
        cmd.append(host.backend.host)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        files = os.listdir(tree)
        if proc.returncode not in (0, 2) or not files:
            raise RuntimeError('ansible failed (%d): %s' % (proc.returncode, proc.stdout))
        with open(os.path.join(tree, files[0])) as handle:
            result = json.load(handle)
    result['output'] = ' '.join(proc.stdout.split())
    return proc.returncode == 0, result, proc.stdout


def run_playbook(host, playbook):
    """Run a playbook against the node; returns (exit status, output)."""
    cmd = ansible_command(host, ['ansible-playbook', playbook, '--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


def checksums(host, paths):
    """{path: sha256 or None when missing} on the node."""
    return dict((p, host.file(p).sha256sum if host.file(p).exists else None) for p in paths)


# issue 17.9's reproduction: a DataLoader sweep point runs out of /dev/shm (a 16 MiB tmpfs in a
# mount namespace of its own, like a container's 64 MB default) after a 1-worker run that fits.
SHM_REPRO = '''unshare -m --propagation private sh -c '
mount -t tmpfs -o size=16m tmpfs /dev/shm || exit 9
"$0" "$1" --data-dir "$2" --samples 16 --tensors-per-sample 10 --elements 100000 \\
  --num-workers 1 --timeout 20 --sweep-workers 6 > "$3"
echo "rc=$?"
sleep 1
echo "left=$(pgrep -f -c -- "^$0 .*$2")"
echo "shm=$(ls /dev/shm | wc -l)"
' %s %s %s %s'''


def shm_repro_command(python, script, workdir, output):
    """The shell command of the reproduction. It prints rc= (the script's exit status), left=
    (its processes still running a second after it ended) and shm= (files left in /dev/shm)."""
    return SHM_REPRO % (python, script, os.path.join(workdir, 'shm-repro-data'), output)


def shm_repro_facts(output):
    return dict(line.split('=', 1) for line in output.split() if '=' in line)


# Prometheus' text format, as the drift watch's tests read it (tests/unit/plugins/module_utils/test_drift_watch.py,
# molecule/watch).
def samples(text):
    """{(name, frozenset(labels)): value} of a metrics text."""
    found = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        match = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
        assert match, line
        # label names as Prometheus has them: [a-zA-Z_][a-zA-Z0-9_]* (units_sha256)
        pairs = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"',
                                     match.group(2) or ''))
        found[(match.group(1), pairs)] = match.group(3)
    return found


def key(name, **labels):
    return (name, frozenset(labels.items()))


# --- issue 32: the tune and the audit agree (tests/shared/test_tune_audit_agree.py) ----------

AGREE_USER = 'gpufleet-agree'
AGREE_FILE = '/etc/security/limits.d/05-gpufleet-agree.conf'
AGREE_PAM_PATH = '/etc/security/limits.d/95-gpufleet-agree-scratch.conf'


def _node(host, command):
    result = host.run(command)
    assert result.rc == 0, (command, result.stdout, result.stderr)
    return result.stdout


def tune_and_audit(host, profile):
    """(the tune's view, the audit's view) of the node for ``profile`` in the login context of
    AGREE_USER: limits_profile in check mode (contexts pam, a scratch file, overrides warned
    about) -> (whether it would write, the causes it names: known_gaps); limits_audit ->
    {item: (source, advice)} of its login gaps."""
    ok, tune, printed = run_module(host, 'gpufleet.tuning.limits_profile', {
        'profile': profile, 'contexts': ['pam'], 'domains': ['*'], 'pam_path': AGREE_PAM_PATH,
        'on_override': 'warn'}, check=True)
    assert ok, printed[-3000:]
    ok, audit, printed = run_module(host, 'gpufleet.tuning.limits_audit', {
        'profile': profile, 'user': AGREE_USER})
    assert ok, printed[-3000:]
    gaps = dict((row['item'], (row.get('source') or '', row.get('advice') or ''))
                for row in audit['rows']
                if row['context'] == 'login' and row.get('gap'))
    return (tune['changed'], list(tune.get('known_gaps') or [])), gaps


def check_tune_and_audit_agree(host):
    """A narrower limits line planted for one user: the tune (check mode) and the audit both
    name that file:line as the cause of the user's login gap; with the line gone, neither
    names it, and a gap the audit still finds is one the tune would close by writing its file
    (check mode says it would change the node; the audit says no limits line sets the item).
    Leaves the node as it found it."""
    _node(host, 'id %s || useradd -m -s /bin/sh %s' % (AGREE_USER, AGREE_USER))
    uid = _node(host, 'id -u %s' % AGREE_USER).strip()
    try:
        profile = {'nofile': 4096}
        _node(host, "printf '%%s\\n' '%s soft nofile 2048' '%s hard nofile 2048' > %s"
              % (AGREE_USER, AGREE_USER, AGREE_FILE))
        (_writes, causes), gaps = tune_and_audit(host, profile)
        where = AGREE_FILE + ':1'
        assert list(gaps) == ['nofile'], gaps
        assert gaps['nofile'][0].startswith(where), gaps
        assert gaps['nofile'][1].startswith('raise or remove ' + where), gaps
        assert [c for c in causes if where in c], (causes, gaps)
        _node(host, 'rm -f %s' % AGREE_FILE)
        (writes, causes), gaps = tune_and_audit(host, profile)
        # the scenario's own narrower lines (other users) may stay causes; none is this one
        assert [c for c in causes if AGREE_FILE in c] == [], (causes, gaps)
        if gaps:
            assert writes and gaps['nofile'][0].startswith('no limits line'), (writes, gaps)
            assert gaps['nofile'][1].startswith('run limits_profile with contexts: [pam]'), gaps
            # acting on it closes the gap: the tune's write, then the audit again
            ok, _result, printed = run_module(host, 'gpufleet.tuning.limits_profile', {
                'profile': profile, 'contexts': ['pam'], 'domains': ['*'],
                'pam_path': AGREE_PAM_PATH})
            assert ok, printed[-3000:]
            (writes, causes), gaps = tune_and_audit(host, profile)
            assert not writes and gaps == {}, (writes, causes, gaps)
    finally:
        # the audit's probes start the user's manager (a session, a user service): it goes
        # before the user does, or a later restart of the running user managers meets a
        # manager whose user is gone (the undo test's did: "A dependency job failed")
        host.run('rm -f %s %s; loginctl terminate-user %s; systemctl stop user@%s.service '
                 'user-runtime-dir@%s.service; pkill -KILL -u %s; userdel -r %s'
                 % (AGREE_FILE, AGREE_PAM_PATH, AGREE_USER, uid, uid, uid, AGREE_USER))
        assert host.run('id -u %s' % AGREE_USER).rc != 0
        assert host.run('systemctl is-active --quiet user@%s.service' % uid).rc != 0
