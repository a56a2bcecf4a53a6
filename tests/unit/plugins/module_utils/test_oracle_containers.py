"""Docker and Podman as the oracle: their own test cases and decoding rules, ported as data.

Sources: docker/go-units ulimit_test.go, ulimit.go, size_test.go; moby/moby
daemon/config/config_linux.go (default-ulimits is map[string]*units.Ulimit decoded by Go's
encoding/json, default-shm-size is opts.MemBytes) and daemon/pkg/opts/opts.go
(MemBytes.UnmarshalJSON: a JSON string read by RAMInBytes); containers/common
internal/attributedstring/slice_test.go ({append=true}), pkg/config/config_local.go
(validateUlimits: go-units ParseUlimit), pkg/config/config.go (shm_size: FromHumanSize) and
pkg/config/new.go (systemConfigs: the files Podman reads).
"""
import os
import re
from collections import OrderedDict

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

U = m.UNLIMITED
L = m.Limit
KB, MB, GB, TB, PB = (1000 ** n for n in range(1, 6))
KiB, MiB, GiB, TiB, PiB = (1024 ** n for n in range(1, 6))

# --- go-units ulimit_test.go: ParseUlimit ---------------------------------------------------
ULIMIT_CASES = [
    ('nofile=512:1024', ('nofile', L(512, 1024))),
    ('nofile=1024', ('nofile', L(1024, 1024))),
    ('cpu=2:4', ('cpu', L(2, 4))),
    ('cpu=6', ('cpu', L(6, 6))),
    ('notarealtype=1024:1024', None),
    ('nofile:1024:1024', None),
    ('nofile', None),
    ('nofile=', None),
    ('nofile=:', None),
    ('nofile=:1024', None),
    ('nofile=1024=512', None),
    ('nofile=1024:512=extra', None),
    ('nofile=1024:1', None),
    ('nofile=-1:1024', None),
    ('nofile=-1', ('nofile', L(U, U))),
    ('nofile=1024:-1', ('nofile', L(1024, U))),
    ('nofile=-1:-1', ('nofile', L(U, U))),
    ('nofile=asdf', None),
    ('nofile=1024:asdf', None),
    ('nofile=1024:1:50', None),
    # ulimit.go: strings.Cut and strconv.ParseInt, the name looked up as written
    ('nofile=+5', ('nofile', L(5, 5))),
    ('nofile = 5', None),
    ('NOFILE=5', None),
    ('nofile=9223372036854775808', None),
]


@pytest.mark.parametrize('text,expected', ULIMIT_CASES)
def test_go_units_parse_ulimit(text, expected):
    if expected is None:
        with pytest.raises(m.LimitError):
            m.from_ulimit_string(text)
    else:
        item, limit = m.from_ulimit_string(text)
        assert (item.name, limit) == expected


def test_go_units_ulimit_string_output():
    assert m.to_ulimit_string('nofile', L(512, 1024)) == 'nofile=512:1024'


# ulimit.go ulimitNameMapping: the names dockerd, Podman and CRI-O accept.
GO_UNITS_NAMES = ['core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice',
                  'nofile', 'nproc', 'rss', 'rtprio', 'rttime', 'sigpending', 'stack']


@pytest.mark.parametrize('name', GO_UNITS_NAMES)
def test_go_units_names(name):
    if name == 'rttime':
        # Refused on purpose: a limit the runtimes know and this collection does not manage.
        with pytest.raises(m.LimitError, match='rttime'):
            m.from_ulimit_string('rttime=1:1')
        return
    assert m.from_ulimit_string('%s=1:1' % name)[0].name == name
    assert m.ITEMS[name].docker_name == name


# ulimit.go: "as" is commented out of ulimitNameMapping ("Disabled since this doesn't seem
# usable with the way Docker inits a container"), so ParseUlimit says "invalid ulimit type: as";
# TestGetRlimitBadUlimitName: GetRlimit refuses a name outside the table ("bla"). CRI-O's
# test/config.bats ("invalid ulimits": crio --default-ulimits doesntexist=2042 fails with
# "invalid ulimit type: doesntexist"). Every item of ours the table lacks is refused, by name.
NOT_GO_UNITS = ['as', 'bla', 'doesntexist', 'maxlogins', 'priority', 'nonewprivs']


@pytest.mark.parametrize('name', NOT_GO_UNITS)
def test_go_units_refuses_names_outside_its_table(name):
    with pytest.raises(m.LimitError, match=name):
        m.from_ulimit_string('%s=1:1' % name)
    if name in m.ITEMS:
        assert m.ITEMS[name].docker_name is None


def test_go_units_table_is_every_container_name():
    """Our items a container runtime takes are exactly go-units' names less rttime."""
    ours = set(name for name in m.ITEM_NAMES if m.ITEMS[name].docker_name)
    assert ours == set(GO_UNITS_NAMES) - set(['rttime']) == set(m.GO_UNITS_NAMES) - set(['rttime'])
    assert set(m.RLIMIT_ITEMS) - ours == set(['as'])


def test_as_is_never_written_for_a_container_runtime():
    """as reaches Docker, Podman and CRI-O through no writer: Podman would refuse the whole
    containers.conf (validateUlimits), CRI-O would not start, dockerd would hand RLIMIT_AS to the
    runtime unchecked. The message says so and where to set as instead."""
    for write in (m.to_docker, m.to_ulimit_string):
        with pytest.raises(m.LimitError, match='invalid ulimit type: as.*LimitAS='):
            write('as', L(GiB, GiB))
    with pytest.raises(m.LimitError, match=r'ulimits\.as: as is not a ulimit name go-units'):
        ctl.complete_limits({'as': L(GiB, GiB)}, {})
    assert crio_conf.entries({'as': L(GiB, GiB), 'nofile': L(1, 1)}) == ['nofile=1:1']


def test_values_below_minus_one_are_refused_on_purpose():
    """go-units accepts nofile=-2:-2 (soft <= hard); the kernel would get 2**64-2. Refused."""
    with pytest.raises(m.LimitError, match='-1 for unlimited'):
        m.from_ulimit_string('nofile=-2:-2')


# --- go-units size_test.go: FromHumanSize (Podman shm_size) and RAMInBytes (dockerd) ---------
FROM_HUMAN_SIZE = [
    ('0', 0), ('0b', 0), ('0B', 0), ('0 B', 0), ('32', 32), ('32b', 32), ('32B', 32),
    ('32k', 32 * KB), ('32K', 32 * KB), ('32kb', 32 * KB), ('32Kb', 32 * KB), ('32Mb', 32 * MB),
    ('32Gb', 32 * GB), ('32Tb', 32 * TB), ('32Pb', 32 * PB),
    ('32.5kB', int(32.5 * KB)), ('32.5 kB', int(32.5 * KB)), ('32.5 B', 32), ('0.3 K', 300),
    ('.3kB', 300), ('0.', 0), ('0. ', 0), ('0.b', 0), ('0.B', 0), ('-0', 0), ('-0b', 0),
    ('-0B', 0), ('-0 b', 0), ('-0 B', 0), ('32.', 32), ('32.b', 32), ('32.B', 32),
    ('32. b', 32), ('32. B', 32), ('0 ', 0),
    (' 0', None), (' 0b', None), (' 0B', None), (' 0 B', None), ('0b ', None), ('0B ', None),
    ('0 B ', None), ('', None), ('hello', None), ('.', None), ('. ', None), (' ', None),
    ('  ', None), (' .', None), (' . ', None), ('-32', None), ('-32b', None), ('-32B', None),
    ('-32 b', None), ('-32 B', None), ('32b.', None), ('32B.', None), ('32 b.', None),
    ('32 B.', None), ('32 bb', None), ('32 BB', None), ('32 b b', None), ('32 B B', None),
    ('32  b', None), ('32  B', None), (' 32 ', None), ('32m b', None), ('32bm', None),
]
RAM_IN_BYTES = [
    ('32', 32), ('32b', 32), ('32B', 32), ('32k', 32 * KiB), ('32K', 32 * KiB),
    ('32kb', 32 * KiB), ('32Kb', 32 * KiB), ('32Kib', 32 * KiB), ('32KIB', 32 * KiB),
    ('32Mb', 32 * MiB), ('32Gb', 32 * GiB), ('32Tb', 32 * TiB), ('32Pb', 32 * PiB),
    ('32PB', 32 * PiB), ('32P', 32 * PiB), ('32.3', 32), ('32.3 mb', int(32.3 * MiB)),
    ('0.3MB', int(0.3 * MiB)),
    ('', None), ('hello', None), ('-32', None), (' 32 ', None), ('32m b', None), ('32bm', None),
]


@pytest.mark.parametrize('text,expected', FROM_HUMAN_SIZE)
def test_from_human_size_is_podman_shm_size(text, expected):
    if expected is None:
        with pytest.raises(m.LimitError):
            cc.parse_podman_size(text)
    else:
        assert m.parse_go_size(text, False) == expected
        assert cc.parse_podman_size(text) == expected


@pytest.mark.parametrize('text,expected', RAM_IN_BYTES)
def test_ram_in_bytes_is_dockerd_default_shm_size(text, expected):
    if expected is None:
        with pytest.raises(dj.DaemonJsonError):
            dj.read_shm_size({'default-shm-size': text})
    else:
        assert m.parse_go_size(text, True) == expected
        assert dj.read_shm_size({'default-shm-size': text}) == expected


# --- moby: how dockerd decodes daemon.json ---------------------------------------------------
DAEMON_JSON_ULIMITS = [
    ('{"nofile": {"Name": "nofile", "Soft": 1, "Hard": 2}}', L(1, 2)),
    ('{"nofile": {"name": "nofile", "soft": 1, "hard": 2}}', L(1, 2)),    # any letter case
    ('{"nofile": {"NAME": "NOFILE", "SOFT": 1, "HARD": 2}}', L(1, 2)),    # RLIMIT_ + upper
    ('{"NOFILE": {"Name": "nofile", "Soft": 1, "Hard": 2}}', L(1, 2)),
    ('{"nofile": {"Name": "nofile", "Soft": 1, "soft": 5, "Hard": 9}}', L(5, 9)),  # last wins
    ('{"nofile": {"Name": "nofile", "Soft": -1, "Hard": -1}}', L(U, U)),
    ('{"nofile": {"Name": "nofile", "Soft": 1, "Hard": 2, "Extra": 3}}', L(1, 2)),  # ignored
    ('{"nofile": {"Name": "nofile", "Soft": "1", "Hard": 2}}', None),     # not an int64
    ('{"nofile": {"Name": "nofile", "Soft": 1.5, "Hard": 2}}', None),
    ('{"nofile": {"Name": "nofile", "Soft": 1e3, "Hard": 2000}}', None),
    ('{"nofile": {"Name": "nofile", "Soft": 1, "Hard": 9223372036854775808}}', None),
    ('{"nofile": {"Name": "nofile", "Soft": 2, "Hard": 1}}', None),
    # refused on purpose although dockerd starts (see limits_model.from_docker)
    ('{"nofile": {"Soft": 1, "Hard": 2}}', None),
    ('{"nofile": {"Name": "core", "Soft": 1, "Hard": 2}}', None),
    ('{"nofile": {"Name": "nofile", "Hard": 2}}', None),
    ('{"nofile": {"Name": "nofile", "Soft": null, "Hard": 2}}', None),
    ('{"rttime": {"Name": "rttime", "Soft": 1, "Hard": 2}}', None),
    # moby daemon/config (no check of default-ulimits names) and daemon/oci_linux.go
    # withRlimits ("RLIMIT_" + strings.ToUpper(Name)): dockerd starts with any Name and hands it
    # to the runtime; refused on purpose where go-units' table lacks it (as, as ParseUlimit does)
    ('{"as": {"Name": "as", "Soft": 1, "Hard": 2}}', None),
    ('{"AS": {"Name": "AS", "Soft": 1, "Hard": 2}}', None),
    ('{"bla": {"Name": "bla", "Soft": 1, "Hard": 2}}', None),
]


@pytest.mark.parametrize('text,expected', DAEMON_JSON_ULIMITS)
def test_moby_default_ulimits_decoding(text, expected):
    data = dj.parse('{"default-ulimits": %s}' % text)
    if expected is None:
        with pytest.raises(dj.DaemonJsonError):
            dj.read_ulimits(data)
    else:
        assert list(dj.read_ulimits(data).values()) == [expected]


DAEMON_JSON_SHM = [
    ('"1G"', GiB), ('"64MiB"', 64 * MiB), ('"1.5G"', int(1.5 * GiB)), ('"64 MB"', 64 * MiB),
    ('"1e3"', 1000), ('"65536"', 65536),
    ('1073741824', None),        # a JSON number: dockerd refuses to start ("invalid size")
    ('""', None), ('" 1G"', None), ('"1G "', None), ('"1E"', None), ('true', None),
]


@pytest.mark.parametrize('text,expected', DAEMON_JSON_SHM)
def test_moby_default_shm_size_decoding(text, expected):
    data = dj.parse('{"default-shm-size": %s}' % text)
    if expected is None:
        with pytest.raises(dj.DaemonJsonError):
            dj.read_shm_size(data)
    else:
        assert dj.read_shm_size(data) == expected


def test_what_we_write_dockerd_reads():
    """merge() writes default-shm-size as a string and rewrites a number dockerd would refuse."""
    merged = dj.merge(dj.parse('{"default-shm-size": 1073741824}'), shm_size=GiB)
    assert merged['default-shm-size'] == '1G'
    assert dj.read_shm_size(merged) == GiB


# --- containers/common attributedstring slice_test.go: {append=true} across files ------------
NAMES = ['core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile',
         'nproc']


def _ulimits(array):
    """slice_test.go's arrays of "1".."10" as ulimit strings (one item per number)."""
    def conv(match):
        return '"%s=%s:%s"' % (NAMES[int(match) - 1], match, match)
    return re.sub(r'"(\d+)"', lambda mt: conv(mt.group(1)), array)


CONFIG_DEFAULT = '["1", "2", "3"]'
APPEND_FRONT = '[{append=true},"4", "5", "6"]'
APPEND_MID = '["7", {append=true}, "8"]'
APPEND_BACK = '["9", {append=true}]'
APPEND_FALSE = '["10", {append=false}]'

# (configs, values, Attributes.Append after loading them: TestSliceLoading's expectedAppend)
SLICE_CASES = [
    ([CONFIG_DEFAULT], [1, 2, 3], None),
    ([APPEND_FRONT], [4, 5, 6], True),
    ([APPEND_MID], [7, 8], True),
    ([APPEND_BACK], [9], True),
    ([APPEND_FALSE], [10], False),
    ([CONFIG_DEFAULT, APPEND_FRONT], [1, 2, 3, 4, 5, 6], True),
    ([APPEND_FRONT, CONFIG_DEFAULT], [4, 5, 6, 1, 2, 3], True),       # sticky
    ([APPEND_FRONT, CONFIG_DEFAULT, APPEND_BACK], [4, 5, 6, 1, 2, 3, 9], True),
    ([CONFIG_DEFAULT, APPEND_FALSE], [10], False),
    ([CONFIG_DEFAULT, APPEND_MID, APPEND_FALSE], [10], False),
    ([CONFIG_DEFAULT, APPEND_FALSE, APPEND_MID], [10, 7, 8], True),   # re-enabled later
    (['["1", false]'], 'holds strings only', None),
    (['["1", 42]'], 'holds strings only', None),
    (['["1", {foo=true}]'], 'unsupported key', None),
    (['["1", {append="false"}]'], 'append must be true or false', None),
]


def _write(root, path, text):
    full = str(root) + path
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as handle:
        handle.write(text)


@pytest.mark.parametrize('configs,expected,append', SLICE_CASES)
def test_attributed_string_slice_across_files(tmp_path, monkeypatch, configs, expected, append):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    for index, array in enumerate(configs):
        _write(tmp_path, '/etc/containers/containers.conf.d/%02d.conf' % index,
               '[containers]\ndefault_ulimits = %s\n' % _ulimits(array))
    found = cc.effective(str(tmp_path))
    if isinstance(expected, str):
        assert len(found['problems']) == 1 and expected in found['problems'][0]
    else:
        assert found['problems'] == []
        assert list(found['default_ulimits']) == [NAMES[n - 1] for n in expected]
        assert found['default_ulimits_append'] is append


# What TestSliceLoading's values say of the first file's list: a later file replaces it (it is
# gone from the values) or only adds to it. overridden_by (overriding_files) and the warning
# "... so it replaces this value" name exactly the files that replace.
OVERRIDE_CASES = [
    ([CONFIG_DEFAULT, APPEND_FRONT], []),
    ([APPEND_FRONT, CONFIG_DEFAULT], []),                  # sticky: 1, 2, 3 are appended
    ([APPEND_FRONT, CONFIG_DEFAULT, APPEND_BACK], []),
    ([CONFIG_DEFAULT, APPEND_FALSE], [1]),
    ([CONFIG_DEFAULT, APPEND_MID, APPEND_FALSE], [2]),     # 7, 8 are appended, 10 replaces
    ([CONFIG_DEFAULT, APPEND_FALSE, APPEND_MID], [1]),
    ([APPEND_FALSE, CONFIG_DEFAULT], [1]),
]


@pytest.mark.parametrize('configs,replacing', OVERRIDE_CASES)
def test_only_a_replacing_file_overrides(tmp_path, monkeypatch, configs, replacing):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    paths = ['/etc/containers/containers.conf.d/%02d.conf' % i for i in range(len(configs))]
    for path, array in zip(paths, configs):
        _write(tmp_path, path, '[containers]\ndefault_ulimits = %s\n' % _ulimits(array))
    assert cc.overriding_files(paths[0], [cc.ULIMITS_KEY], str(tmp_path)) == [
        (paths[i] + ':2:1', cc.ULIMITS_KEY) for i in replacing]


# --- containers/common pkg/config/new.go systemConfigs(): the files root's Podman reads ------
def test_podman_reads_etc_dropins_only(tmp_path, monkeypatch):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    _write(tmp_path, '/usr/share/containers/containers.conf', '[containers]\n')
    _write(tmp_path, '/etc/containers/containers.conf', '[containers]\n')
    _write(tmp_path, '/usr/share/containers/containers.conf.d/50-vendor.conf', '[containers]\n')
    _write(tmp_path, '/etc/containers/containers.conf.d/b.conf', '[containers]\n')
    _write(tmp_path, '/etc/containers/containers.conf.d/B.conf', '[containers]\n')
    _write(tmp_path, '/etc/containers/containers.conf.d/a.toml', '[containers]\n')
    assert cc.config_files(str(tmp_path)) == [
        '/usr/share/containers/containers.conf', '/etc/containers/containers.conf',
        '/etc/containers/containers.conf.d/B.conf', '/etc/containers/containers.conf.d/b.conf']
    monkeypatch.setenv('CONTAINERS_CONF', '/etc/containers/containers.conf')
    assert cc.config_files(str(tmp_path)) == ['/etc/containers/containers.conf']


# pkg/config/config_local.go validateUlimits(): Podman refuses a containers.conf whose
# default_ulimits ParseUlimit refuses; so does the reader.
@pytest.mark.parametrize('value,ok', [('nofile=1024:2048', True), ('nofile = 1024', False),
                                      ('NOFILE=1', False), ('nofile=2:1', False),
                                      ('bogus=1', False)])
def test_podman_validate_ulimits(tmp_path, monkeypatch, value, ok):
    monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    _write(tmp_path, '/etc/containers/containers.conf',
           '[containers]\ndefault_ulimits = ["%s"]\n' % value)
    found = cc.effective(str(tmp_path))
    assert (found['problems'] == []) == ok


def test_counts():
    assert (len(ULIMIT_CASES), len(GO_UNITS_NAMES), len(FROM_HUMAN_SIZE), len(RAM_IN_BYTES),
            len(DAEMON_JSON_ULIMITS), len(DAEMON_JSON_SHM), len(SLICE_CASES)) \
        == (24, 15, 68, 24, 20, 12, 15)


def test_append_attribute_is_kept_as_written():
    """Sticky across files (slice_test.go): dropping an explicit {append=false} would turn a
    replacing list into an appending one after an earlier {append=true}."""
    limits = OrderedDict([('nofile', L(1, 1))])
    assert cc.render_ulimits(limits, None) == '["nofile=1:1"]'
    assert cc.render_ulimits(limits, True) == '["nofile=1:1", {append=true}]'
    assert cc.render_ulimits(limits, False) == '["nofile=1:1", {append=false}]'
    doc = cc.scan('[containers]\ndefault_ulimits = ["nofile=1:1", {append=false}]\n')
    assert cc.current_ulimits(doc)[1] is False
    # Seen with Podman 4.3.1 (Debian 12): "incompatible types: TOML value has type
    # map[string]interface {}; destination has type string" for any {...} element.
    assert 'before 5.0' in cc.APPEND_NOTE
