"""crio_ulimits run as Ansible runs it (a Python process with an arguments file) against an
/etc/crio tree in a temporary directory, with restart: never (no CRI-O here)."""
import hashlib
import os
import stat

from test_docker_ulimits_modules import run_module


def digest(path):
    with open(str(path), 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def crio_tree(tmp_path, dropin_text=None):
    etc = tmp_path / 'crio'
    (etc / 'crio.conf.d').mkdir(parents=True)
    (etc / 'crio.conf').write_text('[crio]\nlog_dir = "/var/log/crio/pods"\n\n[crio.runtime]\n'
                                   'default_ulimits = [\n\t"nofile=1024:1024",\n]\n')
    dropin = etc / 'crio.conf.d' / '90-gpufleet-tuning.conf'
    if dropin_text is not None:
        dropin.write_text(dropin_text)
        os.chmod(str(dropin), 0o600)
    return dict(config=str(etc / 'crio.conf'), config_dir=str(etc / 'crio.conf.d'),
                path=str(dropin), restart='never'), dropin


def test_check_diff_write_idempotence_keep_mode_and_other_lines(tmp_path):
    own = '# site comment\n[crio.runtime]\ndefault_ulimits = ["core=0:0"]\nno_pivot = true\n'
    args, dropin = crio_tree(tmp_path, own)
    main = digest(args['config'])
    args['ulimits'] = {'nofile': {'soft': 4096, 'hard': 8192}, 'memlock': 'unlimited'}
    checked = run_module(tmp_path, 'crio_ulimits', args, check=True)
    assert checked['changed'] and dropin.read_text() == own
    assert checked['diff']['before'] == own
    assert '  "nofile=4096:8192",\n' in checked['diff']['after']
    written = run_module(tmp_path, 'crio_ulimits', dict(args, backup=True))
    assert written['changed'] and written['deferred'] == 'restart: never'
    assert dropin.read_text() == own.replace(
        '["core=0:0"]', '[\n  "core=0:0",\n  "nofile=4096:8192",\n  "memlock=-1:-1",\n]')
    assert stat.S_IMODE(os.stat(str(dropin)).st_mode) == 0o600
    assert os.path.exists(written['backup_file'])
    assert digest(args['config']) == main
    assert written['decided_by'] == str(dropin) + ':3:1'
    assert written['configured']['core'] == {'soft': 0, 'hard': 0, 'source': str(dropin) + ':3:1'}
    again = run_module(tmp_path, 'crio_ulimits', args)
    assert not again['changed'] and not again['restart_required']


def test_a_refusal_leaves_every_file(tmp_path):
    args, dropin = crio_tree(tmp_path)
    (tmp_path / 'crio' / 'crio.conf.d' / '99-site.conf').write_text(
        '[crio.runtime]\ndefault_ulimits = ["nofile=1:1"]\n')
    result = run_module(tmp_path, 'crio_ulimits', dict(args, ulimits={'nofile': 8192}))
    assert result['failed'] and 'nothing written' in result['msg']
    assert result['overridden_by'] == [str(dropin.parent / '99-site.conf') + ':2:1']
    assert not dropin.exists()
