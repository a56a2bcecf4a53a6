"""container_caps: the non-root probe of a container (its command, its memlock and capability
sets) and the note on the audit's memlock rows (issue 33.4; nvidia-container-toolkit#2037)."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import container_caps as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes

LIMITS = ('Limit                     Soft Limit           Hard Limit           Units     \n'
          'Max open files            1048576              1048576              files     \n'
          'Max locked memory         8388608              8388608              bytes     \n')
# `docker run --cap-add IPC_LOCK --user 65534:65534 IMAGE cat /proc/self/limits
# /proc/self/status` on Debian 12 (cut): in the bounding set, not effective
NONROOT_STATUS = ('Name:\tcat\nUid:\t65534\t65534\t65534\t65534\nCapInh:\t0000000000000000\n'
                  'CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n'
                  'CapBnd:\t00000000a80465fb\nCapAmb:\t0000000000000000\n')
ROOT_STATUS = ('Uid:\t0\t0\t0\t0\nCapEff:\t00000000a80465fb\nCapBnd:\t00000000a80465fb\n')


def test_the_command_is_the_probe_commands_twin_as_a_non_root_user():
    probe = probes.container_command('docker', 'tiny:latest', ['--cap-add', 'IPC_LOCK'])
    assert cc.like(probe) == ['docker', 'run', '--rm', '--network=none', '--cap-add', 'IPC_LOCK',
                              '--user', '65534:65534', 'tiny:latest', 'cat', '/proc/self/limits',
                              '/proc/self/status']
    assert cc.like(probes.container_command('podman', 'x'))[-6:] == [
        '--user', '65534:65534', 'x', 'cat', '/proc/self/limits', '/proc/self/status']
    with pytest.raises(ValueError, match='not a container probe command'):
        cc.like(['runuser', '-l', 'u', '-c', 'cat /proc/self/limits'])


def test_a_non_root_process_with_ipc_lock_only_in_its_bounding_set():
    found = cc.parse(LIMITS + NONROOT_STATUS)
    assert found['uid'] == 65534 and found['user'] == '65534:65534'
    assert found['memlock'] == dict(soft=8388608, hard=8388608, human='8MiB:8MiB')
    assert found['ipc_lock'] is False and found['ipc_lock_bounding'] is True
    assert found['caps']['CapEff'] == '0000000000000000'
    text = cc.note(found)
    assert text.startswith('a non-root process (uid 65534) gets memlock 8MiB:8MiB and '
                           'CAP_IPC_LOCK is not in its effective set (only in its bounding set')
    assert 'this memlock is all it can lock' in text


def test_an_effective_ipc_lock_and_one_not_even_bounding():
    found = cc.parse(LIMITS + ROOT_STATUS)
    assert found['ipc_lock'] is True and found['uid'] == 0
    assert 'has CAP_IPC_LOCK effective: it can lock memory past memlock 8MiB:8MiB' in cc.note(found)
    found = cc.parse(LIMITS + ROOT_STATUS.replace('a80465fb', 'a80425fb'))
    assert found['ipc_lock'] is False and found['ipc_lock_bounding'] is False
    assert 'bounding' not in cc.note(found)


@pytest.mark.parametrize('output', ['', LIMITS, NONROOT_STATUS, 'exec: "cat": not found'])
def test_output_without_limits_or_capabilities_is_refused(output):
    with pytest.raises(ValueError, match='printed no limits and capabilities'):
        cc.parse(output)


@pytest.mark.parametrize('mask, expected', [('4000', True), ('a80465fb', True), ('a80425fb', False),
                                            (None, False), ('zz', False)])
def test_has_cap(mask, expected):
    assert cc.has_cap(mask, cc.CAP_IPC_LOCK) is expected


def test_annotate_adds_the_note_to_memlock_rows_of_probed_containers_only():
    rows = [dict(context='docker', item='memlock'), dict(context='docker', item='nofile'),
            dict(context='login', item='memlock'), dict(context='podman', item='memlock')]
    contexts = {'docker': {'nonroot': cc.parse(LIMITS + NONROOT_STATUS)}, 'login': {},
                'podman': {'nonroot': {'error': 'podman run failed (rc 125): no image'}}}
    cc.annotate(rows, contexts)
    assert rows[0]['note'].startswith('a non-root process (uid 65534) gets memlock 8MiB:8MiB')
    assert 'note' not in rows[1] and 'note' not in rows[2]
    assert rows[3]['note'] == 'non-root process not probed: podman run failed (rc 125): no image'
