# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contexts' probe options end at the registry (issue 40.5): every registered record,
including one registered here (a probe-only context with an image option of its own, as a new
container runtime's record is), goes through each module's real request path with its options
passed as the one mapping ``probe_options``: limits_audit's audit(), effective_limits' probe
request, limits_restart's (and limits_profile's) ``verify``, the drift watch's audit arguments
and the roles' and the audit playbook's probe_options lookup (the names `make docs-gen` writes
into it from the registry). Nothing outside the record names its option; before the mapping, the audit passed the images by name and a new image option
was a KeyError in the probe request."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import (
    container_image)
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_run

# the runtime the synthetic record's probe starts: prints a /proc/PID/limits text and logs its
# arguments (the image it was given) to $SYNTHETIC_LOG
RUNTIME = """#!/bin/sh
echo "$*" >> "$SYNTHETIC_LOG"
printf 'Limit                     Soft Limit           Hard Limit           Units\\n'
printf 'Max open files            65536                65536                files\\n'
"""


class Synthetic(Context):
    """A probe-only context whose probe starts a container of an image (its own option)."""
    probe = 'synthetic'
    image = container_image('synthetic', 'Synthetic')
    fallback = "the runtime's caller's limits"

    def probe_command(self, user, uid, params):
        return ['synthetic-run', params[self.image_option], 'cat', '/proc/self/limits']

    def report(self, auditor):
        return {}, []

    def audit_probe(self, report, auditor):
        return bool(auditor.params.get(self.image_option))

    def verified_with(self, configured, units, host):
        # its containers start from a login session: what pam writes decides them
        if 'pam' in configured:
            return dict(context='pam', probe=self.probe, image=self.image_option)
        return None


SYNTHETIC = Synthetic()


@pytest.fixture
def registered(monkeypatch, tmp_path):
    """The registry with the synthetic record registered, as contexts/__init__.py would, and
    its runtime on PATH."""
    runtime = tmp_path / 'bin' / 'synthetic-run'
    runtime.parent.mkdir()
    runtime.write_text(RUNTIME)
    runtime.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (runtime.parent, __import__('os').environ['PATH']))
    monkeypatch.setenv('SYNTHETIC_LOG', str(tmp_path / 'synthetic.log'))
    records = registry.REGISTRY + (SYNTHETIC,)
    monkeypatch.setattr(registry, 'REGISTRY', records)
    monkeypatch.setattr(registry, 'PROBED', [c.probe for c in records if c.probe])
    monkeypatch.setattr(registry, 'PROBE_OPTIONS', tuple(
        option for c in records for option in c.probed_options()))
    monkeypatch.setattr(SYNTHETIC, 'registry', records)
    return records


def image_values():
    """A value of every image option of the registry, by option name."""
    return dict((c.image_option, '%s-image:1' % c.probe)
                for c in registry.REGISTRY if c.image_option)


class Host(object):
    """The AnsibleModule the probes are given."""
    check_mode = False

    def get_bin_path(self, name, required=False, opt_dirs=None):
        import shutil
        return shutil.which(name)

    def run_command(self, args, **kwargs):
        return 1, '', 'no command of the node in this test'

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs['msg'])


def started():
    """The synthetic runtime's invocations (its arguments), in order."""
    import os
    try:
        with open(os.environ['SYNTHETIC_LOG']) as handle:
            return [line.split() for line in handle.read().splitlines()]
    except IOError:
        return []


def test_the_registry_collects_the_synthetic_option(registered):
    names = [option.name for option in registry.PROBE_OPTIONS]
    assert 'synthetic_image' in names
    assert 'synthetic' in registry.PROBED


def test_effective_limits_probes_every_record_through_the_mapping(registered):
    # effective_limits' probe request: the registered record's image comes in probe_options
    host = Host()
    result = effective.probe(host, dict(
        contexts=['synthetic'], user='root', units=[], expect={'nofile': 65536},
        baseline=None, timeout=5, parallel=False, probe_options=image_values()))
    assert result['errors'] == []
    assert result['contexts']['synthetic']['limits']['nofile']['soft'] == 65536
    assert started() == [['synthetic-image:1', 'cat', '/proc/self/limits']]


def test_effective_limits_without_the_image_names_the_option(registered):
    with pytest.raises(effective.ProbeFailure) as caught:
        effective.probe(Host(), dict(contexts=['synthetic'], user='root', units=[], expect=None,
                                     baseline=None, timeout=5, probe_options={}))
    assert caught.value.msg == 'contexts has synthetic, so synthetic_image is required'


@pytest.mark.parametrize('mapping,words', [
    ({'synthetic_imag': 'x'}, 'probe_options.synthetic_imag: no context has this probe option'),
    ({'synthetic_image': ['x']}, "probe_options.synthetic_image: must be a str, not ['x']"),
    ({'cri_client': ['python3', 3]}, 'probe_options.cri_client[1]: must be a str'),
])
def test_a_bad_mapping_is_refused_naming_the_key(registered, mapping, words):
    host = Host()
    with pytest.raises(effective.ProbeFailure) as caught:
        effective.probe(host, dict(contexts=['synthetic'], user='root', units=[], expect=None,
                                   baseline=None, timeout=5, probe_options=mapping))
    assert caught.value.msg.startswith(words)
    assert started() == []


def test_an_option_given_by_name_wins_over_the_mapping(registered):
    params = effective.with_probe_options(dict(
        docker_image='by-name:1', podman_image=None,
        probe_options=dict(docker_image='mapped:1', podman_image='mapped:2')))
    assert params['docker_image'] == 'by-name:1' and params['podman_image'] == 'mapped:2'
    # every option of every record is there, unset where nobody gave it
    assert params['synthetic_image'] is None and params['cri_client'] == []


def test_limits_restart_verify_takes_every_record_s_options(registered):
    # limits_restart's verify (and limits_profile's, after its own checks): effective_limits'
    # options, checked before any restart
    verify = effective.validated(dict(contexts=['login', 'synthetic'],
                                      probe_options=image_values()), 'verify')
    assert verify['synthetic_image'] == 'synthetic-image:1'
    assert verify['docker_image'] == 'docker-image:1'
    with pytest.raises(effective.ProbeFailure) as caught:
        effective.validated(dict(contexts=['synthetic']), 'verify')
    assert caught.value.msg == 'verify.contexts has synthetic, so synthetic_image is required'


def test_limits_profile_verify_keeps_a_probe_whose_image_is_in_the_mapping(registered):
    # limits_profile's probes (probe_map) list the probe-only record where pam decides it;
    # verify_request keeps its probe where the mapping gives its image, else leaves it out
    probes = registry.probe_map(['pam'], host=Host())
    assert dict(context='pam', probe='synthetic', image='synthetic_image') in probes
    result = dict(probes=probes, probe_units=[])
    params = dict(restart=True, profile={'nofile': 65536},
                  verify=dict(user='root', probe_options=image_values()))
    asked = profile_run.verify_request(Host(), params, result)
    assert 'synthetic' in asked['contexts'] and asked['synthetic_image'] == 'synthetic-image:1'
    params['verify'] = dict(user='root', probe_options={})
    assert 'synthetic' not in profile_run.verify_request(Host(), params, result)['contexts']


@pytest.fixture
def quiet_node(monkeypatch, registered):
    """audit() on this test host with the real records' reports of the node replaced by empty
    ones (no context present): only the synthetic record's probe runs."""
    # patched on each record's class: an older pytest (Python 3.8's) puts a bound method
    # back on the instance when it undoes an instance patch, which hides later class patches
    for record in registry.REGISTRY:
        if record is not SYNTHETIC:
            kind = type(record)
            monkeypatch.setattr(kind, 'report', lambda self, auditor: (
                {'invalid': []} if self.name == 'pam' else
                {'units': {}, 'pending': []} if self.name == 'systemd_system' else None, []))
            monkeypatch.setattr(kind, 'configured', lambda self, report: {})
            monkeypatch.setattr(kind, 'audit_probe', lambda self, report, auditor: False)
            monkeypatch.setattr(kind, 'problems', lambda self, report: [])
    monkeypatch.setattr(registry, 'detect', lambda root='': [])
    monkeypatch.setattr(audit, 'pending_actions', lambda reports, host: {})
    monkeypatch.setattr(audit, 'unwritable', lambda present: [])


def audit_params(**given):
    """limits_audit's parameters as its argument_spec gives them (the module's own options,
    and every option of effective.PROBES at its default)."""
    params = dict(profile={'nofile': 65536}, probe_max_age=0, probe_proofs={}, job=None,
                  sysctl={})
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import options as opts
    outcome = ArgumentSpecValidator(opts.spec((effective.PROBES,))).validate({})
    params.update(outcome.validated_parameters)
    params.update(given)
    return params


def test_limits_audit_probes_every_record_through_the_mapping(quiet_node):
    host = Host()
    result, _warnings = audit.audit(host, audit_params(probe_options=image_values()))
    assert result['contexts']['synthetic']['limits']['nofile']['soft'] == 65536
    assert started() == [['synthetic-image:1', 'cat', '/proc/self/limits']]
    # and no image, no probe of it
    result, _warnings = audit.audit(Host(), audit_params())
    assert 'synthetic' not in result['contexts'] and len(started()) == 1


def test_limits_audit_takes_a_new_image_option_by_its_own_name(quiet_node):
    # as limits_audit's argument_spec gives it once the record is imported (before the
    # mapping: KeyError 'synthetic_image' in the probe request, every unit test green)
    result, _warnings = audit.audit(Host(), audit_params(synthetic_image='synthetic-image:2'))
    assert result['contexts']['synthetic']['limits']['nofile']['soft'] == 65536
    assert started() == [['synthetic-image:2', 'cat', '/proc/self/limits']]


def test_the_watch_passes_the_mapping_to_the_audit(quiet_node, tmp_path):
    # what the limits_watch role writes (probe_options: the lookup's mapping), read back as
    # the audit's arguments
    path = tmp_path / 'limits-watch.json'
    path.write_text(json.dumps(dict(profile={'nofile': 65536},
                                    probe_options=dict(synthetic_image='synthetic-image:1'))))
    params = drift_watch.read_profile(str(path))
    host = Host()
    result, _warnings = audit.audit(host, params)
    assert result['contexts']['synthetic']['limits']['nofile']['soft'] == 65536
    assert started() == [['synthetic-image:1', 'cat', '/proc/self/limits']]


def test_the_lookup_names_every_probe_option_of_the_registry():
    # the probe_options lookup reads the names `make docs-gen` writes into it (it runs in a
    # worker per host and task, which would import the whole registry again):
    # test_gen_option_docs fails when they are stale, and so does this
    from ansible_collections.gpufleet.tuning.plugins.lookup import probe_options
    assert probe_options.NAMES == tuple(option.name for option in registry.PROBE_OPTIONS)


def test_the_roles_and_the_playbook_read_every_record_s_variable(registered, monkeypatch):
    # the probe_options lookup (roles/limits vars, roles/limits_watch defaults,
    # playbooks/audit_limits.yml): PREFIX + option name, the first prefix defined wins, an
    # empty value skips that probe; a registered record's option once `make docs-gen` wrote
    # the names
    from ansible_collections.gpufleet.tuning.plugins.lookup import probe_options
    monkeypatch.setattr(probe_options, 'NAMES', tuple(
        option.name for option in registry.PROBE_OPTIONS))
    variables = dict(limits_verify_synthetic_image='synthetic-image:1',
                     limits_verify_docker_image='docker-image:1', limits_watch_docker_image='',
                     limits_verify_podman_image='{{ "podman-image:" ~ 1 }}',
                     limits_verify_cri_client=[])

    def render(value):
        return 'podman-image:1' if isinstance(value, str) and '{{' in value else value
    assert probe_options.collect(['limits_verify_'], variables, render) == dict(
        synthetic_image='synthetic-image:1', docker_image='docker-image:1',
        podman_image='podman-image:1')
    assert probe_options.collect(['limits_watch_', 'limits_verify_'], variables, render) == dict(
        synthetic_image='synthetic-image:1', podman_image='podman-image:1')
