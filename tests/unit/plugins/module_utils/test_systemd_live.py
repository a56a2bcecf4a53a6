# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_live reads the running managers through systemctl's documented commands only (issue
31): one ``systemctl show`` per manager with every property, one ``systemctl list-units`` for
the running user managers, and no socket of its own (never systemd's private one)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket

import pytest

import conftest  # noqa: F401 pylint: disable=unused-import

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)

L = m.Limit


@pytest.fixture(autouse=True)
def no_sockets(monkeypatch):
    """Any socket the code under test opens fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError('systemd_live opened a socket: %r %r' % (args, kwargs))
    monkeypatch.setattr(socket, 'socket', refuse)


def recorder(replies):
    calls = []

    def run(args):
        calls.append(list(args))
        for prefix, reply in replies:
            if args[:len(prefix)] == prefix:
                return reply
        raise AssertionError('unexpected command %r' % (args,))
    return calls, run


def test_the_system_manager_is_one_systemctl_show_with_every_property():
    calls, run = recorder([(['systemctl', 'show'], (0, 'DefaultLimitNOFILE=524288\n'
                                                       'DefaultLimitNOFILESoft=1024\n'
                                                       'DefaultLimitNPROC=infinity\n'
                                                       'DefaultLimitNPROCSoft=infinity\n', ''))])
    live, error = sdlive.manager_live(run)
    assert error is None
    assert live['nofile'] == L(1024, 524288) and live['nproc'] == L(m.UNLIMITED, m.UNLIMITED)
    assert len(calls) == 1
    asked = calls[0][2]
    assert 'DefaultLimitNOFILE,DefaultLimitNOFILESoft' in asked
    assert asked.startswith('--property=')
    names = asked[len('--property='):].split(',')
    for item in m.RLIMIT_ITEMS:
        key = m.systemd_key(m.ITEMS[item], sdpaths.MANAGER_PREFIX)
        assert key in names and key + 'Soft' in names


def test_a_user_manager_is_systemctl_user_show_run_as_the_user():
    shown = 'DefaultLimitNOFILE=4000\nDefaultLimitNOFILESoft=3000\n'
    calls, run = recorder([(['runuser'], (0, shown, ''))])
    live, error = sdlive.manager_live(run, sdpaths.USER, 'alice', 1001)
    assert error is None and live == {'nofile': L(3000, 4000)}
    assert len(calls) == 1
    command = calls[0]
    assert command[:4] == ['runuser', '-u', 'alice', '--']
    assert 'XDG_RUNTIME_DIR=/run/user/1001' in command
    assert command[command.index('systemctl'):][:3] == ['systemctl', '--user', 'show']


def test_a_user_manager_needs_a_user_and_runs_nothing_without_one():
    calls, run = recorder([])
    assert sdlive.manager_live(run, sdpaths.USER, None, 1001) == (None, 'no user given')
    assert sdlive.manager_live(run, sdpaths.USER, 'alice', None) == (None, 'no user given')
    assert calls == []


def test_a_failing_systemctl_is_the_error():
    _calls, run = recorder([(['systemctl', 'show'], (1, '', 'Failed to connect to bus\n'))])
    assert sdlive.manager_live(run) == (None, 'Failed to connect to bus')


def test_running_user_managers_is_one_list_units():
    calls, run = recorder([(['systemctl', 'list-units'], (
        0, 'user@1001.service loaded active running User Manager for UID 1001\n'
           'user@0.service loaded active running User Manager for UID 0\n'
           'user-runtime-dir@1001.service loaded active running x\n\n', ''))])
    assert sdlive.running_user_managers(run) == [('user@1001.service', 1001),
                                                 ('user@0.service', 0)]
    assert calls == [['systemctl', 'list-units', '--type=service', '--state=running', '--plain',
                      '--no-legend', '--no-pager', 'user@*.service']]


def test_running_user_managers_is_empty_when_systemctl_fails():
    _calls, run = recorder([(['systemctl', 'list-units'], (1, '', 'no'))])
    assert sdlive.running_user_managers(run) == []


def test_running_instances_of_a_template_in_one_call():
    """Issue 31 item 11: a template unit in limits_units (train@.service): its instances are
    listed with one systemctl call, and the template itself is never shown or restarted."""
    calls = []

    def run(args):
        calls.append(args)
        return 0, ('train@b.service loaded active running Train b\n'
                   'train@a.service loaded active running Train a\n'), ''
    found = sdlive.running_instances(run, 'train@.service')
    assert found == ['train@a.service', 'train@b.service']
    assert calls == [['systemctl', 'list-units', '--type=service', '--state=active', '--plain',
                      '--no-legend', '--no-pager', 'train@*.service']]
    assert sdpaths.is_template('train@.service')
    assert not sdpaths.is_template('train@1.service')
    assert not sdpaths.is_template('docker.service')
