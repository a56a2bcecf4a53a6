"""The node's Linux-PAM version reaches the planner and the report: a line that Linux-PAM 1.5
and 1.6+ read differently decides whether a later file overrides the profile, and rttime is
applied from 1.7.1 on only."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan as plan


def _layout(tmp_path, later):
    limits_conf = tmp_path / 'limits.conf'
    limits_conf.write_text('# empty\n')
    limits_dir = tmp_path / 'limits.d'
    limits_dir.mkdir()
    (limits_dir / '95-later.conf').write_text(later)
    return str(limits_conf), str(limits_dir), str(limits_dir / '90-gpufleet-tuning.conf')


def _plan(tmp_path, later, pam_version):
    limits_conf, limits_dir, target = _layout(tmp_path, later)
    entries = plan.profile_entries(model.parse_profile({'nofile': 4096}, 'profile'), ['alice'])
    return plan.plan_entries(entries, target, limits_conf=limits_conf, limits_dir=limits_dir,
                             pam_version=pam_version)


def test_pam_1_5_applies_a_value_with_text_after_it(tmp_path):
    """Linux-PAM before 1.6 reads 'unlimited' of 'unlimited extra': the later line overrides."""
    with pytest.raises(changes.Failure) as caught:
        _plan(tmp_path, 'alice soft nofile unlimited extra\n', (1, 5, 2))
    assert '95-later.conf:1' in caught.value.msg


def test_pam_1_6_skips_a_value_with_text_after_it(tmp_path):
    """Linux-PAM 1.6 and later read 'unlimited extra' as the value and skip the line."""
    change = _plan(tmp_path, 'alice soft nofile unlimited extra\n', (1, 7, 0))
    assert change.result['conflicts'] == []
    assert [line.split() for line in change.new.splitlines()[-2:]] == [
        ['alice', 'soft', 'nofile', '4096'], ['alice', 'hard', 'nofile', '4096']]
    assert [(r['line'], r['problem']) for r in change.result['invalid']] == [
        (1, "value 'unlimited extra' is not a number")]


@pytest.mark.parametrize('version, words', [
    ((1, 7, 1), 'is applied by this pam_limits (Linux-PAM 1.7.1 and later)'),
    ((1, 7, 0), 'is ignored by this pam_limits (Linux-PAM 1.7.0; 1.7.1 and later apply it)'),
    ((1, 4, 0), 'is ignored by this pam_limits (Linux-PAM 1.4.0; 1.7.1 and later apply it)'),
    (None, 'is applied by pam_limits 1.7.1 and later only (older versions ignore the line)'),
])
def test_rttime_by_version(version, words):
    line = conf.parse('alice hard rttime 100\n', pam_version=version).lines[0]
    assert line.kind == 'invalid'
    assert line.problem == 'rttime %s; gpufleet.tuning does not manage rttime' % words


def test_report_reads_as_the_given_version(tmp_path, monkeypatch):
    limits_conf, limits_dir, _target = _layout(tmp_path, 'alice soft nofile unlimited extra\n')
    params = dict(user=None, limits_conf=limits_conf, limits_dir=limits_dir,
                  root_wildcards='true')
    for version, applied in (((1, 5, 2), True), ((1, 6, 0), False)):
        monkeypatch.setattr(info.versions, 'pam_version', lambda host=None, root='', v=version: v)
        report = info.pam_report(params)
        entries = [e for f in report['files'] for e in f['entries']]
        assert report['pam_version'] == '.'.join(map(str, version))
        assert bool(entries) is applied, (version, report)
