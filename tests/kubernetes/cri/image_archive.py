# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wrap a root file system tar into an image archive (the `docker save` layout) that
`ctr -n k8s.io images import` reads: the pod sandbox (its command sleeps: it holds the pod's namespaces) and probe image of the kubernetes
scenario, with no registry. Usage: image_archive.py ROOTFS.tar NAME:TAG OUT.tar"""
import hashlib
import io
import json
import sys
import tarfile


def main(rootfs, name, out):
    with open(rootfs, 'rb') as handle:
        layer = handle.read()
    config = json.dumps({
        'architecture': 'amd64', 'os': 'linux',
        'config': {'Cmd': ['sleep', '2147483647'], 'Env': ['PATH=/usr/sbin:/usr/bin:/sbin:/bin']},
        'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + hashlib.sha256(layer).hexdigest()]},
    }).encode()
    config_name = hashlib.sha256(config).hexdigest() + '.json'
    manifest = json.dumps([{'Config': config_name, 'RepoTags': [name],
                            'Layers': ['layer.tar']}]).encode()
    with tarfile.open(out, 'w') as archive:
        for member, data in (('layer.tar', layer), (config_name, config),
                             ('manifest.json', manifest)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


if __name__ == '__main__':
    main(*sys.argv[1:4])
