#!/usr/bin/env bash
# Derived node image with sshd, for labs reached over SSH (the benchmark's main series, the
# ansible-pull and execution-environment tests): gpufleet-node-ssh:DISTRO, built FROM the node
# image gpufleet-node:DISTRO (which this script never changes) with openssh-server, git and python3-venv (ansible-pull at boot) from
# the distribution's archive. Host keys are generated at each node's first boot (a
# drop-in runs ssh-keygen -A before sshd); the lab installs its own client key (lab/lab.sh).
#   images/build-ssh-image.sh DISTRO        (FORCE=1 rebuilds an existing tag)
set -euo pipefail
distro=${1:?usage: build-ssh-image.sh DISTRO}
base="gpufleet-node:${distro}"
tag="gpufleet-node-ssh:${distro}"
if [ "${FORCE:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag exists (FORCE=1 rebuilds)"
  exit 0
fi
docker image inspect "$base" >/dev/null 2>&1 || { echo "$base is missing: make images IMAGES=$distro" >&2; exit 1; }
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM $base
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \\
 && apt-get install -y --no-install-recommends openssh-server git python3-venv \\
 && rm -f /etc/ssh/ssh_host_*key* \\
 && printf 'PasswordAuthentication no\nPermitRootLogin prohibit-password\nUseDNS no\nMaxStartups 200:30:400\n' > /etc/ssh/sshd_config.d/90-gpufleet-lab.conf \\
 && mkdir -p /etc/systemd/system/ssh.service.d \\
 && printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' > /etc/systemd/system/ssh.service.d/90-gpufleet-lab-hostkeys.conf \\
 && systemctl enable ssh.service \\
 && rm -rf /var/lib/apt/lists/*
STOPSIGNAL SIGRTMIN+3
CMD ["/lib/systemd/systemd"]
DOCKERFILE
docker build -q -t "$tag" "$ctx"
echo "built $tag"
