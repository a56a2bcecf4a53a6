"""plugins/module_utils/host/sysctl_conf.py and sysctl_plan.py: the sysctl configuration as
systemd-sysctl reads it, and the guards of the sysctl_ceilings module."""

import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.kernel import sysctl_plan as plan

# systemd src/test/test-sysctl-util.c, TEST(sysctl_normalize): (input, expected)
NORMALIZE_CASES = [
    ('a.b.c', 'a/b/c'),
    ('a/b/c', 'a/b/c'),
    ('a/b.c/d', 'a/b.c/d'),
    ('a.b/c.d', 'a/b.c/d'),
    ('net.ipv4.conf.enp3s0/200.forwarding', 'net/ipv4/conf/enp3s0.200/forwarding'),
    ('net/ipv4/conf/enp3s0.200/forwarding', 'net/ipv4/conf/enp3s0.200/forwarding'),
    ('a...b...c', 'a/b/c'),
    ('a///b///c', 'a/b/c'),
    ('.a...b...c', 'a/b/c'),
    ('/a///b///c', 'a/b/c'),
]


@pytest.mark.parametrize('given,expected', NORMALIZE_CASES)
def test_normalize_as_systemd(given, expected):
    assert conf.normalize(given) == expected


def test_dotted_name_round_trips():
    assert conf.dotted('fs/inotify/max_user_watches') == 'fs.inotify.max_user_watches'
    assert conf.dotted('net/ipv4/conf/enp3s0.200/forwarding') == \
        'net.ipv4.conf.enp3s0/200.forwarding'
    assert conf.normalize(conf.dotted('net/ipv4/conf/enp3s0.200/forwarding')) == \
        'net/ipv4/conf/enp3s0.200/forwarding'


@pytest.mark.parametrize('line,expected', [
    ('', None),
    ('   ', None),
    ('# fs.file-max = 1', None),
    ('; fs.file-max = 1', None),
    ('  # indented comment', None),
    ('fs.file-max = 1048576', ('fs/file-max', '1048576', False)),
    ('fs.file-max=1048576', ('fs/file-max', '1048576', False)),
    ('\tfs/file-max =  1048576 \r', ('fs/file-max', '1048576', False)),
    ('-fs.file-max = 5', ('fs/file-max', '5', True)),
    ('- fs.file-max = 5', ('fs/file-max', '5', True)),
    ('-net.ipv4.conf.lo.rp_filter', ('net/ipv4/conf/lo/rp_filter', None, True)),
    ('kernel.sem = 250 32000 100 128', ('kernel/sem', '250 32000 100 128', False)),
    ('a.b = c = d', ('a/b', 'c = d', False)),
    ('net.ipv4.conf.*.rp_filter = 2', ('net/ipv4/conf/*/rp_filter', '2', False)),
])
def test_parse_line(line, expected):
    assert conf.parse_line(line) == expected


def test_a_line_without_assignment_is_reported_not_used():
    found, problems = conf.parse_text('fs.file-max 5\nvm.max_map_count = 7\n', '/x.conf')
    assert [(a.key, a.value, a.line) for a in found] == [('vm/max_map_count', '7', 2)]
    assert problems == [dict(path='/x.conf', line=1,
                             problem='line is not an assignment: fs.file-max 5')]


def test_glob_does_not_cross_a_slash():
    assert conf.glob_matches('net/ipv4/conf/*/rp_filter', 'net/ipv4/conf/eth0/rp_filter')
    assert not conf.glob_matches('net/*', 'net/ipv4/conf/eth0/rp_filter')
    assert conf.glob_matches('fs/inotify/max_user_*', 'fs/inotify/max_user_watches')


def _tree(tmp_path, files, proc=None):
    """A root with sysctl files ({path: text or ('link', target)}) and /proc/sys values."""
    for path, text in files.items():
        full = tmp_path / path.lstrip('/')
        full.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, tuple):
            os.symlink(text[1], str(full))
        else:
            full.write_text(text)
    for key, value in (proc or {}).items():
        full = tmp_path / 'proc/sys' / conf.normalize(key)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text('%s\n' % value)
    return str(tmp_path)


def _decide(root, name):
    found, _problems = conf.parse_files(conf.config_files(root))
    winner = conf.resolve(found, conf.normalize(name))['winner']
    return (winner.where[len(root):] if winner.where.startswith(root) else winner.where,
            winner.value) if winner else None


def test_files_in_name_order_across_directories_later_wins(tmp_path):
    root = _tree(tmp_path, {
        '/usr/lib/sysctl.d/50-default.conf': 'vm.max_map_count = 100\n',
        '/etc/sysctl.d/10-early.conf': 'vm.max_map_count = 200\n',
        '/run/sysctl.d/70-run.conf': '# c\nvm.max_map_count = 300\n',
    })
    found, _problems = conf.parse_files(conf.config_files(root))
    winner = conf.resolve(found, 'vm/max_map_count')['winner']
    assert (winner.path, winner.line, winner.value) == ('/run/sysctl.d/70-run.conf', 2, '300')


def test_a_name_in_etc_masks_the_same_name_in_usr_lib(tmp_path):
    root = _tree(tmp_path, {
        '/usr/lib/sysctl.d/50-pid-max.conf': 'kernel.pid_max = 4194304\n',
        '/etc/sysctl.d/50-pid-max.conf': 'kernel.pid_max = 65536\n',
    })
    assert _decide(root, 'kernel.pid_max') == ('/etc/sysctl.d/50-pid-max.conf:1', '65536')


def test_a_dev_null_link_masks_and_sets_nothing(tmp_path):
    root = _tree(tmp_path, {
        '/usr/lib/sysctl.d/50-pid-max.conf': 'kernel.pid_max = 4194304\n',
        '/etc/sysctl.d/50-pid-max.conf': ('link', '/dev/null'),
    })
    assert _decide(root, 'kernel.pid_max') is None


def test_sysctl_conf_is_read_last_unless_a_link_brings_it_in(tmp_path):
    files = {'/etc/sysctl.conf': 'fs.file-max = 10\n',
             '/etc/sysctl.d/90-x.conf': 'fs.file-max = 20\n'}
    root = _tree(tmp_path / 'a', dict(files))
    assert _decide(root, 'fs.file-max') == ('/etc/sysctl.conf:1', '10')
    # Debian: 99-sysctl.conf -> ../sysctl.conf is read in its place (still after 90-x)
    files['/etc/sysctl.d/99-sysctl.conf'] = ('link', '../sysctl.conf')
    files['/etc/sysctl.d/95-y.conf'] = 'fs.file-max = 30\n'
    root = _tree(tmp_path / 'b', files)
    assert _decide(root, 'fs.file-max') == ('/etc/sysctl.d/99-sysctl.conf:1', '10')
    paths = [p for p, _t in conf.config_files(root)]
    assert paths == ['/etc/sysctl.d/90-x.conf', '/etc/sysctl.d/95-y.conf',
                     '/etc/sysctl.d/99-sysctl.conf']


def test_explicit_key_wins_over_a_later_glob_and_dotted_equals_slashed(tmp_path):
    root = _tree(tmp_path, {
        '/etc/sysctl.d/10-a.conf': 'fs/inotify/max_user_watches = 500\n',
        '/etc/sysctl.d/20-b.conf': 'fs.inotify.max_user_* = 9\n',
    })
    assert _decide(root, 'fs.inotify.max_user_watches') == ('/etc/sysctl.d/10-a.conf:1', '500')
    assert _decide(root, 'fs.inotify.max_user_instances') == ('/etc/sysctl.d/20-b.conf:1', '9')


def test_an_exclusion_stops_globs(tmp_path):
    root = _tree(tmp_path, {
        '/etc/sysctl.d/10-a.conf': 'fs.inotify.max_user_* = 9\n-fs.inotify.max_user_watches\n',
    })
    assert _decide(root, 'fs.inotify.max_user_watches') is None
    assert _decide(root, 'fs.inotify.max_user_instances') == ('/etc/sysctl.d/10-a.conf:1', '9')


def test_file_nr(tmp_path):
    root = _tree(tmp_path, {}, {'fs.file-nr': '2816\t0\t9223372036854775807'})
    assert conf.file_nr(root) == (2816, 9223372036854775807)
    assert conf.file_nr(str(tmp_path / 'none')) == (None, None)


# --- the module's plan -------------------------------------------------------------------

PROC = {'fs.file-max': 9223372036854775807, 'vm.max_map_count': 65530,
        'fs.nr_open': 1048576, 'kernel.pid_max': 4194304,
        'fs.inotify.max_user_instances': 128, 'kernel.sem': '250\t32000\t32\t128'}
PATH = '/etc/sysctl.d/90-gpufleet-tuning.conf'


def _params(sysctl, **extra):
    params = dict(sysctl=sysctl, path=PATH, state='present', on_conflict='fail', mode='0644')
    params.update(extra)
    return params


def _write(change, root):
    full = root + change.path
    if change.new is None:
        os.unlink(full)
    else:
        with open(full, 'w') as handle:
            handle.write(change.new)


def test_plan_writes_the_highest_of_minimum_live_and_configured(tmp_path):
    root = _tree(tmp_path, {'/usr/lib/sysctl.d/50-x.conf': 'fs.inotify.max_user_instances = 512\n',
                            '/etc/sysctl.d/.keep': ''}, PROC)
    change = plan.plan_change(_params({'vm.max_map_count': 1048576, 'fs.file-max': 2097152,
                                       'fs.inotify.max_user_instances': 256}), root)
    rows = dict((r['name'], r) for r in change.result['sysctl'])
    assert rows['vm.max_map_count']['value'] == 1048576
    assert rows['vm.max_map_count']['action'] == 'written'
    # held already, now and at boot (no line sets it: the kernel's default): no line of ours
    assert rows['fs.file-max']['action'] == 'met' and rows['fs.file-max']['value'] is None
    assert 'fs.file-max' not in change.new
    assert rows['fs.inotify.max_user_instances']['value'] == 512      # configured kept
    assert rows['fs.inotify.max_user_instances']['kept_from'] == \
        '/usr/lib/sysctl.d/50-x.conf:1'
    assert change.current is None and change.new.startswith(plan.HEADER)
    assert 'vm.max_map_count = 1048576\n' in change.new
    assert any('kept 512' in w for w in change.warnings)
    assert change.result['conflicts'] == []


def test_plan_keeps_other_lines_byte_for_byte_and_is_idempotent(tmp_path):
    mine = '# mine\r\nnet.core.somaxconn=4096\n vm.max_map_count=70000  \nkernel.pid_max = 4194304'
    root = _tree(tmp_path, {PATH: mine}, PROC)
    change = plan.plan_change(_params({'vm.max_map_count': 1048576,
                                       'fs.nr_open': 1048576}), root)
    # fs.nr_open: the node has 1048576 already (met): no line added
    assert change.new == ('# mine\r\nnet.core.somaxconn=4096\nvm.max_map_count = 1048576\n'
                          'kernel.pid_max = 4194304')
    _write(change, root)
    again = plan.plan_change(_params({'vm.max_map_count': 1048576, 'fs.nr_open': 1048576}), root)
    assert again.new == again.current and not again.changed


def test_a_minimum_the_node_holds_writes_nothing_and_warns_nothing(tmp_path):
    """A job's minima below what the node has (live and at boot) leave the node as it is:
    no file, no warning on every run."""
    root = _tree(tmp_path, {'/usr/lib/sysctl.d/50-x.conf': 'vm.max_map_count = 262144\n',
                            '/etc/sysctl.d/.keep': ''}, dict(PROC, **{'vm.max_map_count': 262144}))
    change = plan.plan_change(_params({'vm.max_map_count': 13312, 'fs.file-max': 138240}), root)
    assert [r['action'] for r in change.result['sysctl']] == ['met', 'met']
    assert not change.warnings and change.result['conflicts'] == []
    assert change.current is None and change.new is None and not change.changed


def test_a_minimum_below_the_file_keeps_the_file_and_exact_lowers(tmp_path):
    root = _tree(tmp_path, {PATH: 'vm.max_map_count = 1048576\n'}, PROC)
    kept = plan.plan_change(_params({'vm.max_map_count': 262144}), root)
    assert kept.new == kept.current
    lowered = plan.plan_change(_params({'vm.max_map_count': {'value': 262144, 'exact': True}}),
                               root)
    assert lowered.new == 'vm.max_map_count = 262144\n'
    assert lowered.result['sysctl'][0]['action'] == 'lowered'
    assert any('lowered to 262144' in w for w in lowered.warnings)


def test_a_later_file_that_overrides_is_refused_naming_the_line(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/99-sysctl.conf': ('link', '../sysctl.conf'),
                            '/etc/sysctl.conf': '# x\nvm.max_map_count = 65530\n'}, PROC)
    with pytest.raises(changes.Failure) as caught:
        plan.plan_change(_params({'vm.max_map_count': 1048576}), root)
    assert 'sysctl.vm.max_map_count' in caught.value.msg
    assert '/etc/sysctl.d/99-sysctl.conf:2 sets vm.max_map_count = 65530' in caught.value.msg
    assert not os.path.exists(root + PATH)
    warned = plan.plan_change(_params({'vm.max_map_count': 1048576}, on_conflict='warn'), root)
    assert warned.result['conflicts'][0]['source'] == '/etc/sysctl.d/99-sysctl.conf:2'
    assert any('on_conflict=warn' in w for w in warned.warnings)


def test_an_earlier_file_with_a_lower_value_is_no_conflict(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/10-a.conf': 'vm.max_map_count = 65530\n'}, PROC)
    change = plan.plan_change(_params({'vm.max_map_count': 1048576}), root)
    assert change.result['conflicts'] == []
    assert change.result['sysctl'][0]['source'] == PATH + ':3'


@pytest.mark.parametrize('sysctl,message', [
    ({'fs.no_such_thing': 5}, "sysctl.fs.no_such_thing: unknown sysctl 'fs.no_such_thing'"),
    ({'fs.inotify.*': 5}, 'is a pattern'),
    ({'vm.max_map_count': 'lots'}, "sysctl.vm.max_map_count: 'lots' is not an integer"),
    ({'vm.max_map_count': 1.5}, 'is not an integer'),
    ({'vm.max_map_count': True}, 'is not an integer'),
    ({'kernel.pid_max': 100}, 'sysctl.kernel.pid_max: 100 is outside what the kernel accepts '
                              'for kernel.pid_max (301 to 4194304)'),
    ({'fs.nr_open': 4294967296}, 'outside what the kernel accepts'),
    ({'kernel.sem': -1}, 'sysctl.kernel.sem: -1 is below 0'),
    ({'vm.max_map_count': {'minimum': 5}}, 'a mapping takes value and exact'),
    ({'vm.max_map_count': 1, 'vm/max_map_count': 2}, 'the same sysctl as'),
])
def test_bad_input_is_refused_naming_the_field_before_anything_is_written(tmp_path, sysctl,
                                                                          message):
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    with pytest.raises(changes.Failure) as caught:
        plan.plan_change(_params(sysctl), root)
    assert message in caught.value.msg
    assert not os.path.exists(root + PATH)


def test_read_only_proc_sys_is_configured_not_applied(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    target = tmp_path / 'proc/sys/vm/max_map_count'
    target.chmod(0o444)
    if os.access(str(target), os.W_OK):
        pytest.skip('running as root: a read-only file is still writable')
    change = plan.plan_change(_params({'vm.max_map_count': 1048576}), root)
    assert change.result['configured_not_applied'] == ['vm.max_map_count']
    assert change.result['apply'] == {}
    assert any('configured, not applied' in w for w in change.warnings)


def test_writable_proc_sys_is_applied(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    change = plan.plan_change(_params({'vm.max_map_count': 1048576}), root)
    assert change.result['apply'] == {'vm.max_map_count': 1048576}
    _write(change, root)
    plan.apply_live(change.result, root)
    assert (tmp_path / 'proc/sys/vm/max_map_count').read_text() == '1048576\n'
    assert change.result['sysctl'][0]['applied'] is True
    again = plan.plan_change(_params({'vm.max_map_count': 1048576}), root)
    assert again.result['apply'] == {} and not again.changed


def test_state_absent_removes_our_lines_and_the_file_when_empty(tmp_path):
    root = _tree(tmp_path, {PATH: plan.HEADER + 'vm.max_map_count = 1048576\n'}, PROC)
    change = plan.plan_change(_params({'vm.max_map_count': None}, state='absent'), root)
    assert change.new is None and change.result['apply'] == {}
    root2 = _tree(tmp_path / 'b', {PATH: '# keep\nvm.max_map_count = 1\nfs.nr_open = 1048576\n'},
                  PROC)
    change = plan.plan_change(_params({'vm.max_map_count': None}, state='absent'), root2)
    assert change.new == '# keep\nfs.nr_open = 1048576\n'


def test_known_ceilings_are_in_the_docs_table():
    here = os.path.dirname(__file__)
    doc = os.path.join(here, '..', '..', '..', '..', 'docs', 'limit-model.md')
    with open(doc) as handle:
        text = handle.read()
    for name in conf.KNOWN:
        assert '| `%s` |' % name in text


def test_job_needs_merge_with_the_profile_the_higher_minimum_winning(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    change = plan.plan_change(_params({'vm.max_map_count': 262144, 'fs.nr_open': 1048576},
                                      job_sysctl={'vm.max_map_count': 1048576,
                                                  'fs.nr_open': 2048}), root)
    rows = dict((r['name'], r) for r in change.result['sysctl'])
    assert rows['vm.max_map_count']['asked'] == 1048576
    assert rows['fs.nr_open']['asked'] == 1048576
    exact = plan.plan_change(_params({'vm.max_map_count': {'value': 262144, 'exact': True}},
                                     job_sysctl={'vm.max_map_count': 1048576}), root)
    assert exact.result['sysctl'][0]['value'] == 262144
    with pytest.raises(changes.Failure) as caught:
        plan.plan_change(_params({}, job_sysctl={'vm.max_map_count': 'x'}), root)
    assert "job_sysctl.vm.max_map_count: 'x' is not an integer" in caught.value.msg


@pytest.mark.parametrize('path', ['/etc/sysctl.d/90-x', '/etc/sysctl.conf.d/90-x.conf',
                                  '/tmp/90-x.conf'])
def test_a_path_systemd_sysctl_does_not_read_is_refused(tmp_path, path):
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    with pytest.raises(changes.Failure) as caught:
        plan.plan_change(_params({'vm.max_map_count': 1048576}, path=path), root)
    assert caught.value.msg.startswith('path: %s is not read at boot' % path)


def test_a_failed_live_write_puts_back_the_values_written_before_it(tmp_path):
    """The live values go first (the module writes the file after them): when one cannot be
    written, the ones written before it get their old value back and the error names it."""
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    change = plan.plan_change(_params({'fs.inotify.max_user_instances': 8192,
                                       'vm.max_map_count': 1048576}), root)
    assert change.result['apply'] == {'fs.inotify.max_user_instances': 8192,
                                      'vm.max_map_count': 1048576}
    target = tmp_path / 'proc/sys/vm/max_map_count'
    target.unlink()
    target.mkdir()          # the write now fails (EISDIR), as a refused value would
    with pytest.raises(changes.Failure) as caught:
        plan.apply_live(change.result, root)
    assert caught.value.msg.startswith('sysctl.vm.max_map_count: writing 1048576 to '
                                       '/proc/sys/vm/max_map_count failed')
    assert 'nothing written' in caught.value.msg
    assert (tmp_path / 'proc/sys/fs/inotify/max_user_instances').read_text() == '128\n'
    assert change.result['applied'] == {}


def test_limits_profile_refuses_a_kernel_conflict_before_the_profile_is_written(tmp_path,
                                                                                monkeypatch):
    # found on the VM lane (issue 43): the limits role wrote PAM and systemd, then
    # sysctl_ceilings refused a site's later 99-*.conf; limits_profile now runs sysctl's
    # guards with its own (profile_plan.check_kernel), nothing written on a refusal
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan
    root = _tree(tmp_path, {'/etc/sysctl.d/99-site.conf': 'vm.max_map_count = 100000\n'}, PROC)
    monkeypatch.setattr(plan, 'ROOT', root)
    with pytest.raises(changes.Failure) as caught:
        profile_plan.check_kernel(dict(sysctl={'vm.max_map_count': 262144}, job_sysctl={},
                                       state='present', on_conflict='fail'))
    assert caught.value.msg.startswith('kernel: ')
    assert '/etc/sysctl.d/99-site.conf:1 sets vm.max_map_count = 100000' in caught.value.msg
    assert caught.value.result['context'] == 'kernel'
    # a job's needs too; with warn, or nothing asked, or an undo, no refusal
    with pytest.raises(changes.Failure):
        profile_plan.check_kernel(dict(sysctl={}, job_sysctl={'vm.max_map_count': 262144},
                                       state='present', on_conflict='fail'))
    profile_plan.check_kernel(dict(sysctl={'vm.max_map_count': 262144}, job_sysctl={},
                                   state='present', on_conflict='warn'))
    profile_plan.check_kernel(dict(sysctl={}, job_sysctl={}, state='present', on_conflict='fail'))
    profile_plan.check_kernel(dict(sysctl={'vm.max_map_count': 262144}, job_sysctl={},
                                   state='absent', on_conflict='fail'))
    assert not os.path.exists(root + PATH)


def test_a_value_written_but_not_applied_needs_a_reboot():
    # the sysctl_ceilings module's reboot_required (the limits role's limits_reboot_required)
    assert plan.reboot_required(dict(configured_not_applied=['vm.max_map_count'], apply={}))
    assert not plan.reboot_required(dict(configured_not_applied=[],
                                         apply={'vm.max_map_count': 262144}))
    assert plan.reboot_required(dict(configured_not_applied=[], apply={'vm.max_map_count': 262144}),
                                apply=False)
    assert not plan.reboot_required(dict(configured_not_applied=[], apply={}), apply=False)


def test_a_nofile_above_nr_open_raises_it_first_and_undo_puts_it_back(tmp_path, monkeypatch):
    """Issue 43 item 5: with the role's fs.nr_open in ``sysctl``, limits_profile writes it (live,
    then the drop-in) before any file of the profile, where the profile's hard nofile needs
    it; the guards are checked against that value (profile_plan.first_kernel)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    monkeypatch.setattr(plan, 'ROOT', root)
    params = dict(sysctl={'fs.nr_open': 4194304, 'vm.max_map_count': 262144}, job_sysctl={},
                  state='present', on_conflict='fail')
    kernel = profile_plan.check_kernel(params)
    assert plan.nr_open_first(kernel, 65536) is None             # below the live 1048576
    assert plan.nr_open_first(kernel, 'unlimited') is None
    assert plan.nr_open_first(None, 2097152) is None
    assert plan.nr_open_first(kernel, 8388608) is None           # above what the plan raises
    first = plan.nr_open_first(kernel, 2097152)
    assert first.changed and first.new == kernel.new and 'vm.max_map_count = 262144' in first.new
    order = []
    monkeypatch.setattr(changes.Change, 'apply', lambda self, backup=False: order.append(
        (self.path, (tmp_path / 'proc/sys/fs/nr_open').read_text())))
    monkeypatch.setattr(changes.Change, 'undo', lambda self: order.append(('undo', self.path)))
    first.apply()
    # the live value first, then the file; only fs.nr_open is applied here
    assert order == [(PATH, '4194304\n')]
    assert (tmp_path / 'proc/sys/vm/max_map_count').read_text() == '65530\n'
    first.undo()
    assert order[-1] == ('undo', PATH)
    assert (tmp_path / 'proc/sys/fs/nr_open').read_text() == '1048576\n'
    # a file that cannot be written leaves the live value as it was

    def refuse(self, backup=False):
        raise changes.Failure('read-only')
    monkeypatch.setattr(changes.Change, 'apply', refuse)
    with pytest.raises(changes.Failure):
        first.apply()
    assert (tmp_path / 'proc/sys/fs/nr_open').read_text() == '1048576\n'


def test_the_profile_guards_take_the_nr_open_written_first(tmp_path, monkeypatch):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
    from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    monkeypatch.setattr(plan, 'ROOT', root)
    request = type('Request', (), {})()
    request.limits = {'nofile': m.Limit(65536, 2097152)}
    ceiling = host_limits.Ceiling()
    ceiling.nr_open, ceiling.can_raise = 1048576, True     # root on a node (a VM)
    refused, _warnings = host_limits.check_request(request.limits, ceiling, False)
    assert refused and 'above fs.nr_open (1048576)' in refused[0]
    kernel = profile_plan.check_kernel(dict(sysctl={'fs.nr_open': 2097152}, job_sysctl={},
                                            state='present', on_conflict='fail'))
    assert profile_plan.first_kernel(kernel, request, ceiling) is not None
    assert ceiling.nr_open == 2097152
    assert host_limits.check_request(request.limits, ceiling, False)[0] == []


def test_the_kernel_drop_in_written_first_owes_no_restart(tmp_path, monkeypatch):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan
    root = _tree(tmp_path, {'/etc/sysctl.d/.keep': ''}, PROC)
    monkeypatch.setattr(plan, 'ROOT', root)
    monkeypatch.setattr(profile_plan.sdlive, 'systemd_running', lambda root='': False)
    kernel = profile_plan.check_kernel(dict(sysctl={'fs.nr_open': 2097152}, job_sysctl={},
                                            state='present', on_conflict='fail'))
    first = plan.nr_open_first(kernel, 2097152)
    result = profile_plan.actions([(profile_plan.KERNEL, first)], None, 'always')
    assert not (result['reexec'] or result['daemon_reload'] or result['units']
                or result['user_managers'] or result['docker'])
    assert profile_plan.file_record(profile_plan.KERNEL, first)['path'] == PATH
