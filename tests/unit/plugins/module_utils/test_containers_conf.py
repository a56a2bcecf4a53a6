"""containers.conf drop-ins: scanning, reading values, editing in place, Podman's file order."""
import os
from collections import OrderedDict

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit, UNLIMITED

SAMPLE = """# top comment
[engine]
events_logger = "file"  # keep this comment
env = ["A=1", "B=2"]

[containers]
log_size_max = -1
default_ulimits = [
  "nofile=1024:2048", # the DataLoader needs more
  'memlock=-1:-1',
]
pids_limit = 0

[[engine.hooks]]
x = 1
"""


def test_scan_finds_tables_entries_and_multiline_arrays():
    doc = cc.scan(SAMPLE, '/c.conf')
    assert [(e.table, e.key) for e in doc.entries] == [
        ('engine', 'events_logger'), ('engine', 'env'), ('containers', 'log_size_max'),
        ('containers', 'default_ulimits'), ('containers', 'pids_limit'), ('engine.hooks', 'x')]
    entry = doc.get('containers', 'default_ulimits')
    assert SAMPLE[entry.value_start:entry.value_end].startswith('[\n  "nofile')
    assert SAMPLE[entry.value_start:entry.value_end].endswith(',\n]')
    limits, append = cc.read_ulimits(doc, entry)
    assert append is None        # no {append=...} attribute
    assert [(n, l) for n, (l, _pos) in limits.items()] == [
        ('nofile', Limit(1024, 2048)), ('memlock', Limit(UNLIMITED, UNLIMITED))]
    assert doc.place(limits['nofile'][1]) == '/c.conf:9:3'
    assert doc.place(limits['memlock'][1]) == '/c.conf:10:3'


def test_dotted_keys_and_quoted_tables():
    doc = cc.scan('containers.default_ulimits = ["nofile=1:2"]\n["containers"]\nshm_size="1g"\n')
    assert doc.get('containers', 'default_ulimits') is not None
    assert doc.read_string(doc.get('containers', 'shm_size'))[0] == '1g'


def test_strings_escapes_and_append_marker():
    doc = cc.scan('[containers]\ndefault_ulimits = ["nofile=\\u0031:2", {append=true}]\n')
    limits, append = cc.read_ulimits(doc, doc.get('containers', 'default_ulimits'))
    assert append is True
    assert limits['nofile'][0] == Limit(1, 2)


@pytest.mark.parametrize('text, message', [
    ('[containers]\ndefault_ulimits = ["nofile=1:2", 5]\n', '/c:2:34: default_ulimits holds strings only'),
    ('[containers]\ndefault_ulimits = "nofile=1:2"\n', '/c:2:19: default_ulimits must be an array'),
    ('[containers]\ndefault_ulimits = ["nofile=1:2"\n', '/c:2:19: unterminated array'),
    ('[containers]\ndefault_ulimits = ["nofile=1:2]\n', '/c:2:20: unterminated string'),
    ('[containers]\ndefault_ulimits = ["nofile=1:2" "x"]\n', '/c:2:33: expected "," or "]"'),
    ('[containers]\ndefault_ulimits = [, "x"]\n', '/c:2:20: unexpected ","'),
    ('[containers]\ndefault_ulimits = ["nofile=2:1"]\n', '/c:2:20: default_ulimits.nofile: soft 2 is above hard 1'),
    ('[containers]\ndefault_ulimits = ["fds=1:1"]\n', "/c:2:20: default_ulimits: unknown limit item 'fds'"),
])
def test_errors_name_file_line_and_column(text, message):
    with pytest.raises(cc.TomlError) as info:
        doc = cc.scan(text, '/c')
        cc.read_ulimits(doc, doc.get('containers', 'default_ulimits'))
    assert str(info.value).startswith(message), str(info.value)


def test_set_values_replaces_in_place_and_keeps_everything_else():
    new = cc.set_values(SAMPLE, 'containers', OrderedDict([
        ('default_ulimits', cc.render_strings(['nofile=4096:8192'])), ('shm_size', '"8g"')]))
    assert new == SAMPLE.replace(
        '[\n  "nofile=1024:2048", # the DataLoader needs more\n  \'memlock=-1:-1\',\n]',
        '["nofile=4096:8192"]').replace('[containers]\n', '[containers]\nshm_size = "8g"\n')


def test_set_values_removes_and_appends_table():
    text = '[containers]\nshm_size = "1g"  # x\nfoo = 1\n'
    assert cc.set_values(text, 'containers', {'shm_size': None}) == '[containers]\nfoo = 1\n'
    assert cc.set_values('a = 1', 'containers', {'k': '[]'}) == 'a = 1\n\n[containers]\nk = []\n'
    assert cc.set_values('', 'containers', {'k': '[]'}) == '[containers]\nk = []\n'
    assert cc.set_values('', 'containers', {'k': None}) == ''


def test_set_values_with_same_value_changes_nothing():
    doc = cc.scan(SAMPLE)
    entry = doc.get('containers', 'log_size_max')
    assert cc.set_values(SAMPLE, 'containers', {'log_size_max': '-1'}) == SAMPLE
    assert SAMPLE[entry.value_start:entry.value_end] == '-1'


foreign_line = st.one_of(
    st.sampled_from(['', '# comment', '  # indented comment', 'a = 1', 'b = "x" # c',
                     'list = [1,\n  2, # two\n]', '[engine]', '[engine.runtimes]',
                     'runc = ["/usr/bin/runc"]', "lit = 'C:\\\\x'", 'x.y = true',
                     '[[engine.hooks]]', 'name = """multi\nline"""']),
    st.from_regex(r'\A#[ -~]{0,20}\Z'))
foreign_text = st.lists(foreign_line, max_size=8).map('\n'.join)
ulimit_values = st.lists(st.tuples(st.sampled_from(['nofile', 'nproc', 'memlock', 'core', 'stack']),
                                   st.integers(-1, 10 ** 6)), max_size=4)


@settings(max_examples=200, deadline=None)
@given(foreign_text, foreign_text, ulimit_values, st.booleans())
def test_edit_keeps_foreign_bytes_and_round_trips(before, after, values, trailing_newline):
    text = before + ('\n' if before else '') + after + ('\n' if trailing_newline else '')
    if '[containers]' in text:
        return
    strings = ['%s=%d:%d' % (name, v, v) for name, v in values]
    new = cc.set_values(text, 'containers', {'default_ulimits': cc.render_strings(strings)})
    # Every foreign byte is kept, in order, as a prefix.
    assert new.startswith(text)
    doc = cc.scan(new)
    entry = doc.get('containers', 'default_ulimits')
    assert [v for v, _pos in doc.read_strings(entry)[0]] == strings
    # A second edit with the same value changes nothing; another value only changes the value.
    assert cc.set_values(new, 'containers', {'default_ulimits': cc.render_strings(strings)}) == new
    other = cc.set_values(new, 'containers', {'default_ulimits': '["core=0:0"]'})
    assert other == new[:entry.value_start] + '["core=0:0"]' + new[entry.value_end:]
    # Foreign entries are still found with the same values.
    assert [(e.table, e.key) for e in cc.scan(text).entries] == \
        [(e.table, e.key) for e in doc.entries if e.key != 'default_ulimits']


def test_current_ulimits_refuses_kept_bad_entries_and_replaces_requested_ones():
    doc = cc.scan('[containers]\ndefault_ulimits = ["nofile=x", "core=0:0"]\n', '/d')
    with pytest.raises(cc.TomlError, match=r'^/d:2:20: '):
        cc.current_ulimits(doc, {'core': Limit(1, 1)})
    current, append, warnings = cc.current_ulimits(doc, {'nofile': Limit(1, 1)})
    assert list(current) == ['core'] and len(warnings) == 1 and '/d:2:20' in warnings[0]
    current, append, warnings = cc.current_ulimits(doc, {}, purge=True)
    assert len(warnings) == 1


def test_merge_and_render_ulimits():
    current = OrderedDict([('core', Limit(0, 0)), ('nofile', Limit(1, 2))])
    merged = cc.merge_ulimits(current, OrderedDict([('nproc', Limit(5, 5)),
                                                    ('nofile', Limit(3, 4))]))
    assert list(merged.items()) == [('core', Limit(0, 0)), ('nofile', Limit(3, 4)),
                                    ('nproc', Limit(5, 5))]
    assert list(cc.merge_ulimits(current, {'nproc': Limit(5, 5)}, purge=True)) == ['nproc']
    assert cc.render_ulimits(merged) == '["core=0:0", "nofile=3:4", "nproc=5:5"]'
    assert cc.render_ulimits({'memlock': Limit(UNLIMITED, UNLIMITED)}, append=True) == \
        '["memlock=-1:-1", {append=true}]'


def test_shm_size_is_written_in_bytes():
    assert cc.format_shm_size(8 * 1024 ** 3) == '8589934592'
    assert cc.parse_podman_size(cc.format_shm_size(8 * 1024 ** 3)) == 8 * 1024 ** 3


@pytest.mark.parametrize('text, value', [
    ('268435456', 268435456), ('256m', 256 * 10 ** 6), ('256MiB', 256 * 10 ** 6),
    ('262144k', 262144000), ('1g', 10 ** 9), ('1.5g', 1500 * 10 ** 6), ('64 MB', 64 * 10 ** 6)])
def test_podman_reads_sizes_in_powers_of_1000(text, value):
    # Measured with Podman 4.3 in the node image: "256m" -> a 250000 KiB /dev/shm.
    assert cc.parse_podman_size(text) == value


@pytest.mark.parametrize('text', ['', 'lots', '1x', '-5', '1.x'])
def test_podman_size_refused(text):
    with pytest.raises(Exception, match='is not a size Podman reads'):
        cc.parse_podman_size(text)


def write(root, path, text):
    full = str(root) + path
    if not os.path.isdir(os.path.dirname(full)):
        os.makedirs(os.path.dirname(full))
    with open(full, 'w') as handle:
        handle.write(text)


def test_effective_follows_podman_order_and_names_the_source(tmp_path, monkeypatch):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    root = str(tmp_path)
    write(tmp_path, '/usr/share/containers/containers.conf',
          '[containers]\ndefault_ulimits = ["nofile=1:1"]\nshm_size = "64m"\n')
    write(tmp_path, '/etc/containers/containers.conf', '[engine]\n')
    write(tmp_path, '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf',
          '[containers]\ndefault_ulimits = ["nofile=10:20", "nproc=5:5"]\n')
    write(tmp_path, '/etc/containers/containers.conf.d/95-vendor.conf',
          '[containers]\ndefault_ulimits = ["core=0:0", {append=true}]\n')
    # Podman reads no /usr/share/containers/containers.conf.d (containers/common systemConfigs)
    write(tmp_path, '/usr/share/containers/containers.conf.d/90-gpufleet-tuning.conf',
          '[containers]\ndefault_ulimits = ["nofile=2:2"]\n')
    found = cc.effective(root)
    assert found['files'] == ['/usr/share/containers/containers.conf',
                              '/etc/containers/containers.conf',
                              '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf',
                              '/etc/containers/containers.conf.d/95-vendor.conf']
    dropin = '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'
    assert found['default_ulimits'] == OrderedDict([
        ('nofile', (Limit(10, 20), dropin + ':2:20')),
        ('nproc', (Limit(5, 5), dropin + ':2:36')),
        ('core', (Limit(0, 0), '/etc/containers/containers.conf.d/95-vendor.conf:2:20'))])
    assert found['shm_size'] == (64 * 1000 ** 2, '/usr/share/containers/containers.conf:3:12')
    assert found['problems'] == []
    assert found['default_ulimits_append'] is True
    # 95-vendor's {append=true} adds core to our list and replaces nothing (nofile and nproc
    # stay ours, as found shows): it is no override
    assert cc.overriding_files(dropin, ['default_ulimits'], root) == []
    assert cc.overriding_files(dropin, ['shm_size'], root) == []
    write(tmp_path, '/etc/containers/containers.conf.d/95-vendor.conf',
          '[containers]\ndefault_ulimits = ["core=0:0"]\n')
    assert cc.overriding_files(dropin, ['default_ulimits'], root) == [
        ('/etc/containers/containers.conf.d/95-vendor.conf:2:1', 'default_ulimits')]
    # our own {append=true} is sticky: the later plain list appends too
    assert cc.overriding_files(dropin, ['default_ulimits'], root, text=(
        '[containers]\ndefault_ulimits = ["nofile=10:20", {append=true}]\n')) == []


def test_effective_reports_unreadable_files(tmp_path, monkeypatch):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    write(tmp_path, '/etc/containers/containers.conf', '[containers]\ndefault_ulimits = [1]\n')
    found = cc.effective(str(tmp_path))
    assert found['problems'] == ['/etc/containers/containers.conf:2:20: default_ulimits holds '
                                 "strings only, found '1]'"]


def test_containers_conf_env_replaces_all(tmp_path, monkeypatch):
    write(tmp_path, '/etc/containers/containers.conf', '[containers]\n')
    write(tmp_path, '/mine.conf', '[containers]\nshm_size = "1g"\n')
    monkeypatch.setenv('CONTAINERS_CONF', '/mine.conf')
    assert cc.config_files(str(tmp_path)) == ['/mine.conf']
