"""Miniforge with torch, or a clear skip where the installer is unreachable."""
import os

import pytest

ROOT = os.environ.get('MOLECULE_PROJECT_DIRECTORY',
                      os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
MARKER = os.path.join(ROOT, 'build', 'molecule', 'pytorch_conda', 'skipped')
PYTHON = '/opt/gpufleet/conda/envs/pytorch/bin/python'


@pytest.fixture(autouse=True)
def reachable():
    if os.path.exists(MARKER):
        with open(MARKER) as handle:
            pytest.skip(handle.read().strip())


def test_conda_installed(host):
    assert host.file('/opt/gpufleet/conda/bin/conda').exists
    condarc = host.file('/opt/gpufleet/conda/.condarc').content_string
    assert '- conda-forge' in condarc and 'repo.anaconda.com' not in condarc


def test_env_has_pinned_python_and_torch(host):
    assert host.check_output('%s -c "import sys; print(sys.version[:4])"', PYTHON) == '3.11'
    assert host.check_output('%s -W ignore -c "import torch; print(torch.__version__)"',
                             PYTHON).startswith('2.13.0')
