"""crio_ulimits through ansible-playbook (crio.yml) on a Debian 12 node with a hand-made /etc/crio
tree (prepare.yml: cri-o's own crio.conf of its tests and a packaged drop-in setting
default_ulimits). CRI-O is not in Debian 12, so no CRI-O runs here: this proves the files (check
mode, diff, the write, idempotence, which file wins, every other file unchanged), the restart
policies as far as they go without a daemon, and the put-back when the restart fails (here
because there is no crio.service). It was never run against a real CRI-O."""
import json
import os
import subprocess
import tempfile

from conftest import SCENARIO, node, output, snapshot, snapshot_diff
import scenario_support as support

MAIN = '/etc/crio/crio.conf'
PACKAGED = '/etc/crio/crio.conf.d/00-default.conf'
DROPIN = '/etc/crio/crio.conf.d/90-gpufleet-tuning.conf'
ARGS = {'ulimits': {'nofile': 16384, 'memlock': '8MiB'}, 'restart': 'never'}
WRITTEN = ('# Managed by gpufleet.tuning (crio_ulimits, the crio context of limits_profile): '
           'default ulimits of CRI-O containers.\n'
           '[crio.runtime]\ndefault_ulimits = [\n  "nofile=16384:16384",\n'
           '  "memlock=8388608:8388608",\n]\n')


def run(host, args, check=False, diff=False):
    """(exit status, crio_ulimits' result, printed output) of crio.yml on the node."""
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, 'result.json')
        command = ['ansible-playbook', os.path.join(SCENARIO, 'crio.yml'), '--limit',
                   host.backend.host, '-e', json.dumps({'crio_args': args,
                                                        'crio_result_file': saved})]
        command += ['--check'] if check else []
        command += ['--diff'] if diff else []
        proc = subprocess.run(support.ansible_command(host, command), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        with open(saved) as handle:
            return proc.returncode, json.load(handle), proc.stdout


def test_check_diff_write_and_idempotence(host, baseline):
    try:
        before = snapshot(host, mtimes=True)
        rc, result, printed = run(host, ARGS, check=True, diff=True)
        assert rc == 0 and result['changed'], printed[-3000:]
        assert '+  "nofile=16384:16384",' in printed and '+++ after: %s' % DROPIN in printed
        assert snapshot(host, mtimes=True) == before            # check mode wrote nothing

        rc, result, printed = run(host, ARGS, diff=True)
        assert rc == 0 and result['changed'], printed[-3000:]
        assert output(host, 'cat %s' % DROPIN) == WRITTEN
        assert output(host, 'stat -c %%a:%%U %s' % DROPIN).strip() == '644:root'
        diff = snapshot_diff(before, snapshot(host, mtimes=True))
        assert diff == {'changed': [], 'removed': [], 'new': [DROPIN]}, diff
        # CRI-O reads crio.conf, the packaged drop-in, then ours: ours wins
        assert result['files'] == [MAIN, PACKAGED, DROPIN]
        assert result['decided_by'] == DROPIN + ':3:1'
        assert result['configured']['nofile'] == {'soft': 16384, 'hard': 16384,
                                                  'source': DROPIN + ':3:1'}
        assert (result['restart_required'], result['restarted'], result['deferred']) == (
            True, False, 'restart: never')

        written = snapshot(host, mtimes=True)
        rc, result, printed = run(host, ARGS)
        assert rc == 0 and not result['changed'], printed[-3000:]
        assert not result['restart_required'] and result['deferred'] is None
        assert snapshot(host, mtimes=True) == written           # idempotent: not even rewritten

        # when_idle asks crictl for pod sandboxes; without it the restart is deferred, not done
        rc, result, printed = run(host, dict(ARGS, ulimits={'nofile': 8192},
                                             restart='when_idle'))
        assert rc == 0 and result['changed'], printed[-3000:]
        assert result['deferred'].startswith('the pods could not be listed (crictl: ')
        assert '"nofile=8192:8192",' in output(host, 'cat %s' % DROPIN)
    finally:
        baseline()


def test_a_failed_restart_puts_the_file_back(host, baseline):
    try:
        before = snapshot(host)
        rc, result, printed = run(host, dict(ARGS, restart='always'))
        assert rc != 0, printed[-3000:]
        # the restart engine's message (plugins/module_utils/systemd/restarts.py)
        assert result['msg'].startswith("crio.service failed after its restart with this run's "
                                        'files: systemctl restart failed (exit '), result['msg']
        assert 'crio.service not found' in result['msg']
        assert ('Restored: %s; crio.service did NOT start again with the previous files either'
                % DROPIN) in result['msg']
        assert result['files_restored'] == [DROPIN]
        assert snapshot(host) == before                        # the new drop-in is gone again
    finally:
        baseline()


def test_a_later_drop_in_is_refused_through_the_playbook(host, baseline):
    try:
        node(host, "printf '[crio.runtime]\\ndefault_ulimits = [\"nofile=4096:4096\"]\\n' "
                   '> /etc/crio/crio.conf.d/95-site.conf')
        before = snapshot(host, mtimes=True)
        rc, result, printed = run(host, ARGS, check=True)
        assert rc != 0, printed[-3000:]
        assert result['msg'] == (
            '/etc/crio/crio.conf.d/95-site.conf:2:1 sets default_ulimits and CRI-O reads it after '
            '%s: its list replaces this one whole (nothing written; force=true writes it anyway)'
            % DROPIN)
        rc, result, printed = run(host, ARGS)
        assert rc != 0 and 'nothing written' in result['msg'], printed[-3000:]
        assert snapshot(host, mtimes=True) == before
        rc, result, printed = run(host, dict(ARGS, force=True))
        assert rc == 0 and result['changed'], printed[-3000:]
        assert result['overridden_by'] == ['/etc/crio/crio.conf.d/95-site.conf:2:1']
        assert result['decided_by'] == '/etc/crio/crio.conf.d/95-site.conf:2:1'
        assert 'replaces this one whole' in printed
    finally:
        baseline()


def test_the_crio_context_of_limits_profile_writes_the_same_drop_in(host, baseline):
    try:
        args = {'profile': {'nofile': 16384, 'memlock': '8MiB'}, 'contexts': ['crio']}
        before = snapshot(host, mtimes=True)
        ok, result, printed = support.run_module(host, 'gpufleet.tuning.limits_profile', args,
                                                 check=True)
        assert ok and result['changed'], printed[-3000:]
        assert snapshot(host, mtimes=True) == before
        ok, result, printed = support.run_module(host, 'gpufleet.tuning.limits_profile', args)
        assert ok and result['changed'], printed[-3000:]
        # the same text as crio_ulimits writes; limits_profile restarts nothing itself: the
        # role restarts what actions.units lists (crio.service, checked)
        assert output(host, 'cat %s' % DROPIN) == WRITTEN
        assert result['actions']['units'] == ['crio.service']
        assert result['per_context']['crio']['decided_by'] == DROPIN + ':3:1'
        ok, result, printed = support.run_module(host, 'gpufleet.tuning.limits_profile', args)
        assert ok and not result['changed'] and result['actions']['units'] == [], printed[-3000:]
    finally:
        baseline()
