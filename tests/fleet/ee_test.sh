#!/usr/bin/env bash
# The execution environment (issue 15): build the image from the context `make ee` wrote
# (ansible-builder build, docker runtime, base gpufleet-ee-base:debian13), then run
# playbooks/tune_gpu_nodes.yml --tags limits from inside it, as AWX/AAP would, against a lab node
# over SSH: the first run converges (verification included), the second changes nothing.
#   tests/fleet/ee_test.sh        (LAB_PREFIX: gpufleet-ee; KEEP=1 keeps the node)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export LAB_PREFIX=${LAB_PREFIX:-gpufleet-ee} LAB_NODES=1 LAB_SSH=1
export LAB_DIR=$root/build/$LAB_PREFIX
node=$LAB_PREFIX-1
image=${EE_IMAGE:-gpufleet-ee:latest}
builder=${ANSIBLE_BUILDER:-$root/build/builder-venv/bin/ansible-builder}
cleanup() { [ "${KEEP:-0}" = 1 ] || "$root/lab/lab.sh" down >/dev/null; }
trap cleanup EXIT

start=$(date +%s)
"$builder" build --container-runtime docker -f "$root/execution-environment.yml" \
  -c "$root/build/ee/context" -t "$image" -v 1
echo "EE image $image built in $(( $(date +%s) - start )) s"
docker run --rm "$image" ansible-galaxy collection list gpufleet.tuning | grep gpufleet.tuning >/dev/null \
  || { echo "the EE has no gpufleet.tuning" >&2; exit 1; }
"$root/lab/lab.sh" up >/dev/null
# The EE runs as an unprivileged user (uid 1000, as AWX runs it): the lab's key goes in readable.
keys=$(mktemp -d)
trap 'rm -rf "$keys"; cleanup' EXIT
install -m 0644 "$LAB_DIR/ssh/id_ed25519" "$keys/id_ed25519"
chmod 0755 "$keys"
play() {
  docker run --rm -v "$LAB_DIR/inventory-ssh.yml:/runner/inventory.yml:ro" -v "$keys:/keys:ro" \
    -e ANSIBLE_PIPELINING=1 -e ANSIBLE_FORCE_COLOR=0 "$image" \
    ansible-playbook -i /runner/inventory.yml -e ansible_ssh_private_key_file=/keys/id_ed25519 \
    gpufleet.tuning.tune_gpu_nodes --tags limits
}
recap() { grep -E "^$node +: " | tail -1; }
first=$(play 2>&1) || { echo "$first" | tail -40; echo "the playbook failed in the EE" >&2; exit 1; }
line=$(echo "$first" | recap)
echo "first run in the EE:  $line"
grep -q 'changed=[1-9]' <<<"$line" || { echo "$first" | tail -40; echo "nothing changed" >&2; exit 1; }
grep -q 'Verified in new processes: .*login' <<<"$first" || { echo "$first" | tail -40; echo "the run did not verify the login context" >&2; exit 1; }
second=$(play 2>&1) || { echo "$second" | tail -40; echo "the rerun failed in the EE" >&2; exit 1; }
line=$(echo "$second" | recap)
echo "second run in the EE: $line"
grep -q 'changed=0 .*failed=0' <<<"$line" || { echo "$second" | tail -40; echo "the rerun was not a no-op" >&2; exit 1; }
# soft nofile as the profile asks; hard at least that (a higher hard limit the node had is kept)
login=$(docker exec "$node" runuser -l trainer -c 'echo $(ulimit -Sn) $(ulimit -Hn)')
read -r soft hard <<<"$login"
[ "$soft" = 16384 ] && [ "$hard" -ge 16384 ] \
  || { echo "a login session of the node gets nofile $login, not 16384 and at least 16384" >&2; exit 1; }
echo "EE test: tune_gpu_nodes.yml from the EE converged the node over SSH, rerun changed nothing"
