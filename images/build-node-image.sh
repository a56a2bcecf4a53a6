#!/usr/bin/env bash
# Build a gpufleet node image: systemd as PID 1, python3, sudo, PAM login tools (su, runuser,
# login), openssh-server, procps, libpam-systemd (logind and user managers), and the distribution's container
# engine (Debian/Ubuntu: docker.io with iptables and a busybox rootfs for a tiny image; RHEL:
# podman) so the node can run containers of its own.
#
#   images/build-node-image.sh DISTRO
#
# DISTRO: debian13 | debian12 | debian11 | ubuntu2004 | ubuntu2204 | ubuntu2404 | rockylinux9 | rockylinux8
#
# Where a registry is reachable the image is built FROM the usual base image
# (images/Dockerfile.<family>); otherwise Debian images fall back to debootstrap from the apt
# mirror this machine uses, then `docker import`. The result is tagged gpufleet-node:DISTRO.
# An existing tag is kept unless FORCE=1. GPUFLEET_NO_REGISTRY=1 skips the registry attempt.
set -euo pipefail

distro=${1:?usage: build-node-image.sh DISTRO}
here=$(cd "$(dirname "$0")" && pwd)
tag="gpufleet-node:${distro}"

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag exists (FORCE=1 rebuilds)"
  exit 0
fi

pkgs="systemd,systemd-sysv,dbus,libpam-systemd,python3,sudo,procps,passwd,login,util-linux"
pkgs="$pkgs,ca-certificates,docker.io,iptables,busybox-static"
# sshd (and the ssh client): users log in over SSH; the ssh context probes a session through
# the node's sshd_config and /etc/pam.d/sshd (plugins/module_utils/contexts/ssh.py).
pkgs="$pkgs,openssh-server"
# Installed in a second step: their maintainer scripts fail inside debootstrap's first pass.
extra_pkgs="podman"

case "$distro" in
  debian13) suite=trixie; base_image=debian:13; family=debian ;;
  debian12) suite=bookworm; base_image=debian:12; family=debian ;;
  debian11) suite=bullseye; base_image=debian:11; family=debian ;;
  ubuntu2004) suite=; base_image=ubuntu:20.04; family=debian ;;
  ubuntu2204) suite=; base_image=ubuntu:22.04; family=debian ;;
  ubuntu2404) suite=; base_image=ubuntu:24.04; family=debian ;;
  rockylinux9) suite=; base_image=rockylinux:9; family=rhel ;;
  rockylinux8) suite=; base_image=rockylinux:8; family=rhel ;;
  *) echo "unknown distro: $distro" >&2; exit 2 ;;
esac
# From Debian 13 the docker command is its own package, which docker.io only recommends.
[ "$distro" = debian13 ] && pkgs="$pkgs,docker-cli"

registry_ok() {
  [ "${GPUFLEET_NO_REGISTRY:-0}" = 1 ] && return 1
  docker image inspect "$base_image" >/dev/null 2>&1 && return 0
  timeout "${GPUFLEET_PULL_TIMEOUT:-60}" docker pull -q "$base_image" >/dev/null 2>&1
}

if registry_ok; then
  echo "building $tag from $base_image"
  docker build --build-arg "BASE=$base_image" -t "$tag" -f "$here/Dockerfile.$family" "$here"
  exit 0
fi

if [ -z "$suite" ]; then
  echo "no registry reachable, and $distro has no offline fallback (only debian13, debian12 and" \
       "debian11 are built with debootstrap)" >&2
  exit 3
fi

# shellcheck source=images/debian-mirror.sh
. "$(dirname "$0")/debian-mirror.sh"
mirror=$(debian_mirror)
echo "no registry: debootstrap $suite from $mirror for $tag"

work=$(mktemp -d /var/tmp/gpufleet-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include="$pkgs" "$suite" "$work/rootfs" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -n 40 "$work/debootstrap.log" >&2; exit 1; }
cp /etc/resolv.conf "$work/rootfs/etc/resolv.conf"
mount -t proc proc "$work/rootfs/proc"
trap 'umount -l "$work/rootfs/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
chroot "$work/rootfs" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends $extra_pkgs" >"$work/extra.log" 2>&1 \
  || { tail -n 40 "$work/extra.log" >&2; exit 1; }
umount -l "$work/rootfs/proc"
"$here/finalize-rootfs.sh" "$work/rootfs"
tar -C "$work/rootfs" -c . | docker import \
  -c 'ENV container=docker' -c 'CMD ["/lib/systemd/systemd"]' \
  - "$tag" >/dev/null
echo "built $tag"
