# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper (not part of the collection's plugins): counts the module invocations each
host ran, for scripts/bench.py. Enabled with ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins
ANSIBLE_CALLBACKS_ENABLED=invocations; writes JSON to $BENCH_INVOCATIONS_FILE at the end:
{host: {invocations, changed, failed, unreachable, skipped}}.

An invocation is one run of a module on the host: a task (or each item of a loop) that was not
skipped, whose action is not one the controller does alone (debug, set_fact, meta, include_*,
assert, fail, ...), and that is not delegated elsewhere.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: invocations
type: aggregate
short_description: Count module invocations per host (gpufleet.tuning benchmarks)
description:
  - Writes per-host counts of module invocations, changed, failed, unreachable and skipped
    results as JSON to the file named by the BENCH_INVOCATIONS_FILE environment variable.
'''

import json
import os

from ansible.plugins.callback import CallbackBase

CONTROLLER_ACTIONS = frozenset([
    'debug', 'set_fact', 'meta', 'include_tasks', 'import_tasks', 'include_role', 'import_role',
    'assert', 'fail', 'validate_argument_spec', 'add_host', 'group_by', 'include_vars', 'pause',
    'set_stats', 'async_status'])


def local_action(action):
    return action.rsplit('.', 1)[-1] in CONTROLLER_ACTIONS


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'invocations'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.hosts = {}

    def entry(self, result):
        name = result._host.get_name()
        return self.hosts.setdefault(name, dict(invocations=0, changed=0, failed=0,
                                                unreachable=0, skipped=0))

    def count(self, result, key=None):
        entry = self.entry(result)
        task = result._task
        if key:
            entry[key] += 1
        if local_action(task.action) or task.delegate_to:
            return
        items = result._result.get('results')
        if task.loop is not None and isinstance(items, list):
            entry['invocations'] += len([r for r in items if not r.get('skipped')])
        else:
            entry['invocations'] += 1

    def v2_runner_on_ok(self, result):
        self.count(result, 'changed' if result._result.get('changed') else None)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.count(result, 'failed')

    def v2_runner_on_unreachable(self, result):
        self.entry(result)['unreachable'] += 1

    def v2_runner_on_skipped(self, result):
        self.entry(result)['skipped'] += 1

    def v2_playbook_on_stats(self, stats):
        self.write()

    def v2_runner_on_async_ok(self, result):
        pass

    def write(self):
        path = os.environ.get('BENCH_INVOCATIONS_FILE')
        if path:
            with open(path, 'w') as handle:
                json.dump(self.hosts, handle, indent=1, sort_keys=True)
