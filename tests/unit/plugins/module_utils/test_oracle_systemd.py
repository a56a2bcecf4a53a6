"""systemd's own test cases, ported as data, against limits_model.from_systemd_config.

Each table names the upstream file its rows come from (systemd/systemd, read at main; the
rows kept are those whose result is the same in systemd 252, Debian 12's, checked there with
`systemctl show` on a unit carrying the value). A row is (item, text, expected): expected is a
Limit, or None where systemd refuses the value ("Failed to parse resource value, ignoring").
"""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

U = m.UNLIMITED
L = m.Limit
K, M, G, T, P, E = (1024 ** n for n in range(1, 7))
USEC_PER_YEAR = 31557600 * 10 ** 6

RLIMIT_UTIL = 'src/test/test-rlimit-util.c'
PARSE_UTIL = 'src/test/test-parse-util.c'
TIME_UTIL = 'src/test/test-time-util.c'
EXEC_5 = 'man/systemd.exec.xml'

# Cases that older systemd releases read differently: (item, text) -> the oldest release seen
# to read it as CASES says; before it the value is refused (the unit keeps its default).
# The Greek mu in time spans: refused by 247 (Debian 11), read by 252 (Debian 12) and 257
# (Debian 13); the release in between that added it is not pinned down here.
SINCE = {('cpu', u'23\u03bcs'): 252}


# test_rlimit_parse_format(): rlimit_parse() of Limit*= values.
RLIMIT_CASES = [
    ('nofile', '4:5', L(4, 5)),
    ('nofile', '6', L(6, 6)),
    ('nofile', 'infinity', L(U, U)),
    ('nofile', 'infinity:infinity', L(U, U)),
    ('nofile', '8:infinity', L(8, U)),
    ('cpu', '25min:13h', L(25 * 60, 13 * 3600)),
    ('nofile', '', None),
    ('nofile', '5:4', None),
    ('nofile', '5:4:3', None),
    ('nice', '20', L(20, 20)),
    ('nice', '40', L(40, 40)),
    ('nice', '41', None),
    ('nice', '0', L(0, 0)),
    ('nice', '-7', L(27, 27)),
    ('nice', '-20', L(40, 40)),
    ('nice', '-21', None),
    ('nice', '-0', L(20, 20)),
    ('nice', '+7', L(13, 13)),
    ('nice', '+19', L(1, 1)),
    ('nice', '+20', None),
    ('nice', '+0', L(20, 20)),
]

# test_parse_size() (base 1024), through a byte item (memlock), and the unsigned integer
# parsers (safe_atou64) through a count item (nofile): 0x, 0o and 0b prefixes.
PARSE_UTIL_CASES = [
    ('memlock', '', None),
    ('memlock', '111', L(111, 111)),
    ('memlock', '111.4', L(111, 111)),
    ('memlock', ' 112 B', L(112, 112)),
    ('memlock', ' 112.6 B', L(112, 112)),
    ('memlock', '3.5 K', L(3 * K + 512, 3 * K + 512)),
    ('memlock', '3. K', L(3 * K, 3 * K)),
    ('memlock', '3.0 K', L(3 * K, 3 * K)),
    ('memlock', '3. 0 K', None),
    ('memlock', ' 4 M 11.5K', L(4 * M + 11 * K + 512, 4 * M + 11 * K + 512)),
    ('memlock', '3B3.5G', None),
    ('memlock', '3.5G3B', L(3 * G + 512 * M + 3, 3 * G + 512 * M + 3)),
    ('memlock', '3.5G 4B', L(3 * G + 512 * M + 4, 3 * G + 512 * M + 4)),
    ('memlock', '3B3G4T', None),
    ('memlock', '4T3G3B', L((4 * K + 3) * G + 3, (4 * K + 3) * G + 3)),
    ('memlock', ' 4 T 3 G 3 B', L((4 * K + 3) * G + 3, (4 * K + 3) * G + 3)),
    ('memlock', '12P', L(12 * P, 12 * P)),
    ('memlock', '12P12P', None),
    ('memlock', '3E 2P', L((3 * K + 2) * P, (3 * K + 2) * P)),
    ('memlock', '12X', None),
    ('memlock', '12.5X', None),
    ('memlock', '12.5e3', None),
    ('memlock', '1024E', None),
    ('memlock', '-1', None),
    ('memlock', '-1024E', None),
    ('memlock', '-1024P', None),
    ('memlock', '-10B 20K', None),
    # test_safe_atou64()
    ('nofile', '12345', L(12345, 12345)),
    ('nofile', '  12345', L(12345, 12345)),
    ('nofile', '0o11', L(9, 9)),
    ('nofile', '0b11', L(3, 3)),
    ('nofile', '18446744073709551617', None),
    ('nofile', '-1', None),
    ('nofile', '  -1', None),
    ('nofile', 'junk', None),
    ('nofile', '123x', None),
    ('nofile', '12.3', None),
    # test_safe_atoux64(): 0x is accepted by the base-0 parser rlimit_parse uses
    ('nofile', '0x12345', L(0x12345, 0x12345)),
]


# TEST(parse_sec), through cpu (rlimit_parse_sec: seconds, rounded up).
def _sec(usec):
    return L(-(-usec // 10 ** 6), -(-usec // 10 ** 6))


TIME_UTIL_CASES = [
    ('cpu', '5s', _sec(5 * 10 ** 6)),
    ('cpu', '5s500ms', _sec(5500000)),
    ('cpu', ' 5s 500ms  ', _sec(5500000)),
    ('cpu', ' 5.5s  ', _sec(5500000)),
    ('cpu', ' 5.5s 0.5ms ', _sec(5500500)),
    ('cpu', ' .22s ', _sec(220000)),
    ('cpu', ' .50y ', _sec(USEC_PER_YEAR // 2)),
    ('cpu', '2.5', _sec(2500000)),
    ('cpu', '.7', _sec(700000)),
    ('cpu', '23us', _sec(23)),
    ('cpu', u'23\u03bcs', _sec(23)),      # greek small letter mu
    ('cpu', u'23\u00b5s', _sec(23)),      # micro sign
    ('cpu', 'infinity', L(U, U)),
    ('cpu', ' infinity ', L(U, U)),
    ('cpu', '+3.1s', _sec(3100000)),
    ('cpu', '3.1s.2', _sec(3300000)),
    ('cpu', '3.1 .2', _sec(3300000)),
    ('cpu', '3.1 sec .2 sec', _sec(3300000)),
    ('cpu', '3.1 sec 1.2 sec', _sec(4300000)),
    ('cpu', ' xyz ', None),
    ('cpu', '', None),
    ('cpu', ' . ', None),
    ('cpu', ' 5. ', None),
    ('cpu', '.s ', None),
    ('cpu', '-5s ', None),
    ('cpu', '-0.3s ', None),
    ('cpu', '-0.0s ', None),
    ('cpu', '-0.-0s ', None),
    ('cpu', '0.-0s ', None),
    ('cpu', '3.-0s ', None),
    ('cpu', ' infinity .7', None),
    ('cpu', '.3 infinity', None),
    ('cpu', '3.+1s', None),
    ('cpu', '3. 1s', None),
    ('cpu', '3.s', None),
    ('cpu', '12.34.56', None),
    ('cpu', '12..34', None),
    ('cpu', '..1234', None),
    ('cpu', '1234..', None),
    # TEST(parse_time)
    ('cpu', '11111111111111y', None),
    ('cpu', '1.1111111111111y', L(35064000, 35064000)),
]

# src/basic/rlimit-util.c rlimit_parse_table: rlimit_parse() reads each side with the parser of
# its resource: rlimit_parse_sec (cpu), rlimit_parse_size (base-1024 suffixes: fsize, data,
# stack, core, rss, as, memlock, msgqueue), rlimit_parse_u64 (nofile, nproc, locks,
# sigpending, rtprio), rlimit_parse_nice (nice) and rlimit_parse_usec (rttime, not modelled).
# Every parser but rlimit_parse_nice starts with streq(val, "infinity"): LimitNICE=infinity is
# refused (and so is any side of it), where every other item reads it as RLIM_INFINITY.
RLIMIT_PARSE_TABLE = 'src/basic/rlimit-util.c'
PARSE_TABLE = {'cpu': 'sec', 'fsize': 'size', 'data': 'size', 'stack': 'size', 'core': 'size',
               'rss': 'size', 'nofile': 'u64', 'as': 'size', 'nproc': 'u64', 'memlock': 'size',
               'locks': 'u64', 'sigpending': 'u64', 'msgqueue': 'size', 'nice': 'nice',
               'rtprio': 'u64'}
RLIMIT_TABLE_CASES = (
    [(name, 'infinity', None if kind == 'nice' else L(U, U))
     for name, kind in sorted(PARSE_TABLE.items())]
    + [(name, '2K', {'size': L(2 * K, 2 * K), 'sec': None}.get(kind))
       for name, kind in sorted(PARSE_TABLE.items())]
    + [
        ('nice', 'infinity:infinity', None),
        ('nice', '0:infinity', None),
        ('nice', '+0:infinity', None),
        ('nice', '5: 10', L(5, 10)),       # the hard side " 10" is raw: safe_atou64 skips blanks
        ('nice', '5: -10', None),          # " -10" is raw too, and negative
        ('nice', '-3:-5', L(23, 25)),
        ('nice', '+0x5', L(15, 15)),
        ('cpu', '5:infinity', L(5, U)),
        ('cpu', '5: infinity', L(5, U)),   # parse_sec skips blanks, then reads infinity
        ('memlock', '5: infinity', None),  # rlimit_parse_size compares with streq only
        ('nofile', '5: infinity', None),
        ('nofile', ':5', None),
        ('nofile', '5:', None),
        ('nofile', '5 :6', None),
        ('nofile', '5: 6', L(5, 6)),
        ('nofile', '0', L(0, 0)),
        ('cpu', '0', L(0, 0)),
        ('memlock', '1k', None),           # parse_size's suffixes are upper case (and B)
        ('memlock', '1e3', None),
        ('cpu', '1e3', None),
        ('nofile', 'Infinity', None),
    ])

CASES = ([(RLIMIT_UTIL,) + row for row in RLIMIT_CASES]
         + [(RLIMIT_PARSE_TABLE,) + row for row in RLIMIT_TABLE_CASES]
         + [(PARSE_UTIL,) + row for row in PARSE_UTIL_CASES]
         + [(TIME_UTIL,) + row for row in TIME_UTIL_CASES])


@pytest.mark.parametrize('source,item,text,expected', CASES,
                         ids=['%s:%s=%r' % (c[0].rsplit('/', 1)[1], c[1], c[2]) for c in CASES])
def test_systemd_test_suite(source, item, text, expected):
    if expected is None:
        with pytest.raises(m.LimitError):
            m.from_systemd_config(item, text, source)
    else:
        assert m.from_systemd_config(item, text, source) == expected


# systemd.exec(5), "Resource limit directives, their equivalent ulimit shell commands and the
# unit used": the unit each Limit*= counts in, and the ulimit option (our limits.conf item).
EXEC_TABLE = [
    ('LimitCPU', 'cpu', 'seconds'),
    ('LimitFSIZE', 'fsize', 'bytes'),
    ('LimitDATA', 'data', 'bytes'),
    ('LimitSTACK', 'stack', 'bytes'),
    ('LimitCORE', 'core', 'bytes'),
    ('LimitRSS', 'rss', 'bytes'),
    ('LimitNOFILE', 'nofile', 'number of file descriptors'),
    ('LimitAS', 'as', 'bytes'),
    ('LimitNPROC', 'nproc', 'number of processes'),
    ('LimitMEMLOCK', 'memlock', 'bytes'),
    ('LimitLOCKS', 'locks', 'number of locks'),
    ('LimitSIGPENDING', 'sigpending', 'number of queued signals'),
    ('LimitMSGQUEUE', 'msgqueue', 'bytes'),
    ('LimitNICE', 'nice', 'nice level'),
    ('LimitRTPRIO', 'rtprio', 'realtime priority'),
]
UNIT_KIND = {'seconds': 'time', 'bytes': 'size', 'nice level': 'nice'}


@pytest.mark.parametrize('key,item,unit', EXEC_TABLE)
def test_systemd_exec_limit_table(key, item, unit):
    """Every Limit*= of systemd.exec(5) maps to our item, which counts in that unit."""
    ours = m.item_from_systemd_key(key)
    assert ours is not None and ours.name == item
    assert m.item_from_systemd_key('Default' + key).name == item
    assert m.systemd_key(item) == key
    expected_kind = UNIT_KIND.get(unit, 'count')
    if item == 'msgqueue':
        # limits.conf counts msgqueue in bytes unscaled, so the model keeps it a count; systemd
        # reads it as a byte value (suffixes allowed), which from_systemd_config honours.
        assert ours.kind == 'count'
        assert m.from_systemd_config(item, '1K') == L(K, K)
    else:
        assert ours.kind == expected_kind


def test_systemd_exec_rttime_is_refused_on_purpose():
    """LimitRTTIME= (microseconds) is in systemd.exec(5) but not in the model: the collection
    does not manage rttime (pam_limits knows it only from 1.7.1); reading it is not an error,
    it is simply not one of ours."""
    assert m.item_from_systemd_key('LimitRTTIME') is None
    assert len(EXEC_TABLE) + 1 == 16   # the 16 rows of the man page's table


def test_counts():
    assert (len(RLIMIT_CASES), len(RLIMIT_TABLE_CASES), len(PARSE_UTIL_CASES),
            len(TIME_UTIL_CASES), len(EXEC_TABLE)) == (21, 51, 38, 41, 15)


@pytest.mark.parametrize('item', sorted(PARSE_TABLE))
def test_rlimit_format_round_trip(item):
    """test_rlimit_parse_format_one(): what rlimit_format() writes, rlimit_parse() reads back.
    Our to_systemd output is read back by the same grammar for every item; nice, which has no
    infinity, is written as raw values (0..40)."""
    kind = PARSE_TABLE[item]
    values = [L(1, 40), L(0, 0), L(20, 20)] if kind == 'nice' else \
        [L(4, 5), L(6, 6), L(8, U), L(U, U)]
    for limit in values:
        assert m.from_systemd_config(item, m.to_systemd(item, limit)) == limit
