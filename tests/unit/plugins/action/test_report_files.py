"""plugins/action/report_files.py run by ansible-playbook on this machine (the controller):
writes, idempotence, check and diff mode, an existing file's mode kept, bad input refused
before anything is written."""
import json
import os
import stat
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
COLLECTIONS = os.path.join(ROOT, 'build', 'collections')
# the ansible-playbook of the Python running the tests (its venv), else the one on PATH
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
if not os.path.exists(PLAYBOOK_BIN):
    PLAYBOOK_BIN = 'ansible-playbook'

PLAY = '''- hosts: localhost
  gather_facts: false
  connection: local
  tasks:
    - name: Write the reports
      gpufleet.tuning.report_files:
        dir: %(dir)s
        files: %(files)s
      register: written
    - name: Show the result
      ansible.builtin.debug:
        msg: "RESULT {{ written | to_json }}"
'''


def play(tmp_path, directory, files, *options):
    path = tmp_path / 'play.yml'
    path.write_text(PLAY % dict(dir=json.dumps(str(directory)), files=json.dumps(files)))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='default', ANSIBLE_LOCALHOST_WARNING='0')
    proc = subprocess.run([PLAYBOOK_BIN, '-i', 'localhost,', str(path)] + list(options),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False, timeout=120)
    result = None
    for line in proc.stdout.splitlines():
        if '"msg": "RESULT ' in line:
            result = json.loads(json.loads('{%s}' % line.strip())['msg'][len('RESULT '):])
    return proc.returncode, result, proc.stdout


def test_writes_then_changes_nothing_and_keeps_the_mode(tmp_path):
    reports = tmp_path / 'reports' / 'audit'
    files = {'a.json': '{"x": 1}\n', 'b.md': '# B\n\n| a |\n'}
    rc, result, out = play(tmp_path, reports, files)
    assert rc == 0, out
    assert result['changed'] is True
    assert result['changed_paths'] == [str(reports / 'a.json'), str(reports / 'b.md')]
    assert (reports / 'a.json').read_text() == '{"x": 1}\n'
    assert (reports / 'b.md').read_text() == '# B\n\n| a |\n'
    assert stat.S_IMODE(os.stat(str(reports)).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(str(reports / 'b.md')).st_mode) == 0o644
    os.chmod(str(reports / 'b.md'), 0o600)
    rc, result, out = play(tmp_path, reports, files)
    assert rc == 0 and result['changed'] is False and result['changed_paths'] == [], out
    files['b.md'] = '# B again\n'
    rc, result, out = play(tmp_path, reports, files)
    assert rc == 0 and result['changed_paths'] == [str(reports / 'b.md')], out
    assert (reports / 'b.md').read_text() == '# B again\n'
    assert stat.S_IMODE(os.stat(str(reports / 'b.md')).st_mode) == 0o600
    assert sorted(os.listdir(str(reports))) == ['a.json', 'b.md']


def test_check_mode_writes_nothing_and_diff_shows_the_change(tmp_path):
    reports = tmp_path / 'r'
    rc, result, out = play(tmp_path, reports, {'a.md': 'new\n'}, '--check', '--diff')
    assert rc == 0 and result['changed'] is True, out
    assert not reports.exists()
    assert '+new' in out


def test_bad_input_is_refused_before_any_write(tmp_path):
    reports = tmp_path / 'r'
    rc, _result, out = play(tmp_path, reports, {'ok.md': 'x', '../escape.md': 'y'})
    assert rc != 0 and "files: '../escape.md' is not a file name" in out, out
    assert not reports.exists() and not (tmp_path / 'escape.md').exists()
