"""scripts/plot_throughput.py: the demo's picture (images/s per context before and after tuning,
and the num_workers sweep) as PNG and SVG, and the README's copy of it in docs/images/, which
must be the script's output for the figures kept in benchmarks/demo-throughput.json."""
import hashlib
import json
import os
import struct
import sys
import zlib

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import plot_throughput  # noqa: E402  pylint: disable=wrong-import-position

IMAGE = os.path.join(ROOT, 'docs', 'images', 'throughput.png')
DATA = os.path.join(ROOT, 'benchmarks', 'demo-throughput.json')

BEFORE = {'host': 'n1', 'contexts': {
    'login': {'ok': False, 'exhausted': 'nofile', 'samples_per_s': 0.0, 'nofile_soft': 1024},
    'service': {'ok': False, 'exhausted': 'nofile', 'samples_per_s': 0.0},
    'container': {'ok': False, 'exhausted': 'shm', 'samples_per_s': 6.2, 'shm_size_bytes': 64 * 2 ** 20},
    'slurm_job': {'ok': False, 'exhausted': 'nofile'}}}
AFTER = {'host': 'n1', 'job': {'job': {'ranks_per_node': 2, 'num_workers': 2}}, 'contexts': {
    'login': {'ok': True, 'samples_per_s': 11.2, 'ranks': [{'num_workers': 2, 'ok': True, 'samples_per_s': 5.5}],
              'sweep': [{'num_workers': 1, 'ok': True, 'samples_per_s': 3.1},
                        {'num_workers': 3, 'ok': False, 'samples_per_s': 0.0}]},
    'service': {'ok': True, 'samples_per_s': 13.1},
    'container': {'ok': True, 'samples_per_s': 15.0},
    'slurm_job': {'ok': True, 'samples_per_s': 12.0}}}


def png_text(path):
    """The tEXt chunks of a PNG."""
    with open(path, 'rb') as handle:
        data = handle.read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    chunks, offset = {}, 8
    while offset < len(data):
        length, kind = struct.unpack('>I4s', data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b'tEXt':
            key, _nul, value = body.partition(b'\0')
            chunks[key.decode('latin-1')] = value.decode('latin-1')
        elif kind == b'zTXt':
            key, _nul, rest = body.partition(b'\0')
            chunks[key.decode('latin-1')] = zlib.decompress(rest[1:]).decode('latin-1')
        offset += 12 + length
    return chunks


def lab(tmp_path):
    for phase, data in (('job-before', BEFORE), ('job-after', AFTER)):
        (tmp_path / phase).mkdir()
        (tmp_path / phase / 'n1.json').write_text(json.dumps(data))
    return str(tmp_path)


def test_the_figures_taken_from_the_demo_results(tmp_path):
    data = plot_throughput.collect(lab(tmp_path))
    assert data['before']['container'] == {
        'ok': False, 'images_per_s': 6.2, 'exhausted': 'shm', 'nofile_soft': None, 'shm_size_mib': 64}
    assert data['after']['login']['images_per_s'] == 11.2
    # the sweep's points, in order; the first rank's own run (2 workers, beside the other
    # rank) is not one of them
    assert [(p['num_workers'], p['ok'], p['images_per_s']) for p in data['sweep']] == [
        (1, True, 3.1), (3, False, 0.0)]
    assert data['job'] == {'ranks_per_node': 2, 'num_workers': 2}


def test_a_job_of_one_rank_adds_its_own_run_to_the_sweep(tmp_path):
    after = json.loads(json.dumps(AFTER))
    login = after['contexts']['login']
    del login['ranks']
    login['num_workers'] = 2
    (tmp_path / 'job-before').mkdir()
    (tmp_path / 'job-after').mkdir()
    (tmp_path / 'job-before' / 'n1.json').write_text(json.dumps(BEFORE))
    (tmp_path / 'job-after' / 'n1.json').write_text(json.dumps(after))
    data = plot_throughput.collect(str(tmp_path))
    assert [(p['num_workers'], p['images_per_s']) for p in data['sweep']] == [(1, 3.1), (2, 11.2), (3, 0.0)]


def test_the_plot_from_a_lab(tmp_path):
    pytest.importorskip('matplotlib')
    assert plot_throughput.main([lab(tmp_path)]) == 0
    out = str(tmp_path / 'throughput')
    data = json.loads((tmp_path / 'throughput.json').read_text())
    assert plot_throughput.check_files(out, data) == []
    svg = (tmp_path / 'throughput.svg').read_text()
    for label in ('login', 'service', 'container', 'slurm_job', 'failed:', 'shm', '11.2', 'failed point'):
        assert label in svg
    stamp = png_text(out + '.png')['Source']
    digest = hashlib.sha256((tmp_path / 'throughput.json').read_bytes()).hexdigest()
    assert 'sha256=%s' % digest in stamp


def test_the_check_finds_a_plot_that_is_not_one(tmp_path):
    pytest.importorskip('matplotlib')
    plot_throughput.main([lab(tmp_path)])
    out = str(tmp_path / 'throughput')
    data = json.loads((tmp_path / 'throughput.json').read_text())
    data['after']['k8s_pod'] = {'ok': True, 'images_per_s': 1.0}        # a context not drawn
    (tmp_path / 'throughput.png').write_bytes(b'GIF89a')
    problems = plot_throughput.check_files(out, data)
    assert problems == ['%s.png is not a PNG' % out, "%s.svg does not say 'k8s_pod'" % out]
    (tmp_path / 'throughput.svg').write_text('<svg><text>half')
    assert 'throughput.svg' in plot_throughput.check_files(out, data)[-1]


def test_the_readme_image_is_the_plot_of_the_benchmarks_figures():
    """docs/images/throughput.png records the figures' file and hash and the script's hash: a
    new demo's figures or a changed script need the image redrawn (the command is in
    scripts/plot_throughput.py's docstring)."""
    stamp = png_text(IMAGE)['Source']
    with open(DATA, 'rb') as handle:
        data_hash = hashlib.sha256(handle.read()).hexdigest()
    with open(os.path.join(ROOT, 'scripts', 'plot_throughput.py'), 'rb') as handle:
        script_hash = hashlib.sha256(handle.read()).hexdigest()
    assert stamp == 'data benchmarks/demo-throughput.json sha256=%s; script scripts/plot_throughput.py sha256=%s' % (
        data_hash, script_hash)


def test_the_readme_image_redrawn_is_the_same(tmp_path):
    pytest.importorskip('matplotlib')
    plot_throughput.main(['--data', DATA, '--out', str(tmp_path / 'throughput')])
    with open(IMAGE, 'rb') as handle:
        assert (tmp_path / 'throughput.png').read_bytes() == handle.read()
    with open(DATA) as handle:
        assert plot_throughput.check_files(str(tmp_path / 'throughput'), json.load(handle)) == []
