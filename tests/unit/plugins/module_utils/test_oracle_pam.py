"""Linux-PAM's pam_limits as the oracle: its value parsing, line splitting and domain matching
(linux-pam/linux-pam modules/pam_limits/pam_limits.c, process_limit(), parse_uid_range(),
split() and parse_config_file(), read at v1.5.2, v1.6.0 and main), the examples and rules of
limits.conf(5) (modules/pam_limits/limits.conf.5.xml), and community.general's pam_limits
integration test (tests/integration/targets/pam_limits), all as data.
"""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf

U = m.UNLIMITED
K = 1024
INF = m.RLIM_INFINITY
PAM_C = 'modules/pam_limits/pam_limits.c'
LIMITS_5 = 'modules/pam_limits/limits.conf.5.xml'
CG = 'community.general tests/integration/targets/pam_limits'

# process_limit(): (item, value text, kernel value or None when pam_limits skips the line).
VALUE_CASES = [
    ('nofile', '1024', 1024),
    ('nofile', '+1024', 1024),                 # strtoull takes a sign
    ('nofile', '1024k', 1024),                 # and stops at the first non-digit
    ('nofile', '0x10', 0),                     # base 10: "0", then "x10" is ignored
    ('nofile', 'abc', None),                   # no digits: "wrong limit value", skipped
    ('nofile', '', None),
    ('nofile', '-1', U),
    ('nofile', '-', U),
    ('nofile', 'unlimited', U),
    ('nofile', 'infinity', U),
    ('nofile', 'UNLIMITED', U),                # the line is lower-cased first
    ('nofile', '18446744073709551615', U),     # RLIM_INFINITY itself
    ('nofile', '99999999999999999999', U),     # overflow: strtoull gives ULLONG_MAX
    ('nproc', '-2', INF - 1),                  # negative: wraps around, not refused
    ('nproc', '-0', 0),
    ('nproc', '4096', 4096),
    ('stack', '8192', 8192 * K),
    ('stack', '18014398509481982', 18014398509481982 * K),
    ('stack', '18014398509481983', U),         # >= RLIM_INFINITY/1024: unlimited
    ('memlock', '-5', U),                      # wraps, then the KiB scaling saturates
    ('cpu', '5000', 5000 * 60),
    ('cpu', '307445734561825859', 307445734561825859 * 60),
    ('cpu', '307445734561825860', U),          # >= RLIM_INFINITY/60: unlimited
    ('msgqueue', '819200', 819200),            # bytes, not scaled
    ('rtprio', '99', 99),
    ('nice', '19', 1),
    ('nice', '-20', 40),
    ('nice', '30', 1),                         # clamped to 19
    ('nice', '-30', 40),                       # clamped to -20
    ('nice', '-1', 21),                        # -1 is a nice value here, not unlimited
    ('nice', 'unlimited', None),
    ('nice', 'infinity', None),
    ('priority', '-5', -5),
    ('priority', '99999999999', 2 ** 31 - 1),  # strtol clamped to INT_MAX
    ('priority', 'unlimited', None),
    ('priority', '-', None),
    ('maxlogins', '4', 4),
    ('maxlogins', 'unlimited', U),
    ('maxlogins', 'x', None),
    ('nonewprivs', '1', 1),
    ('nonewprivs', '0', 0),
    ('nonewprivs', 'yes', 0),                  # "wrong limit value", yet nonewprivs = 0
    ('nonewprivs', 'unlimited', 0),
]


@pytest.mark.parametrize('item,text,expected', VALUE_CASES)
def test_pam_limits_value_parsing(item, text, expected):
    value, problem = m.from_limits_conf(item, text)
    assert value == expected
    if expected is None:
        assert problem


def test_nofile_unlimited_is_nr_open():
    """process_limit(): nofile "unlimited" (and anything read as RLIM_INFINITY) is replaced by
    /proc/sys/fs/nr_open."""
    for text in ('-1', 'unlimited', '18446744073709551615', '99999999999999999999'):
        assert m.from_limits_conf('nofile', text, nr_open=1048576)[0] == 1048576


def test_items_refusing_unlimited_match_limits_conf_5():
    """limits.conf(5): "All items support the values -1, unlimited or infinity indicating no
    limit, except for priority, nice, and nonewprivs." The profile side refuses them too."""
    for name in m.ITEM_NAMES:
        refused = name in ('priority', 'nice', 'nonewprivs')
        assert (not m.ITEMS[name].unlimited) == refused, name
        if refused:
            with pytest.raises(m.LimitError, match='cannot be unlimited'):
                m.parse_value(name, 'unlimited')


# parse_config_file() + parse_uid_range(): (line, kind, domain kind) as pam_limits reads it.
LINE_CASES = [
    ('alice@example.com soft nofile 4096', 'entry', 'user'),
    ('DOMAIN\\bob hard nofile 8192', 'entry', 'user'),
    ('1x soft nofile 1', 'entry', 'user'),
    ('@gpu-users@example.com - memlock unlimited', 'entry', 'group'),
    ('%          -  maxlogins   10', 'entry', 'all'),
    ('% - maxsyslogins 10', 'invalid', None),      # '%' domains: maxlogins only
    ('%student - nproc 5', 'invalid', None),
    ('%student - maxlogins 5', 'entry', 'allgroup'),
    ('%:100 - maxlogins 2', 'entry', 'allgroup'),
    ('%100: - maxlogins 2', 'invalid', None),      # "range unsupported for %group"
    ('+1000:2000 - nofile 1', 'entry', 'uid_range'),  # strtoul takes a sign
    ('1000:x - nofile 1', 'invalid', None),        # "invalid uid range"
    ('a:b soft nofile 1', 'invalid', None),
    ('alice -', 'nolimit', 'user'),
    ('alice -whatever', 'nolimit', 'user'),
    ('alice soft nofile', 'invalid', None),
    ('alice SOFT NOFILE UNLIMITED', 'entry', 'user'),
    ('alice bogus nofile 1', 'invalid', None),     # unknown type
    ('alice bogus maxlogins 1', 'entry', 'user'),  # ... which maxlogins does not need
    ('alice soft rttime 100', 'invalid', None),    # 1.7.1+ only; not managed here
    ('alice soft chroot /x', 'invalid', None),     # community.general lists it; PAM does not
    ('   # a comment', 'comment', None),
    ('\t\n', 'blank', None),
]


@pytest.mark.parametrize('text,kind,domain_kind', LINE_CASES)
def test_pam_limits_lines(text, kind, domain_kind):
    line = conf.parse(text + '\n').lines[0]
    assert line.kind == kind, line.problem
    if domain_kind:
        assert line.parsed_domain.kind == domain_kind


# limits.conf(5) EXAMPLES: every line is valid, read as (domain kind, sides, item, kernel value).
EXAMPLES = [
    ('*               soft    core            0', 'wildcard', 'soft', 'core', 0),
    ('*               hard    nofile          512', 'wildcard', 'hard', 'nofile', 512),
    ('@student        hard    nproc           20', 'group', 'hard', 'nproc', 20),
    ('@faculty        soft    nproc           20', 'group', 'soft', 'nproc', 20),
    ('@faculty        hard    nproc           50', 'group', 'hard', 'nproc', 50),
    ('ftp             hard    nproc           0', 'user', 'hard', 'nproc', 0),
    ('@student        -       maxlogins       4', 'group', '-', 'maxlogins', 4),
    ('@student        -       nonewprivs      1', 'group', '-', 'nonewprivs', 1),
    (':123            hard    cpu             5000', 'uid_range', 'hard', 'cpu', 300000),
    ('@500:           soft    cpu             10000', 'gid_range', 'soft', 'cpu', 600000),
    ('600:700         hard    locks           10', 'uid_range', 'hard', 'locks', 10),
]


@pytest.mark.parametrize('text,domain_kind,ltype,item,kernel', EXAMPLES)
def test_limits_conf_5_examples(text, domain_kind, ltype, item, kernel):
    line = conf.parse(text + '\n').lines[0]
    assert (line.kind, line.parsed_domain.kind, line.type, line.item) == \
        ('entry', domain_kind, ltype, item)
    assert line.kernel_value() == kernel and line.problem is None


# Linux-PAM 1.5 (sscanf of four words) and 1.6+ (split(): the rest of the line is the value).
# Seen in real su - sessions: Debian 12's 1.5.2 and Debian 13's 1.7.0 (unlimited\r, extra).
VERSION_CASES = [
    ('alice soft nofile 1024 extra', 1024, 1024),
    ('alice soft nofile unlimited extra', U, None),
    ('alice soft nofile unlimited\r', U, None),    # a CRLF file: "unlimited\r" is no word
    ('alice soft nofile 2048\r', 2048, 2048),
    ('alice soft nofile 4096 # comment', 4096, 4096),
    ('alice\tsoft\tnofile\t  8192  ', 8192, 8192),
]


@pytest.mark.parametrize('text,old,new', VERSION_CASES)
def test_value_field_by_pam_version(text, old, new):
    for version, expected in (((1, 5), old), ((1, 6), new), ((1, 7), new)):
        line = conf.parse(text + '\n', pam_version=version).lines[0]
        if expected is None:
            assert line.kind == 'invalid', (version, line.problem)
        else:
            assert line.kind == 'entry' and line.kernel_value() == expected, version
    unknown = conf.parse(text + '\n').lines[0]
    if old != new:
        # Version unknown: read as 1.5 does, and the problem names the difference.
        assert unknown.kernel_value() == old and '1.6 and later' in unknown.problem


# parse_config_file(): strcmp(uname, domain) comes first, so any user name is a domain.
def _users():
    return {
        'alice@example.com': conf.User('alice@example.com', 1500001, 1500001,
                                       ['gpu-users@example.com'], [1500100]),
        'smith': conf.User('smith', 1001, 1001, ['student'], [500]),
        'root': conf.User('root', 0, 0, ['root'], [0]),
    }


MATCH_CASES = [
    # (user, lines, item, expected (soft, hard))
    ('alice@example.com', ['* soft nofile 1024', 'alice@example.com soft nofile 4096'],
     'nofile', (4096, None)),
    ('alice@example.com', ['alice@example.com - nofile 8192', '@gpu-users@example.com - nofile 2'],
     'nofile', (8192, 8192)),
    ('alice@example.com', ['@gpu-users@example.com - nofile 2000', '* - nofile 1'],
     'nofile', (2000, 2000)),
    ('alice@example.com', ['alice - nofile 1'], 'nofile', None),   # no prefix match
    ('smith', ['@500: soft cpu 10000'], 'cpu', (600000, None)),    # primary gid 1001 >= 500
    ('smith', ['@:500 soft nproc 20'], 'nproc', (20, None)),       # supplementary gid 500
    ('smith', ['@2000: soft nproc 20'], 'nproc', None),
    ('smith', [':1001 hard cpu 1'], 'cpu', (None, 60)),
    ('smith', ['1000:1002 hard locks 10'], 'locks', (None, 10)),
    ('smith', ['% - nofile 5', '%student - nofile 5'], 'nofile', None),
]


@pytest.mark.parametrize('user,lines,item,expected', MATCH_CASES)
def test_domain_matching(user, lines, item, expected):
    files = [conf.parse(''.join(line + '\n' for line in lines), '/etc/security/limits.conf')]
    result = conf.resolve(files, _users()[user])
    got = result['effective'].get(item)
    if expected is None:
        assert got is None
    else:
        assert (got['soft'], got['hard']) == expected


def test_percent_domain_maxlogins_only():
    files = [conf.parse('% - maxlogins 3\n% - maxsyslogins 9\n')]
    other = conf.public_other(conf.resolve(files, _users()['smith'])['other'])
    assert other['maxlogins']['value'] == 3 and 'maxsyslogins' not in other


def test_nolimit_line_for_any_user_name():
    files = [conf.parse('* - nofile 1\nalice@example.com -\n', '/etc/security/limits.conf')]
    result = conf.resolve(files, _users()['alice@example.com'])
    assert result['no_limits'] == '/etc/security/limits.conf:2'


# community.general tests/integration/targets/pam_limits/tasks/main.yml: the entries it writes
# (domain, type, item, value), read back by pam_limits for that user.
CG_CASES = [
    ('smith', 'soft', 'nofile', '64000', (64000, None)),
    ('joe', 'hard', 'nofile', '100000', (None, 100000)),
    ('doom', 'hard', 'nofile', '100000', (None, 100000)),
]


@pytest.mark.parametrize('domain,ltype,item,value,expected', CG_CASES)
def test_community_general_entries(domain, ltype, item, value, expected):
    text = ('# /etc/security/limits.conf\n' + conf.format_line(domain, ltype, item, value)
            + conf.format_line('doom', 'hard', 'nofile', '100000').rstrip('\n')
            + ' # This is a nice comment\n')
    lines = conf.parse(text).lines
    assert [line.kind for line in lines] == ['comment', 'entry', 'entry']
    result = conf.resolve([conf.parse(text)], conf.User(domain, 2000, 2000))
    got = result['effective'][item]
    assert (got['soft'], got['hard']) == expected


# community.general plugins/modules/pam_limits.py _assert_is_valid_value(), as its integration
# test exercises it: the profile side accepts and refuses the same values.
CG_VALUES = [
    ('nofile', '64000', True), ('nofile', '100000', True), ('nofile', 'unlimited', True),
    ('nofile', '-1', True), ('nofile', '-5', False), ('nofile', 'lots', False),
    ('nice', '-20', True), ('nice', '19', True), ('nice', '20', False),
    ('priority', '-21', False), ('priority', '0', True),
]


@pytest.mark.parametrize('item,value,accepted', CG_VALUES)
def test_community_general_value_rules(item, value, accepted):
    if accepted:
        m.parse_value(item, value)
    else:
        with pytest.raises(m.LimitError):
            m.parse_value(item, value)


def test_counts():
    assert (len(VALUE_CASES), len(LINE_CASES), len(EXAMPLES), len(VERSION_CASES),
            len(MATCH_CASES), len(CG_CASES), len(CG_VALUES)) == (43, 23, 11, 6, 10, 3, 11)


def test_extra_words_are_reported_for_every_version():
    for version in (None, (1, 5), (1, 7)):
        line = conf.parse('alice soft nofile 1024 extra\n', pam_version=version).lines[0]
        assert line.kind == 'entry' and 'ignored' in line.problem, version
