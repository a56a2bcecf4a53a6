"""limits.conf parser (byte-exact round trip), resolver (pam_limits precedence) and planner."""
import grp

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan as plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec

SAMPLE = (
    "# /etc/security/limits.conf\n"
    "#<domain>      <type>  <item>         <value>\n"
    "\n"
    "*\tsoft\tnofile\t4096\n"
    "  @ml   hard  memlock  unlimited   # trailing comment\n"
    "1000:2000 - nproc 512\n"
    "bad line\n"
    "@:100 soft core 0\n"
    "alice -\n"
    "* soft nofile 1024 extra\n"
    "* soft bogus 1\n"
    "% - maxlogins 3\n"
    "% - nofile 3\n"
    "lastline hard nofile 9"
)


def test_round_trip_exact():
    parsed = conf.parse(SAMPLE, '/x')
    assert parsed.render() == SAMPLE


def test_classification():
    parsed = conf.parse(SAMPLE, '/x')
    kinds = [line.kind for line in parsed.lines]
    assert kinds == ['comment', 'comment', 'blank', 'entry', 'entry', 'entry', 'invalid',
                     'entry', 'nolimit', 'entry', 'invalid', 'entry', 'invalid', 'entry']
    problems = dict((l.lineno, l.problem) for l in parsed.invalid())
    assert 'found 2 fields' in problems[7]
    assert 'ignored' in problems[10]
    assert 'unknown item' in problems[11]
    assert 'maxlogins only' in problems[13]
    assert parsed.lines[4].domain == '@ml' and parsed.lines[4].value == 'unlimited'


@given(st.lists(st.sampled_from([
    '* soft nofile 1\n', '\t@g\thard\tnproc\t2\n', '# c\n', '\n', 'x\n', '   \n',
    'u - memlock unlimited # c\n', '\xe9\xe8 soft nofile 3\n', 'a b c d e f\n', 'nonl soft nofile 4',
    '\r\n', 'r soft nofile 5\r\n']), max_size=30), st.binary(max_size=40))
def test_round_trip_property(lines, junk):
    text = ''.join(lines) + text_codec.decode_bytes(junk)
    assert conf.parse(text).render() == text
    assert text_codec.encode_text(text_codec.decode_bytes(text_codec.encode_text(text))) == text_codec.encode_text(text)


@pytest.mark.parametrize('domain,kind', [
    ('*', 'wildcard'), ('alice', 'user'), ('@ml', 'group'), ('1000:2000', 'uid_range'),
    (':1000', 'uid_range'), ('1000:', 'uid_range'), ('@100:200', 'gid_range'),
    ('@:100', 'gid_range'), ('%', 'all'), ('%ml', 'allgroup'), ('svc$', 'user'),
])
def test_domains(domain, kind):
    assert conf.parse_domain(domain).kind == kind


@pytest.mark.parametrize('domain', ['', '@', 'a b', 'x:y', ':', '@:', '1:2:3', '%1:', 'a#b'])
def test_bad_domains(domain):
    with pytest.raises(ValueError):
        conf.parse_domain(domain)


ALICE = conf.User('alice', 1001, 1001, groups=['alice', 'ml'], gids=[1001, 2000])
ROOT = conf.User('root', 0, 0, groups=['root'], gids=[0])


def resolve(text, user=ALICE, **kwargs):
    return conf.resolve([conf.parse(text, '/f')], user, **kwargs)


def test_class_beats_order():
    result = resolve('alice soft nofile 100\n* soft nofile 200\n@ml soft nofile 300\n')
    assert result['effective']['nofile']['soft'] == 100
    assert result['effective']['nofile']['soft_source'] == '/f:1'
    assert result['effective']['nofile']['hard'] is None


def test_later_wins_within_class_and_across_files():
    first = conf.parse('* soft nproc 100\n* hard nproc 9000\n', '/a')
    second = conf.parse('* soft nproc 4096\n', '/b')
    eff = conf.resolve([first, second], ALICE)['effective']['nproc']
    assert (eff['soft'], eff['soft_source'], eff['hard_source']) == (4096, '/b:1', '/a:2')


def test_dash_early_return_skips_hard():
    # a user line set soft; a later group "-" line returns early and leaves hard alone
    eff = resolve('alice soft nofile 100\n@ml - nofile 500\n')['effective']['nofile']
    assert eff['soft'] == 100 and eff['hard'] is None
    # two separate lines do set hard
    eff = resolve('alice soft nofile 100\n@ml soft nofile 500\n@ml hard nofile 500\n'
                  )['effective']['nofile']
    assert eff['soft'] == 100 and eff['hard'] == 500


def test_soft_clamped_to_hard():
    eff = resolve('* soft nofile 5000\n* hard nofile 3000\n')['effective']['nofile']
    assert eff['soft'] == 3000 and 'clamped' in eff['soft_source']


def test_units_in_effective():
    eff = resolve('* - memlock 64\n* - cpu 2\n* - stack unlimited\n* - nice -5\n')['effective']
    assert eff['memlock']['soft'] == 65536
    assert eff['cpu']['hard'] == 120
    assert eff['stack']['soft'] == m.UNLIMITED
    assert eff['nice']['soft'] == 25


def test_ranges():
    assert resolve('1000:2000 soft nofile 7\n')['effective']['nofile']['soft'] == 7
    assert resolve('2000: soft nofile 7\n')['effective'] == {}
    assert resolve(':1001 soft nofile 7\n')['effective']['nofile']['soft'] == 7
    # @min:max matches the primary gid only; @:gid matches supplementary groups too
    assert resolve('@1999:2001 soft nofile 7\n')['effective'] == {}
    assert resolve('@1000:1001 soft nofile 7\n')['effective']['nofile']['soft'] == 7
    assert resolve('@:2000 soft nofile 7\n')['effective']['nofile']['soft'] == 7


def test_root_wildcards():
    text = '* soft nofile 7\n@root soft nproc 8\n@:0 soft core 0\n0: soft locks 9\n'
    debian = resolve(text, ROOT, root_wildcards=False)['effective']
    assert sorted(debian) == ['core', 'locks']
    upstream = resolve(text, ROOT, root_wildcards=True)['effective']
    assert sorted(upstream) == ['core', 'locks', 'nofile', 'nproc']


def test_no_limits_line():
    result = resolve('* soft nofile 7\nalice -\n')
    assert result['effective'] == {} and result['no_limits'] == '/f:2'
    assert resolve('* soft nofile 7\n* -\n')['no_limits'] is None


def test_maxlogins_and_priority():
    result = resolve('% - maxlogins 3\n@ml - maxlogins 5\n* - priority 5\n')
    assert result['other']['maxlogins']['value'] == 5
    assert result['other']['priority']['value'] == 5


# --- planner ------------------------------------------------------------------------------

def entries(*raw, state='present'):
    return plan.parse_entries(list(raw), state)


def test_plan_new_file_two_lines_per_entry():
    text = plan.plan_file(None, entries({'domain': '*', 'item': 'nofile', 'value': 65536},
                                        {'domain': '@ml', 'item': 'memlock', 'soft': '1G',
                                         'hard': 'unlimited'}), 'present')
    assert text.startswith('# Managed by gpufleet.tuning.pam_limits')
    body = [l.split() for l in text.splitlines() if not l.startswith('#')]
    assert body == [['*', 'soft', 'nofile', '65536'], ['*', 'hard', 'nofile', '65536'],
                    ['@ml', 'soft', 'memlock', '1048576'], ['@ml', 'hard', 'memlock', 'unlimited']]


def test_plan_keeps_foreign_bytes_and_unterminated_last_line():
    current = '# mine\n\t@x\tsoft\tcore\t0   # tabs\nlast hard nproc 5'
    text = plan.plan_file(current, entries({'domain': '*', 'item': 'nofile', 'value': 10240}),
                          'present')
    assert text.startswith(current + '\n')
    assert text.endswith('*               hard  nofile      10240\n')


def test_plan_semantic_idempotence_and_replacement():
    current = 'root - nofile 10240\n# keep\nroot soft nproc 1\n'
    same = plan.plan_file(current, entries({'domain': 'root', 'item': 'nofile', 'value': 10240}),
                          'present')
    assert same == current
    changed = plan.plan_file(current, entries({'domain': 'root', 'item': 'nofile', 'value': 20480}),
                             'present')
    assert changed.splitlines()[0].split() == ['root', 'soft', 'nofile', '20480']
    assert changed.splitlines()[2] == '# keep'


def test_plan_absent_and_exclusive():
    current = '# c\n* soft nofile 2048\n* hard nofile 2048\nbob soft core 0\njunk\n'
    absent = plan.plan_file(current, entries({'domain': '*', 'item': 'nofile'}, state='absent'),
                            'absent')
    assert absent == '# c\nbob soft core 0\njunk\n'
    exclusive = plan.plan_file(current, entries({'domain': '*', 'item': 'nofile', 'value': 2048}),
                               'present', exclusive=True)
    assert exclusive == '# c\n* soft nofile 2048\n* hard nofile 2048\n'


@pytest.mark.parametrize('raw,message', [
    ({'domain': '*', 'item': 'nofile', 'value': 'unlimited'}, 'nofile cannot be unlimited'),
    ({'domain': '*', 'item': 'nofile', 'value': -1}, 'nofile cannot be unlimited'),
    ({'domain': '*', 'item': 'nofiles', 'value': 1}, r'limits\[0\]\.item: unknown limit item'),
    ({'domain': 'a b', 'item': 'nofile', 'value': 1}, r'limits\[0\]\.domain'),
    ({'domain': '*', 'item': 'nofile', 'soft': 9, 'hard': 1}, 'soft 9 is above hard 1'),
    ({'domain': '*', 'item': 'nofile', 'soft': 9}, 'both soft and hard'),
    ({'domain': '%', 'item': 'nofile', 'value': 1}, 'maxlogins only'),
    ({'domain': '*', 'item': 'stack', 'value': '8388609B'}, 'whole number of KiB'),
    ({'domain': '*', 'item': 'nofile', 'value': 0}, r'limits\[0\]\.value: soft nofile 0 is below '
                                                    'the floor 1024'),
    ({'domain': '*', 'item': 'nproc', 'soft': 1, 'hard': 4096}, 'soft nproc 1 is below the floor'),
    ({'domain': '*', 'item': 'nofile', 'valu': 1}, 'unknown key'),
])
def test_plan_refusals(raw, message):
    with pytest.raises(plan.PlanError, match=message):
        plan.parse_entries([raw], 'present')


def test_duplicate_entries_refused():
    with pytest.raises(plan.PlanError, match='duplicates'):
        entries({'domain': '*', 'item': 'nofile', 'value': 1024},
                {'domain': '*', 'item': 'nofile', 'value': 2048})


class FakeCeiling(object):
    def __init__(self, nr_open, pid1_hard, can_raise):
        self.nr_open = nr_open
        self.pid1_hard = pid1_hard
        self.can_raise = can_raise

    def hard_ceiling(self, item):
        if not self.can_raise and item.name == 'nofile':
            return self.pid1_hard, 'PID 1 runs with hard nofile %d' % self.pid1_hard
        return None, None


def test_ceiling_guards():
    request = entries({'domain': '*', 'item': 'nofile', 'value': 30000})
    errors, unused = plan.check_ceilings(request, FakeCeiling(1048576, 20000, False))
    assert errors and 'above what login services can set here' in errors[0]
    errors, warnings = plan.check_ceilings(request, FakeCeiling(1048576, 20000, False), force=True)
    assert not errors and warnings
    errors, unused = plan.check_ceilings(request, FakeCeiling(16384, 20000, True))
    assert 'above fs.nr_open' in errors[0]
    assert plan.check_ceilings(request, FakeCeiling(1048576, 20000, True)) == ([], [])


def test_conflicts_and_overrides():
    target = '/d/90-gpufleet-tuning.conf'
    # @root: a group every node has (a line for a group the node lacks overrides nobody)
    files = [conf.parse('* soft nofile 100\nalice soft nofile 5\n', '/limits.conf'),
             conf.parse('', target),
             conf.parse('* hard nofile 999\n* soft nofile 65536\n@root soft nofile 7\n',
                        '/d/95-later.conf')]
    conflicts, overrides = plan.find_conflicts(
        entries({'domain': '*', 'item': 'nofile', 'value': 65536}), files, target)
    found = [(c['path'], c['line'], c['sides']) for c in conflicts]
    assert found == [('/d/95-later.conf', 1, ['hard'])]
    assert sorted((o['path'], o['line']) for o in overrides) == [('/d/95-later.conf', 3),
                                                                 ('/limits.conf', 2)]


def test_a_conflict_names_the_line_the_item_and_the_domain_on_both_sides():
    """issue 39.4: the refusal named neither the item nor the domain ('...:1 sets hard 999
    later in pam_limits order')."""
    target = '/d/90-gpufleet-tuning.conf'
    files = [conf.parse('', target),
             conf.parse('# site\n@root - nofile 999\n', '/d/95-later.conf')]
    conflicts, _overrides = plan.find_conflicts(
        entries({'domain': '@root', 'item': 'nofile', 'soft': 4096, 'hard': 65536}), files,
        target)
    assert [c['reason'] for c in conflicts] == [
        '/d/95-later.conf:2 sets @root soft/hard nofile 999 later in pam_limits order, over the '
        'requested @root soft/hard nofile 4096:65536']


def test_a_line_for_a_group_the_node_lacks_overrides_nobody():
    """issue 39.4: pam_limits looks a @group up by name; a group the node does not have has
    no member, so its line keeps no user below the profile and is no override."""
    target = '/d/90-gpufleet-tuning.conf'
    missing = 'gpufleet-no-such-group'
    with pytest.raises(KeyError):
        grp.getgrnam(missing)
    files = [conf.parse('', target),
             conf.parse('@%s hard nofile 1024\n@root hard nofile 1024\n' % missing,
                        '/d/95-later.conf')]
    _conflicts, overrides = plan.find_conflicts(
        entries({'domain': '*', 'item': 'nofile', 'value': 65536}), files, target)
    assert [(o['line'], o['domain']) for o in overrides] == [(2, '@root')]
    assert conf.matches_nobody(conf.parse_domain('@' + missing))
    assert conf.matches_nobody(conf.parse_domain('%' + missing))
    assert not conf.matches_nobody(conf.parse_domain('@root'))
    assert not conf.matches_nobody(conf.parse_domain('*'))
    assert not conf.matches_nobody(conf.parse_domain('@100:200'))


def test_overrides_say_what_the_user_gets_and_replaced_lines_are_named():
    """issue 17.4: overrides and replaced site lines are shown with file:line and the value."""
    target = '/d/90-gpufleet-tuning.conf'
    files = [conf.parse('root soft nproc unlimited\n', '/d/20-nproc.conf'),
             conf.parse('trainer hard nofile 8192\n', '/d/80-site.conf'),
             conf.parse('', target)]
    replaced = []
    _conflicts, overrides = plan.find_conflicts(
        entries({'domain': 'root', 'item': 'nproc', 'value': 8192},
                {'domain': '*', 'item': 'nofile', 'value': 65536}), files, target, replaced)
    assert [o['reason'] for o in overrides] == [
        '/d/80-site.conf:1 (user) overrides * for the users it matches: trainer gets hard '
        'nofile 8192 instead of 65536']
    assert [r['reason'] for r in replaced] == [
        '/d/20-nproc.conf:1 (root soft nproc unlimited) is read earlier: root now gets soft '
        'nproc 8192']


def test_wildcard_without_root_warns():
    assert plan.wildcard_root_warnings(entries({'domain': '*', 'item': 'nofile', 'value': 1024}))
    assert not plan.wildcard_root_warnings(entries(
        {'domain': '*', 'item': 'nofile', 'value': 1024},
        {'domain': 'root', 'item': 'nofile', 'value': 1024}))


def test_prune_removes_items_left_out_of_the_profile_for_its_domains_only():
    """Issue 31 item 12: an item removed from limits_profile stayed in its own file; the file
    holds exactly the profile for the domains it writes, other domains' lines stay."""
    current = ('* soft nofile 16384\n* hard nofile 16384\n* soft nproc 8192\n* hard nproc 8192\n'
               'trainer soft core 0\n')
    text = plan.plan_file(current, entries({'domain': '*', 'item': 'nofile', 'value': 16384}),
                          'present', prune=['*', 'root'])
    assert text == '* soft nofile 16384\n* hard nofile 16384\ntrainer soft core 0\n'


def test_files_pam_limits_never_reads_are_listed(tmp_path):
    """Issue 31 item 18: a README or 99-old.conf.disabled in limits.d looks like limits but
    applies to nobody; the audit lists them (the collection's own backups left out)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
    for name in ('10-site.conf', 'README', '99-old.conf.disabled',
                 '90-gpufleet-tuning.conf.123.2026-12-06@01:02:03~'):
        (tmp_path / name).write_text('* soft nofile 4096\n')
    (tmp_path / 'subdir').mkdir()
    assert info.ignored_limits_files(str(tmp_path)) == [
        str(tmp_path / '99-old.conf.disabled'), str(tmp_path / 'README')]
    assert info.ignored_limits_files(str(tmp_path / 'missing')) == []


@pytest.fixture
def node_has_ml(monkeypatch):
    """The node has the group ml (pam_limits finds it by name); other names as this machine."""
    real = grp.getgrnam
    monkeypatch.setattr(conf.grp, 'getgrnam', lambda name: (
        grp.struct_group(('ml', 'x', 3000, [])) if name == 'ml' else real(name)))


def test_a_narrower_soft_line_above_the_hard_one_is_said_clamped(node_has_ml):
    """Issue 31 item 18: `@ml soft memlock unlimited` was warned as giving unlimited, but
    pam_limits clamps a soft value to the hard one: under the group's own hard 4096 it gives
    4096, below the profile's 8192."""
    files = [conf.parse('@ml soft memlock unlimited\n@ml hard memlock 4096\n', '/d/10-ml.conf')]
    _conflicts, overrides = plan.find_conflicts(
        entries({'domain': '*', 'item': 'memlock', 'value': 8192}), files, '/d/90-x.conf')
    assert [o['reason'] for o in overrides] == [
        '/d/10-ml.conf:1 (group) overrides * for the users it matches: @ml gets soft memlock '
        '4096 (its unlimited, clamped to the hard 4MiB) instead of 8192',
        '/d/10-ml.conf:2 (group) overrides * for the users it matches: @ml gets hard memlock '
        '4096 instead of 8192']


def test_a_narrower_line_that_gives_as_much_or_more_is_no_override():
    """Issue 32 (the tune and the audit agree): a narrower line that gives its users the
    profile's value or more keeps nobody below it, so the tune names no cause there (it said
    "root gets soft nofile 16384 instead of 16384"); clamped to the profile's own hard value,
    an unlimited soft line gives exactly the profile."""
    for text in ('root soft nofile 16384\nroot hard nofile 16384\n',
                 'root - nofile 65536\n', '@ml soft nofile unlimited\n'):
        _conflicts, overrides = plan.find_conflicts(
            entries({'domain': '*', 'item': 'nofile', 'value': 16384}),
            [conf.parse(text, '/d/10-x.conf')], '/d/90-x.conf')
        assert overrides == [], text
    _conflicts, overrides = plan.find_conflicts(
        entries({'domain': '*', 'item': 'nofile', 'value': 16384}),
        [conf.parse('root soft nofile 16383\n', '/d/10-x.conf')], '/d/90-x.conf')
    assert [o['type'] for o in overrides] == ['soft']
