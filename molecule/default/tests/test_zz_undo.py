"""playbooks/undo_limits.yml on the converged node (issue 31 item 22, "a way back").

Named test_zz_* so that it runs LAST in the scenario (pytest takes the files in alphabetical
order): it takes the collection's limits off the node, checks the node's defaults are back,
then runs converge.yml again so that the node ends converged. The node is converged before
any test runs, so its files from before the first converge cannot be checksummed here; the
test records what the contexts give now, runs the playbook with --check --diff (nothing may
change), then for real."""
import json
import os
import re
import subprocess

from conftest import FILES, USER, parse
from scenario_support import ansible_command

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'undo_limits.yml')
CONVERGE = os.path.join(ROOT, 'molecule', 'default', 'converge.yml')
UNIT_DROPINS = 'find /etc/systemd/system -path "*.d/90-gpufleet-tuning.conf"'
# backups as safe_file (and ansible's backup_local) name them: NAME.PID.DATE~
BACKUP = re.compile(r'\.\d+\.\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d~$')


def backups_in_etc(host):
    return sorted(p for p in host.check_output('find /etc -name "*~"').split() if BACKUP.search(p))


def playbook(host, path, *extra):
    cmd = ansible_command(host, ['ansible-playbook', path, '--limit', host.backend.host]
                          + list(extra))
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)


def login(host):
    return parse(host.check_output("runuser -l %s -c 'cat /proc/self/limits'" % USER))


def service(host):
    return parse(host.check_output('systemd-run --wait --pipe --quiet -p User=%s '
                                   'cat /proc/self/limits' % USER))


def snapshot(host):
    paths = FILES + host.check_output(UNIT_DROPINS).split()
    return dict((path, host.file(path).content_string if host.file(path).exists else None)
                for path in paths)


def test_undo_takes_the_profile_back_then_converge_puts_it_again(host):
    before = snapshot(host)
    assert login(host)['nofile'].soft == 16384 and service(host)['nofile'].soft == 16384

    checked = playbook(host, PLAYBOOK, '--check', '--diff')
    assert checked.returncode == 0, checked.stdout[-6000:]
    assert 'Would change (check mode)' in checked.stdout, checked.stdout[-4000:]
    assert snapshot(host) == before, 'check mode changed files'
    assert login(host)['nofile'].soft == 16384

    done = playbook(host, PLAYBOOK)
    assert done.returncode == 0, done.stdout[-6000:]
    # issue 39 item 6: the undo takes the backups of what it removed and its own; those left
    # are of files that stay, at most 5 of each, and the playbook says where
    left = backups_in_etc(host)
    for path in left:
        assert host.file(BACKUP.sub('', path)).exists, ('a backup of a file that is gone', left)
        assert path in done.stdout, (path, done.stdout[-3000:])
    for base in set(BACKUP.sub('', path) for path in left):
        assert len([p for p in left if p.startswith(base + '.')]) <= 5, left
    assert 'of the collection\'s removed; kept beside the files that stay' in done.stdout
    for path in FILES[:3]:
        assert not host.file(path).exists, path
    assert host.check_output(UNIT_DROPINS).strip() == ''
    assert not host.file('/etc/containers/containers.conf.d/90-gpufleet-tuning.conf').exists
    daemon = host.file(FILES[3])
    if daemon.exists:
        data = json.loads(daemon.content_string or '{}')
        assert 'default-shm-size' not in data or data['default-shm-size'] != '1G', data
        assert (data.get('default-ulimits') or {}).get('nofile', {}).get('Soft') != 16384, data
    # the node's own defaults again: soft nofile 1024 for a login and a service
    assert login(host)['nofile'].soft == 1024
    assert service(host)['nofile'].soft == 1024
    # a second run finds nothing of the collection left
    again = playbook(host, PLAYBOOK)
    assert again.returncode == 0 and 'nothing of the collection was left' in again.stdout, \
        again.stdout[-4000:]

    converged = playbook(host, CONVERGE)
    assert converged.returncode == 0, converged.stdout[-6000:]
    assert login(host)['nofile'].soft == 16384 and service(host)['nofile'].soft == 16384
