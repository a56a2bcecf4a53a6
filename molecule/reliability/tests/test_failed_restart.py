"""A dockerd restart that fails must not leave the node without dockerd: the limits role puts
back the files of the run, starts dockerd again with them and fails the host with both
outcomes (roles/limits/tasks/restart_unit.yml, the same path as slurmd's in molecule/slurm).

The change dockerd rejects: ``fsize: 0`` (meant as "no limit") in docker.service's drop-in
passes every guard; dockerd is killed by SIGXFSZ when it writes its pid file, so its restart
fails."""
from conftest import (BASELINE, container_limits, output, run_role, service_identity,
                      snapshot, snapshot_diff)

DROPIN = '/etc/systemd/system/docker.service.d/90-gpufleet-tuning.conf'


def test_a_dockerd_killed_by_its_new_limits_runs_again_with_the_old_files(host, baseline):
    before = snapshot(host)
    dockerd = service_identity(host, 'docker.service')
    try:
        rc, out = run_role(host, limits_profile=dict(BASELINE, fsize=0),
                           limits_contexts=['docker'], limits_units=['docker.service'],
                           limits_docker_restart='always')
        assert rc != 0, out[-3000:]
        assert "docker.service failed after its restart with this run's files:" in out, out[-3000:]
        assert 'Restored: %s, /etc/docker/daemon.json; docker.service is active again with the ' \
               'previous files' % DROPIN in out, out[-3000:]
        # every watched file as before; what is new is the module's backups and the drop-in
        # directory the run created (empty again)
        diff = snapshot_diff(before, snapshot(host))
        assert diff['changed'] == [] and diff['removed'] == [], diff
        assert all(p.endswith('~') or p == '/etc/systemd/system/docker.service.d'
                   for p in diff['new']), diff
        assert output(host, 'systemctl is-active docker.service').strip() == 'active'
        assert service_identity(host, 'docker.service')[0] != dockerd[0]
        assert container_limits(host)['nofile'].hard == BASELINE['nofile']
    finally:
        baseline()
