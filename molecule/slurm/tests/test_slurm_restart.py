"""A slurmd restart that fails must not leave the node without slurmd: the role puts the files
of the run back, starts slurmd again and fails the host with both outcomes.

The change slurmd rejects: ``fsize: 0`` (someone meaning "no limit") passes every guard, and
slurmd, a Type=simple unit, restarts "successfully" and is killed by SIGXFSZ the moment it
writes its pid file."""
import os
import tempfile

from conftest import DROPIN, SLURM_CONF, job_soft_hard, main_pid
from scenario_support import checksums, run_playbook

PLAY = '''- hosts: all
  gather_facts: false
  roles:
    - role: gpufleet.tuning.limits
      vars:
        limits_profile: {nofile: 16384, nproc: 8192, memlock: 8MiB, fsize: 0}
        limits_contexts: [slurm]
        limits_verify_user: trainer
'''


def test_a_failed_slurmd_restart_restores_the_files_and_slurmd(host, pristine_slurm):
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
    assert ("slurmd.service failed after its restart with this run's files: not active after "
            "2 s: ActiveState failed, Result signal") in text, text[-3000:]
    assert 'status=25/XFSZ' in text
    assert 'Restored: %s, %s; slurmd.service is active again with the previous files' % (
        DROPIN, SLURM_CONF) in text or 'Restored: %s, %s; slurmd.service is active again' % (
        SLURM_CONF, DROPIN) in text
    # the files are byte for byte those of before, and slurmd runs them (a new process)
    assert checksums(host, files) == before
    assert host.service('slurmd').is_running and main_pid(host) != pid
    assert job_soft_hard(host, 'srun') == ['1024', '16384', '16384']
