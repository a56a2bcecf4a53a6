#!/usr/bin/env bash
# Build the container image the DataLoader check's container context runs (issue 13): Debian's
# python3 and PyTorch (CPU) from the wheelhouse, with no registry. One layer, made small for the
# node's dockerd (vfs storage copies the whole image for every container it starts).
#
#   images/build-torch-image.sh [TAG]        (default gpufleet-torch:debian12)
#
# The rootfs is a debootstrap minbase of bookworm with python3 (the same mirror as the node
# images); torch, numpy and Pillow are installed from WHEELHOUSE (default
# build/wheelhouse/torch-2.13.0-cp311, what `make wheelhouse` downloads) into
# /usr/local/lib/python3.11/dist-packages with pip --target for that Python (so the host's Python
# does not matter), compiled there with the image's own python3, then torch's test binaries,
# headers and the build tools are removed; `docker import` tags the result. Only what `import
# torch` and a DataLoader load is installed (--no-deps: torch's sympy, networkx and jinja2 serve
# torch.compile, not data loading: 120 MiB less). An existing tag is
# kept unless FORCE=1. images/load-torch-image.sh puts it into a node's dockerd.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tag=${1:-gpufleet-torch:debian12}
torch_version=${TORCH_VERSION:-2.13.0}
wheelhouse=${WHEELHOUSE:-$root/build/wheelhouse/torch-$torch_version-cp311}
pip=${PIP:-$root/.venv/bin/python -m pip}

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag exists (FORCE=1 rebuilds)"
  exit 0
fi
if ! ls "$wheelhouse"/torch-"$torch_version"*.whl >/dev/null 2>&1; then
  echo "no torch $torch_version wheel in $wheelhouse: run make wheelhouse first" >&2
  exit 2
fi

# shellcheck source=images/debian-mirror.sh
. "$(dirname "$0")/debian-mirror.sh"
mirror=$(debian_mirror)

started=$(date +%s)
work=$(mktemp -d /var/tmp/gpufleet-torch-rootfs.XXXXXX)
trap 'umount -l "$work/rootfs/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "debootstrap bookworm (minbase, python3) from $mirror for $tag"
debootstrap --variant=minbase --include=python3 bookworm "$work/rootfs" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -n 40 "$work/debootstrap.log" >&2; exit 1; }

site=/usr/local/lib/python3.11/dist-packages
echo "torch $torch_version, numpy, Pillow from $wheelhouse"
$pip install --quiet --disable-pip-version-check --no-index --find-links "$wheelhouse" \
  --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
  --no-compile --no-deps --target "$work/rootfs$site" "torch==$torch_version" numpy pillow \
  typing_extensions
# What a DataLoader never runs: C++ tests, protoc, headers and CMake files, pip's own scripts.
t="$work/rootfs$site/torch"
rm -rf "$t"/test "$t"/include "$t"/share "$t"/bin/*Test "$t"/bin/test_* "$t"/bin/protoc* \
  "$work/rootfs$site/bin" "$t"/lib/libjitbackend_test.so "$t"/lib/libbackend_with_compiler.so
mount -t proc proc "$work/rootfs/proc"
chroot "$work/rootfs" python3 -m compileall -q -j 0 "$site" >/dev/null || true
chroot "$work/rootfs" python3 -W ignore -c "import torch, numpy, PIL; print('torch', torch.__version__)"
umount -l "$work/rootfs/proc"
rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/archives/*.deb \
  "$work"/rootfs/usr/share/doc/* "$work"/rootfs/usr/share/man/* "$work"/rootfs/usr/share/locale/*
size=$(du -sm "$work/rootfs" | cut -f1)
tar -C "$work/rootfs" -c . | docker import \
  -c 'ENV PYTHONDONTWRITEBYTECODE=1' -c 'CMD ["python3"]' \
  -c "LABEL org.gpufleet.torch=$torch_version" - "$tag" >/dev/null
echo "built $tag: ${size} MiB, one layer, in $(( $(date +%s) - started )) s"
