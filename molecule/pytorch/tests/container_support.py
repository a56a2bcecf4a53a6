"""What the container context's tests share (test_container.py: Docker, test_podman.py:
Podman): where the fetched results are, the image, and running bad_image.yml."""
import json
import os
import subprocess
import sys

ROOT = os.environ.get('MOLECULE_PROJECT_DIRECTORY',
                      os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
RESULTS = os.path.join(ROOT, 'build', 'molecule', 'pytorch', 'results')
sys.path.insert(0, os.path.join(ROOT, 'tests'))
from scenario_support import ansible_command  # noqa: E402  pylint: disable=wrong-import-position
IMAGE = 'gpufleet-torch:debian12'
SHM_ERRORS = ('No space left on device', 'Bus error', 'insufficient shared memory')
MB = 1024 * 1024


def results(host, folder):
    """The DataLoader check's results fetched to RESULTS/folder for this node."""
    with open(os.path.join(RESULTS, folder, '%s.json' % host.check_output('hostname'))) as handle:
        return json.load(handle)


def volumes(command):
    """The --volume values of a container command line."""
    return [command[i + 1] for i, arg in enumerate(command) if arg == '--volume']


def run_bad_image(host, *extra):
    """bad_image.yml (the check with the container context) with extra -e options; it must
    fail. Returns its output."""
    cmd = ansible_command(host, ['ansible-playbook',
                                 os.path.join(ROOT, 'molecule', 'pytorch', 'bad_image.yml'),
                                 '--limit', host.backend.host] + list(extra))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode != 0, proc.stdout[-2000:]
    return proc.stdout


def assert_nothing_ran(host, engine, before):
    """No check user, script or work directory of bad_image.yml, and the same containers."""
    assert host.run('getent passwd gpufleet-badimage').rc == 2
    assert not host.file('/usr/local/libexec/gpufleet-badimage').exists
    assert not host.file('/var/lib/gpufleet-badimage').exists
    assert host.check_output('%s ps -aq --no-trunc | sort', engine) == before


def classify_unit(host, unit, directory):
    """The answer of playbooks/classify_failure.yml for a systemd unit of this node."""
    return _answer(host, dict(classify_unit=unit), directory)


def _answer(host, variables, directory):
    cmd = ansible_command(host, [
        'ansible-playbook', os.path.join(ROOT, 'playbooks', 'classify_failure.yml'),
        '--limit', host.backend.host, '-e', json.dumps(dict(
            variables, gpufleet_hosts='all', classify_answer_dir=str(directory)))])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(os.path.join(str(directory), '%s.json' % host.backend.host)) as handle:
        return json.load(handle)


def classify(host, user, text, context, directory):
    """The answer of playbooks/classify_failure.yml (issue 41) for ``user`` on this node, with
    ``text`` as the job's log, as the playbook writes it to its classify_answer_dir."""
    log = os.path.join(str(directory), 'job.log')
    with open(log, 'w') as handle:
        handle.write(text)
    return _answer(host, dict(classify_log=log, classify_context=context,
                              limits_verify_user=user), directory)
