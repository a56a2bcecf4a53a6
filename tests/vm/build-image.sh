#!/usr/bin/env bash
# Build the VM lane's base disk: a Debian root filesystem made by debootstrap from Debian's
# archive (the mirror images/debian-mirror.sh picks), with everything the lane's tests need
# installed, so that a VM never needs a network. No loop mount: `mkfs.ext4 -d` writes the
# directory into a raw image; the kernel and initrd are copied out for qemu's -kernel/-initrd.
#
#   tests/vm/build-image.sh DISTRO          (DISTRO: debian12 | debian11)
#
# Output (cached, keyed by a hash of this script and finalize-rootfs.sh): build/vm/base-DISTRO-HASH/
#   disk.raw  vmlinuz  initrd.img  (the lane boots a qcow2 overlay of disk.raw per VM)
# Prints the directory on stdout's last line. FORCE=1 rebuilds. Run as root.
set -euo pipefail
distro=${1:?usage: build-image.sh DISTRO}
here=$(cd "$(dirname "$0")" && pwd)
root_dir=$(cd "$here/../.." && pwd)
case "$distro" in
  debian12) suite=bookworm ;;
  debian11) suite=bullseye ;;
  *) echo "build-image.sh: unknown distro $distro (debian12 | debian11)" >&2; exit 2 ;;
esac

# What the tests need on the VM: a kernel (Debian's cloud kernel: virtio built for VMs),
# systemd with logind and user managers, sshd (Ansible's connection and the ssh context),
# sudo, python3, dockerd (the docker context) with a busybox image for `docker import`, Slurm.
pkgs="linux-image-cloud-amd64,systemd,systemd-sysv,udev,dbus,libpam-systemd,openssh-server"
pkgs="$pkgs,python3,sudo,procps,passwd,login,util-linux,kmod,iproute2,e2fsprogs"
# apparmor: docker.io recommends it, and apt installs it with docker.io on a real node; without
# apparmor_parser the kernel's AppArmor (on by default in Debian's kernels) makes every
# `docker run` fail once dockerd has restarted ("the docker-default profile could not be loaded")
pkgs="$pkgs,ca-certificates,docker.io,apparmor,iptables,busybox-static"
# slurm-wlm and munge: a single-node Slurm per VM (the slurm_job context after a reboot,
# prepare.yml sets it up with lab/slurm_node.yml); slurmctld and slurmd skip their start at
# boot until prepare.yml writes slurm.conf (their units' ConditionPathExists)
pkgs="$pkgs,slurm-wlm,munge"

key=$( (cat "$0" "$root_dir/images/finalize-rootfs.sh"; echo "$distro") | sha256sum | cut -c1-12)
out="$root_dir/build/vm/base-$distro-$key"
if [ "${FORCE:-0}" != 1 ] && [ -f "$out/disk.raw" ] && [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ]; then
  echo "vm-build: base image $out is cached (FORCE=1 rebuilds)" >&2
  echo "$out"
  exit 0
fi

# shellcheck source=images/debian-mirror.sh
. "$root_dir/images/debian-mirror.sh"
mirror=$(debian_mirror)
mkdir -p "$root_dir/build/vm"
work=$(mktemp -d "$root_dir/build/vm/rootfs.XXXXXX")
cleanup() { umount -l "$work/rootfs/proc" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
t0=$(date +%s)
echo "vm-build: debootstrap $suite from $mirror" >&2
debootstrap --variant=minbase --include="$pkgs" "$suite" "$work/rootfs" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -n 40 "$work/debootstrap.log" >&2; exit 1; }
t1=$(date +%s)
r=$work/rootfs

# The node images' shared touches (machine-id, sudoers, apt caches, dockerd's vfs and the busybox
# tiny-rootfs.tar), then undo the container-only masks: a VM has udev, consoles and modules.
"$root_dir/images/finalize-rootfs.sh" "$r"
for unit in getty.target systemd-udevd.service systemd-udev-trigger.service \
            systemd-modules-load.service sys-kernel-debug.mount sys-kernel-tracing.mount; do
  rm -f "$r/etc/systemd/system/$unit"
done
# Nothing a test needs, all slow under TCG.
for unit in man-db.timer apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
            systemd-timesyncd.service logrotate.timer; do
  ln -sf /dev/null "$r/etc/systemd/system/$unit"
done

echo "gpufleet-vm" > "$r/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 gpufleet-vm\n' > "$r/etc/hosts"
printf '/dev/vda / ext4 rw,relatime 0 1\n' > "$r/etc/fstab"
# qemu's user network: DHCP on the one virtio NIC (10.0.2.15); nothing outside is reachable
# (qemu runs it with restrict=on).
mkdir -p "$r/etc/systemd/network"
printf '[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n' > "$r/etc/systemd/network/20-vm.network"
ln -sf /lib/systemd/system/systemd-networkd.service \
  "$r/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
# sshd: no DNS lookups of the client (there is no DNS).
mkdir -p "$r/etc/ssh/sshd_config.d"
printf 'UseDNS no\n' > "$r/etc/ssh/sshd_config.d/10-vm.conf"

# The run's SSH key comes on the kernel command line (gpufleet.sshkey=BASE64 of the public key),
# so the cached base image holds no key and the lane needs no mount to give it one.
cat > "$r/usr/local/sbin/gpufleet-vm-sshkey" <<'SH'
#!/bin/sh
set -eu
k=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^gpufleet\.sshkey=//p')
[ -n "$k" ] || exit 0
for home in /root /home/gpufleet; do
  mkdir -p "$home/.ssh"
  echo "$k" | base64 -d > "$home/.ssh/authorized_keys"
  chmod 0700 "$home/.ssh"; chmod 0600 "$home/.ssh/authorized_keys"
done
chown -R gpufleet:gpufleet /home/gpufleet/.ssh
SH
chmod 0755 "$r/usr/local/sbin/gpufleet-vm-sshkey"
cat > "$r/etc/systemd/system/gpufleet-vm-sshkey.service" <<'UNIT'
[Unit]
Description=Authorize the VM lane's SSH key from the kernel command line
Before=ssh.service
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/gpufleet-vm-sshkey
[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/gpufleet-vm-sshkey.service \
  "$r/etc/systemd/system/multi-user.target.wants/gpufleet-vm-sshkey.service"

# Users: gpufleet (Ansible's SSH user, sudo without password, as an operator's account) and
# trainer (uid 1001, the training user the tests check, with a lingering user manager).
chroot "$r" useradd -m -u 1000 -s /bin/bash gpufleet
chroot "$r" useradd -m -u 1001 -s /bin/bash trainer
printf 'gpufleet ALL=(ALL) NOPASSWD: ALL\n' > "$r/etc/sudoers.d/gpufleet"
chmod 0440 "$r/etc/sudoers.d/gpufleet"
mkdir -p "$r/var/lib/systemd/linger" && touch "$r/var/lib/systemd/linger/trainer"

cp -L "$r/vmlinuz" "$work/vmlinuz" 2>/dev/null || cp "$(ls "$r"/boot/vmlinuz-* | tail -n1)" "$work/vmlinuz"
cp -L "$r/initrd.img" "$work/initrd.img" 2>/dev/null || cp "$(ls "$r"/boot/initrd.img-* | tail -n1)" "$work/initrd.img"
rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
mkfs.ext4 -q -F -L gpufleet-root -d "$r" "$work/disk.raw" "${VM_DISK_SIZE:-4G}"
t2=$(date +%s)
rm -rf "$out"; mkdir -p "$out"
mv "$work/disk.raw" "$work/vmlinuz" "$work/initrd.img" "$out/"
chmod 0644 "$out/vmlinuz" "$out/initrd.img"
echo "vm-build: $distro base image in $((t2 - t0)) s (debootstrap $((t1 - t0)) s," \
     "disk $((t2 - t1)) s): $out ($(du -sh --apparent-size "$out/disk.raw" | cut -f1) apparent," \
     "$(du -sh "$out/disk.raw" | cut -f1) used)" >&2
echo "$out"
