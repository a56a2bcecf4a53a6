#!/usr/bin/env bash
# The training job of `make demo` on the lab's job node (the first node, LAB_PREFIX-1):
#   lab/demo_job.sh node     the torch image in the node's dockerd (images/load-torch-image.sh)
#                            and a host-sized /dev/shm (a GPU host's is half its memory; the
#                            node container's is Docker's 64 MB)
#   lab/demo_job.sh before   PyTorch from the wheelhouse, then the job in login, service and
#                            container contexts at the node's defaults: it must fail in each
#                            (tune_gpu_nodes.yml --tags pytorch,dataloader; LAB_DIR/job-before/)
#   lab/demo_job.sh after    tune_gpu_nodes.yml with every tag on the job node (limits, pytorch,
#                            dataloader): the job runs in every context, and a num_workers
#                            sweep in the login session (LAB_DIR/job-after/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${LAB_PREFIX:-gpufleet-lab}
dir=${LAB_DIR:-$root/build/lab}
node=${LAB_JOB_NODE:-$prefix-1}
wheelhouse=${WHEELHOUSE:-$root/build/wheelhouse/torch-2.13.0-cp311}

playbook() {
  ansible-playbook -i "$dir/inventory.yml" "$root/playbooks/tune_gpu_nodes.yml" --limit "$node" \
    -e @"$root/lab/demo_job.yml" -e pytorch_env_wheelhouse="$wheelhouse" "$@"
}

summary() {
  python3 - "$1/$node.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for name, run in sorted(data['contexts'].items()):
    if run.get('ok'):
        print('  %-9s ok: %.1f images/s (%d images), peak %s fds of nofile %s, %.0f MiB /dev/shm of %.0f MiB'
              % (name, run['samples_per_s'], run.get('samples', 0), run.get('peak_fds'),
                 run.get('nofile_soft'), run.get('peak_shm_bytes', 0) / 2.0 ** 20,
                 (run.get('shm_size_bytes') or 0) / 2.0 ** 20))
    else:
        lines = [l for l in run.get('error', '').splitlines() if l.strip()]
        print('  %-9s FAILED (%s ran out, nofile %s, /dev/shm %.0f MiB): %s'
              % (name, run.get('exhausted') or '?', run.get('nofile_soft'),
                 (run.get('shm_size_bytes') or 0) / 2.0 ** 20, lines[-1][-150:] if lines else ''))
PY
}

case "${1:-}" in
  node)
    "$root/images/load-torch-image.sh" "$node"
    docker exec "$node" mount -o remount,size=2g /dev/shm
    ;;
  before)
    playbook --tags pytorch,dataloader -e dataloader_check_fail=false \
      -e dataloader_check_fetch_dir="$dir/job-before"
    echo "=== the job before tuning ($node) ==="; summary "$dir/job-before"
    ;;
  after)
    # and, in the login session, the first rank alone once the job is done, with 1, 2 and 3
    # workers: images/s against num_workers (the demo's plot, scripts/plot_throughput.py)
    playbook -e dataloader_check_fetch_dir="$dir/job-after" -e '{"dataloader_check_sweep_workers": [1, 2, 3]}'
    echo "=== the job after tuning ($node) ==="; summary "$dir/job-after"
    ;;
  *) echo "usage: lab/demo_job.sh node|before|after" >&2; exit 2 ;;
esac
