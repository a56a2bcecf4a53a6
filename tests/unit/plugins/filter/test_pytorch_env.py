"""Unit tests of the pytorch_env decisions: installer, channels, ToS, wheel index, pip args."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.tuning.plugins.filter import pytorch_env as pe

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


@pytest.fixture(scope='module')
def defaults():
    with open(os.path.join(ROOT, 'roles', 'pytorch_env', 'defaults', 'main.yml')) as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope='module')
def installers(defaults):
    return defaults['pytorch_env_installers']


def test_arch_aliases():
    assert pe.pytorch_env_arch('x86_64') == 'x86_64'
    assert pe.pytorch_env_arch('amd64') == 'x86_64'
    assert pe.pytorch_env_arch('arm64') == 'aarch64'
    assert pe.pytorch_env_arch('AARCH64') == 'aarch64'
    with pytest.raises(Exception, match='no conda installer'):
        pe.pytorch_env_arch('mips')


def test_miniforge_default_installer_is_pinned_and_verified(installers):
    got = pe.pytorch_env_installer('miniforge', 'x86_64', installers)
    version = installers['miniforge']['version']
    assert got['url'] == ('https://github.com/conda-forge/miniforge/releases/download/'
                          '%s/Miniforge3-%s-Linux-x86_64.sh' % (version, version))
    assert got['filename'] == 'Miniforge3-%s-Linux-x86_64.sh' % version
    assert len(got['sha256']) == 64
    arm = pe.pytorch_env_installer('miniforge', 'aarch64', installers)
    assert arm['url'].endswith('-Linux-aarch64.sh')
    assert arm['sha256'] != got['sha256']


def test_real_published_checksums(installers):
    # Values published with the releases (recorded in spack-packages' miniforge3/miniconda3).
    forge = installers['miniforge']['sha256']['26.1.1-3']
    assert forge['x86_64'] == 'b25b828b702df4dd2a6d24d4eb56cfa912471dd8e3342cde2c3d86fe3dc2d870'
    assert forge['aarch64'] == '83280e4ee71a5bd547d6b318f96e9ababe1054911ff6cc2b8801ce5493fe67e5'
    conda = installers['miniconda']['sha256']['py313_25.5.1-1']
    assert conda['x86_64'] == '612af113b49db0368e2be41ac4d51b7088eebd5f31daeeb89f23fff8f920db58'


def test_miniconda_url(installers):
    got = pe.pytorch_env_installer('miniconda', 'x86_64', installers)
    assert got['url'] == ('https://repo.anaconda.com/miniconda/'
                          'Miniconda3-py313_25.5.1-1-Linux-x86_64.sh')


def test_missing_checksum_is_an_error_not_an_unverified_install(installers):
    # No published aarch64 value recorded for the pinned Miniconda.
    with pytest.raises(Exception, match='no sha256 known for miniconda'):
        pe.pytorch_env_installer('miniconda', 'aarch64', installers)
    # Another version without a checksum: refused too.
    with pytest.raises(Exception, match='no sha256 known'):
        pe.pytorch_env_installer('miniforge', 'x86_64', installers, version='99.0.0-0')


def test_overrides_mirror_version_and_checksum(installers):
    sha = 'ab' * 32
    got = pe.pytorch_env_installer(
        'miniforge', 'amd64', installers, version='25.3.0-3',
        url_pattern='https://mirror.example/conda/{version}/Miniforge3-{version}-Linux-{arch}.sh',
        sha256={'x86_64': sha.upper()})
    assert got['url'] == 'https://mirror.example/conda/25.3.0-3/Miniforge3-25.3.0-3-Linux-x86_64.sh'
    assert got['sha256'] == sha
    single = pe.pytorch_env_installer('miniforge', 'x86_64', installers, sha256=sha)
    assert single['sha256'] == sha


def test_bad_overrides(installers):
    with pytest.raises(Exception, match='must contain'):
        pe.pytorch_env_installer('miniforge', 'x86_64', installers, url_pattern='https://x/a.sh')
    with pytest.raises(Exception, match='not a sha256'):
        pe.pytorch_env_installer('miniforge', 'x86_64', installers, sha256='abc')
    with pytest.raises(Exception, match='must be one of'):
        pe.pytorch_env_installer('venv', 'x86_64', installers)


def test_channels_are_explicit():
    assert pe.pytorch_env_conda_channels('miniforge') == ['conda-forge']
    assert pe.pytorch_env_conda_channels('miniconda') == [
        'https://repo.anaconda.com/pkgs/main', 'https://repo.anaconda.com/pkgs/r']
    assert pe.pytorch_env_conda_channels('miniconda', ['defaults', 'main', 'conda-forge/']) == [
        'https://repo.anaconda.com/pkgs/main', 'https://repo.anaconda.com/pkgs/r', 'conda-forge']


def test_tos_only_for_anaconda_channels():
    assert pe.pytorch_env_tos_channels(['conda-forge']) == []
    assert pe.pytorch_env_tos_channels(pe.pytorch_env_conda_channels('miniconda')) == [
        'https://repo.anaconda.com/pkgs/main', 'https://repo.anaconda.com/pkgs/r']
    assert pe.pytorch_env_tos_channels(['msys2', 'https://mirror.example/pkgs/main']) == [
        'https://repo.anaconda.com/pkgs/msys2']


@pytest.mark.parametrize('output, expected', [
    ('570.133.20\n570.133.20\n', '570.133.20'),
    ('  535.54.03 ', '535.54.03'),
    ('', ''),
    ('NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.', ''),
    (None, ''),
])
def test_nvidia_driver_parse(output, expected):
    assert pe.pytorch_env_nvidia_driver(output) == expected


@pytest.mark.parametrize('driver, expected', [
    ('', 'cpu'),
    ('580.65.06', 'cu130'),
    ('575.51.03', 'cu128'),
    ('570.26', 'cu128'),
    ('570.133.20', 'cu128'),
    ('565.57.01', 'cu126'),
    ('560.28.03', 'cu126'),
])
def test_variant_from_driver(defaults, driver, expected):
    variants = defaults['pytorch_env_cuda_variants']
    assert pe.pytorch_env_cuda_variant(driver, variants) == expected


def test_variant_too_old_driver_and_override(defaults):
    variants = defaults['pytorch_env_cuda_variants']
    with pytest.raises(Exception, match='older than every CUDA variant'):
        pe.pytorch_env_cuda_variant('470.57.02', variants)
    assert pe.pytorch_env_cuda_variant('470.57.02', variants, override='cpu') == 'cpu'
    # Numeric, not string, comparison: 1000.x is newer than 580.x.
    assert pe.pytorch_env_cuda_variant('1000.1', variants) == 'cu130'


def test_index_urls(defaults):
    base = defaults['pytorch_env_torch_index_base']
    assert pe.pytorch_env_torch_index('cpu', base) == 'https://download.pytorch.org/whl/cpu'
    assert pe.pytorch_env_torch_index('cu128', base + '/') == 'https://download.pytorch.org/whl/cu128'
    assert pe.pytorch_env_torch_index('cu128', base, 'https://pypi.internal/torch/') == \
        'https://pypi.internal/torch'
    with pytest.raises(Exception, match='not a PyTorch wheel variant'):
        pe.pytorch_env_torch_index('cuda', base)


def test_pip_args():
    assert pe.pytorch_env_pip_args('', '/var/cache/wh') == '--no-index --find-links /var/cache/wh'
    assert pe.pytorch_env_pip_args('https://download.pytorch.org/whl/cpu', '/wh').startswith(
        '--no-index')
    assert pe.pytorch_env_pip_args('https://download.pytorch.org/whl/cpu') == \
        '--index-url https://download.pytorch.org/whl/cpu'
    assert pe.pytorch_env_pip_args() == ''


def test_filters_are_registered():
    names = pe.FilterModule().filters()
    for name in ('pytorch_env_installer', 'pytorch_env_cuda_variant', 'pytorch_env_torch_index',
                 'pytorch_env_tos_channels'):
        assert callable(names[name])
