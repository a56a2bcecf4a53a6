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
``--pod NAME [--namespace NS] --keep`` names the pod and leaves it, its exited container and its
log (/var/log/pods/NS_NAME_UID/job/0.log, where the kubelet puts them) in place, as the kubelet
leaves a failed pod of restartPolicy Never; ``--memory-limit BYTES`` is the container's
``resources.limits.memory`` (linux.resources.memory_limit_in_bytes).

``last --pod NAME [--namespace NS] [--tail-bytes N]`` reads a pod's last container (the newest
one of the pod's sandboxes named NAME in NS, exited or running, as ``crictl ps -a --pod``): one
JSON object, ``status`` its ContainerStatus as ``crictl inspect -o json`` prints it (camelCase:
``state``, ``exitCode``, ``reason`` such as ``OOMKilled``, ``logPath``), ``stdout`` and
``stderr`` the end of its CRI log (playbooks/classify_failure.yml's ``classify_cri_client``).
Exit 3 when there is no such pod or it has no container. ``remove --pod NAME [--namespace NS]``
stops and removes the pod's sandboxes (what the kubelet does when the pod is deleted).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

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

    def run_sandbox(self, prefix, handler, log_directory=None, name=None, namespace=None):
        """A new host-network pod sandbox: (its id, its config). ``name`` (else ``prefix`` and
        a random suffix) and ``namespace`` (else gpufleet) are its metadata; ``log_directory``
        a callable is given (namespace, name, uid) and returns the directory."""
        name = name or prefix + uuid.uuid4().hex[:8]
        pod_config = MSG('PodSandboxConfig')()
        pod_config.metadata.name = name
        pod_config.metadata.namespace = namespace or 'gpufleet'
        pod_config.metadata.uid = uuid.uuid4().hex
        if callable(log_directory):
            log_directory = log_directory(pod_config.metadata.namespace, name,
                                          pod_config.metadata.uid)
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
                poll=0.2, pod=None, keep=False, memory_limit=0):
        """Run ``command`` as a new pod container's process until it exits, then remove the
        pod: (exit status, stdout, stderr, reason), the output read from the CRI log. ``pod``
        (name, namespace) names the pod; ``keep`` leaves it and its log (under /var/log/pods,
        as the kubelet lays it out) in place; ``memory_limit`` is the container's memory
        limit in bytes (0: none)."""
        logs = (lambda ns, name, uid: os.path.join(POD_LOGS, '%s_%s_%s' % (ns, name, uid))) \
            if keep else tempfile.mkdtemp(prefix='gpufleet-pod-log-')
        pod_id = None
        try:
            pod_id, pod_config = self.run_sandbox('gpufleet-job-', handler, logs,
                                                  *(pod or (None, None)))
            logs = pod_config.log_directory
            config = MSG('ContainerConfig')()
            config.metadata.name = 'job'
            config.image.image = image
            config.command.extend(command)
            config.log_path = 'job/0.log' if keep else 'job.log'
            if memory_limit:
                config.linux.resources.memory_limit_in_bytes = memory_limit
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
            out, err = read_cri_log(os.path.join(logs, config.log_path))
            return status.exit_code, out, err, status.reason
        finally:
            if not keep:
                try:
                    if pod_id:
                        self.remove_sandbox(pod_id)
                finally:
                    shutil.rmtree(logs, ignore_errors=True)

    def pod_sandboxes(self, name, namespace):
        """The ids of the pod sandboxes whose metadata is ``name`` in ``namespace`` (every
        state: a pod's sandbox that was stopped, or made again, is still the pod's)."""
        return [box.id for box in self.call('ListPodSandbox', MSG('ListPodSandboxRequest')()).items
                if box.metadata.name == name and box.metadata.namespace == namespace]

    def last_container(self, name, namespace, tail_bytes):
        """The pod's last container, as ``last`` prints it: {pod, namespace, container, id,
        status (crictl inspect's), stdout, stderr (the end of its CRI log)}. LookupError when
        there is no such pod or it has no container."""
        boxes = self.pod_sandboxes(name, namespace)
        if not boxes:
            raise LookupError('no pod %s in namespace %s' % (name, namespace))
        containers = [c for c in self.call('ListContainers',
                                           MSG('ListContainersRequest')()).containers
                      if c.pod_sandbox_id in boxes]
        if not containers:
            raise LookupError('pod %s in namespace %s has no container' % (name, namespace))
        # the newest container: what the pod ran last (a restarted one is a new container)
        newest = max(containers, key=lambda c: (c.created_at, c.metadata.attempt))
        status = self.call('ContainerStatus', MSG('ContainerStatusRequest')(
            container_id=newest.id)).status
        found = json_format.MessageToDict(status)
        # protobuf leaves out a field at its default (exit code 0, no reason): crictl does not
        found.setdefault('exitCode', status.exit_code)
        found.setdefault('reason', status.reason)
        from cri_log import tail_cri_log
        out, err = tail_cri_log(status.log_path, tail_bytes) if status.log_path else ('', '')
        return {'pod': name, 'namespace': namespace, 'container': newest.metadata.name,
                'id': newest.id, 'status': found, 'stdout': out, 'stderr': err}


#: where the kubelet puts a pod's logs (NAMESPACE_NAME_UID/CONTAINER/ATTEMPT.log)
POD_LOGS = '/var/log/pods'


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
        code, out, err, reason = runtime.run_job(
            args.image, args.handler, command, user, mounts, envs, args.workdir,
            pod=(args.pod, args.namespace) if args.pod else None, keep=args.keep,
            memory_limit=args.memory_limit)
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
    parser.add_argument('what', choices=['limits', 'version', 'image', 'run', 'last', 'remove'])
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
    parser.add_argument('--pod', default='', help='run, last, remove: the pod\'s name')
    parser.add_argument('--namespace', default='gpufleet', help='the pod\'s namespace')
    parser.add_argument('--keep', action='store_true',
                        help='run: leave the pod, its exited container and its log in place')
    parser.add_argument('--memory-limit', type=int, default=0,
                        help='run: the container\'s memory limit in bytes')
    parser.add_argument('--tail-bytes', type=int, default=65536,
                        help='last: how much of the end of the container\'s log to read')
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
    if args.what in ('last', 'remove') and not args.pod:
        sys.stderr.write('%s: --pod NAME is needed\n' % args.what)
        return 2
    if args.what == 'last':
        try:
            found = runtime.last_container(args.pod, args.namespace, args.tail_bytes)
        except LookupError as exc:
            sys.stderr.write('%s\n' % exc)
            return 3
        sys.stdout.write(json.dumps(found, sort_keys=True) + '\n')
        return 0
    if args.what == 'remove':
        for pod_id in runtime.pod_sandboxes(args.pod, args.namespace):
            runtime.remove_sandbox(pod_id)
        return 0
    if args.what == 'version':
        reply = runtime.call('Version', MSG('VersionRequest')(version='v1'))
        sys.stdout.write('%s %s %s\n' % (reply.runtime_name, reply.runtime_version,
                                         reply.runtime_api_version))
        return 0
    sys.stdout.write(runtime.pod_limits(args.image, args.handler, ['cat', '/proc/self/limits']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
