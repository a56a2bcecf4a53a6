# Sourced by tests/vm/run-lane.sh: start, reach and stop the lane's VMs. No network leaves the
# machine: qemu's user network with restrict=on (the guest reaches nothing outside) and one
# forward from 127.0.0.1:PORT to the guest's sshd. Each VM boots its own qcow2 overlay of the
# cached base disk, the kernel and initrd directly (no bootloader).
# Needs: VM_RUN (the run's directory), VM_KEY (the run's SSH private key).

vm_log() { echo "vm-lane: $*" >&2; }

vm_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# KVM where a test boot proves it works, else TCG (said in the log). The test boot: the base
# kernel with no root disk under `-accel kvm -cpu host`; KVM works when the kernel gets as far as
# its "VFS: Unable to mount root fs" panic within VM_KVM_PROBE_S seconds (qemu exits on the
# panic: -no-reboot, panic=-1). Where /dev/kvm comes from a nested module that cannot run this
# kernel, qemu aborts at once ("failed to set MSR ...") or the boot stalls: TCG.
vm_pick_accel() {
  local base=$1 log
  case "${VM_ACCEL:-auto}" in
    tcg) VM_ACCEL_ARGS="-accel tcg,thread=multi -cpu max"; vm_log "accel: TCG (VM_ACCEL=tcg)"; return ;;
    kvm) VM_ACCEL_ARGS="-accel kvm -cpu host"; vm_log "accel: KVM (VM_ACCEL=kvm, not probed)"; return ;;
  esac
  VM_ACCEL_ARGS="-accel tcg,thread=multi -cpu max"
  if [ ! -w /dev/kvm ]; then
    vm_log "KVM: not usable here (no writable /dev/kvm); using TCG"
    return
  fi
  log="$VM_RUN/kvm-probe.log"
  local t0; t0=$(date +%s)
  ( timeout "${VM_KVM_PROBE_S:-20}" qemu-system-x86_64 -accel kvm -cpu host -m 256 -smp 1 \
    -display none -no-reboot -serial "file:$log" -kernel "$base/vmlinuz" \
    -append "console=ttyS0 panic=-1 root=/dev/nonexistent" >"$log.qemu" 2>&1 || true ) 2>/dev/null
  if grep -q "Unable to mount root fs\|VFS: Cannot open root device" "$log" 2>/dev/null; then
    VM_ACCEL_ARGS="-accel kvm -cpu host"
    vm_log "KVM: a test boot reached the kernel's root mount in $(( $(date +%s) - t0 )) s; using KVM"
  else
    local why
    why=$(grep -m1 -i "error\|fail" "$log.qemu" 2>/dev/null || true)
    vm_log "KVM: not usable here (test boot did not reach the root mount in $(( $(date +%s) - t0 )) s${why:+: $why}); using TCG"
  fi
}

# vm_start NAME BASE_DIR CGROUP(v2|v1): boots the VM in the background, records its port.
vm_start() {
  local name=$1 base cgroup=$3 port append
  base=$(cd "$2" && pwd)
  port=$(vm_free_port)
  qemu-img create -q -f qcow2 -F raw -b "$base/disk.raw" "$VM_RUN/$name.qcow2"
  append="root=/dev/vda rw console=ttyS0 quiet net.ifnames=0 gpufleet.sshkey=$(base64 -w0 < "$VM_KEY.pub")"
  [ "$cgroup" = v1 ] && append="$append systemd.unified_cgroup_hierarchy=0"
  # shellcheck disable=SC2086
  qemu-system-x86_64 $VM_ACCEL_ARGS -smp "${VM_SMP:-2}" -m "${VM_MEM:-1536}" \
    -display none -daemonize -pidfile "$VM_RUN/$name.pid" -serial "file:$VM_RUN/$name.console" \
    -kernel "$base/vmlinuz" -initrd "$base/initrd.img" -append "$append" \
    -drive "file=$VM_RUN/$name.qcow2,if=virtio,format=qcow2,discard=unmap" \
    -nic "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22"
  echo "$port" > "$VM_RUN/$name.port"
  date +%s > "$VM_RUN/$name.started"
}

vm_ssh() {
  local name=$1; shift
  ssh -q -i "$VM_KEY" -p "$(cat "$VM_RUN/$name.port")" -o BatchMode=yes -o IdentitiesOnly=yes \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
    gpufleet@127.0.0.1 "$@"
}

# vm_wait_ssh NAME [TIMEOUT]: until sshd answers a command; prints the seconds since the start.
vm_wait_ssh() {
  local name=$1 limit=${2:-${VM_BOOT_TIMEOUT:-300}} t0
  t0=$(cat "$VM_RUN/$name.started")
  while ! vm_ssh "$name" true 2>/dev/null; do
    if [ $(( $(date +%s) - t0 )) -gt "$limit" ]; then
      vm_log "$name: no SSH after $limit s; console tail:"
      tail -n 30 "$VM_RUN/$name.console" >&2 || true
      return 1
    fi
    if ! kill -0 "$(cat "$VM_RUN/$name.pid" 2>/dev/null)" 2>/dev/null; then
      vm_log "$name: qemu is gone; console tail:"
      tail -n 30 "$VM_RUN/$name.console" >&2 || true
      return 1
    fi
    sleep 2
  done
  echo $(( $(date +%s) - t0 ))
}

# Stop every VM of the run (by its pidfile) and remove the run's files.
vm_stop_all() {
  local pidf pid
  for pidf in "$VM_RUN"/*.pid; do
    [ -f "$pidf" ] || continue
    pid=$(cat "$pidf")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
}
