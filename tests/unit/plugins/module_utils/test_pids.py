"""The pids item: systemd's TasksMax grammar, against systemd's own test cases (ported as data),
the profile's grammar and its errors, and the resolution of percentages.

PERCENT_UTIL rows come from systemd/systemd src/test/test-percent-util.c (TEST(parse_permyriad)
and TEST(parse_permyriad_unbounded), read at main): (text, expected ‱) or (text, 'EINVAL' /
'ERANGE'). TASKS_MAX rows follow src/core/load-fragment.c config_parse_tasks_max: an empty
value resets, ``infinity``, parse_permyriad, else safe_atou64 with 0 and UINT64_MAX refused.
"""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids

PERMYRIAD = [
    ('', 'EINVAL'), ('foo', 'EINVAL'), ('0', 'EINVAL'), ('50', 'EINVAL'), ('100', 'EINVAL'),
    ('-1', 'EINVAL'),
    (u'0\u2031', 0), (u'555\u2031', 555), (u'1000\u2031', 1000), (u'-7\u2031', 'ERANGE'),
    (u'10007\u2031', 'ERANGE'), (u'\u2031', 'EINVAL'), (u'\u2031\u2031', 'EINVAL'),
    (u'\u20311', 'EINVAL'), (u'1\u2031\u2031', 'EINVAL'), (u'3.2\u2031', 'EINVAL'),
    (u'0\u2030', 0), (u'555.5\u2030', 5555), (u'1000.0\u2030', 10000), (u'-7\u2030', 'ERANGE'),
    (u'1007\u2030', 'ERANGE'), (u'\u2030', 'EINVAL'), (u'\u2030\u2030', 'EINVAL'),
    (u'\u20301', 'EINVAL'), (u'1\u2030\u2030', 'EINVAL'), (u'3.22\u2030', 'EINVAL'),
    ('0%', 0), ('55%', 5500), ('55.5%', 5550), ('55.50%', 5550), ('55.53%', 5553),
    ('100%', 10000), ('-7%', 'ERANGE'), ('107%', 'ERANGE'), ('%', 'EINVAL'), ('%%', 'EINVAL'),
    ('%1', 'EINVAL'), ('1%%', 'EINVAL'), ('3.212%', 'EINVAL'),
]

PERMYRIAD_UNBOUNDED = [
    (u'1001\u2031', 1001), (u'4000\u2031', 4000), (u'2147483647\u2031', 2147483647),
    (u'2147483648\u2031', 'ERANGE'), (u'4294967295\u2031', 'ERANGE'),
    (u'4294967296\u2031', 'ERANGE'),
    (u'101\u2030', 1010), (u'400\u2030', 4000), (u'214748364.7\u2030', 2147483647),
    (u'214748364.8\u2030', 'ERANGE'), (u'429496729.5\u2030', 'ERANGE'),
    (u'429496729.6\u2030', 'ERANGE'),
    ('99%', 9900), ('40%', 4000), ('21474836.47%', 2147483647), ('21474836.48%', 'ERANGE'),
    ('42949672.95%', 'ERANGE'), ('42949672.96%', 'ERANGE'),
]


def _outcome(function, text):
    try:
        return function(text)
    except ValueError as exc:
        return str(exc)


@pytest.mark.parametrize('text,expected', PERMYRIAD)
def test_parse_permyriad_as_systemd(text, expected):
    assert _outcome(pids.parse_permyriad, text) == expected


@pytest.mark.parametrize('text,expected', PERMYRIAD_UNBOUNDED)
def test_parse_permyriad_unbounded_as_systemd(text, expected):
    assert _outcome(pids.parse_permyriad_unbounded, text) == expected


T = pids.TasksMax
TASKS_MAX = [
    ('', None),                         # reset: the unit takes DefaultTasksMax=
    ('infinity', pids.INFINITY),
    ('  infinity  ', pids.INFINITY),
    ('4096', T(count=4096)),
    ('0x10', T(count=16)),              # safe_atou64 reads base 0
    ('010', T(count=8)),
    ('33%', T(permyriad=3300)),
    ('15%', T(permyriad=1500)),
    ('12.5%', T(permyriad=1250)),
    (u'125\u2030', T(permyriad=1250)),
    ('100%', T(permyriad=10000)),
    ('0%', T(permyriad=0)),             # parse_permyriad accepts it: pids.max 0
    ('0', 'LimitError'),                # "out of range, ignoring"
    ('-5', 'LimitError'),
    ('18446744073709551615', 'LimitError'),
    ('101%', 'LimitError'),             # permyriad ERANGE, then not a number either
    ('max', 'LimitError'),              # the kernel's word, not systemd's
    ('unlimited', 'LimitError'),
    ('12.345%', 'LimitError'),
    ('4k', 'LimitError'),
]


@pytest.mark.parametrize('text,expected', TASKS_MAX)
def test_tasks_max_as_systemd_reads_it(text, expected):
    try:
        got = pids.from_systemd(text, 'x.conf:3')
    except m.LimitError as exc:
        assert expected == 'LimitError', exc
        assert 'x.conf:3' in str(exc) and 'systemd ignores it' in str(exc)
        return
    assert got == expected


def test_tasks_max_writes_what_it_reads():
    for value in (T(count=4096), T(permyriad=3300), T(permyriad=1250), T(permyriad=1),
                  pids.INFINITY):
        assert pids.from_systemd(value.systemd()) == value


def test_resolve_against_the_kernel_limit():
    # system_tasks_max_scale: t * v / max, rounded down; 100% is the kernel's limit itself
    assert T(permyriad=1500).resolve(4194303) == 629145
    assert T(permyriad=3300).resolve(32767) == 10813
    assert T(permyriad=10000).resolve(32767) == 32767
    assert T(permyriad=0).resolve(None) == 0
    assert T(permyriad=3300).resolve(None) is None
    assert T(count=77).resolve(None) == 77
    assert pids.INFINITY.resolve(5) == m.UNLIMITED


def test_system_tasks_max_is_the_smallest_source():
    assert pids.system_tasks_max(1029626, 4194304) == 1029626
    assert pids.system_tasks_max(1029626, 32768) == 32767     # pid_max - 1
    assert pids.system_tasks_max(1029626, 32768, 2000) == 2000
    assert pids.system_tasks_max(None, None) is None


@pytest.mark.parametrize('value,expected', [
    (8192, T(count=8192)), ('8192', T(count=8192)), (8192.0, T(count=8192)),
    ('infinity', pids.INFINITY), ('unlimited', pids.INFINITY), ('max', pids.INFINITY),
    ('25%', T(permyriad=2500)), ('12.5%', T(permyriad=1250)),
])
def test_profile_values(value, expected):
    assert pids.parse_profile_value(value) == expected


@pytest.mark.parametrize('value,words', [
    (0, 'not a number of tasks'), (-1, 'not a number of tasks'), (100, 'below the floor 1024'),
    ('100', 'below the floor 1024'), (True, 'needs a number'), (None, 'needs a number'),
    ('lots', 'not a number of tasks'), ('150%', 'over 100%'), ('12.345%', 'percentage'),
    ('0%', 'no task at all'), ([], 'needs a number'),
])
def test_profile_errors_name_the_field(value, words):
    with pytest.raises(m.LimitError) as info:
        pids.parse_profile_value(value, 'profile.pids')
    assert str(info.value).startswith('profile.pids: ')
    assert words in str(info.value)


def test_compared_expectations_have_no_floor():
    assert pids.parse_profile_value(100, floor=False) == T(count=100)


def test_split_profile_keeps_pids_from_the_rlimit_planners():
    rest, value = pids.split_profile({'nofile': 65536, 'pids': 8192})
    assert rest == {'nofile': 65536} and value == 8192
    assert pids.split_profile({'nofile': 1}) == ({'nofile': 1}, None)


def test_pids_is_no_rlimit_item():
    # limits.conf, Docker/Podman ulimits and systemd Limit*= never get it: the rlimit model
    # does not know it, and says where it goes instead
    with pytest.raises(m.LimitError) as info:
        m.get_item('pids', 'profile.pids')
    assert 'pids.max' in str(info.value)
    with pytest.raises(m.LimitError):
        m.parse_profile({'pids': 4096}, 'limits')
    assert 'pids' not in m.ITEMS and 'pids' not in m.RLIMIT_ITEMS


def test_pids_max_files_and_comparisons():
    assert pids.parse_pids_max('max\n') == m.UNLIMITED
    assert pids.parse_pids_max('4915\n') == 4915
    with pytest.raises(m.LimitError):
        pids.parse_pids_max('-1')
    assert pids.minimum([m.UNLIMITED, 4915, 10813]) == 4915
    assert pids.minimum([m.UNLIMITED]) == m.UNLIMITED
    assert pids.below(4915, 8192) and not pids.below(m.UNLIMITED, 8192)
    assert pids.below(8192, m.UNLIMITED) and not pids.below(8192, 8192)
