#!/usr/bin/env bash
# Fleet half of the reliability suite (issue 7; docs/reliability.md): a 4-node lab
# (lab/lab.sh with its own prefix and directory, next to the demo's and the benchmark's labs),
# one node made unreachable (stopped), one made to fail for real (/etc/security/limits.d
# mounted read-only inside it), then playbooks/tune_gpu_nodes.yml --tags limits and
# playbooks/audit_limits.yml on the whole inventory. tests/reliability/check_fleet.py judges the
# outcome: the playbook fails, the recap and its error lines name both bad nodes and why, the
# two healthy nodes have the profile in login sessions, services and containers, the failing
# node's files are unchanged, and what the audit report says about the bad nodes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export LAB_PREFIX=${LAB_PREFIX:-gpufleet-rel} LAB_NODES=4 LAB_DIR="$root/build/rel-lab"
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$root/build/collections}
export ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1
out="$LAB_DIR/out"
unreachable=$LAB_PREFIX-2
failing=$LAB_PREFIX-3
healthy="$LAB_PREFIX-1 $LAB_PREFIX-4"
watched='/etc/security/limits.conf /etc/security/limits.d /etc/systemd /etc/docker /etc/containers'
sums() {  # sha256 of every watched file of a node (hidden and backup files included)
  docker exec "$1" sh -c "find $watched -type f 2>/dev/null | sort | xargs -r sha256sum"
}

trap 'lab/lab.sh down >/dev/null 2>&1 || true' EXIT
start=$(date +%s)
lab/lab.sh down >/dev/null
rm -rf "$out" && mkdir -p "$out"
lab/lab.sh up > "$out/lab-up.log" 2>&1 || { tail -40 "$out/lab-up.log"; exit 1; }

# The failing node: a read-only limits.d, as a broken or read-only /etc would be.
docker exec "$failing" sh -c \
  'mount --bind /etc/security/limits.d /etc/security/limits.d &&
   mount -o remount,bind,ro /etc/security/limits.d'
sums "$failing" > "$out/failing-before.sha256"
# The unreachable node: stopped, as a node that is down.
docker stop "$unreachable" >/dev/null

set +e
ansible-playbook -i "$LAB_DIR/inventory.yml" playbooks/tune_gpu_nodes.yml --tags limits \
  > "$out/tune.log" 2>&1
echo $? > "$out/tune.rc"
ansible-playbook -i "$LAB_DIR/inventory.yml" playbooks/audit_limits.yml \
  -e audit_reports_dir="$out/audit" > "$out/audit.log" 2>&1
echo $? > "$out/audit.rc"
set -e

sums "$failing" > "$out/failing-after.sha256"
docker exec "$failing" sh -c 'grep " /etc/security/limits.d " /proc/self/mounts' \
  > "$out/failing-mount.txt" || true
for node in $healthy; do
  docker exec "$node" sh -c "runuser -l trainer -c 'cat /proc/self/limits'" > "$out/$node.login"
  docker exec "$node" systemd-run --wait --pipe --quiet -p User=trainer cat /proc/self/limits \
    > "$out/$node.service"
  docker exec "$node" docker run --rm --network=none tiny:latest cat /proc/self/limits \
    > "$out/$node.container"
done

python3 tests/reliability/check_fleet.py "$out" --unreachable "$unreachable" \
  --failing "$failing" --healthy $healthy --strict-audit
echo "fleet test: passed in $(( $(date +%s) - start ))s (logs in $out)"
