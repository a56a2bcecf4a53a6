# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 39.1 for the contexts test_keep_current.py leaves out: systemd_system, systemd_user,
units, docker, crio. A plain value never lowers a side of what a new process there gets now:
the running manager's defaults (systemctl show) and what systemd has loaded for a unit, not
only the files (a lower file waiting for a reexec or a daemon-reload must not hide a higher
running value); dockerd's and CRI-O's containers inherit containerd's or crio.service's own
limits for an item the runtime's file does not set. Driven through the real planners on files
in a tmp root; only what a live manager or daemon says is faked (``systemctl show``, the
daemon's /proc limits)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from hypothesis import given, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import systemd as msd
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_system
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_user
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import units
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_precedence as sdprec)

from ansible_collections.gpufleet.tuning.tests.unit.plugins.module_utils.contexts import (
    test_keep_current as keep_current)

ITEMS, NoCeiling, SETTINGS = keep_current.ITEMS, keep_current.NoCeiling, keep_current.SETTINGS
expected, larger, pair = keep_current.expected, keep_current.larger, keep_current.pair

UNIT = 'train.service'
DROPIN_PATH = sdpaths.dropin_path     # the real one (hypothesis reuses the monkeypatch)


def show_value(item, value):
    return 'infinity' if value == model.UNLIMITED else str(value)


def show_lines(prefix, limits):
    out = []
    for name, limit in limits.items():
        key = msd.systemd_key(model.ITEMS[name], prefix)
        out.append('%s=%s' % (key, show_value(name, limit.hard)))
        out.append('%sSoft=%s' % (key, show_value(name, limit.soft)))
    return ''.join(line + '\n' for line in out)


class LiveHost(object):
    """``systemctl show`` of the running system manager (``manager``) and of a unit (what
    systemd has loaded for it: ``loaded``); no unit runs, no user manager."""

    def __init__(self, manager=None, loaded=None):
        self.manager, self.loaded = manager or {}, loaded or {}

    def run_command(self, args, environ_update=None):
        args = list(args)
        if args[:2] == ['systemctl', 'show'] and len(args) == 3 and 'DefaultLimit' in args[2]:
            return 0, show_lines('DefaultLimit', self.manager), ''
        if args[:2] == ['systemctl', 'show'] and args[2].startswith('--property='):
            return 0, ('LoadState=loaded\nActiveState=inactive\nSubState=dead\nMainPID=0\n'
                       'NeedDaemonReload=no\n' + show_lines('Limit', self.loaded)), ''
        if args[:2] == ['systemctl', 'show']:
            return 0, '0\n', ''
        if args[:2] == ['systemctl', 'list-units']:
            return 0, '', ''
        return 1, '', 'not faked: %s' % args


def systemd_root(tmp_path, monkeypatch):
    root = str(tmp_path)
    monkeypatch.setattr(sdpaths, 'MANAGER_DIRS', (root + '/etc/systemd',))
    monkeypatch.setattr(sdpaths, 'UNIT_DIRS', (root + '/etc/systemd/system',))
    monkeypatch.setattr(sdpaths, 'manager_main', lambda scope: '%s/etc/systemd/%s.conf'
                        % (root, scope))
    monkeypatch.setattr(sdpaths, 'dropin_path', lambda scope=None, unit=None,
                        name=sdpaths.DROPIN_NAME: root + DROPIN_PATH(scope, unit, name))
    monkeypatch.setattr(sdlive, 'systemd_running', lambda root='': True)
    (tmp_path / 'etc' / 'systemd' / 'system').mkdir(parents=True, exist_ok=True)
    return root


def write(path, text):
    import os
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'w') as handle:
        handle.write(text)


def request_for(limits, contexts, named=None, manager=None, **options):
    request = Request(dict((k, None) for k in limits), limits, contexts, named=named,
                      **options)
    request._read['manager_now'] = (manager or {},
                                    "the running system manager's default (systemctl show)")
    return request


def tune(record, request, host):
    """Plan ``record`` and write its files, as limits_profile does."""
    changes = []
    for _label, plan in record.plans(request, host, NoCeiling()):
        change = plan()
        if change.changed:
            write(change.path, change.new)
        changes.append(change)
    return changes


def manager_gets(scope, item, running):
    """What a new service (``scope`` system) or user service gets once the manager re-reads
    its files (the reexec or restart the tune owes): the files' value, else the running
    system manager's default."""
    setting = sdprec.resolve_manager(scope).settings.get(item)
    return setting.limit if setting is not None else running


def unit_gets(item, loaded):
    setting = sdprec.resolve_unit(UNIT).settings.get(item)
    return setting.limit if setting is not None else loaded


def most(a, b):
    return model.Limit(larger(a.soft, b.soft), larger(a.hard, b.hard))


SYSTEMD_ITEMS = list(ITEMS)


@st.composite
def systemd_case(draw):
    item, asked, named = keep_current.profile_case(draw, SYSTEMD_ITEMS)
    running = draw(pair(item))
    # the files: nothing, what runs now, or another value waiting for a reexec/daemon-reload
    configured = draw(st.one_of(st.none(), st.just(running), pair(item)))
    return item, asked, named, running, configured


def line(prefix, item, limit):
    return '%s=%s\n' % (msd.systemd_key(model.ITEMS[item], prefix), msd.to_systemd(item, limit))


@SETTINGS
@given(case=systemd_case())
def test_property_a_new_service_never_loses_a_side_not_named(tmp_path, monkeypatch, case):
    """systemd_system: before is what a new service gets now (the running manager's default)
    and what system.conf sets for the next reexec; after the tune's reexec a new service has
    the larger of each and the profile on every side the profile does not name."""
    item, asked, named, running, configured = case
    root = systemd_root(tmp_path, monkeypatch)
    write(root + '/etc/systemd/system.conf', '[Manager]\n' + (
        line('DefaultLimit', item, configured) if configured is not None else ''))
    dropin = sdpaths.dropin_path('system')
    if (tmp_path / dropin[len(root) + 1:]).exists():
        (tmp_path / dropin[len(root) + 1:]).unlink()
    request = request_for({item: asked}, ['systemd_system'], named=dict([(item, named)]),
                          manager={item: running})
    host = LiveHost(manager={item: running})
    before = running if configured is None else most(running, configured)
    tune(systemd_system.CONTEXT, request, host)
    after = manager_gets('system', item, running)
    assert after == expected(before, asked, named), (running, configured, after)


@SETTINGS
@given(case=systemd_case())
def test_property_a_new_user_service_never_loses_a_side_not_named(tmp_path, monkeypatch,
                                                                  case):
    """systemd_user: user.conf's value (no user manager runs: a new one reads it), else the
    running system manager's default, which a user manager runs with."""
    item, asked, named, running, configured = case
    root = systemd_root(tmp_path, monkeypatch)
    write(root + '/etc/systemd/user.conf', '[Manager]\n' + (
        line('DefaultLimit', item, configured) if configured is not None else ''))
    dropin = sdpaths.dropin_path('user')
    if (tmp_path / dropin[len(root) + 1:]).exists():
        (tmp_path / dropin[len(root) + 1:]).unlink()
    request = request_for({item: asked}, ['systemd_user'], named=dict([(item, named)]),
                          manager={item: running})
    host = LiveHost(manager={item: running})
    before = manager_gets('user', item, running)
    tune(systemd_user.CONTEXT, request, host)
    after = manager_gets('user', item, running)
    assert after == expected(before, asked, named), (running, configured, after)


@SETTINGS
@given(case=systemd_case())
def test_property_a_unit_never_loses_a_side_not_named(tmp_path, monkeypatch, case):
    """unit:NAME: before is what systemd has loaded for the unit (systemctl show: its own
    Limit*=, else the manager's default) and what its files set for the next daemon-reload."""
    item, asked, named, loaded, configured = case
    root = systemd_root(tmp_path, monkeypatch)
    write(root + '/etc/systemd/system/' + UNIT, '[Service]\nExecStart=/bin/true\n' + (
        line('Limit', item, configured) if configured is not None else ''))
    dropin = sdpaths.dropin_path(None, UNIT)
    if (tmp_path / dropin[len(root) + 1:]).exists():
        (tmp_path / dropin[len(root) + 1:]).unlink()
    request = request_for({item: asked}, [], named=dict([(item, named)]), units=[UNIT])
    host = LiveHost(loaded={item: loaded})
    before = loaded if configured is None else most(loaded, configured)
    tune(units.CONTEXT, request, host)
    after = unit_gets(item, loaded)
    assert after == expected(before, asked, named), (loaded, configured, after)


def test_a_lower_system_conf_waiting_for_a_reexec_does_not_hide_the_running_default(
        tmp_path, monkeypatch):
    """The running manager gives new services nofile 524288:524288; system.conf says
    1024:4096, not yet applied (no reexec since). A profile of nofile 8192 keeps 524288: the
    drop-in is what the tune's reexec applies, so it must carry the running value."""
    root = systemd_root(tmp_path, monkeypatch)
    write(root + '/etc/systemd/system.conf', '[Manager]\nDefaultLimitNOFILE=1024:4096\n')
    running = model.Limit(524288, 524288)
    request = request_for({'nofile': model.Limit(8192, 8192)}, ['systemd_system'],
                          manager={'nofile': running})
    [change] = tune(systemd_system.CONTEXT, request, LiveHost(manager={'nofile': running}))
    assert manager_gets('system', 'nofile', running) == running, change.new


def test_a_units_lower_file_waiting_for_a_daemon_reload_does_not_hide_what_is_loaded(
        tmp_path, monkeypatch):
    """systemd has LimitNPROC=infinity loaded for the unit; its file now says 4096 (no
    daemon-reload yet). A profile of nproc 8192 keeps infinity."""
    root = systemd_root(tmp_path, monkeypatch)
    write(root + '/etc/systemd/system/' + UNIT,
          '[Service]\nExecStart=/bin/true\nLimitNPROC=4096\n')
    loaded = model.Limit(model.UNLIMITED, model.UNLIMITED)
    request = request_for({'nproc': model.Limit(8192, 8192)}, [], units=[UNIT])
    [change] = tune(units.CONTEXT, request, LiveHost(loaded={'nproc': loaded}))
    assert unit_gets('nproc', loaded) == loaded, change.new


# --- docker and CRI-O: an item the runtime's file does not set is the daemon's own ----------

RUNTIME_ITEMS = [name for name in ITEMS if model.ITEMS[name].docker_name is not None]


@st.composite
def runtime_case(draw):
    item, asked, named = keep_current.profile_case(draw, RUNTIME_ITEMS)
    own = draw(pair(item))
    listed = draw(st.one_of(st.none(), pair(item)))
    return item, asked, named, own, listed


def daemon_json(tmp_path, item, listed):
    path = tmp_path / 'daemon.json'
    data = {'log-level': 'info'}
    if listed is not None:
        data['default-ulimits'] = {item: model.to_docker(item, listed)}
    path.write_text(json.dumps(data, indent=2) + '\n')
    return str(path)


def docker_gets(path, item, own):
    """What a new container gets: daemon.json's default-ulimits entry, else containerd's own
    limits (reference section 3: containers inherit containerd's through the shim)."""
    with open(path) as handle:
        entry = (json.load(handle).get('default-ulimits') or {}).get(item)
    return own if entry is None else model.from_docker(item, entry)[1]


class DockerHost(LiveHost):
    def run_command(self, args, environ_update=None):
        return 1, '', 'no docker here'

    def get_bin_path(self, name, required=False):
        return None


def docker_request(limits, path, own, named=None):
    request = Request(dict((k, None) for k in limits), limits, ['docker'], named=named,
                      paths={'docker_daemon_json': path})
    request._read['containerd_limits'] = {'pid': 4242, 'limits': dict(
        (name, {'soft': limit.soft, 'hard': limit.hard}) for name, limit in own.items())}
    return request


@SETTINGS
@given(case=runtime_case())
def test_property_a_new_container_never_loses_a_side_not_named(tmp_path, monkeypatch, case):
    item, asked, named, own, listed = case
    if item == 'nofile' and model.UNLIMITED in (asked.hard, own.hard) + (
            (listed.hard,) if listed else ()):
        return      # dockerd's nofile -1 is refused by the kernel (nr_open)
    monkeypatch.setattr(docker, 'docker_pending', lambda host, path: False)
    path = daemon_json(tmp_path, item, listed)
    request = docker_request({item: asked}, path, {item: own}, named=dict([(item, named)]))
    before = docker_gets(path, item, own)
    tune(docker.CONTEXT, request, DockerHost())
    after = docker_gets(path, item, own)
    assert after == expected(before, asked, named), (before, after)
    if listed is None:
        # daemon.json holds the value, met or not, against a later change of containerd's own
        # limits (as the pam context's lines do)
        with open(path) as handle:
            assert item in json.load(handle)['default-ulimits']


OTHER = model.Limit(7777, 9999)


def other_entry(item, listed):
    """The main file's list: the item's entry, and one for an item outside the profile that
    the tune must not lose (the drop-in's list replaces the main file's)."""
    other = 'sigpending' if item != 'sigpending' else 'msgqueue'
    return [(item, listed), (other, OTHER)]


def crio_root(tmp_path, monkeypatch, item, listed):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
    (tmp_path / 'crio.conf.d').mkdir(exist_ok=True)
    for old in (tmp_path / 'crio.conf.d').iterdir():
        old.unlink()
    main = tmp_path / 'crio.conf'
    main.write_text('[crio.runtime]\n' + (
        'default_ulimits = [%s]\n' % ', '.join('"%s"' % model.to_ulimit_string(*entry)
                                               for entry in other_entry(item, listed))
        if listed is not None else ''))
    monkeypatch.setattr(crio_conf, 'MAIN', str(main))
    monkeypatch.setattr(crio_conf, 'DROPIN_DIR', str(tmp_path / 'crio.conf.d'))
    return str(tmp_path / 'crio.conf.d' / '90-gpufleet-tuning.conf')


def crio_gets(item, own):
    """What a new pod on CRI-O gets: the last default_ulimits that lists the item, else
    crio.service's own limits (crio.conf(5): the list is CRI-O's default for every
    container; the rest are inherited)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
    found = crio_conf.effective(crio_conf.config_files(crio_conf.MAIN, crio_conf.DROPIN_DIR))
    return found[-1][1].get(item, own) if found else own


@SETTINGS
@given(case=runtime_case())
def test_property_a_new_crio_pod_never_loses_a_side_not_named(tmp_path, monkeypatch, case):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import crio
    item, asked, named, own, listed = case
    dropin = crio_root(tmp_path, monkeypatch, item, listed)
    request = Request({item: None}, {item: asked}, ['crio'], named=dict([(item, named)]),
                      paths={'crio_dropin': dropin})
    request._read['crio_limits'] = {'pid': 77, 'limits': {item: own}}
    before = crio_gets(item, own)
    others = [crio_gets(name, None) for name in ('sigpending', 'msgqueue') if name != item]
    tune(crio.CONTEXT, request, DockerHost())
    after = crio_gets(item, own)
    assert after == expected(before, asked, named), (before, after)
    assert [crio_gets(name, None) for name in ('sigpending', 'msgqueue') if name != item] == (
        others)


# --- Podman: an item containers.conf does not set --------------------------------------------

def podman_root(tmp_path, monkeypatch, item, listed):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf
    dropins = tmp_path / 'containers.conf.d'
    dropins.mkdir(exist_ok=True)
    for old in dropins.iterdir():
        old.unlink()
    main = tmp_path / 'containers.conf'
    main.write_text('[containers]\n' + (
        'default_ulimits = [%s]\n' % ', '.join('"%s"' % model.to_ulimit_string(*entry)
                                               for entry in other_entry(item, listed))
        if listed is not None else ''))
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    monkeypatch.setattr(containers_conf, 'MAIN_FILES', (str(main),))
    monkeypatch.setattr(containers_conf, 'DROPIN_DIRS', (str(dropins),))
    monkeypatch.setattr(versions, 'podman_version', lambda host, root='': (4, 3, 1))
    return str(dropins / '90-gpufleet-tuning.conf')


def podman_gets(item, caller):
    """What a new rootful Podman container gets: containers.conf's default_ulimits, else
    nofile and nproc 1048576:1048576 (podman v4 pkg/specgen/generate/oci.go addRlimits), else
    the podman process's own (conmon and the runtime pass them on)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf
    found = containers_conf.effective()['default_ulimits']
    if item in found:
        return found[item][0]
    if item in ('nofile', 'nproc'):
        return model.Limit(1048576, 1048576)
    return caller


@SETTINGS
@given(case=runtime_case())
def test_property_a_new_podman_container_never_loses_a_side_not_named(tmp_path, monkeypatch,
                                                                      case):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import podman
    item, asked, named, caller, listed = case
    dropin = podman_root(tmp_path, monkeypatch, item, listed)
    request = Request({item: None}, {item: asked}, ['podman'], named=dict([(item, named)]),
                      paths={'podman_dropin': dropin})
    request._read['podman_caller'] = {item: caller}
    request._read['podman_can_raise'] = True
    before = podman_gets(item, caller)
    others = [podman_gets(name, None) for name in ('sigpending', 'msgqueue') if name != item]
    tune(podman.CONTEXT, request, DockerHost())
    after = podman_gets(item, caller)
    assert after == expected(before, asked, named), (before, after)
    assert [podman_gets(name, None) for name in ('sigpending', 'msgqueue') if name != item] == (
        others)


def test_without_cap_sys_resource_podmans_default_is_capped_at_its_own_limits(
        tmp_path, monkeypatch):
    """Measured in the docker scenario's node (podman 4.3.1, root without CAP_SYS_RESOURCE,
    containers.conf without default_ulimits): a new container had nofile 20000:20000 and nproc
    96367:96367, podman's own, not 1048576. A soft side below its hard is kept as it is."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import podman
    dropin = podman_root(tmp_path, monkeypatch, 'core', None)
    request = Request({'nofile': None, 'nproc': None},
                      {'nofile': model.Limit(8192, 8192), 'nproc': model.Limit(8192, 8192)},
                      ['podman'], paths={'podman_dropin': dropin})
    request._read['podman_caller'] = {'nofile': model.Limit(1024, 20000),
                                      'nproc': model.Limit(96367, 96367)}
    request._read['podman_can_raise'] = False
    now = podman.CONTEXT.current('podman', request, DockerHost())
    assert now['nofile'][0] == model.Limit(1024, 20000)
    assert now['nproc'][0] == model.Limit(96367, 96367)
    assert podman.CONTEXT.limits('podman', request, DockerHost(), NoCeiling()) == {
        'nofile': model.Limit(8192, 20000), 'nproc': model.Limit(96367, 96367)}
