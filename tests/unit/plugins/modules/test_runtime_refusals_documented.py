"""docker_ulimits and podman_ulimits name every refusal of their plan in their DOCUMENTATION.

Each refusal below is first made to happen: the module's plan (runtime_plan.plan_module with
its planner, as the module runs it) against a file in a temporary directory and a host ceiling
read from a made-up /proc (fs.nr_open 1048576; PID 1 with hard nofile 20000 and memlock 8 MiB,
no CAP_SYS_RESOURCE, as in a container). Then the module's description and notes must say it:
in a paragraph that says what the module refuses, every word the refusal's row lists. A guard
added to the plan without its row here fails nothing, but a row whose refusal no longer happens
fails, and so does a refusal the documentation drops."""
import re

import pytest
import yaml

from ansible_collections.gpufleet.tuning.plugins.doc_fragments import attributes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import docker_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import podman_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.modules import docker_ulimits
from ansible_collections.gpufleet.tuning.plugins.modules import podman_ulimits

MODULES = {
    'docker_ulimits': (docker_ulimits, docker_plan.plan_docker, 'daemon.json', '{}\n'),
    'podman_ulimits': (podman_ulimits, podman_plan.plan_podman, '90-gpufleet-tuning.conf',
                       '[containers]\n'),
}

PID1_LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
"""

#: (refusal, the module's options, what its message says, the words its documentation needs)
REFUSALS = [
    ('nofile unlimited', {'ulimits': {'nofile': 'unlimited'}},
     r'ulimits\.nofile: unlimited is not possible for nofile', ['nofile', 'unlimited']),
    ('hard nofile above fs.nr_open', {'ulimits': {'nofile': {'soft': 4096, 'hard': 2 ** 21}},
                                      'force': True},
     r'ulimits\.nofile: hard 2097152 is above fs\.nr_open \(1048576\)', ['nofile', 'fs.nr_open']),
    ('hard above what the host lets the runtime set',
     {'ulimits': {'memlock': {'soft': '8MiB', 'hard': '16MiB'}}},
     r'ulimits\.memlock: hard 16MiB is above what this host lets the container runtime set',
     ['hard value above', 'CAP_SYS_RESOURCE', 'force=true']),
    ('soft above hard', {'ulimits': {'nofile': {'soft': 9000, 'hard': 4096}}},
     r'soft 9000 is above hard 4096', ['soft above hard']),
    ('unknown item', {'ulimits': {'fds': 1}}, r"unknown limit item 'fds'", ['unknown items']),
    ('not an rlimit', {'ulimits': {'maxlogins': 10}}, r'not a resource limit',
     ['maxlogins', 'priority', 'nonewprivs']),
    ('a side missing and no entry to take it from', {'ulimits': {'nofile': {'hard': 10000}}},
     r'give both soft and hard', ['missing soft or hard side']),
    ('below the floor', {'ulimits': {'nofile': 100}}, r'soft nofile 100 is below the floor',
     ['floor']),
    ('an unreadable size', {'shm_size': 'huge'}, r"shm_size: 'huge' is not a size",
     ['shm_size that is not a size']),
]

#: the file refusals of each module: (its file's content, what the message says, the words)
FILE_REFUSALS = {
    'docker_ulimits': ('{\n  "debug": true\n  "x": 1\n}\n', r'daemon\.json:3:3: invalid JSON',
                       ['not valid JSON', 'line and column']),
    'podman_ulimits': ('[containers]\ndefault_ulimits = "nofile=1:2"\n', r'\.conf:2:',
                       ['default_ulimits', 'cannot be read', 'file:line:column']),
}


@pytest.fixture
def ceiling(tmp_path):
    """The host's limits as a container sees them: fs.nr_open 1048576, PID 1's hard nofile
    20000 and memlock 8 MiB, no CAP_SYS_RESOURCE."""
    proc = tmp_path / 'proc'
    (proc / 'sys' / 'fs').mkdir(parents=True)
    (proc / 'sys' / 'fs' / 'nr_open').write_text('1048576\n')
    (proc / '1').mkdir()
    (proc / '1' / 'limits').write_text(PID1_LIMITS)
    (proc / 'self').mkdir()
    (proc / 'self' / 'status').write_text('Name:\tpython3\nCapEff:\t0000000000000000\n')
    found = host_limits.Ceiling(str(tmp_path))
    assert found.nr_open == 1048576 and found.hard_ceiling('memlock')[0] == 8 * 2 ** 20
    return found


class Host(object):
    """The AnsibleModule as the plans use it, on a host with no podman or docker command."""

    @staticmethod
    def get_bin_path(_name, *_args, **_kwargs):
        return None

    @staticmethod
    def run_command(*_args, **_kwargs):
        return 1, '', 'not here'


def params(module, path, options):
    """The module's options, as AnsibleModule hands them to the plan: those both modules take
    (runtime_plan.argument_spec) at their defaults, the file, Docker's unit, and ``options``."""
    base = dict((name, spec.get('default')) for name, spec in
                runtime_plan.argument_spec(path=dict(type='path')).items())
    base.update(path=str(path), unit='docker.service' if module == 'docker_ulimits' else None)
    base.update(options)
    return base


def refuse(module, tmp_path, ceiling, options, content=None):
    """The module's plan for ``options``: the Failure it refuses with, the file untouched."""
    _code, planner, name, empty = MODULES[module]
    path = tmp_path / 'etc' / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if content is not None else empty)
    before = path.read_text()
    with pytest.raises(changes.Failure) as raised:
        runtime_plan.plan_module(planner, params(module, path, options), Host(), ceiling)
    assert path.read_text() == before
    return raised.value


def refusing_paragraphs(module):
    """The paragraphs of the module's description and notes that say what it refuses, their
    markup (C(...), O(...)) taken off and lines joined."""
    doc = yaml.safe_load(MODULES[module][0].DOCUMENTATION)
    # with the notes of the collection's doc fragments it extends (attributes.RUNTIME_FORCE)
    docs = [doc] + [yaml.safe_load(getattr(attributes.ModuleDocFragment, name.split('.')[-1]))
                    for name in doc.get('extends_documentation_fragment') or []
                    if name.startswith('gpufleet.tuning.attributes.')]
    paragraphs = []
    for part in ('description', 'notes'):
        for each in docs:
            value = each.get(part) or []
            paragraphs += [value] if isinstance(value, str) else value
    plain = [' '.join(re.sub(r'\b[A-Z]{1,2}\(([^)]*)\)', r'\1', p).split()) for p in paragraphs]
    return [p for p in plain if re.search(r'\brefus', p, re.I)]


@pytest.mark.parametrize('module', sorted(MODULES))
@pytest.mark.parametrize('refusal, options, message, words', REFUSALS,
                         ids=[r[0] for r in REFUSALS])
def test_each_refusal_of_the_plan_is_in_the_documentation(tmp_path, ceiling, module, refusal,
                                                          options, message, words):
    failure = refuse(module, tmp_path, ceiling, options)
    assert re.search(message, failure.msg), failure.msg
    assert failure.kind in (errors.REFUSED, errors.BAD_INPUT), failure.kind
    said = refusing_paragraphs(module)
    assert any(all(w in p for w in words) for p in said), (
        '%s: the refusal of %s (%s) is not in DOCUMENTATION: no description or notes paragraph '
        'that says what it refuses names %s' % (module, refusal, failure.msg, words))


@pytest.mark.parametrize('module', sorted(FILE_REFUSALS))
def test_the_file_refusals_are_in_the_documentation(tmp_path, ceiling, module):
    content, message, words = FILE_REFUSALS[module]
    failure = refuse(module, tmp_path, ceiling, {'ulimits': {'nproc': 4096}}, content)
    assert re.search(message, failure.msg), failure.msg
    assert any(all(w in p for w in words) for p in refusing_paragraphs(module)), (module, words)


def test_force_writes_above_the_host_but_never_an_impossible_nofile(tmp_path, ceiling):
    """What the documentation says of force: it lets a hard value above what the host lets the
    runtime set through (with a warning), never nofile unlimited or above fs.nr_open."""
    for module in sorted(MODULES):
        _code, planner, name, empty = MODULES[module]
        path = tmp_path / module / name
        path.parent.mkdir(parents=True)
        path.write_text(empty)
        change = runtime_plan.plan_module(planner, params(module, path, {
            'ulimits': {'memlock': {'soft': '8MiB', 'hard': '16MiB'}}, 'force': True}),
            Host(), ceiling)
        assert any('written because force=true' in w for w in change.warnings), change.warnings
        for options in ({'nofile': 'unlimited'}, {'nofile': {'soft': 4096, 'hard': 2 ** 21}}):
            with pytest.raises(changes.Failure):
                runtime_plan.plan_module(planner, params(module, path, {'ulimits': options,
                                                                        'force': True}),
                                         Host(), ceiling)
