# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the pytorch_env role, as plain functions.

pytorch_env: which installer (URL, sha256) for a provider, version and architecture; which conda
channels and which of them need Anaconda's Terms of Service; which PyTorch wheel index for an
NVIDIA driver version; the pip arguments for an index or an offline wheelhouse.
(The dataloader_check role's filters are in dataloader_check.py.)

Everything here is plain Python (the Ansible import is optional) so tests/unit can test it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    from ansible.errors import AnsibleFilterError as _Error
except ImportError:  # pragma: no cover - plain Python use
    _Error = ValueError

PROVIDERS = ('miniforge', 'miniconda', 'venv')
CONDA_PROVIDERS = ('miniforge', 'miniconda')

# uname -m / ansible_architecture spellings -> the spelling in installer file names.
_ARCH_ALIASES = {
    'x86_64': 'x86_64', 'amd64': 'x86_64', 'x64': 'x86_64',
    'aarch64': 'aarch64', 'arm64': 'aarch64',
    'ppc64le': 'ppc64le', 's390x': 's390x',
}

# Anaconda's channels behind the Terms of Service (repo.anaconda.com); conda-forge is not.
_ANACONDA_CHANNELS = {
    'main': 'https://repo.anaconda.com/pkgs/main',
    'r': 'https://repo.anaconda.com/pkgs/r',
    'msys2': 'https://repo.anaconda.com/pkgs/msys2',
}
_DEFAULT_CHANNELS = {
    'miniforge': ['conda-forge'],
    'miniconda': [_ANACONDA_CHANNELS['main'], _ANACONDA_CHANNELS['r']],
}

_SHA256 = re.compile(r'^[0-9a-f]{64}$')
_DRIVER = re.compile(r'^\d+(\.\d+){0,2}$')


def _fail(message):
    raise _Error(message)


def _check_provider(provider, allowed=PROVIDERS):
    if provider not in allowed:
        _fail('pytorch_env_provider must be one of %s, not %r' % (', '.join(allowed), provider))


def pytorch_env_arch(machine):
    """Normalise an architecture name (ansible_architecture, uname -m) for installer names."""
    arch = _ARCH_ALIASES.get(str(machine).strip().lower())
    if arch is None:
        _fail('no conda installer for architecture %r (known: %s)'
              % (machine, ', '.join(sorted(set(_ARCH_ALIASES.values())))))
    return arch


def pytorch_env_installer(provider, machine, installers, version='', url_pattern='', sha256=''):
    """The installer to download for a conda provider on an architecture.

    installers: {provider: {version, url, sha256: {version: {arch: sha256}}}} (role defaults).
    version, url_pattern: overrides ('' keeps the default). sha256: an override, either one
    string (for this host's architecture) or {arch: sha256}; without it the sha256 comes from the
    table for the chosen version, and a missing entry is an error: never install unverified.
    Returns {provider, version, arch, url, filename, sha256}.
    """
    _check_provider(provider, CONDA_PROVIDERS)
    arch = pytorch_env_arch(machine)
    spec = (installers or {}).get(provider) or {}
    version = str(version or spec.get('version') or '')
    if not version:
        _fail('no installer version for %s: set pytorch_env_installer_version' % provider)
    pattern = url_pattern or spec.get('url') or ''
    if '{version}' not in pattern or '{arch}' not in pattern:
        _fail('installer URL pattern %r must contain {version} and {arch}' % pattern)
    url = pattern.replace('{version}', version).replace('{arch}', arch)
    if isinstance(sha256, dict):
        checksum = sha256.get(arch, '')
    else:
        checksum = sha256 or ''
    if not checksum:
        checksum = ((spec.get('sha256') or {}).get(version) or {}).get(arch, '')
    checksum = str(checksum).strip().lower()
    if not checksum:
        _fail('no sha256 known for %s %s on %s: set pytorch_env_installer_sha256 to the value '
              'published with the release' % (provider, version, arch))
    if not _SHA256.match(checksum):
        _fail('%r is not a sha256 (64 hex digits)' % checksum)
    return {
        'provider': provider,
        'version': version,
        'arch': arch,
        'url': url,
        'filename': url.rstrip('/').rsplit('/', 1)[-1],
        'sha256': checksum,
    }


def pytorch_env_conda_channels(provider, channels=None):
    """The explicit channel list for a conda provider (channels: an override, [] keeps defaults).

    Miniconda's implicit 'defaults' is spelled out as its URLs so that .condarc, ToS acceptance and
    `conda create --override-channels` all name the same channels.
    """
    _check_provider(provider, CONDA_PROVIDERS)
    chosen = list(channels) if channels else list(_DEFAULT_CHANNELS[provider])
    result = []
    for channel in chosen:
        channel = str(channel).strip().rstrip('/')
        if channel == 'defaults':
            expanded = [_ANACONDA_CHANNELS['main'], _ANACONDA_CHANNELS['r']]
        elif channel in _ANACONDA_CHANNELS:
            expanded = [_ANACONDA_CHANNELS[channel]]
        else:
            expanded = [channel]
        for item in expanded:
            if item and item not in result:
                result.append(item)
    if not result:
        _fail('no conda channels for %s' % provider)
    return result


def pytorch_env_tos_channels(channels):
    """The channels among `channels` whose use needs Anaconda's Terms of Service accepted."""
    gated = []
    for channel in channels or []:
        url = str(channel).strip().rstrip('/')
        url = _ANACONDA_CHANNELS.get(url, url)
        if re.match(r'^https?://(repo|conda)\.anaconda\.(com|org)/pkgs/', url) and url not in gated:
            gated.append(url)
    return gated


def pytorch_env_nvidia_driver(output):
    """The driver version from `nvidia-smi --query-gpu=driver_version --format=csv,noheader`.

    '' when there is no usable line (no GPU, no driver, an error message instead of a version).
    Every GPU of a host runs the same driver; the first line is taken.
    """
    for line in str(output or '').splitlines():
        line = line.strip()
        if _DRIVER.match(line):
            return line
    return ''


def _version_tuple(text):
    return tuple(int(part) for part in str(text).split('.') if part.isdigit())


def pytorch_env_cuda_variant(driver_version, variants, override=''):
    """The PyTorch wheel variant ('cu128', 'cpu', ...) for an NVIDIA driver version.

    variants: [{name, min_driver}] - the CUDA builds published for the torch version, each with
    the oldest Linux driver its CUDA toolkit supports. The newest variant the driver supports
    wins; no driver ('' : no nvidia-smi) means 'cpu'; a driver older than every variant is an
    error (a CPU build would silently ignore the GPUs). override wins when set.
    """
    if override:
        return str(override)
    driver = str(driver_version or '').strip()
    if not driver:
        return 'cpu'
    if not _DRIVER.match(driver):
        _fail('%r is not an NVIDIA driver version' % driver)
    have = _version_tuple(driver)
    ordered = sorted(variants or [], key=lambda item: _version_tuple(item['min_driver']),
                     reverse=True)
    for item in ordered:
        if have >= _version_tuple(item['min_driver']):
            return str(item['name'])
    _fail('NVIDIA driver %s is older than every CUDA variant in pytorch_env_cuda_variants (%s); '
          'upgrade the driver or set pytorch_env_torch_variant'
          % (driver, ', '.join('%s>=%s' % (i['name'], i['min_driver']) for i in ordered)))
    return 'cpu'  # pragma: no cover


def pytorch_env_torch_index(variant, base='https://download.pytorch.org/whl', override=''):
    """The pip index URL for a wheel variant (override: a full URL, e.g. an internal mirror)."""
    if override:
        return str(override).rstrip('/')
    if not re.match(r'^(cpu|cu\d+|rocm[\d.]+|xpu)$', str(variant)):
        _fail('%r is not a PyTorch wheel variant (cpu, cu128, rocm6.4, ...)' % variant)
    return '%s/%s' % (str(base).rstrip('/'), variant)


def pytorch_env_pip_args(index_url='', wheelhouse=''):
    """extra_args for pip: offline from a wheelhouse (no index at all) or from one index."""
    if wheelhouse:
        return '--no-index --find-links %s' % wheelhouse
    if index_url:
        return '--index-url %s' % index_url
    return ''


class FilterModule(object):
    """gpufleet.tuning filters for the pytorch_env role."""

    def filters(self):
        return {
            'pytorch_env_arch': pytorch_env_arch,
            'pytorch_env_installer': pytorch_env_installer,
            'pytorch_env_conda_channels': pytorch_env_conda_channels,
            'pytorch_env_tos_channels': pytorch_env_tos_channels,
            'pytorch_env_nvidia_driver': pytorch_env_nvidia_driver,
            'pytorch_env_cuda_variant': pytorch_env_cuda_variant,
            'pytorch_env_torch_index': pytorch_env_torch_index,
            'pytorch_env_pip_args': pytorch_env_pip_args,
        }
