#!/usr/bin/env bash
# The VM lane (issue 43, docs/vm-lane.md): the collection on real kernels, in qemu VMs reached
# by Ansible over SSH as an ordinary inventory. Per distro one base disk built by debootstrap
# from Debian's archive (cached, tests/vm/build-image.sh); per cgroup layout one VM on its own
# qcow2 overlay: v2 (the default) and v1 (systemd.unified_cgroup_hierarchy=0, the hybrid layout
# of Ubuntu 20.04). KVM where a test boot proves it works, else TCG (the log says which).
#
#   tests/vm/run-lane.sh                 (make test-vm; run as root)
#   VM_DISTROS="debian12 debian11" VM_CGROUPS="v2 v1" VM_SMP=2 VM_MEM=1536 VM_ACCEL=auto|tcg|kvm
#   VM_EXTRA_VARS=@FILE (one more -e for the tunes and checks)
#
# All VMs boot at once and each step is one ansible-playbook run over all of them (as a fleet):
#  1. prepare.yml: a test service, dockerd's tiny image, and a site's /etc/sysctl.d/99-site.conf
#     with vm.max_map_count below the profile;
#  2. playbooks/tune_limits.yml with tests/vm/profile.yml: refused on every VM, naming that file;
#  3. site-fix.yml: the refusal wrote and applied nothing; the site raises its value;
#  4. tune_limits.yml: applies (sysctls live now);
#  5. verify.yml: reboot, then every context, the audit (no gap; each ceiling's predicted value
#     and winning file against the booted kernel's), the cgroup paths, TasksMax, memlock;
#  6. tune_limits.yml again: changed=0 on every VM.
# Every VM is stopped (qemu by its pidfile) and the run's files (overlays, key, inventory) are
# removed on every exit; the logs of the last run stay in build/vm/last-run-DISTROS/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-$root/build/collections}"
export ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_PIPELINING=True
export ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_CALLBACKS_ENABLED=profile_tasks
# Under TCG a sudo (PAM, logind) can take more than Ansible's 10 s for its prompt on a busy host.
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
distros=${VM_DISTROS:-debian12}
cgroups=${VM_CGROUPS:-v2 v1}

t_lane=$(date +%s)
mkdir -p build/vm
VM_RUN=$(mktemp -d "$root/build/vm/run.XXXXXX")
VM_KEY="$VM_RUN/id_ed25519"
export VM_RUN VM_KEY
logs="$root/build/vm/last-run-${distros// /-}"
rm -rf "$logs"; mkdir -p "$logs"
# shellcheck source=tests/vm/vm.sh
. "$here/vm.sh"

cleanup() {
  local rc=$?
  for c in "$VM_RUN"/*.console; do [ -f "$c" ] && cp "$c" "$logs/" 2>/dev/null; done
  vm_stop_all
  rm -rf "$VM_RUN"
  vm_log "stopped every VM, removed $VM_RUN (logs: $logs); lane $(( $(date +%s) - t_lane )) s, rc $rc"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v qemu-system-x86_64 >/dev/null && command -v qemu-img >/dev/null \
  || { vm_log "qemu-system-x86_64 and qemu-img are needed (scripts/bootstrap-host.sh installs them)"; exit 2; }
ssh-keygen -q -t ed25519 -N '' -C gpufleet-vm-lane -f "$VM_KEY"

declare -A base
for d in $distros; do
  t=$(date +%s)
  base[$d]=$("$here/build-image.sh" "$d" | tail -n1)
  vm_log "$d base image ready in $(( $(date +%s) - t )) s"
done
vm_pick_accel "${base[${distros%% *}]}"

names=()
for d in $distros; do
  for c in $cgroups; do
    vm_start "vm-$d-$c" "${base[$d]}" "$c"
    names+=("vm-$d-$c")
  done
done
inv="$VM_RUN/inventory.ini"
{
  echo "[gpu_nodes]"
  for n in "${names[@]}"; do
    echo "$n ansible_host=127.0.0.1 ansible_port=$(cat "$VM_RUN/$n.port") vm_cgroup=${n##*-}"
  done
  echo "[gpu_nodes:vars]"
  echo "ansible_user=gpufleet"
  echo "ansible_ssh_private_key_file=$VM_KEY"
  echo "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes'"
  echo "ansible_python_interpreter=/usr/bin/python3"
} > "$inv"
for n in "${names[@]}"; do
  s=$(vm_wait_ssh "$n")
  vm_ssh "$n" systemctl is-system-running --wait >/dev/null || true
  vm_log "$n: SSH answers $s s after qemu started, boot finished after $(( $(date +%s) - $(cat "$VM_RUN/$n.started") )) s"
done

# step NAME EXPECT PLAYBOOK ARGS...: one ansible-playbook run over every VM, its log in $logs.
step() {
  local name=$1 expect=$2 t rc=0; shift 2
  t=$(date +%s)
  ansible-playbook -i "$inv" "$@" >"$logs/$name.log" 2>&1 || rc=$?
  vm_log "$name: rc $rc in $(( $(date +%s) - t )) s ($logs/$name.log)"
  if { [ "$expect" = ok ] && [ $rc -ne 0 ]; } || { [ "$expect" = fail ] && [ $rc -eq 0 ]; }; then
    sed -n '/PLAY RECAP/,$p' "$logs/$name.log" >&2
    grep -E 'FAILED!|fatal:|ERROR' "$logs/$name.log" | tail -n 20 >&2 || true
    vm_log "$name: expected $expect"
    exit 1
  fi
}
# recap NAME FIELD VALUE: every VM's PLAY RECAP line of the step has FIELD=VALUE.
recap() {
  local name=$1 field=$2 want=$3 n line
  for n in "${names[@]}"; do
    line=$(sed -n '/PLAY RECAP/,$p' "$logs/$name.log" | grep -E "^$n +:" || true)
    if ! grep -qE "(^| )$field=$want( |$)" <<<"$line"; then
      vm_log "$name: $n: expected $field=$want: ${line:-no recap line}"
      exit 1
    fi
  done
}

profile=(-e "@$here/profile.yml")
# VM_EXTRA_VARS: one more -e for the tunes and the checks (tests/vm/known-user-pids.yml).
extra=()
[ -n "${VM_EXTRA_VARS:-}" ] && extra=(-e "$VM_EXTRA_VARS") && profile+=("${extra[@]}")
step prepare ok "$here/prepare.yml"
step tune-refused fail playbooks/tune_limits.yml "${profile[@]}"
recap tune-refused failed 1
grep -q '/etc/sysctl.d/99-site.conf' "$logs/tune-refused.log" \
  || { vm_log "tune-refused: the refusal does not name /etc/sysctl.d/99-site.conf"; exit 1; }
vm_log "tune-refused: refused, naming $(grep -o '/etc/sysctl.d/99-site.conf[^ "]*' "$logs/tune-refused.log" | sort -u | head -n1)"
step site-fix ok "$here/site-fix.yml"
step tune ok "$here/tune.yml" "${profile[@]}"
vm_log "tune: limits_reboot_required false on ${names[*]} (every ceiling applied live)"
step verify ok "$here/verify.yml" "${extra[@]}"
grep -o '"msg": "reboot [0-9]* s"' "$logs/verify.log" | sed 's/^/vm-lane: verify: /' >&2 || true
step tune-rerun ok playbooks/tune_limits.yml "${profile[@]}"
recap tune-rerun changed 0
vm_log "tune-rerun: changed=0 on ${names[*]}"
vm_log "PASSED: ${names[*]} ($VM_ACCEL_ARGS, -smp ${VM_SMP:-2})"
