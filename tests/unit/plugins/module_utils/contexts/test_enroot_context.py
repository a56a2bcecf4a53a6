# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The enroot context (contexts/enroot.py): probe-only, a container started by ``enroot start``
from a login session of the user, which keeps that session's limits; its image option comes
through the registry's probe options like every other (test_registry_options.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import enroot
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

# a login (runuser -l USER -c CMD runs CMD) and enroot (prints the limits of its container)
RUNUSER = """#!/bin/sh
echo "$*" >> "$ENROOT_TEST_LOG"
exec sh -c "$4"
"""
ENROOT = """#!/bin/sh
echo "enroot $*" >> "$ENROOT_TEST_LOG"
printf 'Limit                     Soft Limit           Hard Limit           Units\\n'
printf 'Max open files            4321                 20000                files\\n'
"""


class Host(object):
    check_mode = False

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return shutil.which(name)


def test_it_is_registered_probe_only_with_its_image_option():
    assert enroot.CONTEXT in registry.REGISTRY and enroot.CONTEXT.name is None
    assert registry.probed('enroot') is enroot.CONTEXT
    assert 'enroot_image' in [option.name for option in registry.PROBE_OPTIONS]
    assert enroot.IMAGE.role.name == 'limits_verify_enroot_image'


def test_the_probe_starts_the_container_from_a_login_session():
    command = enroot.CONTEXT.probe_command('trainer', 1000, {'enroot_image': "my image"})
    assert command == ['runuser', '-l', 'trainer', '-c',
                       "enroot start 'my image' cat /proc/self/limits"]


def test_pam_decides_it_where_the_node_has_enroot(monkeypatch):
    monkeypatch.setattr(commands, 'find_binary', lambda name, root='': '/usr/bin/' + name)
    entry = dict(context='pam', probe='enroot', image='enroot_image', gap=False, cause=None)
    assert enroot.CONTEXT.verified_with(['pam', 'docker'], [], None) == entry
    assert enroot.CONTEXT.verified_with(['docker'], [], None) is None
    monkeypatch.setattr(commands, 'find_binary', lambda name, root='': None)
    assert enroot.CONTEXT.verified_with(['pam'], [], None) is None


class Auditor(object):
    def __init__(self, **params):
        self.params = params


def test_the_audit_probes_it_with_an_image_where_enroot_is(monkeypatch):
    monkeypatch.setattr(commands, 'find_binary', lambda name, root='': '/usr/local/bin/enroot')
    report, warnings = enroot.CONTEXT.report(Auditor())
    assert report == {'binary': '/usr/local/bin/enroot'} and warnings == []
    assert enroot.CONTEXT.audit_probe(report, Auditor(enroot_image='tiny'))
    assert not enroot.CONTEXT.audit_probe(report, Auditor(enroot_image=None))
    monkeypatch.setattr(commands, 'find_binary', lambda name, root='': None)
    assert enroot.CONTEXT.report(Auditor()) == (None, [])
    assert not enroot.CONTEXT.audit_probe(None, Auditor(enroot_image='tiny'))


def test_effective_limits_probes_it_through_the_mapping(monkeypatch, tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name, text in (('runuser', RUNUSER), ('enroot', ENROOT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / 'log'
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    monkeypatch.setenv('ENROOT_TEST_LOG', str(log))
    result = effective.probe(Host(), dict(
        contexts=['enroot'], user='root', units=[], expect={'nofile': 8192}, baseline=None,
        timeout=10, probe_options={'enroot_image': 'tiny'}))
    assert result['errors'] == []
    assert result['contexts']['enroot']['limits']['nofile'] == dict(
        soft=4321, hard=20000, human='4321:20000')
    assert [g['sides'] for g in result['gaps']] == [['soft']]
    assert log.read_text().splitlines() == [
        '-l root -c enroot start tiny cat /proc/self/limits',
        'enroot start tiny cat /proc/self/limits']
