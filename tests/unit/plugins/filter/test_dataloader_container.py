"""issue 13: the container context's SELinux label (auto is z where SELinux is enabled on the
node, none elsewhere), its --volume values, and the engine named in the report."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_check as dc
from ansible_collections.gpufleet.tuning.plugins.filter import dataloader_container as dcc


@pytest.mark.parametrize('enforce_exists, selinuxenabled_rc, label', [
    # Debian, Ubuntu: no selinuxfs, no selinuxenabled (sh says 127)
    (False, 127, ''),
    (False, None, ''),
    # libselinux-utils installed, SELinux disabled in the kernel or the config
    (False, 1, ''),
    # RHEL/Rocky enforcing or permissive: selinuxfs mounted and selinuxenabled says so
    (True, 0, 'z'),
    # selinuxfs mounted, no utilities in a minimal node
    (True, 127, 'z'),
    # the utilities say enabled where the enforce file is not visible (a chroot, a container
    # without /sys/fs/selinux)
    (False, 0, 'z'),
])
def test_auto_is_z_where_selinux_is_enabled(enforce_exists, selinuxenabled_rc, label):
    assert dcc.dataloader_check_selinux_label('auto', enforce_exists, selinuxenabled_rc) == label


@pytest.mark.parametrize('setting, label', [('z', 'z'), ('Z', 'Z'), ('none', '')])
def test_an_explicit_setting_wins_over_the_detection(setting, label):
    assert dcc.dataloader_check_selinux_label(setting, False, 127) == label
    assert dcc.dataloader_check_selinux_label(setting, True, 0) == label


def test_an_unknown_setting_names_the_field():
    with pytest.raises(ValueError, match=r"^dataloader_check_container_selinux_label: 'yes' "
                                         r"is not one of auto, z, Z, none"):
        dcc.dataloader_check_selinux_label('yes', True, 0)


@pytest.mark.parametrize('label, read_only, volume', [
    ('', False, '/var/lib/w:/var/lib/w'),
    ('', True, '/s.py:/opt/s.py:ro'),
    ('z', False, '/var/lib/w:/var/lib/w:z'),
    ('z', True, '/s.py:/opt/s.py:ro,z'),
    ('Z', True, '/s.py:/opt/s.py:ro,Z'),
])
def test_volume_options_as_docker_and_podman_read_them(label, read_only, volume):
    source = '/s.py' if read_only else '/var/lib/w'
    target = '/opt/s.py' if read_only else '/var/lib/w'
    assert dcc.dataloader_check_volume(source, target, label, read_only) == volume


def test_the_report_names_the_engine_of_the_container_context():
    record = dict(ok=False, error='RuntimeError: ... No space left on device (28)',
                  exhausted='shm', nofile_soft=20000, nofile_hard=20000, engine='podman')
    report = dc.dataloader_check_report({'container': record, 'login': dict(
        ok=True, samples_per_s=1.0, peak_fds=10, nofile_soft=1024, nofile_hard=1024)},
        canary_enabled=False, host='n1')
    assert report['contexts']['container']['engine'] == 'podman'
    assert 'container (podman) FAILED (shm ran out) nofile 20000/20000' in report['summary']
    # a container's ENOSPC with no path is its /dev/shm (model/classify.answer)
    assert report['problems'] == ['container (podman): RuntimeError: ... No space left on '
                                  'device (28) (nofile 20000/20000; ceiling shm)']
    assert report['contexts']['container']['answer']['context'] == 'podman'
    assert report['summary'].startswith('n1: FAILED: container (podman) FAILED')
    assert '; login ok 1.00 samples/s' in report['summary']
