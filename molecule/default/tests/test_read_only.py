"""The project's rule, measured on the node (issue 31 item 20): check mode and the read-only
modules leave the node's file tree as it was, outside Ansible's own temporary directory.

The node's tree (path, size, mtime, mode, owner, group of every entry) is listed before and
after `tune_gpu_nodes.yml --check --diff --tags limits`, every read-only module (limits_audit
with its Docker probe, by itself and through audit_limits.yml twice so that the second run
reuses the proof the controller kept, effective_limits, pam_limits_info, systemd_limits_info,
docker_ulimits_info, podman_ulimits_info), and the two lists must be the same. No cache of the
collection (/var/cache/gpufleet) appears."""
import json
import os
import subprocess

from conftest import USER
from scenario_support import ansible_command, run_module

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PROFILE = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
BEFORE, AFTER = '/tmp/gpufleet-tree-before', '/tmp/gpufleet-tree-after'

# What the listing leaves out, and why. Each is a tree the node changes on its own or that the
# rule itself names as outside it; nothing of the collection's is among them.
EXCLUDED = (
    '/proc', '/sys', '/dev', '/run',     # kernel and runtime state (virtual or tmpfs)
    '/tmp', '/var/tmp',                  # temporary files (the listings are kept in /tmp)
    '/root/.ansible/tmp',                # Ansible's remote temporary directory (root and
    '/home/*/.ansible/tmp',              # become: root here; a user's, were one used)
    '/var/log/journal',                  # journald's files: every probe logs
    # The Docker probe starts a container: dockerd and containerd record it in their own
    # state (layers, the container's directory, its task, the image's last use, the content
    # store's metadata). That is the runtime's state, written by the daemons because a
    # container ran, not a file the collection writes; any container start changes it.
    '/var/lib/docker', '/var/lib/containerd',
)


def listing_command(output):
    prune = ' -o '.join("-path '%s'" % path for path in EXCLUDED)
    # %T@: mtime with its fraction; %m: the mode's permission bits; %y: the type
    return ("find / \\( %s \\) -prune -o -printf '%%p\\t%%y\\t%%s\\t%%T@\\t%%m\\t%%u\\t%%g\\n' "
            "| LC_ALL=C sort > %s" % (prune, output))


def run_playbook(host, playbook, *args):
    cmd = ansible_command(host, ['ansible-playbook', os.path.join(ROOT, 'playbooks', playbook)]
                          + list(args) + ['--limit', host.backend.host])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-5000:]
    return proc.stdout


def test_check_mode_and_read_only_modules_leave_the_node_unchanged(host, tmp_path):
    host.check_output(listing_command(BEFORE))

    # the tune in check mode, with a profile above the node's (the role keeps higher values,
    # so a lower one would plan no change) so that it has changes to report
    extra = {'limits_profile': {'nofile': 18000, 'nproc': 9000, 'memlock': '8MiB'},
             'limits_contexts': ['pam', 'systemd_system', 'systemd_user', 'docker'],
             'limits_verify_user': USER}
    out = run_playbook(host, 'tune_gpu_nodes.yml', '--check', '--diff', '--tags', 'limits',
                       '-e', json.dumps(extra))
    assert 'DefaultLimitNOFILE=18000' in out, out[-5000:]

    # each read-only module; limits_audit with its Docker probe and default probe_max_age
    calls = [
        ('gpufleet.tuning.limits_audit', {'profile': PROFILE, 'user': USER,
                                          'docker_image': 'tiny:latest'}),
        ('gpufleet.tuning.effective_limits', {
            'user': USER, 'contexts': ['login', 'service', 'user_manager', 'docker'],
            'docker_image': 'tiny:latest', 'units': ['docker.service'], 'expect': PROFILE}),
        ('gpufleet.tuning.pam_limits_info', {'user': USER}),
        ('gpufleet.tuning.systemd_limits_info', {'scope': 'system', 'units': ['docker.service']}),
        ('gpufleet.tuning.systemd_limits_info', {'scope': 'user', 'user': USER}),
        # (an empty argument string would reach ansible as raw params: name a default)
        ('gpufleet.tuning.docker_ulimits_info', {'unit': 'docker.service'}),
        ('gpufleet.tuning.podman_ulimits_info', {'run_options': []}),
    ]
    results = {}
    for module, args in calls:
        ok, result, output = run_module(host, module, args)
        assert ok, output
        assert not result.get('changed'), (module, result)
        results.setdefault(module, result)
    audit = results['gpufleet.tuning.limits_audit']
    assert audit['errors'] == [] and 'docker' in audit['contexts'], audit
    proof = audit['proofs']['docker']
    assert sorted(proof) == ['key', 'output', 'proved_at']

    # the proof passed back: reused, no container, still nothing written
    ok, again, output = run_module(host, 'gpufleet.tuning.limits_audit', {
        'profile': PROFILE, 'user': USER, 'docker_image': 'tiny:latest',
        'probe_max_age': 3600, 'probe_proofs': {'docker': proof}})
    assert ok, output
    assert 'reused' in again['contexts']['docker'] and again['proofs']['docker'] == proof

    # the audit playbook twice (the playbook's probe_max_age, 3600): the second run reuses the
    # proof the controller kept
    variables = {'limits_profile': PROFILE, 'limits_verify_user': USER,
                 'limits_verify_docker_image': 'tiny:latest',
                 'audit_reports_dir': str(tmp_path / 'reports')}
    for _run in range(2):
        run_playbook(host, 'audit_limits.yml', '-e', json.dumps(variables))
    with open(str(tmp_path / 'reports' / 'limits-audit.json')) as handle:
        rows = json.load(handle)['hosts'][host.backend.host]['rows']
    assert set(r['how'] for r in rows if r['context'] == 'docker') == {'reused'}, rows
    assert (tmp_path / 'reports' / 'proofs' / ('%s.json' % host.backend.host)).exists()

    host.check_output(listing_command(AFTER))
    diff = host.run('diff %s %s' % (BEFORE, AFTER))
    host.run('rm -f %s %s' % (BEFORE, AFTER))
    assert diff.rc == 0, 'the node changed (< before, > after):\n' + diff.stdout[-8000:]
    assert not host.file('/var/cache/gpufleet').exists
