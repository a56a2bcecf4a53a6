"""limits_docker_restart=when_idle never restarts dockerd while a container runs: the run writes
daemon.json, reports the restart as pending and leaves dockerd and the container alone; once
the node is idle the next run restarts dockerd and new containers get the profile."""
import re

from conftest import (BASELINE, USER, container_limits, node, output, run_role,
                      service_identity)

# A change: the profile names both sides, so it lowers what the converged node has (a plain
# 12288 is a minimum and would keep the node's higher values: issue 31)
LOWER = dict(BASELINE, nofile={'soft': 12288, 'hard': 12288})
BUSY = 'gpufleet-rel-busy'
DOCKER_ONLY = {'limits_contexts': ['docker'], 'limits_units': [],
               'limits_docker_restart': 'when_idle'}


def started_at(host, name):
    out = output(host, "docker inspect -f '{{.State.Running}} {{.State.StartedAt}}' %s" % name)
    return out.strip()


def test_dockerd_waits_for_the_idle_node(host):
    node(host, 'systemctl reset-failed docker.service; systemctl start docker')
    node(host, 'docker rm -f %s >/dev/null 2>&1 || true' % BUSY)
    node(host, 'docker run -d --name %s --network=none tiny:latest sleep 1000' % BUSY)
    try:
        dockerd, busy = service_identity(host, 'docker.service'), started_at(host, BUSY)
        converged = container_limits(host)['nofile']
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
        assert container_limits(host)['nofile'] == converged
        # issue 31 item 15: the same run again on the still busy node changes nothing and says
        # pending (it was a change on every run while the restart waited)
        rc, out = run_role(host, limits_profile=LOWER, **DOCKER_ONLY)
        assert rc == 0, out[-3000:]
        assert re.search(r'changed=0\s', out) and re.search(r'[Pp]ending\W+docker', out), out[-3000:]
        assert service_identity(host, 'docker.service') == dockerd
    finally:
        node(host, 'docker rm -f %s' % BUSY)
    # The node is idle now: the next run finds the restart still owed and does it.
    rc, out = run_role(host, limits_profile=LOWER, **DOCKER_ONLY)
    assert rc == 0, out[-3000:]
    assert not re.search(r'[Pp]ending\W+docker', out), out[-3000:]
    assert service_identity(host, 'docker.service')[0] != dockerd[0]
    limits = container_limits(host)['nofile']
    assert (limits.soft, limits.hard) == (12288, 12288)
    # Back to the converged profile for the tests that follow: a plain value raises the
    # lowered 12288 to at least the profile's
    rc, out = run_role(host, limits_profile=BASELINE, **DOCKER_ONLY)
    assert rc == 0, out[-3000:]
    assert container_limits(host)['nofile'].hard == BASELINE['nofile']


DOCKER_UNIT_DROPIN = '/etc/systemd/system/docker.service.d/90-gpufleet-tuning.conf'


def test_docker_service_in_limits_units_waits_too(host):
    """docker.service in limits_units went through the plain unit restart and killed a running
    container (issue 17.1): it goes through the restart policy like daemon.json."""
    node(host, 'docker rm -f %s >/dev/null 2>&1 || true' % BUSY)
    node(host, 'docker run -d --name %s --network=none tiny:latest sleep 1000' % BUSY)
    try:
        dockerd, busy = service_identity(host, 'docker.service'), started_at(host, BUSY)
        rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['docker'],
                           limits_units=['docker.service'], limits_docker_restart='when_idle')
        assert rc == 0, out[-3000:]
        assert 'LimitNOFILE=12288' in output(host, 'cat %s' % DOCKER_UNIT_DROPIN)
        assert service_identity(host, 'docker.service') == dockerd
        assert started_at(host, BUSY) == busy
        assert re.search(r'Pending: docker\b', out), out[-3000:]
        assert 'docker.service: 1 running container(s) would be stopped' in out, out[-3000:]
    finally:
        node(host, 'docker rm -f %s' % BUSY)
        # docker.service allows 3 starts a minute: the tests before restarted it already
        node(host, 'rm -f %s && systemctl daemon-reload && systemctl reset-failed docker.service'
             ' && systemctl restart docker' % DOCKER_UNIT_DROPIN)
    rc, out = run_role(host, limits_profile=BASELINE, **DOCKER_ONLY)
    assert rc == 0, out[-3000:]


def test_busy_user_manager_is_not_restarted(host):
    """A PAM change restarted every user manager, stopping the user's running services (issue
    17.2): under when_idle a manager with a running user service is left alone and reported."""
    uid = output(host, 'id -u %s' % USER).strip()
    manager = 'user@%s.service' % uid
    rc, out = run_role(host, limits_profile=BASELINE, limits_contexts=['pam'], limits_units=[])
    assert rc == 0, out[-3000:]
    node(host, 'systemctl start %s' % manager)
    as_user = 'runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%s ' % (USER, uid)
    node(host, as_user + 'systemd-run --user --quiet --unit=gpufleet-rel-job sleep 1000')
    try:
        before = service_identity(host, manager)
        rc, out = run_role(host, limits_profile=LOWER, limits_contexts=['pam'], limits_units=[],
                           limits_docker_restart='when_idle')
        assert rc == 0, out[-3000:]
        assert service_identity(host, manager) == before, out[-3000:]
        job = output(host, as_user + 'systemctl --user is-active gpufleet-rel-job.service || true')
        assert job.strip() == 'active', job
        assert re.search(r'Pending: user_manager\b', out), out[-3000:]
        assert '%s: 1 process(es) of running user services would be stopped' % manager in out
    finally:
        node(host, as_user + 'systemctl --user stop gpufleet-rel-job.service', check=False)
    # idle now: the owed restart happens
    rc, out = run_role(host, limits_profile=BASELINE, limits_contexts=['pam'], limits_units=[],
                       limits_docker_restart='when_idle')
    assert rc == 0, out[-3000:]
    assert service_identity(host, manager) != before
