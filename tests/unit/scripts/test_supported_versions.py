"""The ansible-core lines the collection says it supports are the ones CI installs and tests
(docs/supported-versions.md): meta/runtime.yml, the roles' min_ansible_version, the EE's pin and
the docs follow the requirements files; run_suites.py runs a job with its line's venv."""
import glob
import os
import re
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import run_suites  # noqa: E402  pylint: disable=wrong-import-position


def read(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return handle.read()


def core_pin(path):
    return re.search(r'^ansible-core==(\d+)\.(\d+)\.(\d+)$', read(path), re.M).groups()


def newest_line():
    return re.search(r'^NEWEST_LINE := (\S+)$', read('Makefile'), re.M).group(1)


def test_requires_ansible_is_the_oldest_tested_line():
    major, minor, _patch = core_pin('requirements-dev.txt')
    runtime = yaml.safe_load(read('meta', 'runtime.yml'))
    assert runtime['requires_ansible'] == '>=%s.%s.0' % (major, minor)
    metas = glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'main.yml'))
    assert metas
    for path in metas:
        with open(path) as handle:
            assert yaml.safe_load(handle)['galaxy_info']['min_ansible_version'] == '%s.%s' % (
                major, minor), path


def test_every_tested_line_has_a_pinned_requirements_file_and_is_documented():
    docs = read('docs', 'supported-versions.md')
    for path in ['requirements-dev.txt'] + sorted(
            os.path.basename(p) for p in glob.glob(os.path.join(ROOT, 'requirements-core*.txt'))):
        version = '.'.join(core_pin(path))
        assert '(%s' % version in docs, (path, version)
    line = newest_line()
    assert os.path.exists(os.path.join(ROOT, 'requirements-core%s.txt' % line))


def test_the_ee_is_on_the_newest_line():
    version = '.'.join(core_pin('requirements-core%s.txt' % newest_line()))
    ee = yaml.safe_load(read('execution-environment.yml'))
    assert ee['dependencies']['ansible_core']['package_pip'] == 'ansible-core==%s' % version


def test_a_job_on_a_line_gets_that_lines_venv_first_on_path(tmp_path, monkeypatch):
    monkeypatch.setattr(run_suites, 'ROOT', str(tmp_path))
    monkeypatch.setenv('PATH', '/usr/bin')
    monkeypatch.delenv('GPUFLEET_NODE_SUFFIX', raising=False)
    with pytest.raises(SystemExit, match=r'make venv-2\.21'):
        run_suites.Job('molecule@2.21:debian12:pam', 'debian12', lambda d: {})
    bin_dir = tmp_path / '.venv-2.21' / 'bin'
    bin_dir.mkdir(parents=True)
    (bin_dir / 'ansible-playbook').write_text(u'#!/bin/sh\n')
    (bin_dir / 'ansible-playbook').chmod(0o755)
    job = run_suites.Job('molecule@2.21:debian12:pam', 'debian12', lambda d: {})
    assert job.name == 'debian12-pam-core2.21'
    assert job.env['PATH'] == '%s:/usr/bin' % bin_dir
    assert job.env['GPUFLEET_NODE_SUFFIX'] == '-core221'
    assert job.env['MOLECULE_EPHEMERAL_DIRECTORY'].endswith('debian12-pam-core2.21')
    plain = run_suites.Job('molecule:debian12:pam', 'debian12', lambda d: {})
    assert plain.name == 'debian12-pam' and 'PATH' not in plain.env
    command = run_suites.Job('cmd@2.21:fleet-test:true', 'debian12', lambda d: {})
    assert command.name == 'fleet-test' and command.env['PATH'].startswith(str(bin_dir))
    with pytest.raises(SystemExit, match='ansible-core line'):
        run_suites.Job('molecule@latest:debian12:pam', 'debian12', lambda d: {})


def test_a_job_that_cannot_start_fails_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(run_suites, 'OUT', str(tmp_path))
    monkeypatch.setenv('PATH', str(tmp_path))  # no molecule there
    job = run_suites.Job('molecule:debian12:pam', 'debian12', lambda d: {})
    job.run()
    assert job.rc == 127
    assert 'cannot start molecule' in (tmp_path / 'debian12-pam.log').read_text()
