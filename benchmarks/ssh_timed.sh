#!/usr/bin/env bash
# Benchmark helper (benchmarks/profile_run.py): Ansible's ssh_executable for the profiled runs;
# benchmarks/ssh_timed.py runs ssh and records its CPU time.
exec python3 "$(dirname "$0")/ssh_timed.py" "$@"
