#!/usr/bin/env bash
# Put the torch image (images/build-torch-image.sh) into the containerd of a node container, in
# the k8s.io namespace that containerd's CRI (Kubernetes pods) uses: the DataLoader check's
# k8s_pod context (docs/dataloader-check.md).
#
#   images/load-torch-image-cri.sh NODE [TAG] [SNAPSHOTTER]   (gpufleet-torch:debian12, native)
#
# `docker save TAG | ctr -n k8s.io images import --snapshotter SNAPSHOTTER -` in the node: the
# CRI names it docker.io/library/TAG, which a pod's `TAG` resolves to. The kubernetes scenario's
# containerd runs its CRI on the native snapshotter (overlayfs on the node's own overlay root does
# not mount), which copies the image's 790 MB for every container: measured here, the import
# took 20 s and a pod container of it started in 4-24 s (the copy; more under load), which is
# less than moving containerd to overlayfs on a tmpfs would save for the three pods a run
# starts. Nothing is done when the image is there.
set -euo pipefail
node=${1:?usage: load-torch-image-cri.sh NODE [TAG] [SNAPSHOTTER]}
tag=${2:-gpufleet-torch:debian12}
snapshotter=${3:-native}
started=$(date +%s)
case $tag in
  */*) ref=$tag ;;
  *) ref=docker.io/library/$tag ;;
esac

if docker exec "$node" ctr -n k8s.io images ls -q "name==$ref" | grep -qx "$ref"; then
  echo "$node: $ref is there"
  exit 0
fi
docker image inspect "$tag" >/dev/null 2>&1 || { echo "no image $tag here: run make torch-image first" >&2; exit 2; }
docker exec "$node" sh -c 'until systemctl is-active -q containerd.service; do sleep 1; done'
docker save "$tag" | docker exec -i "$node" ctr -n k8s.io images import --snapshotter "$snapshotter" - >/dev/null
echo "$node: loaded $ref into containerd (k8s.io, $snapshotter) in $(( $(date +%s) - started )) s"
