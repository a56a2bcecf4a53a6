# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limits role restarts on one path and rolls back in Python (issue 40 item 6): the
limits_profile call does every restart (the restart engine), the rollback after a failed
verification is one limits_restart task given that call's result, and no Jinja in the role
copies `actions` (which units, user managers, dockerd; what the policy deferred) into restart
arguments."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import yaml

ROOT = os.environ.get('GPUFLEET_ROLE_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'limits')


def role_files():
    found = []
    for folder in ('tasks', 'handlers', 'vars', 'defaults'):
        directory = os.path.join(ROLE, folder)
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name)) as handle:
                found.append(('%s/%s' % (folder, name), handle.read()))
    return found


def tasks():
    for name, text in role_files():
        if name.startswith(('tasks/', 'handlers/')):
            for task in yaml.safe_load(text) or []:
                yield name, task


def test_the_profile_call_is_the_one_restart_path():
    restarting = []
    for name, task in tasks():
        if 'gpufleet.tuning.limits_profile' in task:
            assert task['gpufleet.tuning.limits_profile']['restart'] is True, name
        for module in ('gpufleet.tuning.limits_restart', 'ansible.builtin.systemd_service',
                       'ansible.builtin.systemd', 'ansible.builtin.service'):
            if module in task:
                restarting.append((name, module, task[module]))
    # logind's handler (RemoveIPC), and the rollback, which is given the profile call's result
    # and nothing that says what to restart
    restarting.sort(key=lambda found: found[0])
    assert [(name, module) for name, module, _args in restarting] == [
        ('handlers/main.yml', 'ansible.builtin.systemd_service'),
        ('tasks/failed.yml', 'gpufleet.tuning.limits_restart')]
    assert restarting[0][2]['name'] == 'systemd-logind.service'
    assert restarting[1][2] == {'rollback': '{{ __limits }}',
                                'settle': '{{ __limits_restart_settle }}'}


def test_no_jinja_copies_what_the_restarts_are():
    """The restarts are the module's (actions, restarted) and the engine's: the role neither
    picks units, user managers or dockerd out of `actions` nor copies the policy's `deferred`
    (restarts.allowed) or what is owed (restarts.owed) into variables of its own."""
    pattern = re.compile(r'actions\.(units|user_managers|docker|reexec|daemon_reload|deferred)'
                         r'|__limits_(restart_args|restart_now|docker_restart_now|deferred_units'
                         r'|written|restarts)\b|daemon_reexec')
    found = [(name, match.group(0)) for name, text in role_files()
             for match in pattern.finditer(text)]
    assert found == []
    for gone in ('rollback.yml', 'restore_files.yml'):
        assert not os.path.exists(os.path.join(ROLE, 'tasks', gone)), gone
