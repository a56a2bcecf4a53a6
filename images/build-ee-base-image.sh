#!/usr/bin/env bash
# A base image for the execution environment (execution-environment.yml), built locally since
# no registry is reachable here: Debian 13 (from the node image's rootfs lineage:
# gpufleet-node:debian13, never changed; its Python 3.13 runs ansible-core 2.21, which needs
# 3.12 or newer: docs/supported-versions.md) with git, openssh-client and a Python venv, /opt/ee,
# first on PATH: the EE's Python (execution-environment.yml's python_interpreter), because
# Debian disables ensurepip for the system Python and ansible-builder's pip_install step runs
# `python -m ensurepip` (allowed in a venv) and PEP 668 forbids pip there; and a small
# package-manager adapter (/usr/local/bin/gpufleet-apt) because ansible-builder's scripts call
# `$PKGMGR install -y ...` and `$PKGMGR clean all` (dnf's syntax).
#   images/build-ee-base-image.sh          -> gpufleet-ee-base:debian13 (FORCE=1 rebuilds)
#   images/build-ee-base-image.sh debian12 -> gpufleet-ee-base:debian12 (Python 3.11: ansible-core 2.19)
set -euo pipefail
distro=${1:-debian13}
tag=gpufleet-ee-base:$distro
if [ "${FORCE:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag exists (FORCE=1 rebuilds)"; exit 0
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cat > "$ctx/gpufleet-apt" <<'SCRIPT'
#!/bin/sh
# dnf-style calls from ansible-builder's scripts, done with apt-get.
set -e
command=$1; shift
case "$command" in
  install) [ "$1" = -y ] && shift
           apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" ;;
  clean) apt-get clean && rm -rf /var/lib/apt/lists/* ;;
  *) exec apt-get "$command" "$@" ;;
esac
SCRIPT
echo "FROM gpufleet-node:$distro" > "$ctx/Dockerfile"
cat >> "$ctx/Dockerfile" <<'DOCKERFILE'
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-pip python3-venv git openssh-client \
 && python3 -m venv /opt/ee \
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/ee/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY gpufleet-apt /usr/local/bin/gpufleet-apt
RUN chmod 0755 /usr/local/bin/gpufleet-apt
CMD ["/bin/bash"]
DOCKERFILE
docker build -q -t "$tag" "$ctx"
echo "built $tag"
