"""runtime_live: running containers and live-restore from one `docker info` call."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_live as rl


@pytest.mark.parametrize('text, parsed', [
    ('0 0 false\n', (0, False)),
    # paused containers are listed by `docker ps` too, so they count
    ('3 1 true\n', (4, True)),
    # a dockerd too old for a field prints <no value>; what it lacks is None
    ('<no value> <no value> null\n', (None, None)),
    ('', (None, None)),
    ('2 0\n', (None, None)),
])
def test_docker_info_fields(text, parsed):
    assert rl.parse_docker_info(text) == parsed


class Host(object):
    def __init__(self, rc, out):
        self.rc, self.out, self.calls = rc, out, []

    def get_bin_path(self, name):
        return '/usr/bin/' + name

    def run_command(self, args, environ_update=None):
        self.calls.append(args)
        return self.rc, self.out, ''


def test_one_docker_call_gives_the_count_and_live_restore():
    host = Host(0, '2 0 true\n')
    assert rl.running_containers(host) == {'count': 2, 'live_restore': True}
    assert host.calls == [['/usr/bin/docker', 'info', '--format', rl.DOCKER_INFO_FORMAT]]


def test_a_dockerd_that_does_not_answer_falls_back_to_daemon_json():
    host = Host(1, '')
    assert rl.running_containers(host, live_restore_file=True) == {'count': None,
                                                                   'live_restore': True}
    assert rl.running_containers(host) == {'count': None, 'live_restore': False}


class NoBinaries(Host):
    def get_bin_path(self, name):
        return None


@pytest.mark.parametrize('rc, out, said', [
    (0, '', None),
    (0, 'a1\nb2\n', '2 pod sandbox(es) exist'),
    (1, 'connect: no such file', 'the pods could not be listed (crictl: connect: no such file)'),
])
def test_crio_pods_busy_asks_crictl_for_sandboxes(rc, out, said):
    host = Host(rc, out)
    assert rl.crio_pods_busy(host) == said
    assert host.calls == [['/usr/bin/crictl', 'pods', '-q']]
    assert rl.crio_pods_busy(NoBinaries(0, '')) == \
        'the pods could not be listed (crictl: not installed)'


@pytest.mark.parametrize('rc, out, said', [
    (0, '', None),
    (0, 'sandbox\ncontainer\n', '2 pod container(s) and sandbox(es) exist'),
    (1, 'ctr: no socket', 'the pods could not be listed (ctr: ctr: no socket)'),
])
def test_containerd_pods_busy_lists_the_k8s_namespace(rc, out, said):
    host = Host(rc, out)
    assert rl.containerd_pods_busy(host) == said
    assert host.calls == [['ctr', '-n', 'k8s.io', 'containers', 'ls', '-q']]
