"""A runtime restart that fails must not leave the node without its runtime: the files of the
run are put back, the daemon is started again with them and the host fails with both outcomes.

dockerd, through the limits role (limits_profile's restart, through the restart engine of
plugins/module_utils/systemd/restarts.py, the same path as slurmd's in molecule/slurm): a site's start check (an ``ExecStartPre=`` drop-in) refuses this
run's docker.service drop-in, which sets sigpending, so dockerd's restart fails. (Before issue
31 this was ``fsize: 0``, which killed dockerd with SIGXFSZ; that value is now below fsize's
floor and refused before any write.)

containerd, through containerd_base_spec: a base spec left at the module's ``spec_path`` from
an earlier tool holds ``"uid": "0"`` (a string); no handler references it, so containerd runs.
The module patches its rlimits and references it; containerd's CRI plugin cannot decode it
("cannot unmarshal string into Go struct field User.process.user.uid") and, as the node's
config.toml lists the CRI plugin in ``required_plugins``, containerd exits. (Without
``required_plugins`` containerd starts without its CRI plugin: the restart "succeeds" and the
kubelet finds no runtime; docs/containerd-kubernetes.md.)"""
import json
import re

from conftest import (BASELINE, container_limits, node, output, run_module, run_role,
                      service_identity, snapshot, snapshot_diff)

DROPIN = '/etc/systemd/system/docker.service.d/90-gpufleet-tuning.conf'


SITE_CHECK = '/etc/systemd/system/docker.service.d/00-site-check.conf'


def test_a_dockerd_refused_with_its_new_limits_runs_again_with_the_old_files(host, baseline):
    node(host, "mkdir -p /etc/systemd/system/docker.service.d && printf '%%s\\n' '[Service]' "
               "'ExecStartPre=/bin/sh -c \"! grep -qs ^LimitSIGPENDING= %s\"' > %s && "
               "systemctl daemon-reload" % (DROPIN, SITE_CHECK))
    before = snapshot(host)
    dockerd = service_identity(host, 'docker.service')
    converged = container_limits(host)['nofile']
    try:
        rc, out = run_role(host, limits_profile=dict(BASELINE, sigpending=16384),
                           limits_contexts=['docker'], limits_units=['docker.service'],
                           limits_docker_restart='always')
        assert rc != 0, out[-3000:]
        assert "docker.service failed after its restart with this run's files:" in out, out[-3000:]
        # daemon.json is this run's only where containerd's own sigpending, which a container
        # inherits, is below the profile's (issue 39.1: a met plain value writes nothing)
        assert re.search(r'Restored: %s(, /etc/docker/daemon\.json)?; docker\.service is active '
                         r'again with the previous files' % re.escape(DROPIN), out), out[-3000:]
        # every watched file as before; what is new is the module's backups and the drop-in
        # directory the run created (empty again)
        # (a backup may go: the backups of a file are pruned to its oldest and 4 newest)
        diff = snapshot_diff(before, snapshot(host))
        assert diff['changed'] == [] and all(p.endswith('~') for p in diff['removed']), diff
        assert all(p.endswith('~') or p == '/etc/systemd/system/docker.service.d'
                   for p in diff['new']), diff
        assert output(host, 'systemctl is-active docker.service').strip() == 'active'
        assert service_identity(host, 'docker.service')[0] != dockerd[0]
        assert container_limits(host)['nofile'] == converged
    finally:
        node(host, 'rm -f %s && systemctl daemon-reload' % SITE_CHECK)
        baseline()


CONFIG_TOML = '/etc/containerd/config.toml'
STALE_SPEC = '/etc/containerd/gpufleet-base-spec.json'


def test_a_containerd_refusing_its_new_base_spec_runs_again_with_the_old_files(host, baseline):
    node(host, "sed -i '1a required_plugins = [\"io.containerd.grpc.v1.cri\"]' %s" % CONFIG_TOML)
    spec = json.loads(output(host, 'ctr oci spec'))
    spec['process']['user']['uid'] = '0'
    node(host, "cat > %s <<'EOF'\n%s\nEOF" % (STALE_SPEC, json.dumps(spec, indent=4)))
    try:
        node(host, 'systemctl restart containerd.service')
        containerd = service_identity(host, 'containerd.service')
        files = 'sha256sum %s %s' % (CONFIG_TOML, STALE_SPEC)
        before = output(host, files)
        ok, result, printed = run_module(host, 'gpufleet.tuning.containerd_base_spec', {
            'limits': {'nofile': 16384}, 'create': True, 'restart': 'always'})
        assert not ok, printed[-3000:]
        message = result['msg']
        # the restart engine's message (plugins/module_utils/systemd/restarts.py), as for
        # dockerd and slurmd through the role
        assert "containerd.service failed after its restart with this run's files: " in message
        assert 'Restored: %s, %s; containerd.service is active again with the previous ' \
               'files.' % (STALE_SPEC, CONFIG_TOML) in message, message
        assert result['files_restored'] == [STALE_SPEC, CONFIG_TOML]
        assert output(host, files) == before
        assert output(host, 'systemctl is-active containerd.service').strip() == 'active'
        assert service_identity(host, 'containerd.service')[0] != containerd[0]
        # the CRI plugin is loaded again (with the new spec it was not, and containerd exited)
        plugins = output(host, 'ctr plugins ls')
        assert any(line.split()[:2] == ['io.containerd.grpc.v1', 'cri'] and
                   line.split()[-1] == 'ok' for line in plugins.splitlines()), plugins
        # the refusal is containerd's own: its journal names the field it could not decode
        journal = output(host, 'journalctl -u containerd.service --no-pager -q -n 200')
        assert 'cannot unmarshal string into Go struct field User.process.user.uid' in journal
    finally:
        node(host, "sed -i '/^required_plugins = /d' %s && rm -f %s" % (CONFIG_TOML, STALE_SPEC))
        node(host, 'systemctl reset-failed containerd.service; '
                   'systemctl restart containerd.service')
        baseline()
