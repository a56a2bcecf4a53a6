"""The limit model: items, units, human sizes, soft/hard pairs and every format's syntax."""
import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

U = m.UNLIMITED


@pytest.mark.parametrize('item,value,expected', [
    ('nofile', 65536, 65536),
    ('nofile', '65536', 65536),
    ('memlock', 'unlimited', U),
    ('memlock', 'infinity', U),
    ('memlock', -1, U),
    ('memlock', 64, 65536),            # bare number: KiB, as in limits.conf
    ('memlock', '64MiB', 64 * 1024 ** 2),
    ('stack', '8M', 8 * 1024 ** 2),
    ('stack', '8MB', 8 * 1024 ** 2),
    ('stack', '512K', 512 * 1024),
    ('core', '1G', 1024 ** 3),
    ('core', '4096B', 4096),
    ('cpu', 10, 600),                  # bare number: minutes
    ('cpu', '90s', 90),
    ('cpu', '2h', 7200),
    ('nice', -5, 25),                  # kernel RLIMIT_NICE = 20 - nice
    ('nice', 19, 1),
    ('priority', -10, -10),
    # issue 39.4: -1 means unlimited only where an item can be unlimited (limits.conf(5)); a
    # nice or a priority of -1 is that number, as pam_limits reads it
    ('nice', -1, 21),
    ('nice', '-1', 21),
    ('priority', -1, -1),
    ('nonewprivs', 1, 1),
    ('rtprio', 99, 99),
    ('msgqueue', 819200, 819200),      # bytes in limits.conf too
])
def test_parse_value(item, value, expected):
    assert m.parse_value(item, value) == expected


@pytest.mark.parametrize('item,value,message', [
    ('nofiles', 1, 'unknown limit item'),
    ('nofile', 'lots', 'needs a whole number'),
    ('nofile', -5, 'must not be negative'),
    ('nofile', 1.5, 'whole number'),
    ('nofile', True, 'needs a number'),
    ('nofile', None, 'needs a number'),
    ('nice', 'unlimited', 'cannot be unlimited'),
    ('nice', 25, 'between -20 and 19'),
    ('priority', 'unlimited', 'cannot be unlimited'),
    ('nonewprivs', 2, '0 or 1'),
    ('nonewprivs', -1, 'nonewprivs must be 0 or 1, got -1'),
    ('stack', '8Q', 'not a size'),
    ('cpu', '5 fortnights', 'not a duration'),
])
def test_parse_value_errors(item, value, message):
    with pytest.raises(m.LimitError, match=message):
        m.parse_value(item, value, where='limits.x')


def test_parse_limit_forms():
    assert m.parse_limit('nofile', 1024) == m.Limit(1024, 1024)
    assert m.parse_limit('nofile', {'soft': 1024, 'hard': 4096}) == m.Limit(1024, 4096)
    assert m.parse_limit('nofile', {'value': 5000}) == m.Limit(5000, 5000)
    assert m.parse_limit('memlock', {'soft': '1G', 'hard': 'unlimited'}) == m.Limit(1024 ** 3, U)
    assert m.parse_limit('nofile', {'soft': 5000}) == m.Limit(5000, None)


@pytest.mark.parametrize('spec,message', [
    ({'soft': 4096, 'hard': 1024}, 'soft 4096 is above hard 1024'),
    ({'soft': 'unlimited', 'hard': 1024}, 'soft unlimited is above hard 1024'),
    ({'value': 1, 'soft': 1}, 'either value or soft/hard'),
    ({'sfot': 1}, 'unknown key'),
    ({}, 'needs soft, hard or value'),
])
def test_parse_limit_errors(spec, message):
    with pytest.raises(m.LimitError, match=message):
        m.parse_limit('nofile', spec, where='profile.nofile')


def test_error_names_the_field():
    with pytest.raises(m.LimitError, match=r'^profile\.nproc\.hard: '):
        m.parse_profile({'nproc': {'soft': 1, 'hard': 'x'}}, where='profile')


def test_compare_unlimited():
    assert m.exceeds(U, 10 ** 18)
    assert not m.exceeds(10, U)
    assert m.compare(U, U) == 0


@pytest.mark.parametrize('item,kernel,text', [
    ('nofile', 65536, '65536'),
    ('memlock', U, 'unlimited'),
    ('memlock', 64 * 1024 ** 2, '65536'),
    ('cpu', 3600, '60'),
    ('nice', 25, '-5'),
])
def test_limits_conf_round_trip(item, kernel, text):
    assert m.to_limits_conf(item, kernel) == text
    assert m.from_limits_conf(item, text)[0] == kernel


def test_limits_conf_refuses_fractions():
    with pytest.raises(m.LimitError, match='whole number of KiB'):
        m.to_limits_conf('stack', 1000)
    with pytest.raises(m.LimitError, match='whole number of minutes'):
        m.to_limits_conf('cpu', 90)


def test_from_limits_conf_like_pam():
    assert m.from_limits_conf('nofile', '-1', nr_open=1048576)[0] == 1048576
    assert m.from_limits_conf('nofile', 'unlimited')[0] == U
    assert m.from_limits_conf('nproc', '-')[0] == U
    assert m.from_limits_conf('nice', '30')[0] == 1          # clamped to 19
    value, problem = m.from_limits_conf('nofile', '1024 extra')
    assert value == 1024 and 'ignored' in problem
    assert m.from_limits_conf('nofile', 'abc')[0] is None
    # pam_limits logs 'wrong limit value' and still sets nonewprivs to 0 (process_limit)
    assert m.from_limits_conf('nonewprivs', '2')[0] == 0


@pytest.mark.parametrize('item,limit,text', [
    ('nofile', m.Limit(1024, 524288), '1024:524288'),
    ('nofile', m.Limit(65536, 65536), '65536'),
    ('memlock', m.Limit(U, U), 'infinity'),
    ('memlock', m.Limit(8 * 1024 ** 2, U), '8M:infinity'),
    ('stack', m.Limit(1000, 1000), '1000'),
    ('core', m.Limit(0, U), '0:infinity'),
    ('nice', m.Limit(25, 25), '25'),
])
def test_systemd_round_trip(item, limit, text):
    assert m.to_systemd(item, limit) == text
    assert m.from_systemd_config(item, text) == limit


def test_systemd_parsing():
    assert m.from_systemd_config('memlock', '64K') == m.Limit(65536, 65536)
    assert m.from_systemd_config('cpu', '1h') == m.Limit(3600, 3600)
    assert m.from_systemd_config('nice', '30') == m.Limit(30, 30)        # raw value
    assert m.from_systemd_config('nice', '-5') == m.Limit(25, 25)        # nice level
    # RLIM_INFINITY as a number: systemctl show prints it; systemd refuses it in a file
    assert m.from_systemd_show('nofile', '18446744073709551615') == U
    with pytest.raises(m.LimitError, match='soft 9000 is above hard 100'):
        m.from_systemd_config('nproc', '9000:100')
    with pytest.raises(m.LimitError, match="systemd cannot parse 'lots'"):
        m.from_systemd_config('nofile', 'lots')
    assert m.systemd_key('nofile', 'DefaultLimit') == 'DefaultLimitNOFILE'
    assert m.item_from_systemd_key('LimitMEMLOCK').name == 'memlock'
    assert m.item_from_systemd_key('DefaultLimitNOFILESoft') is None


def test_docker_and_podman():
    assert m.to_docker('nofile', m.Limit(1024, 4096)) == {'Name': 'nofile', 'Soft': 1024,
                                                          'Hard': 4096}
    assert m.to_docker('memlock', m.Limit(U, U)) == {'Name': 'memlock', 'Soft': -1, 'Hard': -1}
    assert m.from_docker('memlock', {'Name': 'memlock', 'Soft': -1, 'Hard': -1})[1] == m.Limit(U, U)
    with pytest.raises(m.LimitError, match='"Name" must be'):
        m.from_docker('nofile', {'Soft': 1, 'Hard': 1})
    with pytest.raises(m.LimitError, match='must be an integer'):
        m.from_docker('nofile', {'Name': 'nofile', 'Soft': '1', 'Hard': 1})
    assert m.to_ulimit_string('nofile', m.Limit(10, 20)) == 'nofile=10:20'
    assert m.from_ulimit_string('nofile=10:20')[1] == m.Limit(10, 20)
    with pytest.raises(m.LimitError, match='not NAME=SOFT'):
        m.from_ulimit_string('nofile')


PROC = "\n".join([
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max cpu time              unlimited            unlimited            seconds   ',
    'Max stack size            8388608              unlimited            bytes     ',
    'Max processes             96362                96362                processes ',
    'Max open files            1024                 20000                files     ',
    'Max locked memory         8388608              8388608              bytes     ',
    'Max nice priority         0                    0                    ',
    ""])


def test_proc_limits():
    parsed = m.parse_proc_limits(PROC)
    assert parsed['nofile'] == m.Limit(1024, 20000)
    assert parsed['cpu'] == m.Limit(U, U)
    assert parsed['stack'] == m.Limit(8388608, U)
    assert parsed['nice'] == m.Limit(0, 0)


@given(st.sampled_from(m.RLIMIT_ITEMS), st.integers(min_value=0, max_value=2 ** 40),
       st.integers(min_value=0, max_value=2 ** 40))
def test_systemd_and_docker_round_trip_property(name, a, b):
    item = m.ITEMS[name]
    if item.kind == 'nice':
        a, b = a % 41, b % 41
    soft, hard = min(a, b), max(a, b)
    limit = m.Limit(soft, hard)
    assert m.from_systemd_config(item, m.to_systemd(item, limit)) == limit
    if item.docker_name is None:      # as: no go-units ulimit (test_oracle_containers.py)
        return
    assert m.from_docker(name, m.to_docker(item, limit))[1] == limit
    assert m.from_ulimit_string(m.to_ulimit_string(item, limit))[1] == limit


@given(st.sampled_from(['core', 'data', 'fsize', 'memlock', 'rss', 'stack', 'as']),
       st.integers(min_value=0, max_value=2 ** 40))
def test_limits_conf_size_property(name, kib):
    assert m.from_limits_conf(name, m.to_limits_conf(name, kib * 1024))[0] == kib * 1024


def test_a_refused_unlimited_nofile_says_that_minus_one_means_unlimited():
    """issue 39.4: ``{"nofile": -1}`` was refused as "cannot be unlimited" without saying that
    -1 means unlimited: every refusal of an unlimited nofile says so."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
    from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan

    class Ceiling(object):
        nr_open = 1048576

    limits = m.parse_profile({'nofile': -1})
    errors, _warnings = host_limits.check_request(limits, Ceiling(), False, field='profile')
    assert errors == ['profile.nofile: unlimited is not possible for nofile (-1, "infinity" and '
                      '"unlimited" all mean unlimited); the kernel caps it at fs.nr_open '
                      '(1048576)']
    with pytest.raises(pam_limits_plan.PlanError,
                       match=r'^profile\.nofile: nofile cannot be unlimited \(-1, "infinity" '
                             r'and "unlimited" all mean unlimited\): Linux-PAM'):
        pam_limits_plan.profile_entries(limits, ['*'])
