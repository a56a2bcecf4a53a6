"""Issue 33.4: limits_audit probes a non-root process in each new container (docker, podman):
the memlock it gets and whether CAP_IPC_LOCK is in its effective set, and says on the memlock
rows that this memlock is all it can lock. The rule behind nvidia-container-toolkit#2037 on
the node's real dockerd: --cap-add reaches root's effective set, not a non-root user's."""
import re

from conftest import DOCKER, EXPECTED, run_module

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import container_caps


def test_the_audit_reports_the_memlock_and_capabilities_of_a_non_root_process(host):
    ok, result = run_module(host, 'gpufleet.tuning.limits_audit', {
        'profile': {'memlock': '8MiB', 'nofile': 8192}, 'user': 'root',
        'docker_image': 'tiny:latest', 'podman_image': 'localhost/tiny:latest'})
    assert ok, result['output']
    docker = result['contexts']['docker']
    found = docker['nonroot']
    assert found['command'] == ('docker run --rm --network=none --user 65534:65534 tiny:latest '
                                'cat /proc/self/limits /proc/self/status')
    assert found['uid'] == 65534
    # the container's memlock (daemon.json's default-ulimits, converge.yml): the same for the
    # non-root process as for the probe's root one
    want = EXPECTED['memlock']
    assert (found['memlock']['soft'], found['memlock']['hard']) == (want.soft, want.hard)
    assert found['memlock'] == dict(docker['limits']['memlock'])
    assert found['ipc_lock'] is False and found['caps']['CapEff'] == '0000000000000000'
    # Docker's default set has no IPC_LOCK, so not even in the bounding set
    assert found['ipc_lock_bounding'] is False
    rows = dict(((r['context'], r['item']), r) for r in result['rows'])
    assert rows[('docker', 'memlock')]['note'] == (
        'a non-root process (uid 65534) gets memlock 4MiB:8MiB and CAP_IPC_LOCK is not in its '
        'effective set, so this memlock is all it can lock (RDMA registration; NCCL falls back '
        'to TCP without an error when it is too small)')
    assert 'note' not in rows[('docker', 'nofile')] and 'note' not in rows[('login', 'memlock')]
    podman = result['contexts']['podman']
    assert podman['nonroot']['uid'] == 65534, podman
    assert podman['nonroot']['memlock'] == dict(podman['limits']['memlock'])
    assert podman['nonroot']['ipc_lock'] is False
    assert rows[('podman', 'memlock')]['note'].startswith('a non-root process (uid 65534) gets ')
    # what the second container costs, in the result (reported, not asserted: no timed tests)
    print('non-root probe: docker %.2f s, podman %.2f s'
          % (found['seconds'], podman['nonroot']['seconds']))


def test_cap_add_reaches_roots_effective_set_but_not_a_non_root_users(host):
    """The rule behind nvidia-container-toolkit#2037 on the node's real dockerd. The lab's node
    has no CAP_IPC_LOCK in its own bounding set, so runc refuses --cap-add IPC_LOCK in it; the
    same kernel rule is shown with NET_ADMIN, which the node has and Docker does not grant by
    default: root gets it effective, a non-root user only in the bounding set."""
    refused = host.run('%s cat /proc/self/status' % DOCKER.replace(
        'docker run', 'docker run --cap-add IPC_LOCK'))
    # the refusal's words differ per release: runc's "unable to apply caps" (bookworm),
    # "apply caps: operation not permitted" (bullseye), dockerd's own check "invalid CapAdd:
    # capability not supported ... CAP_IPC_LOCK" (trixie)
    assert refused.rc == 125 and re.search(r'apply caps|invalid CapAdd', refused.stderr), \
        refused.stderr
    net_admin = 12
    runner = DOCKER.replace('docker run', 'docker run --cap-add NET_ADMIN')
    read = 'cat /proc/self/limits /proc/self/status'
    as_root = container_caps.parse(host.check_output('%s %s' % (runner, read)))
    assert as_root['uid'] == 0 and container_caps.has_cap(as_root['caps']['CapEff'], net_admin)
    nonroot = container_caps.parse(host.check_output('%s %s' % (
        runner.replace('tiny:latest', '--user 65534:65534 tiny:latest'), read)))
    assert nonroot['uid'] == 65534 and nonroot['caps']['CapEff'] == '0000000000000000'
    assert container_caps.has_cap(nonroot['caps']['CapBnd'], net_admin)
