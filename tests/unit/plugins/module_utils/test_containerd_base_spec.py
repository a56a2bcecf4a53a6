"""containerd's base runtime spec (oci_base_spec), config.toml (containerd_cri_conf) and
CRI-O's drop-in (crio_conf): the files as containerd, ctr and CRI-O's docs write them."""
import json

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    containerd_cri_conf as cc)
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import oci_base_spec as oci

# The shape `ctr oci spec` prints (containerd 1.6.20), trimmed: the 1024:1024 trap.
CTR_SPEC = """{
    "ociVersion": "1.0.2-dev",
    "process": {
        "user": {
            "uid": 0,
            "gid": 0
        },
        "args": [
            "sh"
        ],
        "cwd": "/",
        "rlimits": [
            {
                "type": "RLIMIT_NOFILE",
                "hard": 1024,
                "soft": 1024
            }
        ],
        "noNewPrivileges": true
    },
    "root": {
        "path": "rootfs"
    },
    "linux": {
        "namespaces": [
            {
                "type": "pid"
            }
        ]
    }
}
"""

PROFILE = model.parse_profile({'nofile': 16384, 'memlock': 'unlimited',
                               'nproc': {'soft': 4096, 'hard': 8192}, 'priority': 0})


def test_patch_lifts_the_ctr_trap_and_keeps_the_rest():
    spec = oci.parse(CTR_SPEC, '/etc/containerd/base.json')
    new, changed, skipped = oci.patch(spec, PROFILE, '/etc/containerd/base.json')
    assert changed == ['memlock', 'nofile', 'nproc']
    assert skipped == ['priority']
    got = oci.rlimits_of(new)
    assert got['nofile'] == model.Limit(16384, 16384)
    assert got['memlock'] == model.Limit(model.UNLIMITED, model.UNLIMITED)
    assert got['nproc'] == model.Limit(4096, 8192)
    text = oci.render(new, CTR_SPEC)
    assert json.loads(text)['linux'] == json.loads(CTR_SPEC)['linux']
    assert list(json.loads(text)['process']) == list(json.loads(CTR_SPEC)['process'])
    assert '\n    "ociVersion"' in text  # the file's 4-space indentation
    memlock = [e for e in json.loads(text)['process']['rlimits'] if e['type'] == 'RLIMIT_MEMLOCK']
    assert memlock == [{'type': 'RLIMIT_MEMLOCK', 'hard': 2 ** 64 - 1, 'soft': 2 ** 64 - 1}]
    # the original is not touched, and a second patch changes nothing (idempotence)
    assert oci.rlimits_of(spec)['nofile'] == model.Limit(1024, 1024)
    again, changed2 = oci.patch(json.loads(text), PROFILE, 'x')[:2]
    assert changed2 == [] and oci.render(again, text) == text


def test_open_side_keeps_the_spec_and_refuses_soft_above_hard():
    spec = oci.parse(CTR_SPEC, 'b.json')
    new = oci.patch(spec, {'nofile': model.Limit(None, 4096)}, 'b.json')[0]
    assert oci.rlimits_of(new)['nofile'] == model.Limit(1024, 4096)
    with pytest.raises(model.LimitError, match='b.json: process.rlimits RLIMIT_NOFILE: soft 4096'):
        oci.patch(spec, {'nofile': model.Limit(4096, None)}, 'b.json')


@pytest.mark.parametrize('text,message', [
    ('{"ociVersion": "1.0.2",\n "process": {,}}', r'b\.json:2:14: not valid JSON'),
    ('[1, 2]', 'not an OCI runtime spec \\(the top level is not an object\\)'),
    ('{"default-ulimits": {}}', 'no "ociVersion" string'),
    ('{"ociVersion": "1", "process": []}', '"process" is not an object'),
    ('{"ociVersion": "1", "process": {"rlimits": {}}}', '"process.rlimits" is not a list'),
    ('{"ociVersion": "1", "process": {"rlimits": [{"type": "RLIMIT_NOFILE", "soft": -1, '
     '"hard": 1}]}}', r'process.rlimits\[0\]: "soft" is not a non-negative integer'),
])
def test_bad_base_spec_names_the_file(text, message):
    with pytest.raises(oci.SpecError, match=message) as info:
        oci.parse(text, 'b.json')
    assert info.value.kind == errors.UNPARSABLE


# Debian 12's containerd 1.6 (docker.io) ships this, a version 2 config from kubespray below.
V2 = """version = 2
root = "/var/lib/containerd"  # keep this comment

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      snapshotter = "overlayfs"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
        runtime_type = "io.containerd.runc.v2"
        base_runtime_spec = "/etc/containerd/nvidia-base.json"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["https://registry-1.docker.io",
                'https://mirror.example']
"""

# containerd 2.x (config version 3, docs/cri/config.md)
V3 = """version = 3

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
  base_runtime_spec = '/etc/containerd/cri-base.json'
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    SystemdCgroup = true
"""


def test_reads_v2_and_v3_handlers():
    data = cc.parse(V2)[0]
    assert cc.version_of(data) == 2
    assert cc.handlers(data, 2) == {'runc': None, 'nvidia': '/etc/containerd/nvidia-base.json'}
    assert data['plugins']['io.containerd.grpc.v1.cri']['registry']['mirrors']['docker.io'][
        'endpoint'] == ['https://registry-1.docker.io', 'https://mirror.example']
    data3 = cc.parse(V3)[0]
    assert cc.version_of(data3) == 3
    assert cc.handlers(data3, 3) == {'runc': '/etc/containerd/cri-base.json'}
    docker_io = cc.parse('disabled_plugins = ["cri"]\n')[0]
    assert cc.cri_disabled(docker_io, cc.version_of(docker_io))


def test_reference_inserts_one_line_and_keeps_the_rest():
    new = cc.reference(V2, cc.CONFIG, 'runc', '/etc/containerd/gpufleet-base-spec.json')
    old_lines, new_lines = V2.splitlines(), new.splitlines()
    assert len(new_lines) == len(old_lines) + 1
    inserted = [line for line in new_lines if line not in old_lines]
    assert inserted == ['        base_runtime_spec = "/etc/containerd/gpufleet-base-spec.json"']
    assert new_lines.index(inserted[0]) == old_lines.index(
        '        runtime_type = "io.containerd.runc.v2"') + 1
    data = cc.parse(new)[0]
    assert cc.handlers(data, 2)['runc'] == '/etc/containerd/gpufleet-base-spec.json'
    assert cc.reference(new, cc.CONFIG, 'runc', '/etc/containerd/gpufleet-base-spec.json') == new


def test_reference_replaces_an_existing_line_v3():
    new = cc.reference(V3, cc.CONFIG, 'runc', '/x.json')
    assert new == V3.replace("base_runtime_spec = '/etc/containerd/cri-base.json'",
                             'base_runtime_spec = "/x.json"')


def test_reference_appends_a_table_when_the_handler_has_none():
    text = 'version = 2\ndisabled_plugins = []\n[plugins."io.containerd.grpc.v1.cri"]\n  x = 1'
    new = cc.reference(text, cc.CONFIG, 'runc', '/b.json', known_handlers=['runc'])
    assert new.startswith(text + '\n')
    data = cc.parse(new)[0]
    runc = data['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']['runc']
    assert runc == {'runtime_type': 'io.containerd.runc.v2', 'base_runtime_spec': '/b.json'}


def test_unknown_handler_is_refused():
    with pytest.raises(errors.Error, match="config.toml: no runtime handler 'kata'") as info:
        cc.reference(V2, cc.CONFIG, 'kata', '/b.json', known_handlers=['runc'])
    assert info.value.kind == errors.BAD_INPUT


@pytest.mark.parametrize('text,line', [
    ('version = 2\n[plugins\n', 2),
    ('version = 2\nroot = "/var/lib\n', 2),
    ('version = 2\n\n\nroot = /var\n', 4),
    ('a = 1\na = 2\n', 2),
    ('[x]\n[x]\n', 2),
    ('a = [1,\n 2\n', 3),
])
def test_unparsable_config_names_file_and_line(text, line):
    with pytest.raises(cc.ConfigError, match=r'^/etc/containerd/config.toml:%d: not valid TOML'
                       % line) as info:
        cc.reference(text, cc.CONFIG, 'runc', '/b.json')
    assert info.value.kind == errors.UNPARSABLE


def test_crio_dropin_in_the_documented_syntax():
    text = crio_conf.render(PROFILE)
    assert text.endswith('[crio.runtime]\ndefault_ulimits = [\n  "memlock=-1:-1",\n'
                         '  "nofile=16384:16384",\n  "nproc=4096:8192",\n]\n')
    data = cc.parse(text)[0]  # it is TOML
    assert data['crio']['runtime']['default_ulimits'][1] == 'nofile=16384:16384'
