# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The context registry and limits_profile import no parser of a context they are not planning:
an idempotent rerun on a node without CRI-O, Podman or Slurm compiles none of their code
(runtime_paths gives the registry their paths), and the login baseline's probe code is imported
only when a run takes a baseline. Checked in a fresh interpreter, where nothing else has
imported them yet."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import subprocess
import sys

import conftest

UTILS = 'ansible_collections.gpufleet.tuning.plugins.module_utils.'
LAZY = ['runtimes.crio_conf', 'runtimes.containers_conf', 'slurm.slurm_conf', 'run.effective',
        # the failure classifier (contexts.job_context imports it) and the undo's code
        # (state=absent): issue 42, less to compile on the node per run
        'model.classify', 'model.failure_text', 'run.profile_undo', 'undo.undo_files']
PLUGINS = 'ansible_collections.gpufleet.tuning.plugins.'


def loaded_after(statement):
    code = ('import sys, json\nsys.path.insert(0, %r)\n%s\nprint(json.dumps(sorted(sys.modules)))'
            % (conftest.COLLECTIONS, statement))
    out = subprocess.check_output([sys.executable, '-c', code], universal_newlines=True)
    return set(json.loads(out.strip().splitlines()[-1]))


def test_registry_and_module_leave_the_parsers_out():
    loaded = loaded_after('import ansible_collections.gpufleet.tuning.plugins.modules.limits_profile')
    assert UTILS + 'contexts' in loaded
    assert UTILS + 'host.runtime_paths' in loaded
    assert [name for name in LAZY if UTILS + name in loaded] == []


def test_planning_a_context_imports_its_parser():
    loaded = loaded_after(
        'from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts\n'
        'from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm\n'
        'slurm.leak_text(["nofile"], None)')
    assert UTILS + 'slurm.slurm_conf' in loaded


def test_loading_the_filter_and_lookup_files_imports_no_module_utils():
    # Ansible loads every filter file of the collection in each worker it forks per host and
    # task, to find one filter, and compiles each from source: a file imports what its filters
    # use when they run (plugin_utils/lazy.py), and the probe_options lookup reads generated
    # names, not the registry (issue 42: 62 modules per rerun worker before, 21 after)
    import os
    files = ['filter.' + name[:-3] for name in sorted(os.listdir(os.path.join(
        conftest.COLLECTIONS, 'ansible_collections', 'gpufleet', 'tuning', 'plugins', 'filter')))
        if name.endswith('.py')] + ['lookup.probe_options']
    loaded = loaded_after('\n'.join('import %s%s' % (PLUGINS, name) for name in files))
    assert len(files) > 8
    assert sorted(name for name in loaded if name.startswith(UTILS)) == []


def test_a_filter_imports_its_module_utils_when_it_runs():
    loaded = loaded_after(
        'from ansible_collections.gpufleet.tuning.plugins.filter import job_shape\n'
        'job_shape.job_profile(dict(num_workers=2, batch_size=4, tensors_per_batch=2, bytes_per_batch="1MiB"), "job")')
    assert UTILS + 'model.job_demand' in loaded
    assert PLUGINS + 'filter.dataloader_check' not in loaded


def test_the_outcome_of_an_unchanged_unverified_call_reads_no_verification_code():
    # the limits role templates limits_outcome on every profile call's result, in a worker
    # per host: an unchanged node's call verified nothing, so the findings, the gap sources
    # and the probe tables stay out (issue 42)
    loaded = loaded_after(
        'from ansible_collections.gpufleet.tuning.plugins.filter import limits_failures\n'
        'found = limits_failures.limits_outcome(dict(changed=False, contexts=["pam"]))\n'
        'assert found["changed"] is False and found["failed_unchanged"] is False, found')
    assert UTILS + 'reports.outcome' in loaded
    assert [name for name in ('reports.findings', 'reports.gap_sources', 'reports.probe_results')
            if UTILS + name in loaded] == []
