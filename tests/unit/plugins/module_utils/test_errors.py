"""One error hierarchy: every error of module_utils is an errors.Error with a kind."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sdconf


@pytest.mark.parametrize('cls,kind', [
    (model.LimitError, errors.BAD_INPUT),
    (pam_limits_plan.PlanError, errors.BAD_INPUT),
    (sdconf.ConfError, errors.UNPARSABLE),
    (cc.TomlError, errors.UNPARSABLE),
    (dj.DaemonJsonError, errors.UNPARSABLE),
    (safe_file.FileError, errors.HOST),
    (effective.ProbeError, errors.HOST),
    (changes.Failure, errors.REFUSED),
])
def test_every_error_is_an_error_with_a_kind(cls, kind):
    exc = cls('x.y: wrong')
    assert isinstance(exc, errors.Error) and exc.kind == kind and kind in errors.KINDS
    assert str(exc) == exc.msg == 'x.y: wrong'


def test_value_errors_stay_value_errors():
    for cls in (model.LimitError, sdconf.ConfError, cc.TomlError, dj.DaemonJsonError):
        assert issubclass(cls, ValueError)


def test_a_failure_keeps_the_kind_of_its_cause():
    with pytest.raises(model.LimitError) as info:
        model.get_item('nofiles', 'profile.nofiles')
    failure = changes.Failure(str(info.value), {'path': '/x'}, kind=errors.kind_of(info.value))
    assert failure.kind == errors.BAD_INPUT and failure.result == {'path': '/x'}
    assert failure.msg.startswith('profile.nofiles: ')
    assert errors.kind_of(OSError('disk')) == errors.HOST


def test_a_planner_failure_after_its_guards_carries_the_kind_of_its_cause(tmp_path):
    """The path is a directory: reading it fails after the ceiling guards ran."""
    target = tmp_path / 'limits.d' / 'x.conf'
    target.mkdir(parents=True)
    params = dict(limits=[dict(domain='*', item='nofile', value=1024)], path=str(target),
                  state='present', exclusive=False, on_conflict='fail', force=False,
                  mode='0644', limits_conf=str(tmp_path / 'limits.conf'),
                  limits_dir=str(tmp_path / 'limits.d'))
    with pytest.raises(changes.Failure) as info:
        pam_limits_plan.plan_change(params)
    assert info.value.kind == errors.HOST, info.value.msg
