#!/usr/bin/env bash
# Final touches shared by every node image, debootstrap-built or Dockerfile-built.
#   finalize-rootfs.sh ROOT     (ROOT is / inside a Dockerfile)
set -euo pipefail
root=${1:?root}

# systemd in a container: no consoles, no hardware, no clock to set.
for unit in getty.target console-getty.service systemd-udevd.service systemd-udev-trigger.service \
            systemd-modules-load.service sys-kernel-debug.mount sys-kernel-tracing.mount \
            systemd-firstboot.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer \
            e2scrub_reap.service e2scrub_all.timer fstrim.timer; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
mkdir -p "$root/etc/sudoers.d"
printf 'Defaults !requiretty\n' > "$root/etc/sudoers.d/gpufleet-node"
chmod 0440 "$root/etc/sudoers.d/gpufleet-node"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb

if [ -x "$root/usr/sbin/dockerd" ] || [ -x "$root/usr/bin/dockerd" ]; then
  # dockerd inside the node: vfs storage (no overlay on overlay); the tiny image is a busybox rootfs
  # that tests `docker import` inside the node.
  mkdir -p "$root/etc/docker"
  [ -f "$root/etc/docker/daemon.json" ] || printf '{\n  "storage-driver": "vfs"\n}\n' > "$root/etc/docker/daemon.json"
  tiny=$(mktemp -d)
  # mktemp -d gives 0700: the image's / must be searchable by a non-root user (--user 65534)
  chmod 0755 "$tiny"
  mkdir -p "$tiny/bin" "$tiny/proc" "$tiny/sys" "$tiny/dev" "$tiny/tmp" "$tiny/etc"
  bb=
  for p in bin/busybox usr/bin/busybox usr/sbin/busybox; do
    if [ -x "$root/$p" ]; then bb="$root/$p"; break; fi
  done
  [ -n "$bb" ] || { echo "busybox not found in $root" >&2; exit 1; }
  cp "$bb" "$tiny/bin/busybox"
  for applet in sh cat df ls sleep id grep awk head tail wc echo true; do
    ln -s busybox "$tiny/bin/$applet"
  done
  mkdir -p "$root/opt/gpufleet"
  tar -C "$tiny" -cf "$root/opt/gpufleet/tiny-rootfs.tar" .
  rm -rf "$tiny"
fi
