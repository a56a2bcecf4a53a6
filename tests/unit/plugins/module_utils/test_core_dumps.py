"""core_dumps: where kernel.core_pattern sends cores (a pipe to systemd-coredump or apport, a
path and its filesystem, a relative name in the process's working directory), coredump.conf's
settings with file:line, and the one judgement on a profile's large core limit (issue 33.3)."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import core_dumps as cd
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model

COREDUMP = '|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h'
APPORT = '|/usr/share/apport/apport -p%p -s%s -c%c -d%d -P%P -u%u -g%g -- %E'


def node(tmp_path, pattern, mounts=('/',), files=None):
    """A fake root: its core_pattern, a mountinfo with ``mounts`` and ``files`` {path: text}."""
    root = str(tmp_path)
    lines = []
    for i, mount in enumerate(mounts):
        kind = 'ext4' if mount == '/' else 'xfs'
        lines.append('%d 1 0:%d / %s rw - %s dev%d rw' % (20 + i, i, mount, kind, i))
    files = dict(files or {})
    files.update({cd.PATTERN: pattern + '\n', cd.MOUNTINFO: '\n'.join(lines) + '\n'})
    for path, text in files.items():
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        with open(root + path, 'w') as handle:
            handle.write(text)
    for mount in mounts:
        os.makedirs(root + mount, exist_ok=True)
    return root


def unlimited():
    return model.Limit(model.UNLIMITED, model.UNLIMITED)


def test_systemd_coredump_default_stores_on_root_with_its_default_cap(tmp_path):
    root = node(tmp_path, COREDUMP)
    found = cd.read(root)
    assert found['kind'] == 'pipe' and found['handler'] == 'systemd-coredump'
    assert found['coredump']['storage'] == 'external'
    assert found['coredump']['store'] == cd.COREDUMP_STORE
    assert found['store']['mount'] == '/' and found['store']['on_root']
    size = found['store']['size_bytes']
    assert found['coredump']['cap']['bytes'] == min(size // 10, 4 * 1024 ** 3)
    assert found['coredump']['cap']['source'] == 'the default MaxUse= (10% of /, at most 4G)'
    assert found['lands'].startswith('systemd-coredump stores cores in /var/lib/systemd/coredump')
    # capped: no warning even for an unlimited core
    assert cd.root_risk(unlimited(), found) == ''


def test_coredump_conf_dropins_override_the_main_file_by_name(tmp_path):
    root = node(tmp_path, COREDUMP, files={
        '/etc/systemd/coredump.conf': '[Coredump]\n#MaxUse=\nMaxUse=1G\nStorage=external\n',
        '/usr/lib/systemd/coredump.conf.d/50-vendor.conf': '[Coredump]\nMaxUse=2G\n',
        '/etc/systemd/coredump.conf.d/50-vendor.conf': '[Coredump]\nMaxUse=512M\n',
        '/run/systemd/coredump.conf.d/10-early.conf': '[Other]\nMaxUse=9G\n'})
    settings = cd.coredump_settings(root)
    # the /etc drop-in hides the /usr/lib one of the same name; [Other] is not [Coredump]
    assert settings['MaxUse'] == dict(value='512M',
                                      source='/etc/systemd/coredump.conf.d/50-vendor.conf:2')
    assert settings['Storage']['source'] == '/etc/systemd/coredump.conf:4'
    found = cd.read(root)
    assert found['coredump']['cap']['bytes'] == 512 * 1024 ** 2
    assert 'MaxUse=512M (/etc/systemd/coredump.conf.d/50-vendor.conf:2)' in found['lands']


@pytest.mark.parametrize('storage, says', [
    ('none', 'stores no core (Storage=none, /etc/systemd/coredump.conf:2)'),
    ('journal', 'stores cores in the journal (Storage=journal'),
])
def test_coredump_storage_none_and_journal(tmp_path, storage, says):
    root = node(tmp_path, COREDUMP, files={
        '/etc/systemd/coredump.conf': '[Coredump]\nStorage=%s\n' % storage})
    found = cd.read(root)
    assert says in found['lands'] and found['store'] is None
    assert cd.root_risk(unlimited(), found) == ''


def test_a_path_pattern_on_root_is_a_risk_and_on_its_own_filesystem_is_not(tmp_path):
    root = node(tmp_path, '/var/crash/%e/core.%p', mounts=('/', '/scratch'))
    found = cd.read(root)
    assert found['kind'] == 'path' and found['store']['path'] == '/var/crash'
    assert found['store']['mount'] == '/' and found['store']['fstype'] == 'ext4'
    warning = cd.root_risk(unlimited(), found)
    assert warning.startswith('core unlimited: kernel.core_pattern /var/crash/%e/core.%p writes '
                              'cores to the root filesystem with no size cap')
    # below the threshold: no warning
    assert cd.root_risk(model.Limit(1024 ** 2, model.UNLIMITED), found) == ''
    assert cd.root_risk(None, found) == ''

    root = node(tmp_path / 'b', '/scratch/cores/core.%e.%p', mounts=('/', '/scratch'))
    found = cd.read(root)
    assert found['store']['mount'] == '/scratch' and found['store']['fstype'] == 'xfs'
    assert not found['store']['on_root'] and cd.root_risk(unlimited(), found) == ''


def test_a_relative_pattern_lands_in_the_working_directory(tmp_path):
    found = cd.read(node(tmp_path, 'core'))
    assert found['kind'] == 'relative' and found['store'] is None
    assert "crashing process's working directory" in found['lands']
    assert "each crashing process's working directory" in cd.root_risk(
        model.Limit(8 * 1024 ** 3, 8 * 1024 ** 3), found)


def test_apport_and_other_pipes(tmp_path):
    found = cd.read(node(tmp_path, APPORT))
    assert found['handler'] == 'apport' and found['store']['path'] == cd.APPORT_STORE
    assert cd.root_risk(unlimited(), found) == ''
    found = cd.read(node(tmp_path / 'b', '|/usr/libexec/abrt-hook-ccpp %s %c %p'))
    assert found['handler'] == '/usr/libexec/abrt-hook-ccpp'
    assert found['lands'] == 'the pipe handler /usr/libexec/abrt-hook-ccpp decides where cores go'


def test_unreadable_and_empty_patterns(tmp_path):
    found = cd.read(str(tmp_path))
    assert found['kind'] == 'unknown' and found['pattern'] is None
    assert cd.root_risk(unlimited(), found) == ''
    found = cd.read(node(tmp_path / 'b', ''))
    assert found['kind'] == 'empty'


@pytest.mark.parametrize('text, expected', [
    ('4G', 4 * 1024 ** 3), ('500M', 500 * 1024 ** 2), ('1024', 1024), ('1.5K', 1536),
    ('infinity', 'infinity'), ('lots', None), ('', None)])
def test_systemd_size(text, expected):
    assert cd.systemd_size(text) == expected


def test_section_and_profile_warning_share_the_judgement(tmp_path):
    root = node(tmp_path, '/cores/core.%p')
    section = cd.section({'core': unlimited()}, root)
    assert section['core_limit'] == 'unlimited:unlimited'
    assert section['warning'] == cd.profile_warning({'core': 'unlimited', 'nofile': 1024}, root)
    assert section['warning'].startswith('core unlimited: ')
    assert cd.section({}, root)['warning'] == '' and cd.section({}, root)['core_limit'] is None
    # a profile without core, with a small one, or one that does not parse: no warning
    assert cd.profile_warning({'nofile': 1024}, root) == ''
    assert cd.profile_warning({'core': {'soft': 0, 'hard': 'unlimited'}}, root) == ''
    assert cd.profile_warning({'core': 'lots'}, root) == ''
    assert cd.profile_warning(None, root) == ''
