"""limits_profile state=absent (issue 31 item 22, "a way back"): each context's undo plan on
temporary files. Nothing is written by a plan; the Change says what apply() would do."""
import json
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
    docker_daemon_json as dj)
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files as undo
from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import REGISTRY
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request

OURS = (pam_limits_plan.HEADER + '* soft nofile 65536\n* hard nofile 65536\n'
        'root soft nofile 65536\nroot hard nofile 65536\n')


class Host(object):
    def run_command(self, args, environ_update=None):
        return 1, '', 'no systemd here'


@pytest.fixture(autouse=True)
def no_docker_unit(monkeypatch):
    # docker.service's flags are read from this machine's unit files: none here
    monkeypatch.setattr(dj, 'clashes', lambda data, unit='docker.service', root='': [])


def write(path, text, mode=0o640):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(str(path), mode)
    return str(path)


def test_every_context_has_an_undo_plan_and_the_base_plans_nothing():
    assert Context().undo_plans(None, None) == []
    # every context that plans a write takes it back; containerd's drop-in is the units', and a
    # probed-only context (ssh) writes nothing
    writers = [c for c in REGISTRY if type(c).plans is not Context.plans]
    overridden = [c for c in REGISTRY if type(c).undo_plans is not Context.undo_plans]
    assert overridden == writers
    assert [c for c in writers if c.name == 'containerd'] == []


def test_pam_file_with_only_our_lines_is_removed(tmp_path):
    path = write(tmp_path / '90-gpufleet-tuning.conf', OURS)
    found = undo.undo_pam(path, ['*', 'root'])
    assert found.changed and found.new is None
    assert found.result['undo']['action'] == undo.REMOVED
    found.apply(backup=True)
    assert not os.path.exists(path)
    assert len(undo.backups(path)) == 1


def test_pam_file_keeps_a_foreign_line_byte_for_byte(tmp_path):
    foreign = '@gpu\tsoft   memlock  unlimited # site\n'
    path = write(tmp_path / '90-gpufleet-tuning.conf', OURS + foreign)
    found = undo.undo_pam(path, ['*', 'root'])
    assert found.new == foreign and found.result['undo']['action'] == undo.EDITED
    found.apply()
    assert open(path).read() == foreign
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_pam_missing_file_plans_nothing(tmp_path):
    assert undo.undo_pam(str(tmp_path / 'none.conf'), ['*']) is None


def test_systemd_dropin_is_removed_and_owes_a_reexec(tmp_path, monkeypatch):
    monkeypatch.setattr(undo, 'ROOT', str(tmp_path))
    write(tmp_path / 'etc/systemd/system.conf.d/90-gpufleet-tuning.conf',
          '[Manager]\nDefaultLimitNOFILE=65536\n', 0o644)
    request = Request({}, {}, ['systemd_system'], dropin='90-gpufleet-tuning.conf')
    [(label, plan)] = [p for c in REGISTRY if c.name == 'systemd_system'
                       for p in c.undo_plans(request, Host())]
    found = plan()
    assert label == 'systemd_system' and found.changed and found.new is None
    assert found.result['reexec_required'] is True
    assert found.diff()['after_header'] == '/dev/null'


def test_unit_dropins_are_found_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(undo, 'ROOT', str(tmp_path))
    write(tmp_path / 'etc/systemd/system/containerd.service.d/90-gpufleet-tuning.conf',
          '[Service]\nLimitNOFILE=65536\n')
    write(tmp_path / 'etc/systemd/system/containerd.service.d/10-site.conf', '[Service]\n')
    write(tmp_path / 'etc/systemd/system/other.service.d/10-site.conf', '[Service]\n')
    assert undo.unit_dropins('90-gpufleet-tuning.conf') == {
        'containerd.service': '/etc/systemd/system/containerd.service.d/90-gpufleet-tuning.conf'}
    request = Request({}, {}, ['pam'], dropin='90-gpufleet-tuning.conf', units=['slurmd'])
    units = [c for c in REGISTRY if c.owns('unit:x')][0]
    assert [label for label, _plan in units.undo_plans(request, Host())] == [
        'unit:slurmd.service']                            # only what was asked for
    request.contexts = [c.name for c in REGISTRY if c.name]
    units = [c for c in REGISTRY if c.owns('unit:x')][0]
    plans = units.undo_plans(request, Host())
    assert [label for label, _plan in plans] == ['unit:containerd.service', 'unit:slurmd.service']
    found = plans[0][1]()
    assert found.changed and found.result['daemon_reload_required'] is True
    assert plans[1][1]() is None                          # slurmd has no drop-in here


DAEMON = {'log-driver': 'json-file', 'storage-driver': 'vfs'}


def test_daemon_json_keys_come_back_from_the_oldest_backup(tmp_path):
    earlier = dict(DAEMON, **{'default-ulimits': {
        'nofile': {'Name': 'nofile', 'Soft': 4096, 'Hard': 8192}}})
    before = json.dumps(earlier, indent=4) + '\n'
    now = dict(DAEMON, **{'default-ulimits': {
        'nofile': {'Name': 'nofile', 'Soft': 65536, 'Hard': 65536}}, 'default-shm-size': '1G'})
    path = write(tmp_path / 'daemon.json', dj.render(dj.DaemonJson(now, indent=4)).decode())
    oldest = write(tmp_path / 'daemon.json.100.2026-01-01@10:00:00~', before)
    write(tmp_path / 'daemon.json.50.2026-02-01@10:00:00~', '{"default-shm-size": "2G"}\n')
    found = undo.daemon_json(path)
    assert found.result['undo'] == dict(
        action=undo.RESTORED, backup=oldest,
        detail='default-ulimits restored from %s; default-shm-size removed (not in the oldest '
               'backup %s)' % (oldest, oldest))
    assert found.new == before                             # the file as it was, byte for byte
    assert found.result['restart_required'] is True


def test_daemon_json_without_a_backup_loses_only_our_keys(tmp_path):
    text = ('{\n  "log-driver": "json-file",\n  "default-ulimits": {\n    "nofile": {\n'
            '      "Name": "nofile",\n      "Soft": 65536,\n      "Hard": 65536\n    }\n  },\n'
            '  "storage-driver": "vfs",\n  "default-shm-size": "1G"\n}\n')
    path = write(tmp_path / 'daemon.json', text)
    found = undo.daemon_json(path)
    assert found.result['undo']['action'] == undo.REMOVED
    assert found.result['undo']['backup'] is None
    assert found.new == '{\n  "log-driver": "json-file",\n  "storage-driver": "vfs"\n}\n'
    assert found.config == DAEMON
    found.apply()
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_daemon_json_without_our_keys_is_unchanged(tmp_path):
    path = write(tmp_path / 'daemon.json', '{"storage-driver":"vfs"}')
    found = undo.daemon_json(path)
    assert not found.changed and found.new == '{"storage-driver":"vfs"}'


def test_a_bad_backup_is_refused_naming_it(tmp_path):
    path = write(tmp_path / 'daemon.json', '{"default-shm-size": "1G"}\n')
    write(tmp_path / 'daemon.json.1.2026-01-01@10:00:00~', '{"default-shm-size": \n')
    with pytest.raises(changes.Failure, match=r'daemon\.json\.1\.2026-01-01@10:00:00~:2:1: '
                                              r'invalid JSON.*nothing changed'):
        undo.daemon_json(path)


SLURM = 'ClusterName=gpu\nSlurmdSpoolDir=/var/spool/slurmd\n'


def test_slurm_added_lines_are_removed_byte_for_byte(tmp_path):
    path = write(tmp_path / 'slurm.conf', SLURM + sc.MARK
                 + 'PropagateResourceLimitsExcept=NOFILE,MEMLOCK\nNodeName=n1 CPUs=4\n')
    found = undo.undo_slurm(path)
    assert found.new == SLURM + 'NodeName=n1 CPUs=4\n'
    assert found.result['undo'] == dict(action=undo.EDITED, backup=None,
                                        detail='removed: PropagateResourceLimitsExcept='
                                               'NOFILE,MEMLOCK')


def test_slurm_in_place_edit_is_reported_not_undone(tmp_path):
    path = write(tmp_path / 'slurm.conf', SLURM + 'PropagateResourceLimits=NONE\n')
    assert undo.undo_slurm(path) is None
    backup = write(tmp_path / 'slurm.conf.7.2026-01-01@10:00:00~',
                   SLURM + 'PropagateResourceLimits=ALL\n')
    found = undo.undo_slurm(path)
    assert not found.changed and found.result['undo']['action'] == undo.NOT_UNDONE
    assert backup in found.warnings[0]


def test_backups_sort_oldest_first(tmp_path):
    path = str(tmp_path / 'f')
    for name in ('f.9.2026-03-01@00:00:00~', 'f.10.2026-01-01@00:00:00~', 'f.bak', 'fx.1.2026-01-01@00:00:00~'):
        write(tmp_path / name, '')
    assert [os.path.basename(p) for p in undo.backups(path)] == [
        'f.10.2026-01-01@00:00:00~', 'f.9.2026-03-01@00:00:00~']


def test_base_spec_comes_back_when_only_rlimits_differ(tmp_path):
    spec = {'ociVersion': '1.1.0', 'process': {'args': ['sh'], 'rlimits': [
        {'type': 'RLIMIT_NOFILE', 'soft': 1024, 'hard': 1024}]}}
    before = json.dumps(spec, indent=2)
    spec['process']['rlimits'][0].update(soft=65536, hard=65536)
    path = write(tmp_path / 'spec.json', json.dumps(spec, indent=4))
    assert undo.restore_from_backup(path, undo.only_rlimits_differ, 'process.rlimits') \
        .result['undo']['action'] == undo.NOT_UNDONE       # no backup: not guessed
    backup = write(tmp_path / 'spec.json.1.2026-01-01@10:00:00~', before)
    found = undo.restore_from_backup(path, undo.only_rlimits_differ, 'process.rlimits')
    assert found.new == before and found.result['undo']['backup'] == backup
    spec['process']['args'] = ['bash']
    write(tmp_path / 'spec.json', json.dumps(spec))
    found = undo.restore_from_backup(path, undo.only_rlimits_differ, 'process.rlimits')
    assert found.result['undo']['action'] == undo.NOT_UNDONE and not found.changed


def test_config_toml_comes_back_when_only_base_spec_lines_differ():
    before = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "x"\n'
    after = before + '  base_runtime_spec = "/etc/containerd/gpufleet-base-spec.json"\n'
    assert undo.only_spec_lines_differ(after, before)
    assert not undo.only_spec_lines_differ(after + 'oom_score = 1\n', before)


def test_an_undo_takes_its_backups_of_what_it_removed_and_keeps_the_others_bounded(tmp_path):
    """Issue 39 item 6: an undo left its own backups in /etc (5 on one node: 4 of its own and
    the converge's). After it, the backups of a file of the collection's it removed are gone
    (all of them: copies of the collection's file), its own backup of a file it restored goes,
    and the earlier backups of a file that stays are kept and listed."""
    pam = write(tmp_path / '90-gpufleet-tuning.conf', OURS)
    old_pam = write(tmp_path / '90-gpufleet-tuning.conf.7.2026-01-01@10:00:00~', OURS)
    daemon = write(tmp_path / 'daemon.json', json.dumps(
        dict(DAEMON, **{'default-shm-size': '1G'}), indent=4) + '\n')
    before = write(tmp_path / 'daemon.json.100.2026-01-01@10:00:00~',
                   json.dumps(DAEMON, indent=4) + '\n')
    foreign = write(tmp_path / 'daemon.json.bak', '{}\n')
    planned = [('pam', undo.undo_pam(pam, ['*', 'root'])), ('docker', undo.daemon_json(daemon))]
    for _label, found in planned:
        found.apply(backup=True)
    assert len(undo.backups(pam)) == 2 and len(undo.backups(daemon)) == 2
    own = planned[1][1].result['backup_file']
    found = undo.tidy_backups(planned)
    assert sorted(found['removed']) == sorted(
        [old_pam, planned[0][1].result['backup_file'], own])
    assert found['kept'] == [before]
    left = sorted(os.listdir(str(tmp_path)))
    assert left == sorted(os.path.basename(p) for p in (daemon, before, foreign)), left
    assert open(daemon).read() == open(before).read()      # restored, its backup kept
    assert undo.tidy_backups([]) == dict(removed=[], kept=[])
