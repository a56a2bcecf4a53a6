# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bytecode_cache against Python's real zipimport: a payload zip laid out as AnsiballZ lays it
out (the collection's module_utils under ansible_collections/...), imported in a fresh
interpreter that counts every compile() of a module_utils file.

What must hold: each module is compiled at most once; a second payload with the same sources
compiles none of them and still runs them from its own path (tracebacks name the new zip); a
changed source is compiled again (a stale entry is never used); the cache is used only in a
directory the user alone owns (not a link, no group or other bits) and never when turned off;
a damaged entry is compiled again; old entries are pruned; outside a zip nothing changes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys
import time
import zipfile

import pytest

import conftest

UTILS_DIR = 'ansible_collections/gpufleet/tuning/plugins/module_utils'
SOURCE = os.path.join(conftest.ROOT, 'plugins', 'module_utils', 'bytecode_cache.py')

ALPHA = '''
VALUE = %d


def fail():
    raise RuntimeError('alpha failed')
'''
BETA = '''
from ansible_collections.gpufleet.tuning.plugins.module_utils import alpha

VALUE = alpha.VALUE * 10
'''

PROBE = r'''
import builtins, json, sys, traceback
sys.path.insert(0, %(path)r)
compiled = []
real = builtins.compile


def counting(source, filename, *args, **kwargs):
    if isinstance(filename, str) and '/module_utils/' in filename:
        compiled.append(filename.split('/module_utils/', 1)[1])
    return real(source, filename, *args, **kwargs)


builtins.compile = counting
from ansible_collections.gpufleet.tuning.plugins.module_utils import bytecode_cache
before = list(compiled)
finder = bytecode_cache.install(cache_dir=%(cache)r)
again = bytecode_cache.install(cache_dir=%(cache)r)
from ansible_collections.gpufleet.tuning.plugins.module_utils import alpha
from ansible_collections.gpufleet.tuning.plugins.module_utils.sub import beta
from ansible_collections.gpufleet.tuning.plugins.module_utils import sub
try:
    alpha.fail()
except RuntimeError:
    frames = traceback.extract_tb(sys.exc_info()[2])
print(json.dumps({
    'installed': finder is not None, 'second_install': again is not None,
    'cached': bool(finder and finder.cache),
    'compiled': sorted(name for name in compiled if name not in before),
    'alpha': alpha.VALUE, 'beta': beta.VALUE, 'alpha_file': alpha.__file__,
    'sub_path': list(sub.__path__), 'frame': frames[-1].filename,
}))
'''


def payload(directory, name, alpha_value=1):
    """A zip like an AnsiballZ payload, holding bytecode_cache and three test module_utils."""
    path = os.path.join(str(directory), name)
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as archive:
        parts = UTILS_DIR.split('/')
        for depth in range(1, len(parts) + 1):
            archive.writestr('/'.join(parts[:depth]) + '/__init__.py', '')
        with open(SOURCE) as handle:
            archive.writestr(UTILS_DIR + '/bytecode_cache.py', handle.read())
        archive.writestr(UTILS_DIR + '/alpha.py', ALPHA % alpha_value)
        archive.writestr(UTILS_DIR + '/sub/__init__.py', 'KIND = "package"\n')
        archive.writestr(UTILS_DIR + '/sub/beta.py', BETA)
    return path


def run(path, cache, env=None):
    environ = dict(os.environ)
    environ.pop('GPUFLEET_BYTECODE_CACHE', None)
    environ.update(env or {})
    out = subprocess.check_output([sys.executable, '-c', PROBE % dict(path=path, cache=cache)],
                                  universal_newlines=True, env=environ)
    return json.loads(out.strip().splitlines()[-1])


def entries(cache):
    return sorted(name for name in os.listdir(cache) if name.endswith('.code'))


EVERY = ['alpha.py', 'sub/__init__.py', 'sub/beta.py']

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the cache is kept for root only')


def test_first_run_compiles_each_module_once_and_keeps_it(tmp_path):
    cache = str(tmp_path / 'cache' / 'bytecode')
    result = run(payload(tmp_path, 'one.zip'), cache)
    assert result['installed'] and result['cached'] and not result['second_install']
    assert result['compiled'] == EVERY
    assert (result['alpha'], result['beta']) == (1, 10)
    assert result['sub_path'] == [os.path.join(str(tmp_path), 'one.zip', UTILS_DIR, 'sub')]
    assert len(entries(cache)) == 3
    assert os.stat(cache).st_mode & 0o777 == 0o700
    assert [os.stat(os.path.join(cache, name)).st_mode & 0o777 for name in entries(cache)] == [0o600] * 3
    assert [name for name in os.listdir(cache) if not name.endswith('.code')] == []


def test_second_payload_compiles_nothing_and_runs_from_its_own_path(tmp_path):
    cache = str(tmp_path / 'cache')
    run(payload(tmp_path, 'one.zip'), cache)
    second = payload(tmp_path, 'two.zip')
    result = run(second, cache)
    assert result['compiled'] == []
    assert (result['alpha'], result['beta']) == (1, 10)
    assert result['alpha_file'] == os.path.join(second, UTILS_DIR, 'alpha.py')
    assert result['frame'] == os.path.join(second, UTILS_DIR, 'alpha.py')


def test_a_changed_source_is_compiled_again(tmp_path):
    cache = str(tmp_path / 'cache')
    run(payload(tmp_path, 'one.zip'), cache)
    result = run(payload(tmp_path, 'two.zip', alpha_value=2), cache)
    assert result['compiled'] == ['alpha.py']
    assert (result['alpha'], result['beta']) == (2, 20)
    assert len(entries(cache)) == 4


@pytest.mark.parametrize('mode', [0o755, 0o770, 0o701])
def test_a_directory_others_may_use_is_not_a_cache(tmp_path, mode):
    cache = str(tmp_path / 'cache')
    os.mkdir(cache)
    os.chmod(cache, mode)
    result = run(payload(tmp_path, 'one.zip'), cache)
    assert not result['cached']
    assert result['compiled'] == EVERY and result['beta'] == 10
    assert os.listdir(cache) == []


def test_a_link_is_not_a_cache(tmp_path):
    target = str(tmp_path / 'elsewhere')
    os.mkdir(target, 0o700)
    cache = str(tmp_path / 'cache')
    os.symlink(target, cache)
    result = run(payload(tmp_path, 'one.zip'), cache)
    assert not result['cached'] and result['compiled'] == EVERY
    assert os.listdir(target) == []


def test_a_linked_entry_is_not_read(tmp_path):
    cache = str(tmp_path / 'cache')
    run(payload(tmp_path, 'one.zip'), cache)
    for name in entries(cache):
        path = os.path.join(cache, name)
        os.rename(path, path + '.real')
        os.symlink(path + '.real', path)
    result = run(payload(tmp_path, 'two.zip'), cache)
    assert result['compiled'] == EVERY and result['beta'] == 10


def test_turned_off_it_compiles_once_and_keeps_nothing(tmp_path):
    cache = str(tmp_path / 'cache')
    result = run(payload(tmp_path, 'one.zip'), cache, {'GPUFLEET_BYTECODE_CACHE': '0'})
    assert result['installed'] and not result['cached']
    assert result['compiled'] == EVERY
    assert not os.path.exists(cache)


def test_a_damaged_entry_is_compiled_again(tmp_path):
    cache = str(tmp_path / 'cache')
    run(payload(tmp_path, 'one.zip'), cache)
    for name in entries(cache):
        with open(os.path.join(cache, name), 'r+b') as handle:
            handle.truncate(7)
    result = run(payload(tmp_path, 'two.zip'), cache)
    assert result['compiled'] == EVERY
    assert (result['alpha'], result['beta']) == (1, 10)


def test_old_entries_are_pruned_when_one_is_written(tmp_path):
    cache = str(tmp_path / 'cache')
    run(payload(tmp_path, 'one.zip'), cache)
    kept = entries(cache)
    old = os.path.join(cache, 'f' * 64 + '.code')
    leftover = os.path.join(cache, '.x.1.tmp')
    for path in (old, leftover):
        with open(path, 'wb') as handle:
            handle.write(b'x')
        stale = time.time() - 31 * 86400
        os.utime(path, (stale, stale))
    run(payload(tmp_path, 'two.zip', alpha_value=3), cache)
    assert not os.path.exists(old) and not os.path.exists(leftover)
    assert set(kept) < set(entries(cache))


def test_outside_a_zip_nothing_is_installed(tmp_path):
    code = ('import sys\nsys.path.insert(0, %r)\n'
            'from ansible_collections.gpufleet.tuning.plugins.module_utils import bytecode_cache\n'
            'print(bytecode_cache.install(cache_dir=%r) is None, any(type(f).__name__ == "_Finder"'
            ' for f in sys.meta_path))' % (conftest.COLLECTIONS, str(tmp_path / 'cache')))
    out = subprocess.check_output([sys.executable, '-c', code], universal_newlines=True)
    assert out.split() == ['True', 'False']
    assert not os.path.exists(str(tmp_path / 'cache'))
