#!/usr/bin/env bash
# Put the torch image (images/build-torch-image.sh) into the dockerd or the Podman of a node
# container, for the DataLoader check's container context.
#
#   images/load-torch-image.sh NODE [TAG] [ENGINE]   (TAG default gpufleet-torch:debian12,
#                                                     ENGINE docker or podman, default docker)
#
# docker: the node images run their dockerd on vfs (no overlay on the node's own overlay root), and vfs
# copies the whole image for every container it starts: with this 790 MB image a `docker run`
# took 54-59 s here. So the node's dockerd first moves to overlay2 on a tmpfs at
# /var/lib/docker (what a real node has: overlay2 on a local disk; the tmpfs goes with the node),
# which starts the same container in about 1 s; the images it held (the lab's tiny:latest) are
# imported again. Then `docker save | docker exec -i NODE docker load` (about 30 s here).
#
# podman: Podman's overlay driver refuses a tmpfs in these node containers (its check creates a
# whiteout inside an overlay mount: "kernel does not support overlay fs: unable to create
# kernel-style whiteout: operation not permitted"; no /dev/fuse for fuse-overlayfs either), so
# its store is vfs on a tmpfs at /var/lib/containers/storage: vfs still copies the image for
# each container, but in memory (a `podman run` of this image in about 3 s here, 18 s for the
# load). The node's engine settings Podman needs in a container (cgroupfs, events to a file) go
# in containers.conf.d/10-node.conf when it has none. Then `docker save | podman load`: the
# image is localhost/TAG in Podman's store, which the short name TAG finds.
# Nothing is done when the node's engine already has the image.
set -euo pipefail
node=${1:?usage: load-torch-image.sh NODE [TAG]}
tag=${2:-gpufleet-torch:debian12}
engine=${3:-docker}
started=$(date +%s)

if [ "$engine" = podman ]; then
  if docker exec "$node" podman image exists "$tag" 2>/dev/null; then
    echo "$node: $tag is there (podman)"
    exit 0
  fi
  docker exec "$node" sh -ec '
    mkdir -p /var/lib/containers/storage /etc/containers/containers.conf.d
    if ! mountpoint -q /var/lib/containers/storage; then
      mount -t tmpfs -o size=4g,mode=0700 tmpfs /var/lib/containers/storage
    fi
    printf "%s\n" "[storage]" "driver = \"vfs\"" "runroot = \"/run/containers/storage\"" \
      "graphroot = \"/var/lib/containers/storage\"" >/etc/containers/storage.conf
    [ -e /etc/containers/containers.conf.d/10-node.conf ] ||
      printf "%s\n" "[engine]" "cgroup_manager = \"cgroupfs\"" "events_logger = \"file\"" \
        >/etc/containers/containers.conf.d/10-node.conf'
  docker save "$tag" | docker exec -i "$node" podman load -q >/dev/null
  echo "$node: loaded $tag in $(( $(date +%s) - started )) s (podman, $(docker exec "$node" podman info --format '{{.Store.GraphDriverName}}'))"
  exit 0
fi

if docker exec "$node" docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$node: $tag is there"
  exit 0
fi
docker exec "$node" sh -c 'until systemctl is-active -q docker.service; do sleep 1; done'
if [ "$(docker exec "$node" docker info --format '{{.Driver}}')" = vfs ]; then
  tiny=$(docker exec "$node" sh -c 'docker image inspect tiny:latest >/dev/null 2>&1 && echo yes || true')
  docker exec "$node" sh -ec '
    systemctl stop docker.service docker.socket
    mountpoint -q /var/lib/docker || mount -t tmpfs -o size=4g,mode=0710 tmpfs /var/lib/docker
    python3 - <<EOF
import json
path = "/etc/docker/daemon.json"
try:
    with open(path) as handle:
        config = json.load(handle)
except OSError:
    config = {}
config["storage-driver"] = "overlay2"
with open(path + ".tmp", "w") as handle:
    json.dump(config, handle, indent=2)
    handle.write("\n")
import os
os.replace(path + ".tmp", path)
EOF
    systemctl start docker.service'
  if [ -n "$tiny" ]; then
    docker exec "$node" sh -c 'docker import /opt/gpufleet/tiny-rootfs.tar tiny:latest >/dev/null'
  fi
fi
docker save "$tag" | docker exec -i "$node" docker load >/dev/null
echo "$node: loaded $tag in $(( $(date +%s) - started )) s ($(docker exec "$node" docker info --format '{{.Driver}}'))"
