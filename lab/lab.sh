#!/usr/bin/env bash
# The local lab: node containers (systemd as PID 1, logind, a dockerd of their own) that stand in
# for a GPU fleet.
#   lab/lab.sh up     start LAB_NODES (3) nodes from LAB_IMAGE, write build/lab/inventory.yml,
#                     prepare them (training user with a user manager, tiny container image)
#   lab/lab.sh down   remove the nodes
# LAB_SSH=1 also makes the nodes reachable over SSH, as real fleets are: the nodes run from
# LAB_IMAGE gpufleet-node-ssh:debian12 (images/build-ssh-image.sh, sshd), the lab generates a
# key (LAB_DIR/ssh/id_ed25519) and writes LAB_DIR/inventory-ssh.yml (ansible_host = the node's
# address, ControlPersist and pipelining as ansible.cfg sets them) next to inventory.yml.
# LAB_PREFIX (gpufleet-lab) names the containers PREFIX-1..N and LAB_DIR (build/lab) holds the
# inventory, so that several labs (the demo, the benchmark, the reliability suite) can coexist.
# LAB_SLURM_NODES (0) of the nodes, the first ones, also run a single-node Slurm (lab_slurm).
# LAB_K8S_NODES (0) of the nodes, the last ones, are Kubernetes nodes on containerd (lab_k8s): the
# CRI on and a base runtime spec taken from `ctr oci spec` referenced for runc (lab/k8s_node.yml).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nodes=${LAB_NODES:-3}
ssh=${LAB_SSH:-0}
if [ "$ssh" = 1 ]; then image=${LAB_IMAGE:-gpufleet-node-ssh:debian12}; else image=${LAB_IMAGE:-gpufleet-node:debian12}; fi
prefix=${LAB_PREFIX:-gpufleet-lab}
slurm_nodes=${LAB_SLURM_NODES:-0}
k8s_nodes=${LAB_K8S_NODES:-0}
dir=${LAB_DIR:-$root/build/lab}
inventory="$dir/inventory.yml"

names() { for i in $(seq 1 "$nodes"); do echo "$prefix-$i"; done; }

down() {
  docker ps -a --format "{{.Names}}" | { grep "^$prefix-[0-9]*\$" || true; } | xargs -r docker rm -f >/dev/null
  rm -f "$inventory" "$dir/inventory-ssh.yml"
  echo "lab removed"
}

up() {
  mkdir -p "$dir"
  for name in $(names); do
    docker rm -f "$name" >/dev/null 2>&1 || true
    docker run -d --name "$name" --hostname "$name" \
      --cap-add SYS_ADMIN --cap-add NET_ADMIN \
      --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
      --cgroupns=host -v /sys/fs/cgroup:/sys/fs/cgroup:rw --tmpfs /run --tmpfs /run/lock \
      "$image" /lib/systemd/systemd >/dev/null
  done
  {
    echo '# Written by lab/lab.sh: the local lab, a stand-in for a GPU fleet.'
    echo 'gpu_nodes:'
    echo '  hosts:'
    i=0
    for name in $(names); do
      i=$((i + 1))
      marks=""
      if [ "$i" -le "$slurm_nodes" ]; then marks="lab_slurm: true"; fi
      if [ "$i" -gt $((nodes - k8s_nodes)) ]; then marks="${marks:+$marks, }lab_k8s: true"; fi
      if [ -n "$marks" ]; then echo "    $name: {$marks}"; else echo "    $name:"; fi
    done
    echo '  vars:'
    echo '    ansible_connection: community.docker.docker'
    echo '    ansible_python_interpreter: /usr/bin/python3'
    sed 's/^/    /' "$root/lab/lab_vars.yml" | grep -v '^    #\|^    ---'
  } > "$inventory"
  sleep 2
  stopped=$(for name in $(names); do
    [ "$(docker inspect -f '{{.State.Running}}' "$name")" = true ] || echo "$name"; done)
  if [ -n "$stopped" ]; then
    echo "nodes that did not boot: $stopped" >&2
    echo "(too many nodes for fs.inotify.max_user_instances? scripts/bootstrap-host.sh raises it)" >&2
    exit 1
  fi
  # Wait until each node's boot is over: systemd-tmpfiles empties /tmp at boot, and a play that
  # starts before it loses Ansible's temporary files (seen under load). `degraded` is fine here.
  for name in $(names); do
    timeout 120 docker exec "$name" systemctl is-system-running --wait >/dev/null 2>&1 || true
  done
  if [ "$ssh" = 1 ]; then ssh_setup; fi
  ANSIBLE_FORKS=${ANSIBLE_FORKS:-$nodes} ansible-playbook -i "$inventory" "$root/lab/prepare.yml"
  echo "lab up: $(names | tr '\n' ' ')(inventory: $inventory)"
}

# The lab's SSH key in every node, sshd up, and inventory-ssh.yml: the same group vars as
# inventory.yml, reached by address over SSH as root.
ssh_setup() {
  mkdir -p "$dir/ssh"
  [ -f "$dir/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C gpufleet-lab -f "$dir/ssh/id_ed25519"
  for name in $(names); do
    docker exec -i "$name" sh -c 'umask 077; mkdir -p /root/.ssh; cat > /root/.ssh/authorized_keys' \
      < "$dir/ssh/id_ed25519.pub"
  done
  for name in $(names); do
    for _ in $(seq 1 60); do
      docker exec "$name" systemctl is-active -q ssh.service 2>/dev/null && break
      sleep 1
    done
    docker exec "$name" systemctl is-active -q ssh.service || { echo "$name: sshd did not start" >&2; exit 1; }
  done
  {
    echo '# Written by lab/lab.sh (LAB_SSH=1): the local lab reached over SSH.'
    echo 'gpu_nodes:'
    echo '  hosts:'
    for name in $(names); do
      echo "    $name:"
      echo "      ansible_host: $(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$name")"
    done
    echo '  vars:'
    echo '    ansible_connection: ansible.builtin.ssh'
    echo '    ansible_user: root'
    echo "    ansible_ssh_private_key_file: $dir/ssh/id_ed25519"
    echo "    ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    echo '    ansible_python_interpreter: /usr/bin/python3'
    sed 's/^/    /' "$root/lab/lab_vars.yml" | grep -v '^    #\|^    ---'
  } > "$dir/inventory-ssh.yml"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: lab/lab.sh up|down" >&2; exit 2 ;;
esac
