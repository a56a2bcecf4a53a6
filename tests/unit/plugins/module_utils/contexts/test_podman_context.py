"""issue 13: the podman context of limits_profile gives new Podman containers the job's
/dev/shm (containers.conf ``shm_size``), as the docker context gives Docker its
``default-shm-size``; an unparsable size names ``podman_shm_size`` before anything is
planned or written."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import podman

MIB = 1024 * 1024


class Host(object):
    """No podman binary: the plan counts no running containers and reads no version."""

    def get_bin_path(self, name):
        return None


def params(tmp_path, **options):
    base = dict(profile={'nofile': 16384}, contexts=['podman'], domains=['*'], units=[],
                force=False, on_conflict='fail', dropin=None, docker_shm_size=None)
    base.update(profile_plan.DEFAULTS)
    base['podman_dropin'] = str(tmp_path / '90-gpufleet-tuning.conf')
    base.update(options)
    return base


def plan(tmp_path, **options):
    request = profile_plan.parse_request(params(tmp_path, **options))
    [(label, make)] = podman.CONTEXT.plans(request, Host(), host_limits.Ceiling())
    assert label == 'podman'
    return make()


def test_the_podman_context_writes_shm_size_from_the_request(tmp_path):
    # both sides named: written as asked (a plain 16384 keeps Podman's rootful 1048576, issue
    # 39: test_keep_current_contexts.py)
    change = plan(tmp_path, podman_shm_size='512M',
                  profile={'nofile': {'soft': 16384, 'hard': 16384}})
    assert change.changed
    doc = cc.scan(change.new, change.path)
    # plain bytes: every Podman reads them exactly (a suffix is a power of 1000 there)
    assert doc.read_string(doc.get(cc.TABLE, cc.SHM_KEY))[0] == str(512 * MIB)
    assert cc.read_shm(doc, doc.get(cc.TABLE, cc.SHM_KEY)) == 512 * MIB
    assert change.result['shm_size'] == str(512 * MIB)
    assert change.result['default_ulimits'] == ['nofile=16384:16384']


def test_without_podman_shm_size_the_drop_in_sets_no_shm_size(tmp_path):
    change = plan(tmp_path)
    doc = cc.scan(change.new, change.path)
    assert doc.get(cc.TABLE, cc.SHM_KEY) is None
    assert change.result['shm_size'] is None
    # and a request without the option at all (an older caller) reads as unset
    options = params(tmp_path)
    options.pop('podman_shm_size', None)
    assert profile_plan.parse_request(options).podman_shm_size is None


def test_the_written_shm_size_is_kept_on_the_next_plan(tmp_path):
    change = plan(tmp_path, podman_shm_size='1G')
    (tmp_path / '90-gpufleet-tuning.conf').write_text(change.new)
    again = plan(tmp_path, podman_shm_size='1G')
    assert not again.changed
    assert plan(tmp_path, podman_shm_size='2G').changed


@pytest.mark.parametrize('size, said', [
    ('lots', r"^podman_shm_size: "),
    ('0', r'^podman_shm_size: must be larger than 0'),
    ('-5M', r'^podman_shm_size: '),
])
def test_an_unparsable_podman_shm_size_names_the_option(tmp_path, size, said):
    with pytest.raises(changes.Failure, match=said):
        profile_plan.parse_request(params(tmp_path, podman_shm_size=size))
    assert not (tmp_path / '90-gpufleet-tuning.conf').exists()


def test_docker_and_podman_sizes_are_parsed_apart(tmp_path):
    request = profile_plan.parse_request(params(tmp_path, docker_shm_size='1G',
                                                podman_shm_size='256M'))
    assert (request.docker_shm_size, request.podman_shm_size) == (1024 * MIB, 256 * MIB)


class NoRaise(object):
    """A host without CAP_SYS_RESOURCE whose PID 1 runs with hard nproc 96362 (a container)."""
    nr_open = 1048576

    def hard_ceiling(self, item):
        if item == 'nproc':
            return 96362, 'the host lacks CAP_SYS_RESOURCE and PID 1 runs with hard nproc 96362'
        return None, None


def plan_with(tmp_path, ceiling, profile):
    request = profile_plan.parse_request(params(tmp_path, profile=profile))
    [(_label, make)] = podman.CONTEXT.plans(request, Host(), ceiling)
    return make()


def test_a_profile_without_nproc_warns_where_podman_s_nproc_cannot_be_set(tmp_path):
    """Podman fills in nproc 1048576 when default_ulimits leaves it out; runc cannot set it
    without CAP_SYS_RESOURCE ("error setting rlimit type 6"), so every new container fails."""
    change = plan_with(tmp_path, NoRaise(), {'nofile': 16384})
    assert change.changed
    assert change.warnings == [
        'profile sets default_ulimits without nproc, so Podman gives rootful containers nproc '
        '1048576, above what this host lets the container runtime set (the host lacks '
        'CAP_SYS_RESOURCE and PID 1 runs with hard nproc 96362): new containers would fail to '
        'start; give profile.nproc too']
    # with nproc in the profile, or on a host that can raise it, nothing to say
    assert plan_with(tmp_path, NoRaise(), {'nofile': 16384, 'nproc': 16384}).warnings == []
    assert plan_with(tmp_path, CanRaise(), {'nofile': 16384}).warnings == []


class CanRaise(object):
    nr_open = 1048576

    def hard_ceiling(self, item):
        return None, None
