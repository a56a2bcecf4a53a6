"""issue 13: the DataLoader check's container context for real, with an image with python and
torch built here without a registry (images/build-torch-image.sh, loaded by prepare.yml). The
same job (1 rank x 2 workers, batches of four 8 MB tensors) fails at Docker's defaults (a 64 MB
/dev/shm) with PyTorch's own shared-memory error, and passes after the limits role gave Docker
the job's /dev/shm (default-shm-size); an image without torch is refused naming the field
before anything runs."""
import json

import pytest

from container_support import (IMAGE, MB, SHM_ERRORS, assert_nothing_ran, results,
                               run_bad_image, volumes)


def test_the_image_has_torch_and_is_one_small_layer(host):
    out = host.check_output('docker run --rm --pull never %s python3 -W ignore -c '
                            '"import torch; print(torch.__version__)"', IMAGE)
    assert out.startswith('2.13.0')
    layers = json.loads(host.check_output(
        "docker image inspect --format '{{json .RootFS.Layers}}' %s", IMAGE))
    assert len(layers) == 1
    assert int(host.check_output("docker image inspect --format '{{.Size}}' %s", IMAGE)) < 900 * MB


def test_before_tuning_the_job_fails_in_the_container_for_want_of_shm(host):
    run = results(host, 'container-before')['contexts']['container']
    assert run['ok'] is False
    assert run['exhausted'] == 'shm', run['error']
    assert any(text in run['error'] for text in SHM_ERRORS), run['error']
    assert run['shm_size_bytes'] == 64 * MB       # Docker's default /dev/shm
    assert run['torch_version'].startswith('2.13.0') and run['uid'] != 0


def test_after_tuning_the_same_job_passes_in_the_container(host):
    data = results(host, 'container')
    run = data['contexts']['container']
    assert run['ok'] is True, run['error']
    assert data['ok'] is True and data['problems'] == []
    assert run['samples'] == 6 and run['samples_per_s'] > 0
    # default-shm-size from the job (job_shm_size: 512M), and the job really used more than
    # the 64 MB it had before
    assert run['shm_size_bytes'] == 512 * MB
    # The job needs more than 64 MB: the same job failed for want of it before the tuning. The
    # sampler reads /dev/shm every 50 ms and can miss the moment of the highest use (one CI
    # run saw 61.1 MB), so this asks only that it saw more than one 32 MB batch in flight.
    assert run['peak_shm_bytes'] > 32 * MB
    # at least the profile's 16384: a new container's higher limits (containerd's) are kept
    assert run['nofile_soft'] >= 16384 and run['uid'] != 0
    assert run['wall_s'] > 0
    assert data['job']['contexts']['container']['fits'] is True
    config = json.loads(host.file('/etc/docker/daemon.json').content_string)
    assert config['default-shm-size'] == '512M'
    # issue 13: the explicit SELinux label z on both mounts, which Docker takes without
    # SELinux; the run before (auto, a node without SELinux) had none
    assert run['engine'] == 'docker' and run['selinux_label'] == 'z'
    assert volumes(run['command']) == [
        '/usr/local/libexec/gpufleet/dataloader_smoke.py:/opt/gpufleet/dataloader_smoke.py:ro,z',
        '/var/lib/gpufleet/dataloader-check:/var/lib/gpufleet/dataloader-check:z']
    before = results(host, 'container-before')['contexts']['container']
    assert before['selinux_label'] == ''
    assert volumes(before['command']) == [
        '/usr/local/libexec/gpufleet/dataloader_smoke.py:/opt/gpufleet/dataloader_smoke.py:ro',
        '/var/lib/gpufleet/dataloader-check:/var/lib/gpufleet/dataloader-check']


@pytest.mark.parametrize('image, said', [
    ('gpufleet-notorch:test', "No module named 'torch'"),
    ('tiny:latest', 'exit status'),
    ('gpufleet-no-such-image:none', 'is not an image on this node'),
])
def test_an_image_without_torch_is_refused_naming_the_field_before_anything_runs(host, image,
                                                                                 said):
    host.check_output('docker image inspect tiny:latest >/dev/null 2>&1 || '
                      'docker import /opt/gpufleet/tiny-rootfs.tar tiny:latest')
    host.check_output('docker image inspect gpufleet-notorch:test >/dev/null 2>&1 || '
                      '{ docker run --name gpufleet-notorch %s rm -rf '
                      '/usr/local/lib/python3.11/dist-packages/torch && '
                      'docker commit gpufleet-notorch gpufleet-notorch:test && '
                      'docker rm gpufleet-notorch; } >/dev/null', IMAGE)
    before = host.check_output('docker ps -aq --no-trunc | sort')
    out = run_bad_image(host, '-e', 'dataloader_check_container_image=' + image)
    assert 'dataloader_check_container_image: %s' % image in out, out[-2000:]
    assert said in out, out[-2000:]
    # nothing ran: no check user, no script, no work directory, no container left
    assert_nothing_ran(host, 'docker', before)
