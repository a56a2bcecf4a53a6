# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small CRI runtime.v1 client (grpcio + protobuf): start a pod container on containerd's CRI
and print the /proc/self/limits its process sees, the way the kubelet would start it.

The messages come from ``runtime_v1.desc``, a FileDescriptorSet made once with
``python -m grpc_tools.protoc --descriptor_set_out`` from kubernetes/cri-api
``pkg/apis/runtime/v1/api.proto`` (commit d279f3cbb9d18b653d5fab12e187589914329c77); no
generated Python code and no grpcio-tools at run time. Only the calls needed here: Version,
RunPodSandbox, CreateContainer, StartContainer, ExecSync, StopPodSandbox, RemovePodSandbox.

The pod is host-network (NamespaceMode NODE) with no hostname, as a node container needs
(docs/containerd-kubernetes.md). Usage: cri_client.py limits --image IMAGE [--handler runc]
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import sys
import uuid

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = '/runtime.v1.RuntimeService/'
__metaclass__ = type


def _messages():
    files = descriptor_pb2.FileDescriptorSet()
    with open(os.path.join(HERE, 'runtime_v1.desc'), 'rb') as handle:
        files.ParseFromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    return lambda name: message_factory.GetMessageClass(
        pool.FindMessageTypeByName('runtime.v1.' + name))


MSG = _messages()


class Runtime(object):
    def __init__(self, endpoint, timeout=60):
        self.channel = grpc.insecure_channel(endpoint)
        self.timeout = timeout

    def call(self, method, request):
        rpc = self.channel.unary_unary(SERVICE + method,
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=MSG(method + 'Response').FromString)
        return rpc(request, timeout=self.timeout)

    def pod_limits(self, image, handler, command):
        """The output of ``command`` run inside a new pod container, then the pod removed."""
        name = 'gpufleet-probe-' + uuid.uuid4().hex[:8]
        pod_config = MSG('PodSandboxConfig')()
        pod_config.metadata.name = name
        pod_config.metadata.namespace = 'gpufleet'
        pod_config.metadata.uid = uuid.uuid4().hex
        pod_config.log_directory = '/tmp/' + name
        security = pod_config.linux.security_context.namespace_options
        security.network = MSG('NamespaceOption').DESCRIPTOR.fields_by_name[
            'network'].enum_type.values_by_name['NODE'].number
        run = MSG('RunPodSandboxRequest')(config=pod_config, runtime_handler=handler)
        pod_id = self.call('RunPodSandbox', run).pod_sandbox_id
        try:
            config = MSG('ContainerConfig')()
            config.metadata.name = 'probe'
            config.image.image = image
            config.command.extend(['sleep', '600'])
            config.log_path = 'probe.log'
            created = self.call('CreateContainer', MSG('CreateContainerRequest')(
                pod_sandbox_id=pod_id, config=config, sandbox_config=pod_config))
            self.call('StartContainer', MSG('StartContainerRequest')(
                container_id=created.container_id))
            result = self.call('ExecSync', MSG('ExecSyncRequest')(
                container_id=created.container_id, cmd=command, timeout=30))
            if result.exit_code != 0:
                raise RuntimeError('exec %s: exit %d: %s' % (command, result.exit_code,
                                                             result.stderr.decode()))
            return result.stdout.decode()
        finally:
            self.call('StopPodSandbox', MSG('StopPodSandboxRequest')(pod_sandbox_id=pod_id))
            self.call('RemovePodSandbox', MSG('RemovePodSandboxRequest')(pod_sandbox_id=pod_id))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('what', choices=['limits', 'version'])
    parser.add_argument('--endpoint', default='unix:///run/containerd/containerd.sock')
    parser.add_argument('--image', default='gpufleet.invalid/busybox:probe')
    parser.add_argument('--handler', default='')
    args = parser.parse_args(argv)
    runtime = Runtime(args.endpoint)
    if args.what == 'version':
        reply = runtime.call('Version', MSG('VersionRequest')(version='v1'))
        sys.stdout.write('%s %s %s\n' % (reply.runtime_name, reply.runtime_version,
                                         reply.runtime_api_version))
        return 0
    sys.stdout.write(runtime.pod_limits(args.image, args.handler, ['cat', '/proc/self/limits']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
