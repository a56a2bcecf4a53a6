"""systemd configuration files: lossless parser and editor, and systemd's precedence."""
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sc
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_precedence as sp)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec

U = m.UNLIMITED
L = m.Limit


def write(root, path, text):
    real = str(root) + path
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, 'w') as handle:
        handle.write(text)
    return path


# --- round trip -----------------------------------------------------------------------------

LINE_PIECES = st.sampled_from([
    '[Manager]', '[Service]', '[Manager', '# comment', '; comment', '  # indented', '',
    '   ', 'DefaultLimitNOFILE=1024:4096', 'DefaultLimitNOFILE = 9 ', 'LimitNOFILE=8',
    'Key=value \\', 'continued line', 'no equals here', '\t\tDefaultLimitMEMLOCK=8M\t',
    'Weird=\\\\', '\r', 'x\ry', '\ufeff[Manager]', 'DefaultLimitCPU=1h 30min'])


@given(st.lists(LINE_PIECES, max_size=25), st.booleans())
def test_round_trip_of_systemd_like_files(pieces, final_newline):
    text = '\n'.join(pieces) + ('\n' if final_newline and pieces else '')
    assert sc.ConfFile.parse(text).render() == text


@given(st.text())
def test_round_trip_of_any_text(text):
    assert sc.ConfFile.parse(text).render() == text


@given(st.binary())
def test_round_trip_of_any_bytes(data):
    text = text_codec.decode_bytes(data)
    assert text_codec.encode_text(sc.ConfFile.parse(text).render()) == data


@settings(max_examples=60)
@given(st.lists(LINE_PIECES, max_size=12), st.integers(min_value=1, max_value=50000))
def test_set_changes_only_its_own_statement(pieces, value):
    text = '\n'.join(pieces) + '\n'
    conf = sc.ConfFile.parse(text)
    if conf.bad_section() is not None and not conf.assignments('Manager', 'DefaultLimitNOFILE'):
        with pytest.raises(sc.ConfError):
            conf.set('Manager', 'DefaultLimitNOFILE', str(value))
        assert conf.render() == text
        return
    before = [s for s in conf.statements if s.key != 'DefaultLimitNOFILE']
    conf.set('Manager', 'DefaultLimitNOFILE', str(value))
    after = sc.ConfFile.parse(conf.render())
    assert after.assignments('Manager', 'DefaultLimitNOFILE')[-1].value == str(value)
    # every other statement keeps its text
    others = [s for s in after.statements if s.key != 'DefaultLimitNOFILE']
    kept = [(s.kind, s.text) for s in before if s.kind != 'blank']
    now = [(s.kind, s.text) for s in others if s.kind != 'blank']
    for entry in kept:
        assert entry in now


# --- parsing ------------------------------------------------------------------------------

def test_statements_follow_systemd_rules():
    text = ('DefaultLimitNOFILE=1\n'            # outside any section: ignored
            '[Manager]\n'
            '# DefaultLimitNOFILE=2\n'
            '; DefaultLimitNOFILE=3\n'
            '  DefaultLimitNOFILE = 4:5  \n'
            'DefaultLimitNPROC=10\\\n'
            '# a comment inside the continuation is skipped\n'
            '00\n'
            'garbage line\n'
            '[Other]\n'
            'DefaultLimitCORE=0\n')
    conf = sc.ConfFile.parse(text)
    found = [(s.line, s.key, s.value) for s in conf.assignments('Manager')]
    assert found == [(5, 'DefaultLimitNOFILE', '4:5'), (6, 'DefaultLimitNPROC', '10 00')]
    kinds = [s.kind for s in conf.statements]
    assert kinds[0] == 'outside' and 'no-equals' in kinds
    assert conf.assignments('Other', 'DefaultLimitCORE')[0].line == 11


def test_bad_section_header_stops_the_file():
    conf = sc.ConfFile.parse('[Manager]\nDefaultLimitNOFILE=7\n[Manager\nDefaultLimitNPROC=9\n')
    assert [s.key for s in conf.assignments()] == ['DefaultLimitNOFILE']
    assert conf.bad_section().line == 3


def test_crlf_and_bom():
    conf = sc.ConfFile.parse('\ufeff[Manager]\r\nDefaultLimitNOFILE=5\\\r\n6\r\n')
    assert [(s.key, s.value) for s in conf.assignments('Manager')] == [
        ('DefaultLimitNOFILE', '5 6')]


# --- editing ------------------------------------------------------------------------------

def test_set_replaces_last_assignment_and_keeps_foreign_lines():
    text = ('# mine\n[Manager]\nDefaultLimitNOFILE=1\n  # note\nDefaultLimitNOFILE=2 \n'
            'DefaultTimeoutStopSec=5s\n')
    conf = sc.ConfFile.parse(text)
    assert conf.set('Manager', 'DefaultLimitNOFILE', '4096:8192')
    assert conf.render() == ('# mine\n[Manager]\nDefaultLimitNOFILE=1\n  # note\n'
                             'DefaultLimitNOFILE=4096:8192\nDefaultTimeoutStopSec=5s\n')
    assert not conf.set('Manager', 'DefaultLimitNOFILE', '4096:8192')


def test_set_appends_to_section_and_fixes_missing_newline():
    conf = sc.ConfFile.parse('[Manager]\nDefaultTimeoutStopSec=5s\n\n[Other]\nX=1')
    conf.set('Manager', 'DefaultLimitNPROC', '100')
    conf.set('Service', 'LimitNOFILE', '9')
    assert conf.render() == ('[Manager]\nDefaultTimeoutStopSec=5s\nDefaultLimitNPROC=100\n\n'
                             '[Other]\nX=1\n\n[Service]\nLimitNOFILE=9\n')


def test_set_refuses_to_append_after_broken_header():
    conf = sc.ConfFile.parse('[Manager\n')
    with pytest.raises(sc.ConfError, match=r'x.conf:1: invalid section header'):
        conf.path = 'x.conf'
        conf.set('Manager', 'DefaultLimitNOFILE', '5')


def test_unset_removes_continuations_too():
    conf = sc.ConfFile.parse('[Service]\nLimitNOFILE=1\\\n2\n# keep\nLimitNPROC=3\n')
    assert conf.unset('Service', 'LimitNOFILE')
    assert conf.render() == '[Service]\n# keep\nLimitNPROC=3\n'
    assert not conf.unset('Service', 'LimitNOFILE')


def test_plan_edit_new_file_then_idempotent():
    limits = {'nofile': L(4096, 16384), 'memlock': L(U, U), 'stack': L(8 * 1024 ** 2, U)}
    text = sc.plan_edit(None, 'Manager', 'DefaultLimit', limits, 'present')
    assert text == (sc.HEADER + '[Manager]\nDefaultLimitMEMLOCK=infinity\n'
                    'DefaultLimitNOFILE=4096:16384\nDefaultLimitSTACK=8M:infinity\n')
    assert sc.plan_edit(text, 'Manager', 'DefaultLimit', limits, 'present') == text


def test_plan_edit_keeps_equivalent_spelling():
    text = '[Service]\nLimitMEMLOCK=8388608\n'
    assert sc.plan_edit(text, 'Service', 'Limit', {'memlock': L(8 * 1024 ** 2, 8 * 1024 ** 2)},
                        'present') == text


def test_plan_edit_absent_removes_file_when_empty():
    text = sc.HEADER + '[Manager]\nDefaultLimitNOFILE=5\nDefaultLimitNPROC=6\n'
    left = sc.plan_edit(text, 'Manager', 'DefaultLimit', ['nofile'], 'absent')
    assert left == sc.HEADER + '[Manager]\nDefaultLimitNPROC=6\n'
    assert sc.plan_edit(left, 'Manager', 'DefaultLimit', None, 'absent') is None
    foreign = '[Manager]\nDefaultLimitNOFILE=5\nDefaultTimeoutStopSec=5s\n'
    assert sc.plan_edit(foreign, 'Manager', 'DefaultLimit', None, 'absent') == (
        '[Manager]\nDefaultTimeoutStopSec=5s\n')
    assert sc.plan_edit(None, 'Manager', 'DefaultLimit', None, 'absent') is None


# --- names -----------------------------------------------------------------------------

@pytest.mark.parametrize('name,expected', [
    ('docker', 'docker.service'), ('containerd.service', 'containerd.service'),
    ('getty@tty1.service', 'getty@tty1.service'), ('user@', 'user@.service'),
    ('foo.socket', 'foo.socket')])
def test_normalize_unit(name, expected):
    assert sdpaths.normalize_unit(name) == expected


@pytest.mark.parametrize('name', ['../etc/x', 'a/b.service', 'foo.timer', 'sp ace', ''])
def test_normalize_unit_refuses(name):
    with pytest.raises(sc.ConfError):
        sdpaths.normalize_unit(name)


def test_unit_names_include_template_prefixes_and_type():
    assert sdpaths.unit_names('foo-bar@x.service') == [
        'foo-bar@x.service', 'foo-bar@.service', 'foo-.service', 'service']


# --- precedence ----------------------------------------------------------------------

def test_manager_precedence_across_directories(tmp_path):
    write(tmp_path, '/etc/systemd/system.conf', '[Manager]\nDefaultLimitNOFILE=100\n'
                                                'DefaultLimitNPROC=50\n')
    write(tmp_path, '/usr/lib/systemd/system.conf.d/10-vendor.conf',
          '[Manager]\nDefaultLimitNOFILE=200\nDefaultLimitCORE=0\n')
    write(tmp_path, '/run/systemd/system.conf.d/20-run.conf', '[Manager]\nDefaultLimitNOFILE=300\n')
    # same name in /usr/lib is masked by /etc
    write(tmp_path, '/usr/lib/systemd/system.conf.d/30-same.conf',
          '[Manager]\nDefaultLimitNOFILE=999\nDefaultLimitMEMLOCK=1M\n')
    write(tmp_path, '/etc/systemd/system.conf.d/30-same.conf', '[Manager]\nDefaultLimitNOFILE=400\n')
    write(tmp_path, '/usr/local/lib/systemd/system.conf.d/40-local.conf',
          '[Manager]\nDefaultLimitNPROC=9000:100\n')       # soft > hard: ignored
    write(tmp_path, '/etc/systemd/system.conf.d/.hidden.conf', '[Manager]\nDefaultLimitNPROC=1\n')
    write(tmp_path, '/etc/systemd/system.conf.d/50-notconf.txt', '[Manager]\nDefaultLimitNPROC=2\n')
    resolution = sp.resolve_manager('system', root=str(tmp_path))
    got = resolution.configured()
    assert got['nofile']['soft'] == 400
    assert got['nofile']['source'] == '/etc/systemd/system.conf.d/30-same.conf'
    assert 'memlock' not in got
    assert got['nproc'] == {'soft': 50, 'hard': 50, 'source': '/etc/systemd/system.conf',
                            'line': 3, 'value': 'DefaultLimitNPROC=50'}
    assert got['core']['hard'] == 0
    assert resolution.files == ['/etc/systemd/system.conf',
                                '/usr/lib/systemd/system.conf.d/10-vendor.conf',
                                '/run/systemd/system.conf.d/20-run.conf',
                                '/etc/systemd/system.conf.d/30-same.conf',
                                '/usr/local/lib/systemd/system.conf.d/40-local.conf']
    assert [(i['path'], i['line']) for i in resolution.invalid] == [
        ('/usr/local/lib/systemd/system.conf.d/40-local.conf', 2)]


def test_dev_null_link_masks_a_dropin(tmp_path):
    write(tmp_path, '/usr/lib/systemd/user.conf.d/50-x.conf', '[Manager]\nDefaultLimitNOFILE=7\n')
    os.makedirs(str(tmp_path) + '/etc/systemd/user.conf.d')
    os.symlink('/dev/null', str(tmp_path) + '/etc/systemd/user.conf.d/50-x.conf')
    assert sp.resolve_manager('user', root=str(tmp_path)).configured() == {}


def test_bad_header_stops_later_manager_files(tmp_path):
    write(tmp_path, '/etc/systemd/system.conf.d/10-a.conf',
          '[Manager]\nDefaultLimitNOFILE=10\n[Manager\nDefaultLimitNOFILE=11\n')
    write(tmp_path, '/etc/systemd/system.conf.d/20-b.conf', '[Manager]\nDefaultLimitNOFILE=20\n')
    resolution = sp.resolve_manager('system', root=str(tmp_path))
    assert resolution.configured()['nofile']['soft'] == 10
    assert resolution.skipped == ['/etc/systemd/system.conf.d/20-b.conf']


def test_invalid_values_keep_earlier_value(tmp_path):
    write(tmp_path, '/etc/systemd/system.conf', '[Manager]\nDefaultLimitNOFILE=1000:2000\n'
          'DefaultLimitNOFILE=infinity:100\nDefaultLimitNOFILE=lots\nDefaultLimitNOFILE=\n'
          'DefaultLimitNOFILE=3000 :4000\nDefaultLimitNOFILESoft=5\n')
    resolution = sp.resolve_manager('system', root=str(tmp_path))
    assert resolution.configured()['nofile']['hard'] == 2000
    assert [i['line'] for i in resolution.invalid] == [3, 4, 5, 6]


def test_overlay_and_extra_place_a_planned_file(tmp_path):
    write(tmp_path, '/run/systemd/system.conf.d/95-late.conf', '[Manager]\nDefaultLimitNOFILE=5\n')
    mine = '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'
    overlay = {mine: '[Manager]\nDefaultLimitNOFILE=4096\nDefaultLimitNPROC=10\n'}
    resolution = sp.resolve_manager('system', root=str(tmp_path), overlay=overlay, extra=mine)
    got = resolution.configured()
    assert got['nofile']['source'] == '/run/systemd/system.conf.d/95-late.conf'
    assert got['nproc']['source'] == mine
    # a removed file (overlay None) is not read
    assert sp.resolve_manager('system', root=str(tmp_path), overlay={mine: None},
                              extra=mine).files == ['/run/systemd/system.conf.d/95-late.conf']


def test_unit_precedence(tmp_path):
    write(tmp_path, '/usr/lib/systemd/system/train.service',
          '[Service]\nExecStart=/bin/true\nLimitNOFILE=100\nLimitNPROC=7\n')
    write(tmp_path, '/etc/systemd/system/train.service.d/10-a.conf',
          '[Service]\nLimitNOFILE=200:300\n')
    write(tmp_path, '/usr/lib/systemd/system/service.d/05-all.conf', '[Service]\nLimitCORE=0\n')
    write(tmp_path, '/run/systemd/system/train.service.d/20-b.conf', '[Service]\nLimitNOFILE=400\n'
          '[Unit]\nLimitNPROC=1\n')
    write(tmp_path, '/etc/systemd/system/train.service.d/15-broken.conf',
          '[Service\nLimitNOFILE=1\n')
    resolution = sp.resolve_unit('train', root=str(tmp_path))
    got = resolution.configured()
    assert got['nofile']['soft'] == 400 and got['nproc']['hard'] == 7 and got['core']['hard'] == 0
    assert resolution.skipped == []       # unit drop-ins are read independently
    fragment, dropins = sdpaths.unit_files('train', root=str(tmp_path))
    assert fragment == '/usr/lib/systemd/system/train.service'
    assert [os.path.basename(p) for p in dropins] == ['05-all.conf', '10-a.conf',
                                                      '15-broken.conf', '20-b.conf']


def test_live_limits_from_show():
    props = sdlive.parse_show('DefaultLimitNOFILE=524288\nDefaultLimitNOFILESoft=1024\n'
                              'DefaultLimitMEMLOCK=infinity\nDefaultLimitMEMLOCKSoft=infinity\n')
    assert sdlive.live_limits(props, 'DefaultLimit') == {'nofile': L(1024, 524288),
                                                         'memlock': L(U, U)}
    assert sdlive.differing({'nofile': L(1024, 524288), 'nproc': L(1, 1)},
                            sdlive.live_limits(props, 'DefaultLimit')) == ['nproc']


def test_a_soft_limit_the_program_raised_itself_owes_no_restart():
    """Found on the VM lane (issue 43): slurmd raises its soft nofile to its hard one at start
    (Slurm's rlimits_use_max_nofile), so every rerun of the tune restarted it. A soft raised
    within the same hard is the program's own; a lower soft, another hard or a soft above
    the hard still owe the restart."""
    want = {'nofile': L(65536, 2097152), 'nproc': L(16384, 16384)}
    assert sdlive.stale_in_process(want, {'nofile': L(2097152, 2097152),
                                          'nproc': L(16384, 16384)}) == []
    assert sdlive.stale_in_process(want, {'nofile': L(1024, 2097152),
                                          'nproc': L(16384, 16384)}) == ['nofile']
    assert sdlive.stale_in_process(want, {'nofile': L(131072, 131072),
                                          'nproc': L(16384, 16384)}) == ['nofile']
    assert sdlive.stale_in_process(want, {'nofile': L(65536, 2097152)}) == ['nproc']
    assert sdlive.stale_in_process({'memlock': L(65536, U)}, {'memlock': L(U, U)}) == []


def test_set_after_a_dangling_continuation_ends_it_first():
    # found by the property test: appending after 'Key=value \' would join our line into it
    conf = sc.ConfFile.parse('[Manager]\nKey=value \\\n')
    conf.set('Manager', 'DefaultLimitNOFILE', '1')
    assert conf.render() == '[Manager]\nKey=value \\\n\nDefaultLimitNOFILE=1\n'
    assert [(s.key, s.value) for s in conf.assignments('Manager')] == [
        ('Key', 'value'), ('DefaultLimitNOFILE', '1')]


def test_plan_edit_prune_leaves_exactly_the_limits():
    """Issue 31 item 12: limits_profile's own drop-in holds exactly the profile: an item
    removed from it goes, and other keys and comments stay."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_conf as sc
    from ansible_collections.gpufleet.tuning.plugins.module_utils.model.limits_model import Limit
    text = '# ours\n[Manager]\nDefaultLimitNOFILE=16384\nDefaultLimitNPROC=8192\nDefaultTasksMax=90%\n'
    new = sc.plan_edit(text, 'Manager', 'DefaultLimit', {'nofile': Limit(16384, 16384)},
                       'present', prune=True)
    assert new == '# ours\n[Manager]\nDefaultLimitNOFILE=16384\nDefaultTasksMax=90%\n'
    assert sc.plan_edit(text, 'Manager', 'DefaultLimit', {'nofile': Limit(16384, 16384)},
                        'present') == text
