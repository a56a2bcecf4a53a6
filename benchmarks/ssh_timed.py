"""Benchmark helper (benchmarks/profile_run.py): runs ssh with the arguments given and appends
its CPU seconds (user + system, getrusage of the child, microseconds) to $BENCH_SSH_TIMES;
Ansible runs it through ssh_timed.sh, its ssh_executable (ANSIBLE_SSH_EXECUTABLE). Exits with
ssh's status."""
import os
import resource
import subprocess
import sys

status = subprocess.call(['ssh'] + sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(os.environ['BENCH_SSH_TIMES'], 'a') as handle:
    handle.write('%.6f %.6f\n' % (usage.ru_utime, usage.ru_stime))
sys.exit(status)
