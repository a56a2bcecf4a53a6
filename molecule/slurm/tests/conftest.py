"""Helpers for the Slurm scenario's testinfra tests: the collection on sys.path, jobs, a
snapshot of Slurm's files."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from scenario_support import checksums, run_module  # noqa: E402,F401  pylint: disable=unused-import

PROFILE = {'nofile': 16384, 'nproc': 8192, 'memlock': '8MiB'}
SLURM_CONF = '/etc/slurm/slurm.conf'
DROPIN = '/etc/systemd/system/slurmd.service.d/90-gpufleet-tuning.conf'
# the files the slurm context reads or writes, hidden temporary files included
WATCHED = 'find /etc/slurm /etc/systemd/system/slurmd.service.d -type f | sort'


def main_pid(host, unit='slurmd.service'):
    return host.check_output('systemctl show -p MainPID --value %s' % unit).strip()


def watched(host):
    """{path: sha256} of every file under /etc/slurm and slurmd's drop-in directory."""
    return checksums(host, host.check_output(WATCHED).split())


def slurmd_limit(host, row='Max open files'):
    """[soft, hard] of the running slurmd for a /proc/PID/limits row: what its jobs get when
    slurm.conf does not propagate the item. The role's plain profile value is a minimum, so
    slurmd keeps the higher values its unit gave it (Debian's LimitNOFILE=131072, capped at
    this sandbox's hard 20000; issue 31)."""
    text = host.file('/proc/%s/limits' % main_pid(host)).content_string
    for line in text.splitlines():
        if line.startswith(row):
            return line[len(row):].split()[:2]
    raise AssertionError('%s not in slurmd limits: %s' % (row, text))


def job_soft_hard(host, how='srun'):
    """[login soft nofile, job soft nofile, job hard nofile] for a job of trainer submitted
    from a login session whose soft nofile is the distribution's default."""
    inner = 'ulimit -Sn; ulimit -Hn'
    if how == 'srun':
        job = 'srun --quiet bash -c "%s"' % inner
    else:
        job = ('cd /tmp && sbatch --quiet --wait -o /tmp/gpufleet-sbatch.out --wrap "%s" '
               '&& cat /tmp/gpufleet-sbatch.out' % inner)
    return host.check_output("runuser -l trainer -c 'ulimit -Sn; %s'" % job).split()


@pytest.fixture
def module(host):
    return lambda name, args, check=False: run_module(host, name, args, check)


@pytest.fixture
def pristine_slurm(host):
    """Snapshot Slurm's files and slurmd's drop-ins; put them back (and slurmd with them)."""
    host.check_output('tar -C / -cf /root/slurm-snapshot.tar etc/slurm '
                      'etc/systemd/system/slurmd.service.d')
    yield
    host.check_output('rm -rf /etc/slurm /etc/systemd/system/slurmd.service.d && '
                      'tar -C / -xf /root/slurm-snapshot.tar && systemctl daemon-reload && '
                      'systemctl reset-failed slurmd.service; systemctl restart slurmd.service')
    host.check_output('for i in $(seq 30); do sinfo -h -o %t | grep -qx idle && exit 0; '
                      'sleep 1; done; exit 1')
