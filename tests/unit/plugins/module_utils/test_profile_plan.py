"""profile_plan (limits_profile's planning) and audit rows: pure Python on temporary trees."""
import os
import time

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import docker as ctx_docker
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import units as ctx_units
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import restarts


def test_pam_entries_cover_every_domain_and_item():
    limits = model.parse_profile({'nofile': 65536, 'nproc': {'soft': 2048, 'hard': 4096}}, 'profile')
    entries = pam_limits_plan.profile_entries(limits, ['*', 'root'])
    assert [(e.domain, e.item.name, e.limit.soft, e.limit.hard) for e in entries] == [
        ('*', 'nofile', 65536, 65536), ('*', 'nproc', 2048, 4096),
        ('root', 'nofile', 65536, 65536), ('root', 'nproc', 2048, 4096)]
    assert entries[3].where == 'profile.nproc (root nproc)'


def test_pam_entries_name_what_the_user_wrote():
    with pytest.raises(pam_limits_plan.PlanError, match=r'^profile\.nofile: nofile cannot be'):
        pam_limits_plan.profile_entries(model.parse_profile({'nofile': 'unlimited'}), ['*'])
    with pytest.raises(pam_limits_plan.PlanError, match=r"^domains\[1\]: 'bad domain': a domain cannot hold blanks"):
        pam_limits_plan.profile_entries(model.parse_profile({'nofile': 1024}), ['*', 'bad domain'])


def test_unit_list_adds_containerd_and_service_suffix_once():
    from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
    assert ctx_units.unit_list(['slurmd', 'kubelet.service', 'slurmd.service'], ['containerd'],
                               registry.REGISTRY) == [
        'slurmd.service', 'kubelet.service', 'containerd.service']
    assert ctx_units.unit_list([], ['docker'], registry.REGISTRY) == []


def make(root, *paths):
    for path in paths:
        full = os.path.join(root, path.lstrip('/'))
        if path.endswith('/'):
            os.makedirs(full, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            open(full, 'w').close()


def test_detect_contexts_from_files(tmp_path):
    root = str(tmp_path)
    assert pp.detect_contexts(root) == []
    make(root, '/etc/security/', '/run/systemd/system/', '/lib/systemd/system/user@.service',
         '/usr/lib/systemd/system/docker.service', '/lib/systemd/system/containerd.service',
         '/usr/bin/podman')
    assert pp.detect_contexts(root) == ['pam', 'systemd_system', 'systemd_user', 'docker',
                                        'containerd', 'podman']


def test_detect_contexts_without_a_running_systemd(tmp_path):
    root = str(tmp_path)
    make(root, '/etc/security/', '/lib/systemd/system/user@.service')
    assert pp.detect_contexts(root) == ['pam']


def test_process_start_of_this_process_is_in_the_past():
    started = ctx_docker.process_start(os.getpid())
    assert started is not None and started <= time.time() + 0.05
    assert ctx_docker.process_start('999999999') is None


def test_write_all_puts_back_what_it_wrote_when_a_later_write_fails(tmp_path):
    first = tmp_path / 'a.conf'
    first.write_text('old\n')
    blocker = tmp_path / 'file'
    blocker.write_text('a file where a directory should be\n')
    ok = changes.Change(str(first), {}, 'old\n', 'new\n')
    bad = changes.Change(str(blocker / 'sub' / 'b.conf'), {}, None, 'x\n')
    created = changes.Change(str(tmp_path / 'c.conf'), {}, None, 'c\n')
    with pytest.raises(changes.Failure) as err:
        restarts.write_all([('pam', ok), ('unit:x.service', created), ('docker', bad)],
                           backup=False)
    assert err.value.msg.startswith('docker: ')
    assert 'restored: %s, %s' % (created.path, ok.path) in err.value.msg
    assert err.value.result['files_restored'] == [ok.path, created.path]   # write order
    assert first.read_text() == 'old\n'
    assert not (tmp_path / 'c.conf').exists()


def test_writable_checks_the_nearest_existing_directory(tmp_path):
    """A file in directories still to be created is writable when its nearest existing
    ancestor is (the read-only case needs a read-only mount: the reliability suite's
    read-only bind mounts and the fleet test cover it)."""
    change = changes.Change(str(tmp_path / 'new' / 'deeper' / 'f.conf'), {}, None, 'x\n')
    assert change.writable() is None
    assert not (tmp_path / 'new').exists()


def test_audit_rows_name_sources_fallbacks_and_gaps():
    observed = {'login': {'limits': {'nofile': {'human': '1024:20000', 'soft': 1024,
                                                'hard': 20000}}},
                'service': {'limits': {'nofile': {'human': '16384:16384'}}},
                'docker': {'limits': {}}}
    expected = {'nofile': {'human': '16384:16384'}}
    gaps = [{'context': 'login', 'item': 'nofile', 'sides': ['soft', 'hard']}]
    configured = {'login': {'nofile': {'soft_source': '', 'hard_source': '/etc/l.conf:3',
                                       'soft': 1024, 'hard': 20000}},
                  'service': {'nofile': {'source': '/etc/s.conf', 'line': 4}}}
    rows = audit.rows(observed, expected, gaps, configured, ['nofile'])
    assert rows == [
        dict(context='login', item='nofile', actual='1024:20000', expected='16384:16384',
             source='/etc/l.conf:3', gap='soft+hard', how='probed',
             places={'hard': {'path': '/etc/l.conf', 'line': 3}},
             advice='raise or remove /etc/l.conf:3 (it sets 1024:20000); limits_profile does '
                    'not edit files it does not own',
             advice_at={'action': 'raise or remove /etc/l.conf:3 (it sets 1024:20000); '
                                  'limits_profile does not edit files it does not own',
                        'path': '/etc/l.conf', 'line': 3}),
        dict(context='service', item='nofile', actual='16384:16384', expected='16384:16384',
             source='/etc/s.conf:4', gap='', how='probed',
             places={'soft': {'path': '/etc/s.conf', 'line': 4},
                     'hard': {'path': '/etc/s.conf', 'line': 4}}),
        dict(context='docker', item='nofile', actual='(none)', expected='16384:16384',
             source='inherited from containerd', gap='', how='probed', places={})]


def test_a_write_removes_only_stale_temporaries_of_its_own_file(tmp_path):
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
    target = tmp_path / 'limits.conf'
    stale = tmp_path / '.limits.conf.abc123.tmp'
    fresh = tmp_path / '.limits.conf.def456.tmp'
    other = tmp_path / '.other.conf.abc123.tmp'
    for path in (stale, fresh, other):
        path.write_text('partial')
    old = time.time() - safe_file.STALE_AFTER - 10
    os.utime(str(stale), (old, old))
    os.utime(str(other), (old, old))
    safe_file.write_atomic(str(target), b'new\n')
    assert target.read_bytes() == b'new\n'
    assert not stale.exists() and fresh.exists() and other.exists()


def test_a_one_sided_item_is_refused_naming_it():
    """issue 17.10: `nofile: {soft: 16384}` said `pam: limits[0]: give both soft and hard`."""
    params = dict(profile={'nofile': {'soft': 16384}}, contexts=['pam'], domains=['*'],
                  units=[], on_conflict='fail', force=False, docker_shm_size=None,
                  pam_path='/nonexistent/90.conf', dropin='90.conf',
                  docker_daemon_json='/nonexistent/daemon.json',
                  podman_dropin='/nonexistent/podman.conf')
    with pytest.raises(changes.Failure) as info:
        pp.plan_profile(params, None)
    assert info.value.msg == 'profile.nofile: give both soft and hard (or one value for both)'


def test_audit_names_a_source_only_when_its_value_is_the_actual_one():
    """issue 17.5: a clamped soft names the hard line that clamps it; a login that kept its
    defaults (pam_limits could not apply a line) names no file; a drop-in not applied yet is
    not the source of the live value."""
    clamped = {'soft': 8192, 'hard': 8192, 'soft_source': '/d/90-gpufleet-tuning.conf:3 '
               '(clamped to hard)', 'hard_source': '/d/80-site.conf:3'}
    assert audit.source_of('login', clamped, {'soft': 8192, 'hard': 8192}) == (
        'hard: /d/80-site.conf:3 (soft /d/90-gpufleet-tuning.conf:3 clamped to it)')
    fell_back = {'soft': 65536, 'hard': 65536, 'soft_source': '/d/90-gpufleet-tuning.conf:1',
                 'hard_source': '/d/90-gpufleet-tuning.conf:1'}
    text = audit.source_of('login', fell_back, {'soft': 1024, 'hard': 20000})
    assert text.startswith('not the limits files: they give 65536:65536 '
                           '(/d/90-gpufleet-tuning.conf:1) but the session got 1024:20000')
    assert 'Could not set limit' in text
    pending = {'soft': 4096, 'hard': 4096, 'source': '/etc/systemd/system.conf.d/95-site.conf',
               'line': 2}
    # issue 31 item 8: "not applied yet" only with evidence (systemd reports other values than
    # its files); without it the file is said not to decide, and no restart is advised
    text = audit.source_of('service', pending, {'soft': 16384, 'hard': 16384},
                           pending='systemctl daemon-reexec')
    assert text == ('/etc/systemd/system.conf.d/95-site.conf:2 sets 4096:4096, not applied yet '
                    '(a new process gets 16384:16384; systemctl daemon-reexec applies it)')
    text = audit.source_of('service', pending, {'soft': 16384, 'hard': 16384})
    assert text.startswith('/etc/systemd/system.conf.d/95-site.conf:2 sets 4096:4096, but a new '
                           'process gets 16384:16384: that file does not decide it here')
    assert 'restart' not in text.replace('no restart', '')
    assert audit.source_of('service', pending, {'soft': 4096, 'hard': 4096}) == (
        '/etc/systemd/system.conf.d/95-site.conf:2')


def test_audit_names_the_login_line_pam_limits_cannot_apply():
    """issue 17.5: the 1024 of a login came from pam_limits failing on an `@gpu hard nofile
    1048576` line above the host's ceiling: the audit names that line, not the gpufleet one."""
    class Ceiling(object):
        def hard_ceiling(self, item):
            return (20000, 'fs.nr_open is 20000') if item == 'nofile' else (None, None)

    configured = {'nofile': {'soft': 65536, 'hard': 1048576,
                             'soft_source': '/d/90-gpufleet-tuning.conf:1',
                             'hard_source': '/d/95-gpu.conf:1'},
                  'nproc': {'soft': 4096, 'hard': 4096, 'soft_source': '/d/90-gpufleet-tuning.conf:2',
                            'hard_source': '/d/90-gpufleet-tuning.conf:2'}}
    blocked = audit.unappliable(configured, Ceiling())
    assert blocked == ['/d/95-gpu.conf:1 (hard nofile 1048576: fs.nr_open is 20000)']
    text = audit.source_of('login', configured['nofile'], {'soft': 1024, 'hard': 20000}, blocked)
    assert 'pam_limits could not apply /d/95-gpu.conf:1 (hard nofile 1048576' in text
    assert text.endswith('so the session kept its defaults')
    assert audit.source_of('login', configured['nproc'], {'soft': 4096, 'hard': 4096},
                           blocked) == '/d/90-gpufleet-tuning.conf:2'


def test_audit_source_of_a_soft_and_a_hard_line():
    same = {'soft': 1, 'hard': 2, 'soft_source': '/d/90.conf:3', 'hard_source': '/d/90.conf:4'}
    assert audit.source_of('login', same, {'soft': 1, 'hard': 2}) == '/d/90.conf:3 (soft), :4 (hard)'
    other = dict(same, hard_source='/d/80-site.conf:1')
    assert audit.source_of('login', other, {'soft': 1, 'hard': 2}) == (
        'soft: /d/90.conf:3; hard: /d/80-site.conf:1')
