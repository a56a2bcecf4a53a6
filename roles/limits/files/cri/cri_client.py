# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small CRI runtime.v1 client (grpcio + protobuf): start a pod container on containerd's CRI
and print the /proc/self/limits its process sees, the way the kubelet would start it.

The messages come from ``runtime_v1.desc``, a FileDescriptorSet made once with
``python -m grpc_tools.protoc --descriptor_set_out`` from kubernetes/cri-api
``pkg/apis/runtime/v1/api.proto`` (commit d279f3cbb9d18b653d5fab12e187589914329c77); no
generated Python code and no grpcio-tools at run time. Only the calls needed here: Version,
RunPodSandbox, CreateContainer, StartContainer, ContainerStatus, ExecSync, StopPodSandbox,
RemovePodSandbox and ImageService's ImageStatus.

The pod is host-network (NamespaceMode NODE) with no hostname, as a node container needs
(docs/containerd-kubernetes.md). Usage: cri_client.py limits --image IMAGE [--handler runc]

``image --image IMAGE`` says whether the CRI has the image (in containerd's k8s.io namespace,
resolved as the kubelet resolves it). ``run --image IMAGE [--user UID:GID] [--mount
HOST:CONTAINER[:ro]] [--env K=V] [--shm-size SIZE] -- COMMAND...`` runs COMMAND as a pod
container's own process (the DataLoader check's ``k8s_pod`` context): it waits for it to exit,
prints its stdout and stderr (from the CRI log) and exits with its exit status. Without
``--shm-size`` the container has the sandbox's /dev/shm (64 MB in containerd); with it, a tmpfs
of that size is mounted over /dev/shm, as the kubelet mounts an ``emptyDir`` of medium
``Memory``. SIGTERM (coreutils ``timeout``) stops and removes the pod before the client exits.
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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


class CriError(Exception):
    """A CRI call that failed: the method, the gRPC status code and its details, one line."""


class Runtime(object):
    def __init__(self, endpoint, timeout=60):
        self.channel = grpc.insecure_channel(endpoint)
        self.timeout = timeout

    def call(self, method, request, service=SERVICE):
        rpc = self.channel.unary_unary(service + method,
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=MSG(method + 'Response').FromString)
        try:
            return rpc(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise CriError('%s: %s: %s' % (method, exc.code().name, exc.details()))

    def run_sandbox(self, prefix, handler, log_directory=None):
        """A new host-network pod sandbox: (its id, its config)."""
        name = prefix + uuid.uuid4().hex[:8]
        pod_config = MSG('PodSandboxConfig')()
        pod_config.metadata.name = name
        pod_config.metadata.namespace = 'gpufleet'
        pod_config.metadata.uid = uuid.uuid4().hex
        pod_config.log_directory = log_directory or '/tmp/' + name
        security = pod_config.linux.security_context.namespace_options
        security.network = MSG('NamespaceOption').DESCRIPTOR.fields_by_name[
            'network'].enum_type.values_by_name['NODE'].number
        run = MSG('RunPodSandboxRequest')(config=pod_config, runtime_handler=handler)
        return self.call('RunPodSandbox', run).pod_sandbox_id, pod_config

    def remove_sandbox(self, pod_id):
        self.call('StopPodSandbox', MSG('StopPodSandboxRequest')(pod_sandbox_id=pod_id))
        self.call('RemovePodSandbox', MSG('RemovePodSandboxRequest')(pod_sandbox_id=pod_id))

    def pod_limits(self, image, handler, command):
        """The output of ``command`` run inside a new pod container, then the pod removed."""
        pod_id, pod_config = self.run_sandbox('gpufleet-probe-', handler)
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
            self.remove_sandbox(pod_id)

    def image_status(self, image):
        """The CRI's image record for ``image`` (size_bytes, id, repo_tags), or None."""
        reply = self.call('ImageStatus', MSG('ImageStatusRequest')(
            image=MSG('ImageSpec')(image=image)), service=IMAGE_SERVICE)
        return reply.image if reply.HasField('image') and reply.image.id else None

    def run_job(self, image, handler, command, user=None, mounts=(), envs=(), workdir='',
                poll=0.2):
        """Run ``command`` as a new pod container's process until it exits, then remove the
        pod: (exit status, stdout, stderr, reason), the output read from the CRI log."""
        logs = tempfile.mkdtemp(prefix='gpufleet-pod-log-')
        pod_id = None
        try:
            pod_id, pod_config = self.run_sandbox('gpufleet-job-', handler, logs)
            config = MSG('ContainerConfig')()
            config.metadata.name = 'job'
            config.image.image = image
            config.command.extend(command)
            config.log_path = 'job.log'
            if workdir:
                config.working_dir = workdir
            for key, value in envs:
                # KeyValue.value is bytes in runtime_v1.desc (the same wire type as a string)
                config.envs.add(key=key, value=value.encode())
            for host_path, container_path, readonly in mounts:
                config.mounts.add(host_path=host_path, container_path=container_path,
                                  readonly=readonly)
            if user is not None:
                security = config.linux.security_context
                security.run_as_user.value = user[0]
                if user[1] is not None:
                    security.run_as_group.value = user[1]
            created = self.call('CreateContainer', MSG('CreateContainerRequest')(
                pod_sandbox_id=pod_id, config=config, sandbox_config=pod_config))
            self.call('StartContainer', MSG('StartContainerRequest')(
                container_id=created.container_id))
            exited = MSG('ContainerStatus').DESCRIPTOR.fields_by_name[
                'state'].enum_type.values_by_name['CONTAINER_EXITED'].number
            while True:
                status = self.call('ContainerStatus', MSG('ContainerStatusRequest')(
                    container_id=created.container_id)).status
                if status.state == exited:
                    break
                time.sleep(poll)
            # the CRI log's parser, a plain module beside this one (only `run` needs it)
            from cri_log import read_cri_log
            out, err = read_cri_log(os.path.join(logs, 'job.log'))
            return status.exit_code, out, err, status.reason
        finally:
            try:
                if pod_id:
                    self.remove_sandbox(pod_id)
            finally:
                shutil.rmtree(logs, ignore_errors=True)


IMAGE_SERVICE = '/runtime.v1.ImageService/'


class ShmVolume(object):
    """A tmpfs of ``size`` for a pod's /dev/shm, as the kubelet mounts an emptyDir of medium
    Memory with a sizeLimit; unmounted and removed on exit."""

    def __init__(self, size):
        self.size = size
        self.path = None

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix='gpufleet-pod-shm-', dir='/run')
        try:
            subprocess.check_call(['mount', '-t', 'tmpfs', '-o', 'size=%s,mode=1777' % self.size,
                                   'tmpfs', self.path])
        except (OSError, subprocess.CalledProcessError):
            os.rmdir(self.path)
            raise
        return self.path

    def __exit__(self, *exc):
        subprocess.call(['umount', self.path])
        os.rmdir(self.path)
        return False


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def _run(runtime, args):
    signal.signal(signal.SIGTERM, _terminate)
    command = args.command
    if not command:
        sys.stderr.write('run: no command given\n')
        return 2
    user = None
    if args.user:
        uid, _sep, gid = args.user.partition(':')
        user = (int(uid), int(gid) if gid else None)
    mounts = []
    for spec in args.mount:
        host_path, container_path, mode = (spec.split(':') + ['', ''])[:3]
        mounts.append((host_path, container_path or host_path, mode == 'ro'))
    envs = [tuple(item.split('=', 1)) for item in args.env]
    shm = ShmVolume(args.shm_size) if args.shm_size else None
    if shm:
        mounts.append((shm.__enter__(), '/dev/shm', False))
    try:
        code, out, err, reason = runtime.run_job(args.image, args.handler, command, user,
                                                 mounts, envs, args.workdir)
    finally:
        if shm:
            shm.__exit__()
    sys.stdout.write(out)
    sys.stderr.write(err)
    if code != 0 and reason and reason != 'Error':
        sys.stderr.write('pod container exited %d: %s\n' % (code, reason))
    return code


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('what', choices=['limits', 'version', 'image', 'run'])
    parser.add_argument('--endpoint', default='unix:///run/containerd/containerd.sock')
    parser.add_argument('--image', default='gpufleet.invalid/busybox:probe')
    parser.add_argument('--handler', default='')
    parser.add_argument('--timeout', type=int, default=60, help='seconds per CRI call')
    parser.add_argument('--user', default='', help='run: UID[:GID] of the process')
    parser.add_argument('--mount', action='append', default=[],
                        help='run: HOST[:CONTAINER[:ro]], repeated')
    parser.add_argument('--env', action='append', default=[], help='run: KEY=VALUE, repeated')
    parser.add_argument('--workdir', default='', help='run: the working directory')
    parser.add_argument('--shm-size', default='',
                        help='run: a tmpfs of this size on /dev/shm (default: the sandbox\'s)')
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index('--') + 1:] if '--' in argv else []
    args = parser.parse_args(argv[:len(argv) - len(command) - 1] if '--' in argv else argv)
    args.command = command
    try:
        return _main(Runtime(args.endpoint, args.timeout), args)
    except CriError as exc:
        sys.stderr.write('cri_client: %s %s\n' % (args.endpoint, exc))
        return 1


def _main(runtime, args):
    if args.what == 'image':
        found = runtime.image_status(args.image)
        if found is None:
            sys.stdout.write('%s: not found\n' % args.image)
            return 3
        sys.stdout.write('%s %s %d\n' % (found.id, ','.join(found.repo_tags), found.size))
        return 0
    if args.what == 'run':
        return _run(runtime, args)
    if args.what == 'version':
        reply = runtime.call('Version', MSG('VersionRequest')(version='v1'))
        sys.stdout.write('%s %s %s\n' % (reply.runtime_name, reply.runtime_version,
                                         reply.runtime_api_version))
        return 0
    sys.stdout.write(runtime.pod_limits(args.image, args.handler, ['cat', '/proc/self/limits']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
