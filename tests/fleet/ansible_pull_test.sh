#!/usr/bin/env bash
# ansible-pull as a node runs it at boot (issue 15): a lab node (sshd image, which has git and
# python3-venv) gets ansible-core from a local wheelhouse into a venv, as a cloud-init runcmd
# would from PyPI; a git repository on the node holds playbooks/pull_self.yml, an inventory of
# the node's own (the lab's profile) and the collection; `ansible-pull` converges the node
# (changed > 0, verification included) and a second run changes nothing.
#   tests/fleet/ansible_pull_test.sh      (LAB_PREFIX: gpufleet-pull; KEEP=1 keeps the node)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export LAB_PREFIX=${LAB_PREFIX:-gpufleet-pull} LAB_NODES=1 LAB_SSH=1
export LAB_DIR=$root/build/$LAB_PREFIX
node=$LAB_PREFIX-1
work=$LAB_DIR/pull
core=$(grep '^ansible-core==' "$root/requirements-dev.txt")
cleanup() { [ "${KEEP:-0}" = 1 ] || "$root/lab/lab.sh" down >/dev/null; }
trap cleanup EXIT

"$root/lab/lab.sh" up >/dev/null
rm -rf "$work" && mkdir -p "$work/wheels" "$work/repo/collections"
pip download -q -d "$work/wheels" "$core" 2>&1 | grep -v '^WARNING: Location' || true
ansible-galaxy collection build --force --output-path "$work" "$root" >/dev/null
ansible-galaxy collection install --force -p "$work/repo/collections" "$work"/gpufleet-tuning-*.tar.gz >/dev/null
test -d "$work/repo/collections/ansible_collections/gpufleet/tuning/roles/limits"
cp "$root/playbooks/pull_self.yml" "$work/repo/"
{
  echo '# This node tunes itself: ansible-pull keeps the play to the node'"'"'s own names.'
  echo 'gpu_nodes:'
  echo '  hosts:'
  echo "    $node:"
  echo '  vars:'
  echo '    ansible_python_interpreter: /usr/bin/python3'
  grep -v '^#\|^---' "$root/lab/lab_vars.yml" | sed 's/^/    /'
} > "$work/repo/inventory.yml"
docker cp "$work/wheels" "$node:/tmp/wheels"
docker cp "$work/repo" "$node:/tmp/repo"
docker exec "$node" bash -ec '
  python3 -m venv /opt/ansible
  /opt/ansible/bin/pip install -q --no-index --find-links /tmp/wheels ansible-core
  cd /tmp/repo && git init -q -b main && git add -A
  git -c user.name=lab -c user.email=lab@localhost commit -qm "node tuning" && mv /tmp/repo /srv/gpu-tuning'
pull() {
  docker exec "$node" /opt/ansible/bin/ansible-pull -U file:///srv/gpu-tuning -C main \
    -d /var/lib/gpufleet-pull -i inventory.yml pull_self.yml
}
recap() { grep -E "^$node +: " | tail -1; }
first=$(pull 2>&1) || { echo "$first" | tail -40; echo "ansible-pull: the first run failed" >&2; exit 1; }
line=$(echo "$first" | recap)
echo "first run:  $line"
changed=$(echo "$line" | sed -n 's/.*changed=\([0-9]*\).*/\1/p')
[ "${changed:-0}" -gt 0 ] || { echo "$first" | tail -40; echo "the first run changed nothing" >&2; exit 1; }
grep -q 'Verified in new processes: .*login' <<<"$first" || { echo "$first" | tail -40; echo "the run did not verify the login context" >&2; exit 1; }
second=$(pull 2>&1) || { echo "$second" | tail -40; echo "ansible-pull: the rerun failed" >&2; exit 1; }
line=$(echo "$second" | recap)
echo "second run: $line"
grep -q 'changed=0 .*failed=0' <<<"$line" || { echo "$second" | tail -40; echo "the rerun was not a no-op" >&2; exit 1; }
# soft nofile as the profile asks; hard at least that (a higher hard limit the node had is kept)
login=$(docker exec "$node" runuser -l trainer -c 'echo $(ulimit -Sn) $(ulimit -Hn)')
read -r soft hard <<<"$login"
[ "$soft" = 16384 ] && [ "$hard" -ge 16384 ] \
  || { echo "a login session of the node gets nofile $login, not 16384 and at least 16384" >&2; exit 1; }
echo "ansible-pull test: converged, verified, rerun changed nothing"
