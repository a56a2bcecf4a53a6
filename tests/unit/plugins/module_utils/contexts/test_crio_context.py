# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The crio context: detected from CRI-O's files, its plan (crio_plan over the profile), the
checked restart of crio.service it owes through the units context, and refusals naming the
profile field or file:line. CRI-O is not in Debian 12: files only."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import crio
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request


@pytest.fixture
def etc(tmp_path, monkeypatch):
    """CRI-O's files under tmp_path: crio.conf with a list, an empty crio.conf.d."""
    main = tmp_path / 'crio.conf'
    main.write_text('[crio.runtime]\ndefault_ulimits = ["nofile=1024:1024"]\n')
    (tmp_path / 'crio.conf.d').mkdir()
    monkeypatch.setattr(crio_conf, 'MAIN', str(main))
    monkeypatch.setattr(crio_conf, 'DROPIN_DIR', str(tmp_path / 'crio.conf.d'))
    return tmp_path


def plan(etc, profile):
    path = str(etc / 'crio.conf.d' / '90-gpufleet-tuning.conf')
    req = Request(profile, model.parse_profile(profile, 'profile'), ['crio'],
                  paths={'crio_dropin': path})
    [(label, planner)] = crio.CONTEXT.plans(req, None, None)
    assert label == 'crio'
    return planner()


def test_detected_from_crio_conf_or_crio_conf_d(tmp_path):
    root = str(tmp_path)
    assert not crio.CONTEXT.detect(root)
    os.makedirs(root + '/etc/crio/crio.conf.d')
    assert crio.CONTEXT.detect(root) and 'crio' in pp.detect_contexts(root)


def test_the_plan_writes_the_drop_in_and_owes_a_restart_of_crio(etc):
    change = plan(etc, {'nofile': 16384, 'memlock': 'unlimited'})
    assert change.changed and change.current is None
    assert '  "nofile=16384:16384",\n  "memlock=-1:-1",\n]\n' in change.new
    assert change.result['decided_by'] == change.path + ':3:1'
    actions = pp.actions([('crio', change)], None, policy='always')
    assert actions['units'] == ['crio.service'] and actions['deferred'] == []
    assert registry.restart_context('crio.service') == 'unit:crio.service'
    deferred = pp.actions([('crio', change)], None, policy='never')['deferred']
    assert deferred == [dict(unit='crio.service', reason='restart policy never',
                             context='unit:crio.service')]


def test_an_unchanged_drop_in_owes_nothing(etc):
    change = plan(etc, {'nofile': 16384})
    change.apply()
    again = plan(etc, {'nofile': 16384})
    assert not again.changed
    assert pp.actions([('crio', again)], None, policy='always')['units'] == []


def test_refusals_name_the_profile_field_or_the_file(etc):
    with pytest.raises(changes.Failure, match='profile.nofile: give both soft and hard'):
        plan(etc, {'nofile': {'hard': 8192}})
    (etc / 'crio.conf.d' / '99-site.conf').write_text(
        '[crio.runtime]\ndefault_ulimits = ["nofile=5:5"]\n')
    with pytest.raises(changes.Failure, match='99-site.conf:2:1 sets default_ulimits'):
        plan(etc, {'nofile': 8192})
