# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd_cri context (probed as k8s_pod): its plans (base specs first, config.toml
last, a spec created only when asked), the containerd restart it owes while pods run, and what
the audit predicts a new pod gets, with its source."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import containerd_cri
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request

CTR_SPEC = json.dumps({'ociVersion': '1.0.2-dev', 'process': {
    'args': ['sh'], 'rlimits': [{'type': 'RLIMIT_NOFILE', 'hard': 1024, 'soft': 1024}]}},
    indent=4) + '\n'
PROFILE = {'nofile': 16384, 'memlock': {'soft': '4MiB', 'hard': '8MiB'}}
CONTEXT = containerd_cri.CONTEXT


class Host(object):
    """run_command: ``ctr oci spec`` prints CTR_SPEC; ``ctr ... containers ls`` lists ``pods``."""

    def __init__(self, pods=''):
        self.pods = pods
        self.calls = []

    def run_command(self, args, environ_update=None):
        self.calls.append(args)
        if args[:3] == ['ctr', 'oci', 'spec']:
            return 0, CTR_SPEC, ''
        if args[:3] == ['ctr', '-n', 'k8s.io']:
            return 0, self.pods, ''
        return 0, '0\n', ''


def config(tmp_path, spec=None):
    path = tmp_path / 'config.toml'
    text = 'version = 2\n# the site\'s comment\n'
    if spec:
        text += ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                 '  runtime_type = "io.containerd.runc.v2"\n'
                 '  base_runtime_spec = "%s"\n' % spec)
    path.write_text(text)
    return path


def plans(path, create=False, host=None):
    request = Request(PROFILE, model.parse_profile(PROFILE, 'profile'), ['containerd_cri'],
                      paths={'containerd_config': str(path)}, containerd_create_spec=create)
    request._read['containerd_limits'] = {}     # containerd's own limits: unknown here
    return [(label, plan()) for label, plan in CONTEXT.plans(request, host or Host(), None)]


def test_a_handler_base_spec_gets_the_profile_and_config_toml_stays(tmp_path):
    spec = tmp_path / 'base.json'
    spec.write_text(CTR_SPEC)
    os.chmod(str(spec), 0o600)
    path = config(tmp_path, spec)
    planned = plans(path)
    assert [label for label, _c in planned] == ['containerd_cri:%s' % spec, 'containerd_cri']
    change = planned[0][1]
    assert change.changed and change.mode == 0o600
    rlimits = json.loads(change.new)['process']['rlimits']
    assert {'type': 'RLIMIT_NOFILE', 'hard': 16384, 'soft': 16384} in rlimits
    assert {'type': 'RLIMIT_MEMLOCK', 'hard': 8388608, 'soft': 4194304} in rlimits
    assert not planned[1][1].changed
    assert planned[1][1].result['handlers'] == {'runc': str(spec)}
    assert spec.read_text() == CTR_SPEC        # a plan writes nothing


def test_no_base_spec_is_created_unless_asked(tmp_path):
    path = config(tmp_path)
    planned = plans(path)
    assert [(label, c.changed) for label, c in planned] == [('containerd_cri', False)]
    assert planned[0][1].result['handlers'] == {'runc': None}


def unit(root, name):
    directory = root / 'etc' / 'systemd' / 'system'
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text('[Service]\nExecStart=/bin/true\n')


def test_detected_on_a_kubernetes_node_not_on_a_docker_host(tmp_path):
    etc = tmp_path / 'etc' / 'containerd'
    etc.mkdir(parents=True)
    unit(tmp_path, 'containerd.service')
    config(etc)                                # CRI on (Debian's package), no base spec
    assert not CONTEXT.detect(str(tmp_path))
    unit(tmp_path, 'kubelet.service')
    assert CONTEXT.detect(str(tmp_path))
    (etc / 'config.toml').write_text('version = 2\ndisabled_plugins = ["cri"]\n')
    assert not CONTEXT.detect(str(tmp_path))   # docker.io's containerd.io: the CRI is off
    (tmp_path / 'etc' / 'systemd' / 'system' / 'kubelet.service').unlink()
    config(etc, '/etc/containerd/cri-base.json')
    assert CONTEXT.detect(str(tmp_path))       # a handler with a base spec


def test_create_makes_the_spec_from_ctr_and_references_it(tmp_path):
    path = config(tmp_path)
    planned = plans(path, create=True)
    labels = [label for label, _c in planned]
    assert labels == ['containerd_cri:/etc/containerd/gpufleet-base-spec.json', 'containerd_cri']
    created, toml = planned[0][1], planned[1][1]
    assert created.current is None and created.mode == 0o644
    assert {'type': 'RLIMIT_NOFILE', 'hard': 16384, 'soft': 16384} in \
        json.loads(created.new)['process']['rlimits']
    assert toml.new.startswith(path.read_text())   # the site's lines kept byte for byte
    assert 'base_runtime_spec = "/etc/containerd/gpufleet-base-spec.json"' in toml.new


def test_an_unreadable_config_fails_when_planned_naming_the_line(tmp_path):
    path = tmp_path / 'config.toml'
    path.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"\n')
    [(label, plan)] = CONTEXT.plans(Request(PROFILE, model.parse_profile(PROFILE, 'profile'),
                                            ['containerd_cri'],
                                            paths={'containerd_config': str(path)}),
                                    Host(), None)
    with pytest.raises(changes.Failure) as exc:
        plan()
    assert label == 'containerd_cri'
    assert '%s:2: not valid TOML' % path in exc.value.msg and 'nothing written' in exc.value.msg


def test_running_pods_defer_containerd_once_with_the_reason(tmp_path):
    spec = tmp_path / 'base.json'
    spec.write_text(CTR_SPEC)
    planned = plans(config(tmp_path, spec))
    result = pp.actions(planned, Host(pods='abc\ndef\n'), 'when_idle')
    assert result['units'] == ['containerd.service']
    assert result['deferred'] == [dict(
        unit='containerd.service', context='k8s_pod',
        reason='2 pod container(s) and sandbox(es) exist: running pods keep their old spec, '
               'new pods get the profile after containerd restarts')]
    assert pp.actions(planned, Host(pods=''), 'always')['deferred'] == []


def report(spec_limits=None, containerd=None, configured=None, probed=False, path=None):
    return dict(config='/etc/containerd/config.toml', handler='runc', base_spec=path,
                spec_limits=spec_limits or {}, spec_index=dict((k, 0) for k in spec_limits or {}),
                containerd=containerd or {}, containerd_configured=configured or {}, error=None,
                probed=probed)


def test_the_prediction_names_the_base_spec_entry_and_containerd_for_the_rest():
    found = CONTEXT.configured(report({'nofile': {'soft': 1024, 'hard': 1024}},
                                      containerd={'nofile': {'soft': 4096, 'hard': 4096},
                                                  'nproc': {'soft': 100, 'hard': 200}},
                                      path='/etc/containerd/cri-base.json'))
    spec_at = {'path': '/etc/containerd/cri-base.json', 'line': None}
    assert found == {
        'nofile': dict(soft=1024, hard=1024, source=(
            'predicted (no pod started): /etc/containerd/cri-base.json process.rlimits[0] '
            'RLIMIT_NOFILE (handler runc)'), soft_place=spec_at, hard_place=spec_at, fix=(
                'run limits_profile with contexts: [containerd_cri] (it patches the profile '
                'into /etc/containerd/cri-base.json process.rlimits; containerd restarts when '
                'no pod runs, and a new pod gets it)')),
        'nproc': dict(soft=100, hard=200, source=(
            'predicted (no pod started): containerd\'s own limits (not in the base spec '
            '/etc/containerd/cri-base.json), set by the unit or manager default'),
            fix=found['nofile']['fix'])}


def test_without_a_base_spec_a_pod_gets_containerds_hard_nofile_as_both():
    found = CONTEXT.configured(report(
        containerd={'nofile': {'soft': 1024, 'hard': 4096}},
        configured={'nofile': {'source': '/etc/systemd/system/containerd.service.d/10.conf',
                               'line': 2}}, probed=True))
    assert found['nofile']['soft'] == 4096 and found['nofile']['hard'] == 4096
    assert found['nofile']['source'] == (
        'probed (a pod started through the CRI): containerd\'s own limits (handler runc has no '
        'base spec, soft raised to hard by Go), set by '
        '/etc/systemd/system/containerd.service.d/10.conf:2')
    at = {'path': '/etc/systemd/system/containerd.service.d/10.conf', 'line': 2}
    assert (found['nofile']['soft_place'], found['nofile']['hard_place']) == (at, at)


def test_a_pods_row_and_finding_name_the_place_and_the_fix_that_changes_it():
    """The audit's k8s_pod row carries the base spec (or the containerd unit's line) as its
    place, and the advice is the context's own patch of the base spec, not "raise or remove"
    a source text that is no path (issue 41: classify_failure.yml's pod answer names them)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
    from ansible_collections.gpufleet.tuning.plugins.filter import limits_classify as lc
    spec = '/etc/containerd/cri-base.json'
    unit = '/etc/systemd/system/containerd.service.d/10-node.conf'
    cases = [
        (report({'nofile': {'soft': 1024, 'hard': 1024}}, path=spec), '1024', spec,
         'run limits_profile with contexts: [containerd_cri] (it patches the profile into %s '
         'process.rlimits' % spec),
        (report(containerd={'nofile': {'soft': 1024, 'hard': 4096}},
                configured={'nofile': {'source': unit, 'line': 2}}), '4096', unit + ':2',
         'run limits_profile with contexts: [containerd_cri] (it writes '
         '/etc/systemd/system/containerd.service.d/90-gpufleet-tuning.conf; containerd '
         'restarts when no pod runs'),
        # a drop-in that sorts after the collection's: it decides, so it is what to change
        (report(containerd={'nofile': {'soft': 1024, 'hard': 4096}},
                configured={'nofile': {'source': unit.replace('10-node', '99-site'),
                                       'line': 2}}),
         '4096', unit.replace('10-node', '99-site') + ':2', 'raise or remove '),
    ]
    for rep, value, place, fix in cases:
        configured = CONTEXT.configured(rep)
        limit = configured['nofile']
        observed = {'k8s_pod': {'limits': {'nofile': dict(
            soft=limit['soft'], hard=limit['hard'],
            human='%s:%s' % (limit['soft'], limit['hard']))}}}
        rows = audit.rows(observed, {'nofile': {'human': '65536:65536'}},
                          [{'context': 'k8s_pod', 'item': 'nofile', 'sides': ['soft', 'hard']}],
                          {'k8s_pod': configured}, ['nofile'], predicted=['k8s_pod'])
        found = [f for f in findings.of({'rows': rows}) if f['context'] == 'k8s_pod']
        assert findings.where(found[0]['place']) == place, found
        assert found[0]['advice']['action'].startswith(fix), found
        answer = lc.limits_classify("OSError: [Errno 24] Too many open files: '/dev/null'",
                                    'k8s_pod', found)
        assert (answer['ceiling'], answer['value'], answer['place']) == ('nofile', value, place)


def test_the_audit_adds_predicted_rows_and_gaps():
    probed = dict(contexts={}, gaps=[], table='',
                  expected={'nofile': {'soft': 16384, 'hard': 16384, 'human': '16384:16384'}})
    reports = {'k8s_pod': report({'nofile': {'soft': 1024, 'hard': 1024}}, path='/b.json')}
    assert audit.add_predicted(probed, reports, []) == ['k8s_pod']
    assert probed['contexts']['k8s_pod']['predicted'] is True
    assert probed['gaps'][0]['context'] == 'k8s_pod' and probed['gaps'][0]['sides'] == ['soft', 'hard']
    assert 'k8s_pod' in probed['table']
    probed = dict(contexts={}, gaps=[], table='', expected={})
    assert audit.add_predicted(probed, reports, ['k8s_pod']) == []   # probed: nothing predicted
