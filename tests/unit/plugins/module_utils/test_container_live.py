"""container_limits.live: the throw-away container of docker_ulimits_info and
podman_ulimits_info (one helper for both runtimes)."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl

OUTPUT = ('Limit                     Soft Limit           Hard Limit           Units\n'
          'Max open files            65536                65536                files\n'
          'shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n')


class Failed(Exception):
    pass


class Module(object):
    def __init__(self, rc=0, out=OUTPUT, binary='/usr/bin/podman'):
        self.rc, self.out, self.binary, self.commands = rc, out, binary, []

    def get_bin_path(self, name):
        return self.binary

    def run_command(self, command, environ_update=None):
        self.commands.append(command)
        return self.rc, self.out, 'boom'

    def fail_json(self, **kwargs):
        raise Failed(kwargs)


def test_the_command_and_what_a_new_container_got():
    module = Module()
    live = ctl.live(module, 'podman', 'tiny', {}, ['--storage-driver=vfs'], ['--network=none'])
    assert module.commands == [['/usr/bin/podman', '--storage-driver=vfs', 'run', '--rm',
                                '--network=none', '--', 'tiny'] + ctl.PROBE_COMMAND]
    assert live['image'] == 'tiny' and live['shm_size'] == 65536 * 1024
    assert live['limits']['nofile']['soft'] == 65536


@pytest.mark.parametrize('module, says', [
    (Module(binary=None), 'image: the docker command is not installed'),
    (Module(rc=125), 'failed (rc 125): boom'),
    (Module(out='nothing'), 'image: no /proc/self/limits in the output of'),
])
def test_a_probe_that_cannot_run_fails_the_module_with_the_result(module, says):
    with pytest.raises(Failed) as failed:
        ctl.live(module, 'docker', 'busybox', {'path': '/x'})
    assert says in failed.value.args[0]['msg'] and failed.value.args[0]['path'] == '/x'
