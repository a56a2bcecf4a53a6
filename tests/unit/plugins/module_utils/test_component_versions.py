"""Issue 34 item 5: the components the drift watch records (module_utils/host/
component_versions.py), the record kept across runs and the change seen once
(run/watch_outlets.py), their metrics (reports/node_state.component_metrics) and the package
hooks' check."""
import json
import os
import sys

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import component_versions as cv
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import node_state as ns
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import watch_outlets as wo

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
from scenario_support import samples  # noqa: E402  pylint: disable=wrong-import-position

STATUS = """Package: containerd
Status: install ok installed
Version: 1.6.20~ds1-1+deb12u3

Package: docker.io
Status: install ok installed
Version: 20.10.24+dfsg1-1+deb12u1+b6

Package: runc
Status: deinstall ok config-files
Version: 1.1.5+ds1-1+deb12u1

Package: systemd
Status: install ok installed
Version: 252.39-1~deb12u2
"""


def node(tmp_path, status=STATUS, units=None):
    root = str(tmp_path)
    os.makedirs(root + '/var/lib/dpkg', exist_ok=True)
    with open(root + '/var/lib/dpkg/status', 'w') as handle:
        handle.write(status)
    for path, text in (units or {}).items():
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        with open(root + path, 'w') as handle:
            handle.write(text)
    return root


UNITS = {'/lib/systemd/system/containerd.service': '[Service]\nLimitNOFILE=infinity\n',
         '/lib/systemd/system/docker.service': '[Service]\nExecStart=/usr/sbin/dockerd\n',
         '/lib/systemd/system/user@.service': '[Service]\n'}


def test_versions_from_dpkg_and_unit_hashes(tmp_path):
    root = node(tmp_path, units=UNITS)
    got = cv.read_components(None, root)
    assert sorted(got) == ['containerd', 'dockerd', 'systemd']      # runc: config-files only
    assert got['containerd']['version'] == '1.6.20~ds1-1+deb12u3'
    assert got['dockerd']['package'] == 'docker.io' and got['dockerd']['source'] == 'dpkg'
    assert list(got['containerd']['units']) == ['/lib/systemd/system/containerd.service']
    assert got['containerd']['units_sha256'] == cv.combined_hash(got['containerd']['units'])
    assert len(got['containerd']['units_sha256']) == 64


def test_drop_ins_and_the_etc_copy_count(tmp_path):
    root = node(tmp_path, units=dict(UNITS, **{
        '/etc/systemd/system/containerd.service.d/50-site.conf': '[Service]\nLimitNOFILE=1024\n',
        '/etc/systemd/system/containerd.service.d/README': 'not a drop-in'}))
    units = cv.read_components(None, root)['containerd']['units']
    assert sorted(units) == ['/etc/systemd/system/containerd.service.d/50-site.conf',
                             '/lib/systemd/system/containerd.service']


def test_a_usr_merged_unit_is_hashed_once(tmp_path):
    root = node(tmp_path, units={'/usr/lib/systemd/system/containerd.service': 'x'})
    os.symlink('usr/lib', root + '/lib')
    assert list(cv.read_components(None, root)['containerd']['units']) == [
        '/usr/lib/systemd/system/containerd.service']


def test_first_record_is_no_change_then_each_change_is_seen_once(tmp_path):
    root = node(tmp_path, units=UNITS)
    first, changes = cv.compare({}, cv.read_components(None, root), 100)
    assert changes == [] and first['containerd']['changed'] is None
    same, changes = cv.compare(first, cv.read_components(None, root), 200)
    assert changes == [] and same['containerd']['seen'] == 100

    # the upgrade: containerd's package and its unit (LimitNOFILE=infinity dropped)
    node(tmp_path, status=STATUS.replace('1.6.20~ds1-1+deb12u3', '2.0.2-1'),
         units={'/lib/systemd/system/containerd.service': '[Service]\n'})
    after, changes = cv.compare(same, cv.read_components(None, root), 300)
    assert [c['component'] for c in changes] == ['containerd']
    assert changes[0]['what'] == 'version+units'
    assert changes[0]['files'] == ['/lib/systemd/system/containerd.service']
    assert after['containerd']['changed'] == 300
    assert after['containerd']['previous']['version'] == '1.6.20~ds1-1+deb12u3'
    assert cv.describe(changes[0]).startswith(
        'component changed: containerd version 1.6.20~ds1-1+deb12u3 -> 2.0.2-1 unit files ')
    again, changes = cv.compare(after, cv.read_components(None, root), 400)
    assert changes == [] and again['containerd']['changed'] == 300


def test_components_appearing_and_going_are_changes(tmp_path):
    root = node(tmp_path, units=UNITS)
    first, _changes = cv.compare({}, cv.read_components(None, root), 100)
    node(tmp_path, status=STATUS.replace('deinstall ok config-files', 'install ok installed')
         .replace('Package: docker.io', 'Package: docker.io-gone'))
    state, changes = cv.compare(first, cv.read_components(None, root), 200)
    assert sorted((c['component'], c['what']) for c in changes) == [
        ('dockerd', 'removed'), ('runc', 'appeared')]
    assert state['dockerd']['version'] is None and state['dockerd']['changed'] == 200
    still, changes = cv.compare(state, cv.read_components(None, root), 300)
    assert changes == [] and still['dockerd']['changed'] == 200


def test_metrics_of_the_record():
    state = {'containerd': {'version': '2.0.2-1', 'package': 'containerd', 'source': 'dpkg',
                            'units_sha256': 'ab' * 32, 'changed': 300},
             'systemd': {'version': '252', 'package': 'systemd', 'source': 'dpkg',
                         'units_sha256': '', 'changed': None},
             'dockerd': {'version': None, 'changed': 200}}
    text = ns.component_metrics(state)
    assert ('gpufleet_limits_component_info{component="containerd",version="2.0.2-1",'
            'package="containerd",source="dpkg",units_sha256="abababababab"} 1') in text
    assert 'gpufleet_limits_component_changed_timestamp_seconds{component="containerd"} 300' in text
    assert 'gpufleet_limits_component_changed_timestamp_seconds{component="systemd"} 0' in text
    assert 'gpufleet_limits_component_changed_timestamp_seconds{component="dockerd"} 200' in text
    assert 'component="dockerd",version' not in text
    assert text.count('# TYPE') == 2
    # the scenario's parser reads every label (names with digits too)
    info = [dict(labels) for (name, labels), _v in samples(text).items()
            if name == 'gpufleet_limits_component_info' and dict(labels)['component'] == 'containerd']
    assert info == [{'component': 'containerd', 'version': '2.0.2-1', 'package': 'containerd',
                     'source': 'dpkg', 'units_sha256': 'abababababab'}]


class Node(object):
    """What check_components needs of the host: the binary search and a command runner that
    records the commands (systemctl is not run in a unit test)."""

    def __init__(self):
        self.commands = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/bin/' + name

    def run_command(self, args, **_kwargs):
        self.commands.append(args)
        return 0, '', ''


def test_record_survives_runs_and_the_hook_check_starts_the_watch_only_on_change(
        tmp_path, monkeypatch):
    root = node(tmp_path, units=UNITS)
    read = cv.read_components
    monkeypatch.setattr(wo.cv, 'read_components', lambda host: read(None, root))
    state_dir = str(tmp_path / 'state')
    host = Node()
    assert wo.check_components(host, state_dir)[0] is False      # no record yet
    _state, logs = wo.record_components(host, state_dir, 100)
    assert logs == []
    assert wo.check_components(host, state_dir) == (False, 'components unchanged')
    assert host.commands == []
    node(tmp_path, units={'/etc/systemd/system/containerd.service.d/90-x.conf': '[Service]\n'})
    changed, said = wo.check_components(host, state_dir)
    assert changed and said.endswith('; started gpufleet-limits-watch.service')
    assert host.commands == [['/bin/systemctl', 'start', '--no-block',
                              'gpufleet-limits-watch.service']]
    state, logs = wo.record_components(host, state_dir, 200)
    assert [p for p, _m in logs] == ['warning']
    assert logs[0][1].startswith('component changed: containerd unit files ')
    assert state['containerd']['changed'] == 200
    with open(os.path.join(state_dir, 'components.json')) as handle:
        assert json.load(handle)['components']['containerd']['changed'] == 200


def test_a_corrupt_record_is_reported_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(wo.cv, 'read_components', lambda host: {})
    state_dir = tmp_path / 'state'
    state_dir.mkdir()
    (state_dir / 'components.json').write_text('{"components": {"runc": 3}}')
    _state, logs = wo.record_components(None, str(state_dir), 100)
    assert logs == [('warning', '%s: a component is not an object; recording afresh'
                     % (state_dir / 'components.json'))]
    assert json.loads((state_dir / 'components.json').read_text())['components'] == {}
