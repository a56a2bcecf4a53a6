"""A slurmd restart that fails must not leave the node without slurmd: the role puts the files
of the run back, starts slurmd again and fails the host with both outcomes.

The restart slurmd fails: a site's start check (an ``ExecStartPre=`` drop-in) refuses this
run's drop-in, which sets sigpending. (Before issue 31 this test used ``fsize: 0``, which
killed slurmd with SIGXFSZ; that value is now below fsize's floor and refused before any
write, in the reliability suite's bad-input list.)"""
import os
import tempfile

from conftest import DROPIN, SLURM_CONF, job_soft_hard, main_pid, slurmd_limit
from scenario_support import checksums, run_playbook

PLAY = '''- hosts: all
  gather_facts: false
  roles:
    - role: gpufleet.tuning.limits
      vars:
        limits_profile: {nofile: 16384, nproc: 8192, memlock: 8MiB, sigpending: 16384}
        limits_contexts: [slurm]
        limits_verify_user: trainer
'''


SITE_CHECK = '/etc/systemd/system/slurmd.service.d/00-site-check.conf'


def test_a_failed_slurmd_restart_restores_the_files_and_slurmd(host, pristine_slurm):
    host.check_output(
        "mkdir -p /etc/systemd/system/slurmd.service.d && printf '%%s\\n' '[Service]' "
        "'ExecStartPre=/bin/sh -c \"! grep -qs ^LimitSIGPENDING= %s\"' > %s && "
        "systemctl daemon-reload" % (DROPIN, SITE_CHECK))
    files = [SLURM_CONF, DROPIN]
    before, pid = checksums(host, files), main_pid(host)
    with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as handle:
        handle.write(PLAY)
    try:
        rc, out = run_playbook(host, handle.name)
    finally:
        os.unlink(handle.name)
    text = ' '.join(out.split())
    assert rc != 0
    assert ("slurmd.service failed after its restart with this run's files: systemctl "
            "restart failed (exit 1)") in text, text[-3000:]
    # sigpending is not among the items slurm.conf propagates, so only the drop-in changed
    assert 'Restored: %s; slurmd.service is active again with the previous files' % DROPIN \
        in text, text[text.find('Restored'):][:1500]
    # the files are byte for byte those of before, and slurmd runs them (a new process)
    assert checksums(host, files) == before
    assert host.service('slurmd').is_running and main_pid(host) != pid
    assert job_soft_hard(host, 'srun') == ['1024'] + slurmd_limit(host)
