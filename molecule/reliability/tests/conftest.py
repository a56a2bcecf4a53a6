"""Helpers for the reliability scenario: the watched files, node commands, module and role runs,
service identities.

Modules and the role run through ansible and ansible-playbook, as users run them. Commands that
only look at or set up the node go through `docker exec` (the scenario's driver is docker): each
costs a tenth of a second instead of an ansible round trip.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SCENARIO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
    limits_model)  # noqa: E402
import scenario_support as support  # noqa: E402

USER = 'trainer'
UNIT = 'gpufleet-rel-sleeper.service'
BASELINE = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
BASE = {'limits_contexts': ['pam', 'systemd_system', 'systemd_user', 'docker'],
        'limits_units': [UNIT], 'limits_verify_user': USER,
        'limits_verify_docker_image': 'tiny:latest'}

# Every file PAM, systemd, dockerd, Podman, containerd, Slurm and CRI-O read limits from (and
# their directories, so that a file that appears is seen too, hidden temporary files included).
WATCHED_FILES = ['/etc/security/limits.conf', '/etc/systemd/system.conf',
                 '/etc/systemd/user.conf', '/etc/containers/containers.conf',
                 '/etc/default/docker']
WATCHED_DIRS = ['/etc/security/limits.d', '/etc/systemd/system.conf.d',
                '/etc/systemd/user.conf.d', '/etc/docker', '/etc/containers/containers.conf.d',
                '/etc/containerd', '/etc/slurm', '/etc/crio', '/etc/crio/crio.conf.d']
# Unit drop-in directories: every /etc/systemd/system/*.d (one that appears counts).
UNIT_DIR = '/etc/systemd/system'

SNAPSHOT = r'''
import hashlib, json, os, sys
files, dirs, unit_dir, mtimes = json.loads(sys.argv[1])
paths = list(files)
dirs = list(dirs) + sorted(os.path.join(unit_dir, n) for n in os.listdir(unit_dir)
                           if n.endswith('.d'))
out = {}
for d in dirs:
    if os.path.isdir(d):
        out[d] = 'dir'
        paths += [os.path.join(d, n) for n in os.listdir(d)]
for p in paths:
    if os.path.islink(p):
        out[p] = 'link:' + os.readlink(p)
    elif os.path.isfile(p):
        with open(p, 'rb') as handle:
            out[p] = hashlib.sha256(handle.read()).hexdigest()
        if mtimes:
            out[p] += ' mtime %d' % os.stat(p).st_mtime_ns
    elif os.path.isdir(p):
        out[p] = 'dir'
print(json.dumps(out, sort_keys=True))
'''


class NodeError(Exception):
    """A set-up or inspection command failed in the node (not a finding of a test)."""


def node_name(host):
    return host.backend.host


def node(host, command, check=True):
    """Run a shell command in the node container; returns (rc, stdout+stderr)."""
    proc = subprocess.run(['docker', 'exec', node_name(host), 'bash', '-c', command],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    if check and proc.returncode != 0:
        raise NodeError('%s failed (%d): %s' % (command, proc.returncode, proc.stdout))
    return proc.returncode, proc.stdout


def output(host, command):
    """The output of a shell command in the node, which must succeed."""
    return node(host, command)[1]


def snapshot(host, mtimes=False):
    """{path: sha256 | 'dir' | 'link:target'} of every watched file and directory entry; with
    ``mtimes``, a file's value also holds its modification time (a rewrite with the same bytes
    shows)."""
    arg = json.dumps([WATCHED_FILES, WATCHED_DIRS, UNIT_DIR, mtimes])
    proc = subprocess.run(['docker', 'exec', node_name(host), 'python3', '-c', SNAPSHOT, arg],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True)
    return json.loads(proc.stdout)


def snapshot_diff(before, after):
    """Readable differences: changed, removed and new paths."""
    changed = sorted(p for p in before if p in after and before[p] != after[p])
    removed = sorted(p for p in before if p not in after)
    new = sorted(p for p in after if p not in before)
    return {'changed': changed, 'removed': removed, 'new': new}


def run_module(host, module, args, check=False, diff=False):
    """(ok, result dict with 'output', printed output) of a collection module on the node."""
    return support.run_module(host, module, args, check=check, diff=diff)


def run_role(host, check=False, diff=False, **variables):
    """role.yml with BASE plus ``variables``; returns (rc, whitespace-normalised output)."""
    extra = dict(BASE, **variables)
    command = ['ansible-playbook', os.path.join(SCENARIO, 'role.yml'), '-e', json.dumps(extra),
               '--limit', host.backend.host]
    if check:
        command.append('--check')
    if diff:
        command.append('--diff')
    proc = subprocess.run(support.ansible_command(host, command), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    return proc.returncode, ' '.join(proc.stdout.replace('\\n', ' ').split())


def service_identity(host, unit, user_manager=False):
    """[MainPID, ActiveEnterTimestamp] of a unit: both change when it restarts."""
    out = output(host, 'systemctl show -p MainPID -p ActiveEnterTimestamp %s' % unit)
    props = dict(line.split('=', 1) for line in out.splitlines() if '=' in line)
    return [props.get('MainPID'), props.get('ActiveEnterTimestamp')]


def manager_reloads(host, pid=1):
    """How many times the systemd manager with this PID logged a reload or re-execution."""
    out = output(host, "journalctl --no-pager -q _PID=%s | grep -c -E 'Reloading|Reexecuting' "
                       "|| true" % pid)
    return int(out.strip() or 0)


def services(host):
    """Identities of everything the role may restart, and the managers' reload counts."""
    names = ['docker.service', 'systemd-logind.service', 'user@1001.service', UNIT]
    state = dict((name, service_identity(host, name)) for name in names)
    state['system manager reloads'] = manager_reloads(host)
    state['user manager reloads'] = manager_reloads(host, state['user@1001.service'][0])
    return state


def login_limits(host, user=USER):
    out = output(host, "runuser -l %s -c 'cat /proc/self/limits'" % user)
    return limits_model.parse_proc_limits(out)


def service_limits(host, user=USER):
    out = output(host, 'systemd-run --wait --pipe --quiet -p User=%s cat /proc/self/limits'
                 % user)
    return limits_model.parse_proc_limits(out)


def container_limits(host):
    out = output(host, 'docker run --rm --network=none tiny:latest cat /proc/self/limits')
    return limits_model.parse_proc_limits(out)


def unit_limits(host, unit=UNIT):
    pid = output(host, 'systemctl show -p MainPID --value %s' % unit)
    out = output(host, 'cat /proc/%s/limits' % pid.strip())
    return limits_model.parse_proc_limits(out)


@pytest.fixture(scope='module')
def baseline(host):
    """The converged node's watched files, saved once (tar keeps modes and mtimes); returns a
    function that puts them back exactly (files that appeared are removed) and starts dockerd
    again when a case restarted it."""
    node(host, 'for p in %s %s %s/*.d; do if [ -e $p ]; then echo $p; fi; done '
               '| tar -cpf /root/reliability-baseline.tar -T -'
         % (' '.join(WATCHED_FILES), ' '.join(WATCHED_DIRS), UNIT_DIR))
    saved = snapshot(host)
    dockerd = service_identity(host, 'docker.service')

    def restore():
        current = snapshot(host)
        if current != saved:
            diff = snapshot_diff(saved, current)
            for path in sorted(diff['new'], reverse=True):
                node(host, 'rm -rf %s' % path)
            node(host, 'tar -xpf /root/reliability-baseline.tar -C /')
            assert snapshot(host) == saved
        if service_identity(host, 'docker.service') != dockerd:
            # dockerd was restarted with the bad file: start it again with the restored one
            node(host, 'systemctl reset-failed docker.service; systemctl restart docker.service '
                       "&& timeout 60 sh -c 'until docker info >/dev/null 2>&1; do sleep 1; done'")
            dockerd[:] = service_identity(host, 'docker.service')
    return restore
