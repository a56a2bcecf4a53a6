"""limits_docker_restart=when_idle never restarts dockerd while a container runs: the run writes
daemon.json, reports the restart as pending and leaves dockerd and the container alone; once
the node is idle the next run restarts dockerd and new containers get the profile."""
import re

from conftest import BASELINE, container_limits, node, output, run_role, service_identity

LOWER = dict(BASELINE, nofile=12288)
BUSY = 'gpufleet-rel-busy'
DOCKER_ONLY = {'limits_contexts': ['docker'], 'limits_units': [],
               'limits_docker_restart': 'when_idle'}


def started_at(host, name):
    out = output(host, "docker inspect -f '{{.State.Running}} {{.State.StartedAt}}' %s" % name)
    return out.strip()


def test_dockerd_waits_for_the_idle_node(host):
    node(host, 'docker rm -f %s >/dev/null 2>&1 || true' % BUSY)
    node(host, 'docker run -d --name %s --network=none tiny:latest sleep 1000' % BUSY)
    try:
        dockerd, busy = service_identity(host, 'docker.service'), started_at(host, BUSY)
        assert busy.startswith('true ')
        rc, out = run_role(host, limits_profile=LOWER, **DOCKER_ONLY)
        assert rc == 0, out[-3000:]
        assert re.search(r'[Pp]ending\W+docker|docker\W[^.]*pending', out), out[-3000:]
        # daemon.json has the profile, but dockerd was not restarted: same main PID and start
        # time, the container kept running since the same moment, new containers get the old
        # limits.
        assert '"Soft": 12288' in node(host, 'cat /etc/docker/daemon.json')[1]
        assert service_identity(host, 'docker.service') == dockerd
        assert started_at(host, BUSY) == busy
        assert container_limits(host)['nofile'].hard == BASELINE['nofile']
    finally:
        node(host, 'docker rm -f %s' % BUSY)
    # The node is idle now: the next run finds the restart still owed and does it.
    rc, out = run_role(host, limits_profile=LOWER, **DOCKER_ONLY)
    assert rc == 0, out[-3000:]
    assert not re.search(r'[Pp]ending\W+docker', out), out[-3000:]
    assert service_identity(host, 'docker.service')[0] != dockerd[0]
    limits = container_limits(host)['nofile']
    assert (limits.soft, limits.hard) == (12288, 12288)
    # Back to the converged profile for the tests that follow.
    rc, out = run_role(host, limits_profile=BASELINE, **DOCKER_ONLY)
    assert rc == 0, out[-3000:]
    assert container_limits(host)['nofile'].hard == BASELINE['nofile']
