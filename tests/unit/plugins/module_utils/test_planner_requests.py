"""Issue 11.2: the profile is parsed once and the planners take typed requests.

limits_profile parses the profile once (profile_plan.parse_request) and hands the systemd,
Docker and Podman planners a SystemdRequest or a RuntimeRequest holding {item: Limit}; each
single-format module maps its own options in one place (module_request). Errors name what the
user wrote: ``profile.ITEM`` from limits_profile, ``limits.ITEM`` / ``ulimits.ITEM`` from the
single-format modules.
"""
import json

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import docker_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import values

L = m.Limit


class NoCeiling(object):
    nr_open = 1048576

    def hard_ceiling(self, item):
        return None, None


@pytest.fixture
def no_reparse(monkeypatch):
    """Fail the test if a planner parses a profile again."""
    def refuse(*args, **kwargs):
        raise AssertionError('a planner parsed the profile again: %r' % (args,))
    monkeypatch.setattr(values, 'parse_profile', refuse)
    monkeypatch.setattr(m, 'parse_profile', refuse)


def test_systemd_planner_names_the_profile_field_and_does_not_reparse(no_reparse):
    request = systemd_plan.SystemdRequest({'maxlogins': L(4, 4)}, scope='system',
                                          field='profile')
    with pytest.raises(changes.Failure) as failure:
        systemd_plan.plan_change(request, None, NoCeiling())
    assert failure.value.msg.startswith('profile.maxlogins: ')
    assert 'not a resource limit systemd can set' in failure.value.msg


def test_systemd_planner_refuses_a_half_limit_naming_the_field(no_reparse):
    request = systemd_plan.SystemdRequest({'nofile': L(None, 4096)}, scope='user',
                                          field='profile')
    with pytest.raises(changes.Failure, match=r'^profile.nofile: systemd needs both soft'):
        systemd_plan.plan_change(request, None, NoCeiling())


def test_systemd_module_maps_its_options_once():
    params = dict(scope='system', unit=None, limits={'nofile': {'soft': 4096, 'hard': 8192}},
                  state='present', dropin='90-x.conf', on_conflict='warn', force=True)
    request = systemd_plan.module_request(params)
    assert (request.scope, request.unit, request.state, request.dropin, request.on_conflict,
            request.force, request.field) == ('system', None, 'present', '90-x.conf', 'warn',
                                              True, 'limits')
    assert request.limits == {'nofile': L(4096, 8192)}
    with pytest.raises(changes.Failure, match=r"^limits.fds: unknown limit item 'fds'"):
        systemd_plan.plan_module(dict(params, limits={'fds': 5}), None)


def test_docker_planner_takes_parsed_limits_and_names_the_profile(tmp_path, no_reparse):
    path = tmp_path / 'daemon.json'
    path.write_text('{\n  "storage-driver": "vfs"\n}\n')
    request = runtime_plan.RuntimeRequest({'nofile': L(m.UNLIMITED, m.UNLIMITED)}, str(path),
                                          unit='docker.service', field='profile')
    with pytest.raises(changes.Failure,
                       match=r'^profile.nofile: unlimited is not possible for nofile'):
        docker_plan.plan_docker(request, None, NoCeiling(), probe=False)

    request = runtime_plan.RuntimeRequest({'nofile': L(4096, 8192)}, str(path),
                                          shm_size=64 * 1024 ** 2, unit='docker.service',
                                          field='profile')
    change = docker_plan.plan_docker(request, None, NoCeiling(), probe=False)
    written = json.loads(change.new)
    assert written['default-ulimits']['nofile'] == {'Name': 'nofile', 'Soft': 4096,
                                                    'Hard': 8192}
    assert written['default-shm-size'] == '64M'
    assert written['storage-driver'] == 'vfs'


def test_runtime_modules_map_their_options_once(tmp_path):
    params = dict(ulimits={'nofile': 2048}, shm_size='1g', purge=True,
                  path=str(tmp_path / 'daemon.json'), unit='docker.service', force=False)
    request = runtime_plan.module_request(params)
    assert (request.limits, request.shm_size, request.purge, request.unit, request.field) == (
        {'nofile': L(2048, 2048)}, 1024 ** 3, True, 'docker.service', 'ulimits')
    with pytest.raises(changes.Failure, match=r'^shm_size: must be larger than 0'):
        runtime_plan.plan_module(docker_plan.plan_docker, dict(params, shm_size='0'), None)


def test_limits_profile_parses_the_profile_and_shm_size_once():
    params = dict(profile={'nofile': 16384, 'memlock': 'unlimited'}, contexts=['docker'],
                  domains=['*'], units=[], force=False, on_conflict='fail', dropin=None,
                  docker_shm_size='8g', **profile_plan.DEFAULTS)
    request = profile_plan.parse_request(params)
    assert request.limits == {'nofile': L(16384, 16384),
                              'memlock': L(m.UNLIMITED, m.UNLIMITED)}
    assert request.docker_shm_size == 8 * 1024 ** 3
    with pytest.raises(changes.Failure, match=r'^docker_shm_size: must be larger than 0'):
        profile_plan.parse_request(dict(params, docker_shm_size='0'))
    with pytest.raises(changes.Failure, match=r"^profile.fds: unknown limit item 'fds'"):
        profile_plan.parse_request(dict(params, profile={'fds': 5}))
