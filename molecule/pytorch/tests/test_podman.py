"""issue 13: the DataLoader check's container context with Podman (Debian's podman in the node,
rootful, vfs storage on a tmpfs; images/load-torch-image.sh loaded the torch image with
`podman load`). The job of test_container.py (1 rank x 2 workers, batches of four 8 MB
tensors) fails at Podman's own defaults (a 64 MB /dev/shm) with PyTorch's shared-memory error,
and passes after the limits role's podman context wrote the containers.conf.d drop-in with the
job's shm_size; both results name the engine. The bind mounts carry `:z` when asked (Podman
accepts it without SELinux) and none with `auto` on this node, which has no SELinux. An engine
that is not on the node, or an image missing from Podman's store or without python and torch,
is refused naming the field before anything runs."""
import re

import pytest

from container_support import (IMAGE, MB, SHM_ERRORS, assert_nothing_ran, results,
                               run_bad_image, volumes)

DROPIN = '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'
WORKDIR = '/var/lib/gpufleet/dataloader-check'
SCRIPT = '/usr/local/libexec/gpufleet/dataloader_smoke.py'


def test_podman_has_the_image_in_its_own_store(host):
    out = host.check_output('podman run --rm --network none %s python3 -W ignore -c '
                            '"import torch; print(torch.__version__)"', IMAGE)
    assert out.startswith('2.13.0')
    assert host.check_output("podman info --format '{{.Store.GraphDriverName}}'") == 'vfs'
    assert host.check_output('findmnt -no FSTYPE /var/lib/containers/storage') == 'tmpfs'


def test_before_tuning_the_job_fails_in_a_podman_container_for_want_of_shm(host):
    data = results(host, 'container-podman-before')
    run = data['contexts']['container']
    assert run['engine'] == 'podman'
    assert run['command'][3] == 'podman'          # after timeout --kill-after=30 SECONDS
    assert run['ok'] is False
    assert run['exhausted'] == 'shm', run['error']
    assert any(text in run['error'] for text in SHM_ERRORS), run['error']
    # Podman's default shm_size "65536k", which Podman reads in powers of 1000: 65,536,000
    # bytes (Docker's 64 MB is 64 MiB)
    assert run['shm_size_bytes'] == 65536000
    # rootful Podman gives containers its own hard nofile as soft and hard (here the
    # sandbox's 20000), not Docker's inherited 1024:524288
    assert run['nofile_soft'] == run['nofile_hard'] > 1024
    assert run['uid'] != 0
    assert 'container (podman) FAILED (shm ran out)' in data['summary']
    # auto on a node without SELinux: no label on the mounts
    assert run['selinux_label'] == ''
    assert volumes(run['command']) == ['%s:/opt/gpufleet/dataloader_smoke.py:ro' % SCRIPT,
                                       '%s:%s' % (WORKDIR, WORKDIR)]


def test_after_the_limits_role_the_same_job_passes_in_a_podman_container(host):
    data = results(host, 'container-podman')
    run = data['contexts']['container']
    assert run['engine'] == 'podman'
    assert run['ok'] is True, run['error']
    assert data['ok'] is True and data['problems'] == []
    assert run['samples'] == 6 and run['samples_per_s'] > 0
    assert run['shm_size_bytes'] == 512 * MB      # shm_size from the job (job_shm_size 512M)
    # The job needs more than 64 MB: the same job failed for want of it before the tuning. The
    # sampler reads /dev/shm every 50 ms and can miss the moment of the highest use (one CI
    # run saw 61.1 MB), so this asks only that it saw more than one 32 MB batch in flight.
    assert run['peak_shm_bytes'] > 32 * MB
    # at least the profile's 16384: Podman's own default (1048576, capped at the podman
    # process's limits, 20000 here) is kept, never lowered to it (issue 39.1)
    assert run['nofile_soft'] >= 16384 and run['nofile_hard'] >= 16384 and run['uid'] != 0
    assert data['job']['contexts']['container']['fits'] is True
    assert 'container (podman) ok' in data['summary']
    # the explicit z, for real: Podman took the relabel option on both mounts
    assert run['selinux_label'] == 'z'
    assert volumes(run['command']) == ['%s:/opt/gpufleet/dataloader_smoke.py:ro,z' % SCRIPT,
                                       '%s:%s:z' % (WORKDIR, WORKDIR)]
    dropin = host.file(DROPIN).content_string
    assert 'shm_size = "%d"' % (512 * MB) in dropin
    # each side at least the profile's 16384: Podman's own default (1048576, capped at the
    # podman process's limits) is kept where it is higher (issue 39.1)
    found = re.search(r'default_ulimits = \["nofile=(\d+):(\d+)", "nproc=(\d+):(\d+)"\]', dropin)
    assert found and all(int(v) >= 16384 for v in found.groups()), dropin


def test_a_new_podman_container_gets_the_drop_in(host):
    out = host.check_output("podman run --rm --network none %s sh -c "
                            "\"df -k /dev/shm | tail -n 1; grep 'open files' /proc/self/limits\"",
                            IMAGE)
    assert out.splitlines()[0].split()[1] == str(512 * 1024)
    soft, hard = out.splitlines()[1].split()[3:5]
    assert int(soft) >= 16384 and int(hard) >= 16384, out     # kept above the profile (39.1)


def test_podman_gives_nproc_1048576_when_default_ulimits_leave_it_out(host):
    """Why the scenario's profile has nproc: with default_ulimits set, Podman fills in nproc
    1048576 for a rootful container, which runc cannot set where root lacks CAP_SYS_RESOURCE
    (this node container), and the container does not start."""
    conf = '/tmp/gpufleet-nofile-only.conf'
    host.check_output("printf '%%s\\n' '[containers]' 'default_ulimits = [\"nofile=16384:16384\"]' "
                      "'[engine]' 'cgroup_manager = \"cgroupfs\"' 'events_logger = \"file\"' >%s",
                      conf)
    # CONTAINERS_CONF: that file instead of containers.conf and its drop-ins
    run = host.run('CONTAINERS_CONF=%s podman run --rm --network none %s true', conf, IMAGE)
    assert run.rc != 0
    assert 'error setting rlimit type 6: operation not permitted' in run.stderr


@pytest.mark.parametrize('image, said', [
    ('localhost/tiny:latest', 'exit status'),
    ('gpufleet-no-such-image:none', 'is not an image on this node (podman image inspect'),
])
def test_an_image_missing_in_podman_or_without_torch_is_refused(host, image, said):
    host.check_output('podman image exists localhost/tiny:latest || '
                      'podman import /opt/gpufleet/tiny-rootfs.tar localhost/tiny:latest')
    before = host.check_output('podman ps -aq --no-trunc | sort')
    out = run_bad_image(host, '-e', 'dataloader_check_container_engine=podman',
                        '-e', 'dataloader_check_container_image=' + image)
    assert 'dataloader_check_container_image: %s' % image in out, out[-2000:]
    assert said in out, out[-2000:]
    assert_nothing_ran(host, 'podman', before)


def test_podman_not_on_the_node_is_refused_naming_the_engine(host):
    before = host.check_output('podman ps -aq --no-trunc | sort')
    host.check_output('mv /usr/bin/podman /usr/bin/podman.away')
    try:
        out = run_bad_image(host, '-e', 'dataloader_check_container_engine=podman',
                            '-e', 'dataloader_check_container_image=' + IMAGE)
    finally:
        host.check_output('mv /usr/bin/podman.away /usr/bin/podman')
    assert ('dataloader_check_container_engine: podman is not on this node (not on PATH)'
            in out), out[-2000:]
    assert 'Nothing was run' in out
    assert_nothing_ran(host, 'podman', before)
