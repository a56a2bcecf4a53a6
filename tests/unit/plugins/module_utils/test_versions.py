"""versions: the node's Podman and Linux-PAM versions, and what depends on them (which
containers.conf files Podman reads, where podman_ulimits writes, users' own containers.conf)."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import podman_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import versions

# What dpkg's status file holds on the three Debian generations (libpam-modules stanzas, cut).
DPKG_STATUS = {
    'debian11': ('Package: libpam-modules\nStatus: install ok installed\nPriority: required\n'
                 'Version: 1.4.0-9+deb11u1\n'),
    'debian12': 'Package: libpam-modules\nStatus: install ok installed\nVersion: 1.5.2-6+deb12u1\n',
    'debian13': 'Package: libpam-modules\nStatus: install ok installed\nVersion: 1.7.0-5\n',
}


@pytest.mark.parametrize('text, expected', [
    ('podman version 3.0.1\n', (3, 0, 1)),
    ('podman version 5.4.2', (5, 4, 2)),
    ('1.4.0-9+deb11u1', (1, 4, 0)),
    ('1:1.5.2-6', (1, 5, 2)),
    ('1.7', (1, 7)),
    ('no version here', None),
    ('', None),
])
def test_parse_version(text, expected):
    assert versions.parse_version(text) == expected


@pytest.mark.parametrize('version, reads', [
    ((3, 0, 1), False), ((3, 2, 3), False), ((3, 3, 0), True), ((4, 3, 1), True),
    ((5, 4, 2), True), (None, True),
])
def test_podman_reads_dropins_from_3_3(version, reads):
    assert versions.podman_reads_dropins(version) is reads


def _write(root, path, text):
    full = str(root) + path
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as handle:
        handle.write(text)


@pytest.mark.parametrize('distro, expected', [
    ('debian11', (1, 4, 0)), ('debian12', (1, 5, 2)), ('debian13', (1, 7, 0))])
def test_pam_version_from_dpkg_status(tmp_path, distro, expected):
    _write(tmp_path, versions.DPKG_STATUS,
           'Package: adduser\nStatus: install ok installed\nVersion: 3.118\n\n'
           + DPKG_STATUS[distro] + '\nPackage: zlib1g\nStatus: install ok installed\n'
           'Version: 1:1.2.13\n')
    assert versions.pam_version(root=str(tmp_path)) == expected


def test_pam_version_ignores_a_removed_package(tmp_path):
    _write(tmp_path, versions.DPKG_STATUS, 'Package: libpam-modules\n'
           'Status: deinstall ok config-files\nVersion: 1.5.2-6\n')
    assert versions.pam_version(root=str(tmp_path)) is None


def test_pam_version_unknown_without_dpkg_or_host(tmp_path):
    assert versions.pam_version(root=str(tmp_path)) is None


def test_podman_target_before_3_3_is_the_main_file():
    path, dropins, notes = podman_plan.target(cc.DROPIN, (3, 0, 1))
    assert (path, dropins) == ('/etc/containers/containers.conf', False)
    assert notes == ['Podman 3.0.1 reads no containers.conf.d drop-in (Podman 3.3 and later do): '
                     'editing /etc/containers/containers.conf instead of ' + cc.DROPIN]


@pytest.mark.parametrize('path, version', [
    (cc.DROPIN, (3, 3, 0)), (cc.DROPIN, (4, 3, 1)), (cc.DROPIN, None),
    ('/etc/containers/containers.conf', (3, 0, 1)), ('/srv/podman.conf', (3, 0, 1))])
def test_podman_target_unchanged(path, version):
    assert podman_plan.target(path, version)[0] == path


def test_config_files_without_dropins(tmp_path):
    _write(tmp_path, '/usr/share/containers/containers.conf', '[containers]\n')
    _write(tmp_path, '/etc/containers/containers.conf', '[containers]\n')
    _write(tmp_path, cc.DROPIN, '[containers]\ndefault_ulimits = ["nofile=10:20"]\n')
    root = str(tmp_path)
    assert cc.config_files(root, dropins=False) == list(cc.MAIN_FILES)
    assert cc.config_files(root) == list(cc.MAIN_FILES) + [cc.DROPIN]
    assert cc.ignored_dropins(root) == [cc.DROPIN]
    assert cc.effective(root, dropins=False)['default_ulimits'] == {}
    assert list(cc.effective(root)['default_ulimits']) == ['nofile']


def test_user_overrides(tmp_path):
    root = str(tmp_path)
    _write(tmp_path, '/home/ana/.config/containers/containers.conf',
           '[engine]\nevents_logger = "file"\n[containers]\nshm_size = "2g"\n')
    _write(tmp_path, '/home/ana/.config/containers/containers.conf.d/50-nofile.conf',
           '[containers]\ndefault_ulimits = ["nofile=1024:2048"]\n')
    _write(tmp_path, '/home/bo/.config/containers/containers.conf', '[network]\n')
    found = cc.user_overrides([('ana', '/home/ana'), ('bo', '/home/bo'), ('nobody', '/')], root)
    assert found == [
        {'user': 'ana', 'source': '/home/ana/.config/containers/containers.conf:4:1',
         'key': 'shm_size', 'append': False},
        {'user': 'ana',
         'source': '/home/ana/.config/containers/containers.conf.d/50-nofile.conf:2:1',
         'key': 'default_ulimits', 'append': False}]
    # the system files' {append=true} is sticky into the user's files: ana's list adds to them
    found = cc.user_overrides([('ana', '/home/ana')], root, append=True)
    assert [o['append'] for o in found] == [False, True]


def test_podman_version_from_dpkg_status(tmp_path):
    """Asked without running podman, which fails on a broken containers.conf."""
    _write(tmp_path, versions.DPKG_STATUS, 'Package: podman\nStatus: install ok installed\n'
           'Version: 3.0.1+dfsg1-3+deb11u5\n')
    assert versions.podman_version(None, root=str(tmp_path)) == (3, 0, 1)
    assert versions.podman_version(None, root=str(tmp_path / 'none')) is None
