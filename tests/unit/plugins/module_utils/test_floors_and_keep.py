"""model/floors.py: the floors no value goes below (issue 31: a profile value of 0 locked a node
out) and the keep rule (a plain value is a minimum; a higher soft or hard value the node has is
kept unless the profile names that side)."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

L, U = m.Limit, m.UNLIMITED


@pytest.mark.parametrize('name,spec,words', [
    ('nofile', 0, 'profile.nofile: soft nofile 0 is below the floor 1024'),
    ('nofile', 16, 'soft nofile 16 is below the floor 1024, which is never written, with or '
                   'without force'),
    ('nofile', {'value': 1023}, 'profile.nofile.value: soft nofile 1023'),
    ('nproc', 1, 'soft nproc 1 is below the floor 1024'),
    ('nproc', {'soft': 1024, 'hard': 1000}, 'soft 1024 is above hard 1000'),
    ('stack', '1MiB', 'soft stack 1MiB is below the floor 8MiB'),
    ('memlock', 32, 'soft memlock 32KiB is below the floor 64KiB'),
    ('fsize', 0, 'soft fsize 0B is below the floor 1GiB'),
    ('cpu', 1, 'soft cpu 60s is below the floor 3600s'),
    ('maxlogins', 0, 'soft maxlogins 0 is below the floor 4'),
])
def test_values_below_the_floor_are_refused_naming_the_field(name, spec, words):
    with pytest.raises(m.LimitError) as caught:
        m.parse_profile({name: spec}, 'profile')
    assert words in str(caught.value)


@pytest.mark.parametrize('name,spec', [
    ('nofile', 1024), ('nproc', 'unlimited'), ('core', 0), ('stack', '8MiB'),
    ('memlock', 'unlimited'), ('nice', 0), ('rtprio', 0), ('msgqueue', 0), ('locks', 0),
])
def test_values_at_the_floor_or_without_one_pass(name, spec):
    assert m.parse_profile({name: spec}, 'profile')


def test_every_floor_is_explained_and_every_item_named_exists():
    for name, (floor, why) in m.FLOORS.items():
        assert name in m.ITEMS and floor > 0 and len(why) > 30, name


def test_an_expectation_is_compared_not_written_so_it_has_no_floor():
    assert m.parse_profile({'nofile': 16}, 'expect', floor=False) == {'nofile': L(16, 16)}


def test_named_sides():
    assert m.named_sides(16384) == (False, False)
    assert m.named_sides({'value': 16384}) == (False, False)
    assert m.named_sides({'soft': 1024, 'hard': 4096}) == (True, True)
    assert m.profile_sides({'NOFILE': 4096, 'nproc': {'soft': 2048, 'hard': 4096}}) == {
        'nofile': (False, False), 'nproc': (True, True)}


def actions(records):
    return [(r.side, r.action, r.before, r.after) for r in records]


def test_a_plain_value_keeps_a_higher_hard_and_raises_the_soft():
    # the stock host: systemd's 1024:524288 and a profile of 65536
    limit, records = m.keep('nofile', L(65536, 65536), (False, False), L(1024, 524288),
                            'systemd')
    assert limit == L(65536, 524288)
    assert actions(records) == [('hard', 'kept', 524288, 524288)]
    assert records[0].source == 'systemd'
    assert "hard nofile 524288 kept: the node already has 524288 (systemd), above the " \
           "profile's 65536" in records[0].message()


def test_a_plain_value_never_lowers_either_side():
    limit, records = m.keep('nofile', L(16384, 16384), (False, False), L(65536, U), 'x',
                            ceiling=1048576)
    assert limit == L(65536, 1048576)
    assert [r.action for r in records] == ['kept', 'kept']


def test_a_kept_value_is_capped_at_the_ceiling_but_never_below_the_ask():
    # containerd's LimitNOFILE=infinity on a host whose hard ceiling is 20000
    limit, _records = m.keep('nofile', L(16384, 16384), (False, False), L(U, U), None, 20000)
    assert limit == L(20000, 20000)
    limit, records = m.keep('nofile', L(16384, 16384), (False, False), L(U, U), None, 8000)
    assert limit == L(16384, 16384) and records == []


def test_a_named_side_is_written_and_reported_as_lowered():
    limit, records = m.keep('nofile', L(16384, 16384), (True, True), L(1024, 524288), 'x')
    assert limit == L(16384, 16384)
    assert actions(records) == [('hard', 'lowered', 524288, 16384)]
    assert 'hard nofile lowered from 524288 (x) to 16384, as the profile names it' in \
        records[0].message()


def test_a_named_hard_below_a_kept_soft_clamps_the_soft_and_says_so():
    limit, records = m.keep('nofile', L(1024, 4096), (False, True), L(8192, 8192), 'x')
    assert limit == L(4096, 4096)
    assert ('soft', 'lowered', 8192, 4096) in actions(records)


def test_raising_the_hard_side_is_reported():
    limit, records = m.keep('nofile', L(65536, 65536), (False, False), L(1024, 4096), 'x')
    assert limit == L(65536, 65536)
    assert actions(records) == [('hard', 'raised', 4096, 65536)]


def test_unknown_current_writes_the_profile_as_asked():
    assert m.keep('nofile', L(4096, 4096), (False, False), None) == (L(4096, 4096), [])
    assert m.keep('nofile', L(4096, 4096), (False, False), L(None, 8192))[0] == L(4096, 8192)


def test_the_request_keeps_per_label():
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    request = Request({'nofile': 4096, 'nproc': {'soft': 2048, 'hard': 2048}},
                      {'nofile': L(4096, 4096), 'nproc': L(2048, 2048)}, ['pam'],
                      named={'nofile': (False, False), 'nproc': (True, True)})
    limits = request.limits_for('unit:a.service', {'nofile': (L(1024, 524288), 'u'),
                                                   'nproc': (L(4096, 4096), 'u')})
    assert limits == {'nofile': L(4096, 524288), 'nproc': L(2048, 2048)}
    assert sorted((r.item, r.side, r.action) for r in request.kept['unit:a.service']) == [
        ('nofile', 'hard', 'kept'), ('nproc', 'hard', 'lowered'), ('nproc', 'soft', 'lowered')]


def test_the_floors_table_in_the_docs_is_the_code():
    """docs/limit-model.md lists every floor with its reason: generated once, compared here so
    that it cannot drift."""
    import os
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
    with open(os.path.join(root, 'docs', 'limit-model.md')) as handle:
        text = handle.read()
    rows = {}
    for line in text.split('<!-- floors:')[1].split('\n\n')[0].splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 3 and cells[0] in m.ITEMS:
            rows[cells[0]] = (cells[1], cells[2])
    assert rows == dict((name, (m.format_human(name, floor), why))
                        for name, (floor, why) in m.FLOORS.items())


def test_what_several_contexts_read_from_the_node_is_read_once_a_call():
    """The keep rule's reads (Linux-PAM's version from dpkg's status file, the system manager's
    defaults with systemctl show) are asked for by PAM, both managers and the plan: one read
    a call (Request.read), not one per context or per limits file."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    request = Request({'nofile': 4096}, {'nofile': L(4096, 4096)}, ['pam'])
    calls = []
    for _attempt in range(3):
        assert request.read('pam_version', lambda: calls.append(1) or (1, 5, 2)) == (1, 5, 2)
    assert calls == [1]


def test_each_side_cites_its_own_source():
    """issue 39.4: a hard side kept cited a soft line ('hard nofile ... kept: the node already
    has 524288 (/etc/security/limits.conf:68; ...)', line 68 a soft line): a source given per
    side is the line that sets that side, in the record and its message."""
    sources = {'soft': '/etc/security/limits.conf:68', 'hard': '/etc/security/limits.conf:70'}
    limit, records = m.keep('nofile', L(4096, 4096), (False, False), L(8192, 16384), sources)
    assert limit == L(8192, 16384)
    assert [(r.side, r.source) for r in records] == [
        ('soft', '/etc/security/limits.conf:68'), ('hard', '/etc/security/limits.conf:70')]
    assert records[1].message() == (
        "hard nofile 16384 kept: the node already has 16384 (/etc/security/limits.conf:70), "
        "above the profile's 4096 (name hard in the profile to lower it)")
    # named sides lowered, and the soft side clamped under a named hard one
    _limit, records = m.keep('nofile', L(2048, 2048), (True, True), L(8192, 16384), sources)
    assert [(r.side, r.action, r.source) for r in records] == [
        ('soft', 'lowered', '/etc/security/limits.conf:68'),
        ('hard', 'lowered', '/etc/security/limits.conf:70')]
    _limit, records = m.keep('nofile', L(1024, 4096), (False, True), L(8192, 8192), sources)
    assert ('soft', 'lowered', '/etc/security/limits.conf:68') in [
        (r.side, r.action, r.source) for r in records]


def test_a_capped_kept_value_says_the_ceiling_and_the_value_its_line_sets():
    """issue 39.4: 'hard nofile 20000 kept: the node already has 524288 (...)': 20000 is the
    node's ceiling, not what the line sets; the message names both for what they are."""
    _limit, records = m.keep('nofile', L(16384, 16384), (False, False), L(1024, 524288),
                             {'hard': '/etc/security/limits.conf:70'}, ceiling=20000)
    assert [(r.side, r.action, r.before, r.after) for r in records] == [
        ('hard', 'kept', 524288, 20000)]
    assert records[0].message() == (
        "hard nofile 524288 (/etc/security/limits.conf:70) kept, capped at the node's ceiling "
        "20000, above the profile's 16384 (name hard in the profile to lower it)")


def test_a_login_cites_the_line_of_each_side(tmp_path, monkeypatch):
    """issue 39.4 through the PAM context's ``current`` and the request: limits.conf sets the
    soft side on line 2 and the hard side on line 3; the kept hard side cites line 3 only."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    limits_conf = tmp_path / 'limits.conf'
    limits_conf.write_text('# site\n* soft nofile 8192\n* hard nofile 16384\n')
    (tmp_path / 'limits.d').mkdir()
    monkeypatch.setattr(pam, 'LIMITS_CONF', str(limits_conf))
    monkeypatch.setattr(pam, 'LIMITS_DIR', str(tmp_path / 'limits.d'))
    request = Request({'nofile': 4096}, {'nofile': L(4096, 4096)}, ['pam'], domains=['*'])
    request.read('pam_version', lambda: (1, 5, 2))
    request.limits_for('pam', pam.CONTEXT.current('pam', request, None))
    assert [(r.side, r.action, r.source) for r in request.kept['pam']] == [
        ('soft', 'kept', '%s:2' % limits_conf), ('hard', 'kept', '%s:3' % limits_conf)]
