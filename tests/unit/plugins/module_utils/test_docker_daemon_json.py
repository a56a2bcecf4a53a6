"""daemon.json parsing, merging, rendering and docker.service flag detection."""
import difflib
import json
import os
import sys
from collections import OrderedDict

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit, UNLIMITED

FOREIGN = """{
  "storage-driver": "vfs",
  "log-opts": {"max-size": "10m", "max-file": "3"},
  "runtimes": {
    "nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}
  },
  "default-ulimits": {
    "core": {"Name": "core", "Soft": 0, "Hard": -1}
  },
  "registry-mirrors": ["https://mirror.example"],
  "live-restore": true
}
"""


# --- parse / render ----------------------------------------------------------------------

def test_parse_keeps_key_order_and_values():
    data = dj.parse(FOREIGN)
    assert list(data) == ['storage-driver', 'log-opts', 'runtimes', 'default-ulimits',
                          'registry-mirrors', 'live-restore']
    assert list(data['log-opts']) == ['max-size', 'max-file']
    assert data['runtimes']['nvidia']['path'] == 'nvidia-container-runtime'


@pytest.mark.parametrize('text', ['', '   \n', b'', u'\ufeff'])
def test_empty_file_is_an_empty_object(text):
    assert dj.parse(text) == OrderedDict()


# Python 3.13's json names a trailing comma itself, at the comma (a 3.13 controller with
# ansible-core 2.20+, or a Debian 13 target); older ones the '}' after it.
TRAILING_COMMA = (('/x/daemon.json:2:9', 'Illegal trailing comma before end of object')
                  if sys.version_info >= (3, 13) else ('/x/daemon.json:3:1', 'Expecting property name'))


@pytest.mark.parametrize('text, place, what', [
    ('{\n  "a": 1,\n  "b" 2\n}\n', '/x/daemon.json:3:7', "Expecting ':' delimiter"),
    ('{\n  "a": 1,\n}\n',) + TRAILING_COMMA,
    ('{"a": 1} trailing', '/x/daemon.json:1:10', 'Extra data'),
    ('{\n  "a": [1, 2\n', '/x/daemon.json:3:1', "Expecting ',' delimiter"),
])
def test_parse_error_names_line_and_column(text, place, what):
    with pytest.raises(dj.DaemonJsonError) as info:
        dj.parse(text, '/x/daemon.json')
    assert str(info.value).startswith(place + ': invalid JSON')
    assert what in str(info.value)


def test_top_level_must_be_an_object():
    with pytest.raises(dj.DaemonJsonError, match=r'^/d:1:1: the top level must be a JSON object'):
        dj.parse('[1, 2]', '/d')


def test_not_utf8_is_refused():
    with pytest.raises(dj.DaemonJsonError, match='not UTF-8'):
        dj.parse(b'{"a": "\xff"}', '/d')


def test_render_is_stable_indent_2_with_trailing_newline():
    data = dj.parse(FOREIGN)
    out = dj.render(data)
    assert out.endswith(b'}\n') and not out.endswith(b'\n\n')
    assert b'\n  "storage-driver": "vfs",\n' in out
    assert dj.render(dj.parse(out)) == out


def test_render_keeps_non_ascii():
    out = dj.render(OrderedDict([('label', u'caf\u00e9')]))
    assert u'caf\u00e9'.encode('utf-8') in out


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 63, 2 ** 63),
                         st.text(max_size=8))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)


@settings(max_examples=150, deadline=None)
@given(json_objects)
def test_round_trip_render_parse_render(obj):
    rendered = dj.render(OrderedDict(obj))
    again = dj.parse(rendered)
    assert json.loads(rendered.decode('utf-8')) == obj
    assert dj.render(again) == rendered
    assert list(again) == list(obj)


@settings(max_examples=150, deadline=None)
@given(json_objects)
def test_key_positions_point_at_each_key(obj):
    text = json.dumps(obj, indent=2)
    positions = dj.key_positions(text)
    for key in obj:
        pos = positions[(key,)]
        assert json.decoder.scanstring(text, pos + 1)[0] == key


# --- default-ulimits -----------------------------------------------------------------------

def test_read_ulimits_in_kernel_units():
    data = dj.parse('{"default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1024, '
                    '"Hard": 4096}, "memlock": {"Name": "memlock", "Soft": -1, "Hard": -1}}}')
    limits = dj.read_ulimits(data)
    assert limits == OrderedDict([('nofile', Limit(1024, 4096)),
                                  ('memlock', Limit(UNLIMITED, UNLIMITED))])


@pytest.mark.parametrize('entry, place, what', [
    ('{"Soft": 1, "Hard": 2}', '/d:4:5', '"Name" must be'),
    ('{"Name": "nofile", "Soft": 9, "Hard": 2}', '/d:4:5', 'soft 9 is above hard 2'),
    ('{"Name": "nofile", "Soft": "many", "Hard": 2}', '/d:4:5', 'must be an integer'),
    ('{"Name": "nofile", "Soft": -5, "Hard": 2}', '/d:4:5', 'must be an integer'),
    ('[1024, 2048]', '/d:4:5', 'must be an object'),
])
def test_unreadable_entry_names_line_and_column(entry, place, what):
    text = '{\n  "a": 1,\n  "default-ulimits": {\n    "nofile": %s\n  }\n}\n' % entry
    with pytest.raises(dj.DaemonJsonError) as info:
        dj.read_ulimits(dj.parse(text), text, '/d')
    assert str(info.value).startswith(place + ': ')
    assert what in str(info.value)


def test_unknown_item_names_line_and_column():
    text = '{"default-ulimits": {\n  "fds": {"Name": "fds", "Soft": 1, "Hard": 1}}}'
    with pytest.raises(dj.DaemonJsonError, match=r"^/d:2:3: .*unknown limit item 'fds'"):
        dj.read_ulimits(dj.parse(text), text, '/d')


def test_section_not_an_object():
    text = '{\n "default-ulimits": ["nofile=1:2"]}'
    with pytest.raises(dj.DaemonJsonError, match=r'^/d:2:2: "default-ulimits" must be an object'):
        dj.read_ulimits(dj.parse(text), text, '/d')


def test_shm_size_read_and_refused():
    assert dj.read_shm_size({'default-shm-size': '1G'}) == 1024 ** 3
    assert dj.read_shm_size({}) is None
    text = '{\n  "default-shm-size": "lots"\n}'
    with pytest.raises(dj.DaemonJsonError, match=r'^/d:2:3: .*is not a size'):
        dj.read_shm_size(dj.parse(text), text, '/d')


# --- merge -----------------------------------------------------------------------------------

def test_merge_keeps_every_other_key_and_order():
    data = dj.parse(FOREIGN)
    new = dj.merge(data, OrderedDict([('nofile', Limit(4096, 8192)),
                                      ('memlock', Limit(UNLIMITED, UNLIMITED))]), 8 * 1024 ** 3)
    assert list(new) == list(data) + ['default-shm-size']
    for key in data:
        if key != 'default-ulimits':
            assert new[key] == data[key]
    assert list(new['default-ulimits']) == ['core', 'nofile', 'memlock']
    assert new['default-ulimits']['core'] == data['default-ulimits']['core']
    assert new['default-ulimits']['nofile'] == {'Name': 'nofile', 'Soft': 4096, 'Hard': 8192}
    assert new['default-ulimits']['memlock'] == {'Name': 'memlock', 'Soft': -1, 'Hard': -1}
    assert new['default-shm-size'] == '8G'
    assert data['default-ulimits'] == {'core': {'Name': 'core', 'Soft': 0, 'Hard': -1}}, \
        'merge must not change its input'


def test_merge_replaces_in_place_and_is_idempotent():
    data = dj.parse('{"default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1, "Hard": 2},'
                    ' "nproc": {"Name": "nproc", "Soft": 5, "Hard": 5}}, "x": 1}')
    first = dj.merge(data, {'nofile': Limit(10, 20)})
    assert list(first['default-ulimits']) == ['nofile', 'nproc']
    assert list(first) == ['default-ulimits', 'x']
    assert dj.merge(first, {'nofile': Limit(10, 20)}) == first
    assert dj.render(dj.merge(first, {'nofile': Limit(10, 20)})) == dj.render(first)


def test_merge_same_meaning_keeps_the_written_form():
    data = dj.parse('{"default-shm-size": "1024M"}')
    assert dj.merge(data, None, 1024 ** 3) == data
    assert dj.merge(data, None, 2 * 1024 ** 3)['default-shm-size'] == '2G'


def test_merge_repairs_an_entry_without_name():
    data = dj.parse('{"default-ulimits": {"nofile": {"Soft": 1, "Hard": 2}}}')
    new = dj.merge(data, {'nofile': Limit(1, 2)})
    assert new['default-ulimits']['nofile'] == {'Name': 'nofile', 'Soft': 1, 'Hard': 2}


def test_merge_purge():
    data = dj.parse('{"default-ulimits": {"core": {"Name": "core", "Soft": 0, "Hard": 0}}, '
                    '"y": 2}')
    assert list(dj.merge(data, {'nofile': Limit(1, 1)}, purge=True)['default-ulimits']) == \
        ['nofile']
    assert 'default-ulimits' not in dj.merge(data, {}, purge=True)
    assert dj.merge(data, {}, purge=False) == data


def test_merge_creates_from_empty():
    new = dj.merge(OrderedDict(), {'nofile': Limit(1024, 2048)}, 64 * 1024 ** 2)
    assert json.loads(dj.render(new).decode()) == {
        'default-ulimits': {'nofile': {'Name': 'nofile', 'Soft': 1024, 'Hard': 2048}},
        'default-shm-size': '64M'}


# --- indentation kept ----------------------------------------------------------------------

# What the NVIDIA container toolkit (nvidia-ctk runtime configure) writes: 4-space indent.
NVIDIA_4 = json.dumps(OrderedDict([('runtimes', OrderedDict([('nvidia', OrderedDict([
    ('args', []), ('path', 'nvidia-container-runtime')]))]))]), indent=4) + '\n'


def _changed_lines(before, after):
    """(removed, added) lines of a unified diff between two texts."""
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm='', n=0))
    removed = [line[1:] for line in diff if line.startswith('-') and not line.startswith('---')]
    added = [line[1:] for line in diff if line.startswith('+') and not line.startswith('+++')]
    return removed, added


def test_four_space_nvidia_file_keeps_its_indentation():
    assert NVIDIA_4.startswith('{\n    "runtimes": {\n        "nvidia": {\n')
    data = dj.parse(NVIDIA_4)
    assert dj.detect_indent(NVIDIA_4) == 4
    new = dj.merge(data, {'nofile': Limit(1048576, 1048576)})
    out = dj.render(new).decode('utf-8')
    assert out.endswith('}\n') and not out.endswith('\n\n')
    assert out == json.dumps(new, indent=4, separators=(',', ': ')) + '\n'
    removed, added = _changed_lines(NVIDIA_4, out)
    # A pure insertion: the old lines are all kept byte for byte ("runtimes"'s closing brace
    # gains its comma in a new line that difflib pairs with the new section's last line).
    assert removed == []
    assert added == [
        '    },',
        '    "default-ulimits": {',
        '        "nofile": {',
        '            "Name": "nofile",',
        '            "Soft": 1048576,',
        '            "Hard": 1048576',
        '        }',
    ]
    for line in NVIDIA_4.splitlines():
        assert line in out.splitlines()
    # rendering the result again (parse of the new text) is stable
    assert dj.render(dj.parse(out)).decode('utf-8') == out


def test_four_space_file_unchanged_renders_byte_for_byte():
    assert dj.render(dj.merge(dj.parse(NVIDIA_4), None, None)).decode('utf-8') == NVIDIA_4
    assert dj.render(dj.parse(NVIDIA_4.encode('utf-8'))) == NVIDIA_4.encode('utf-8')


def test_tab_indented_file_keeps_tabs():
    text = '{\n\t"storage-driver": "overlay2",\n\t"log-opts": {\n\t\t"max-size": "10m"\n\t}\n}\n'
    assert dj.detect_indent(text) == '\t'
    new = dj.merge(dj.parse(text), {'nofile': Limit(1024, 2048)}, 8 * 1024 ** 3)
    out = dj.render(new).decode('utf-8')
    assert out.startswith(text[:-3])           # everything up to the last "}" is kept
    assert '\n\t"default-ulimits": {\n\t\t"nofile": {\n\t\t\t"Name": "nofile",\n' in out
    assert '\n\t"default-shm-size": "8G"\n}\n' in out
    assert '  ' not in out
    removed, added = _changed_lines(text, out)
    assert removed == ['\t}']
    assert all(line.startswith('\t') for line in added)


def test_new_file_uses_two_spaces():
    empty = dj.read('/nonexistent/daemon.json', root='/nonexistent-root')[1]
    for data in (OrderedDict(), empty, dj.parse(''), dj.parse('  \n')):
        out = dj.render(dj.merge(data, {'nofile': Limit(1, 2)})).decode('utf-8')
        assert out.startswith('{\n  "default-ulimits": {\n    "nofile": {\n      "Name"')
        assert out.endswith('}\n') and not out.endswith('\n\n')


@pytest.mark.parametrize('text, indent', [
    ('', 2),
    ('{}', 2),
    ('{"a": {"b": 1}}\n', 2),                  # one line
    ('  {"a": 1}\n', 2),                       # one line, indented
    ('{\n"a": 1\n}\n', 2),                     # several lines, no indentation
    ('{\n  "a": 1\n}\n', 2),
    ('{\n    "a": 1\n}\n', 4),
    ('{\n   "a": 1\n}\n', 3),
    ('{\r\n    "a": 1\r\n}\r\n', 4),
    ('\ufeff{\n    "a": 1\n}\n', 4),
    ('{\n\t"a": 1\n}\n', '\t'),
    (b'{\n    "a": 1\n}\n', 4),
])
def test_detect_indent(text, indent):
    assert dj.detect_indent(text) == indent


def test_one_line_file_is_rewritten_with_two_spaces():
    out = dj.render(dj.merge(dj.parse('{"a": 1}'), {'nofile': Limit(1, 2)}))
    assert out.startswith(b'{\n  "a": 1,\n  "default-ulimits": {\n')


def test_render_explicit_indent_wins():
    data = dj.parse(NVIDIA_4)
    assert dj.render(data, indent=2).startswith(b'{\n  "runtimes": {\n')


@pytest.mark.parametrize('value, text', [(8 * 1024 ** 3, '8G'), (512 * 1024 ** 2, '512M'),
                                         (1536 * 1024 ** 2, '1536M'), (65536, '64K'),
                                         (1000, '1000')])
def test_format_shm_size_is_exact(value, text):
    assert dj.format_shm_size(value) == text
    assert model.parse_size(text) == value


def test_complete_limits_takes_missing_side_from_current():
    done = ctl.complete_limits({'nofile': Limit(None, 4096)}, {'nofile': Limit(1024, 2048)})
    assert done == {'nofile': Limit(1024, 4096)}
    with pytest.raises(model.LimitError, match=r'ulimits.nofile: give both soft and hard'):
        ctl.complete_limits({'nofile': Limit(None, 4096)}, {})
    with pytest.raises(model.LimitError, match=r'ulimits.nofile: soft 8192 is above hard 2048'):
        ctl.complete_limits({'nofile': Limit(8192, None)}, {'nofile': Limit(1024, 2048)})
    with pytest.raises(model.LimitError, match='not a resource limit'):
        ctl.complete_limits({'maxlogins': Limit(4, 4)}, {})


# --- docker.service flags ----------------------------------------------------------------

def write(root, path, text):
    full = str(root) + path
    if not os.path.isdir(os.path.dirname(full)):
        os.makedirs(os.path.dirname(full))
    with open(full, 'w') as handle:
        handle.write(text)


DEBIAN_UNIT = """[Unit]
Description=Docker Application Container Engine

[Service]
Type=notify
EnvironmentFile=-/etc/default/docker
ExecStart=/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock $DOCKER_OPTS
ExecReload=/bin/kill -s HUP $MAINPID
"""


def test_no_flags_in_the_stock_unit(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service', DEBIAN_UNIT)
    assert dj.unit_flags(root=str(tmp_path)) == []
    assert dj.unit_files(root=str(tmp_path)) == ['/lib/systemd/system/docker.service']


def test_flag_in_a_dropin_is_found_with_file_and_line(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service', DEBIAN_UNIT)
    write(tmp_path, '/etc/systemd/system/docker.service.d/limits.conf',
          '# our override\n[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd -H fd:// \\\n'
          '    --default-ulimit nofile=1024:2048 --default-ulimit=nproc=10:20\n')
    found = dj.unit_flags(root=str(tmp_path))
    place = '/etc/systemd/system/docker.service.d/limits.conf:4'
    assert found == [
        {'key': 'default-ulimits', 'flag': '--default-ulimit', 'value': 'nofile=1024:2048',
         'source': place},
        {'key': 'default-ulimits', 'flag': '--default-ulimit', 'value': 'nproc=10:20',
         'source': place}]
    assert dj.unit_flag_conflicts(['default-ulimits'], root=str(tmp_path)) == [
        ('default-ulimits', '--default-ulimit', place)] * 2
    assert dj.unit_flag_conflicts(['default-shm-size'], root=str(tmp_path)) == []
    message = dj.conflict_message(dj.unit_flag_conflicts(['default-ulimits'],
                                                         root=str(tmp_path))[:1])
    assert place in message and 'refuse to start' in message


def test_empty_execstart_resets_earlier_flags(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service',
          '[Service]\nExecStart=/usr/sbin/dockerd --default-shm-size 1G\n')
    write(tmp_path, '/run/systemd/system/docker.service.d/10-reset.conf',
          '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd -H fd://\n')
    assert dj.unit_flags(root=str(tmp_path)) == []
    write(tmp_path, '/run/systemd/system/docker.service.d/20-add.conf',
          '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd --default-shm-size=2G\n')
    assert dj.unit_flags(root=str(tmp_path)) == [
        {'key': 'default-shm-size', 'flag': '--default-shm-size', 'value': '2G',
         'source': '/run/systemd/system/docker.service.d/20-add.conf:3'}]


def test_etc_dropin_shadows_run_dropin_of_the_same_name(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service', DEBIAN_UNIT)
    write(tmp_path, '/run/systemd/system/docker.service.d/override.conf',
          '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd --default-ulimit nofile=1:2\n')
    write(tmp_path, '/etc/systemd/system/docker.service.d/override.conf',
          '[Service]\nEnvironment=FOO=1\n')
    assert dj.unit_files(root=str(tmp_path)) == [
        '/lib/systemd/system/docker.service',
        '/etc/systemd/system/docker.service.d/override.conf']
    assert dj.unit_flags(root=str(tmp_path)) == []


def test_etc_unit_replaces_the_vendor_unit(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service',
          '[Service]\nExecStart=/usr/sbin/dockerd --default-ulimit nofile=1:2\n')
    write(tmp_path, '/etc/systemd/system/docker.service',
          '[Service]\nExecStart=/usr/sbin/dockerd -H fd://\n')
    assert dj.unit_flags(root=str(tmp_path)) == []


def test_flag_through_environment_file(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service', DEBIAN_UNIT)
    write(tmp_path, '/etc/default/docker',
          '# Docker options\nDOCKER_OPTS="--dns 8.8.8.8 --default-ulimit nofile=100:200"\n')
    found = dj.unit_flags(root=str(tmp_path))
    assert len(found) == 1
    assert found[0]['value'] == 'nofile=100:200'
    assert found[0]['source'] == ('/lib/systemd/system/docker.service:7 '
                                  '(via $DOCKER_OPTS from /etc/default/docker:2)')


def test_flag_through_environment_line(tmp_path):
    write(tmp_path, '/usr/lib/systemd/system/docker.service',
          '[Service]\nEnvironment="OPTS=--default-shm-size 4G"\nExecStart=/usr/bin/dockerd ${OPTS}\n')
    found = dj.unit_flags(root=str(tmp_path))
    assert [(f['key'], f['value']) for f in found] == [('default-shm-size', '4G')]


def test_commented_flags_and_other_sections_are_ignored(tmp_path):
    write(tmp_path, '/lib/systemd/system/docker.service',
          '[Unit]\nExecStart=/x --default-ulimit nofile=1:2\n[Service]\n'
          '#ExecStart=/usr/sbin/dockerd --default-ulimit nofile=1:2\n'
          'ExecStart=/usr/sbin/dockerd --default-ulimits-are-not-this-flag\n')
    assert dj.unit_flags(root=str(tmp_path)) == []


def test_no_unit_at_all(tmp_path):
    assert dj.unit_flags(root=str(tmp_path)) == []


# --- probe output --------------------------------------------------------------------------

PROBE = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            4096                 8192                 files
Max locked memory         unlimited            unlimited            bytes
Max processes             1000                 2000                 processes
overlay / overlay rw,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=1048576k,inode64 0 0
"""


def test_parse_probe():
    limits, shm = ctl.parse_probe(PROBE)
    assert limits['nofile'] == Limit(4096, 8192)
    assert limits['memlock'] == Limit(UNLIMITED, UNLIMITED)
    assert limits['nproc'] == Limit(1000, 2000)
    assert shm == 1024 ** 3


def test_limits_result():
    out = ctl.limits_result({'memlock': Limit(64 * 1024, UNLIMITED)}, {'memlock': '/d:1:2'})
    assert out == {'memlock': {'soft': 65536, 'hard': 'unlimited', 'human': '64KiB:unlimited',
                               'source': '/d:1:2'}}
