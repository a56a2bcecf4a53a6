"""The venv with torch exists, and the DataLoader check proved the limits reach training."""
import json
import os
import sys

import pytest

ROOT = os.environ.get('MOLECULE_PROJECT_DIRECTORY',
                      os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
RESULTS = os.path.join(ROOT, 'build', 'molecule', 'pytorch', 'results')
PYTHON = '/opt/gpufleet/pytorch/bin/python'
SCRIPT = '/usr/local/libexec/gpufleet/dataloader_smoke.py'
sys.path.insert(0, os.path.join(ROOT, 'tests'))
from scenario_support import shm_repro_command, shm_repro_facts  # noqa: E402
USER = 'gpufleet-check'
TUNED = 16384


@pytest.fixture(scope='module')
def results(host):
    name = host.check_output('hostname')
    paths = [os.path.join(RESULTS, f) for f in os.listdir(RESULTS) if f.endswith('.json')]
    assert paths, 'no results fetched to %s' % RESULTS
    with open(sorted(paths, key=os.path.getmtime)[-1]) as handle:
        data = json.load(handle)
    assert data['contexts']['login']['host'] == name
    return data


def test_torch_in_the_venv(host):
    out = host.check_output('%s -W ignore -c "import torch, numpy; print(torch.__version__)"', PYTHON)
    assert out.startswith('2.13.0')


def test_pip_used_no_index(host):
    # The wheelhouse on the node is what pip installed from.
    assert host.file('/var/cache/gpufleet/wheelhouse').is_directory
    assert any(name.startswith('torch-2.13.0') for name in
               host.file('/var/cache/gpufleet/wheelhouse').listdir())


def test_canary_ran_out_of_descriptors(results):
    canary = results['canary']
    assert canary['failed'] is True
    assert canary['fd_exhausted'] is True
    assert canary['nofile_soft'] == 1024
    assert 'Too many open files' in canary['error'] or 'ancdata' in canary['error']


@pytest.mark.parametrize('context', ['login', 'service'])
def test_tuned_contexts_pass_with_the_tuned_limit(results, context):
    run = results['contexts'][context]
    assert run['ok'] is True, run['error']
    assert run['nofile_soft'] == TUNED and run['nofile_hard'] == TUNED
    assert run['uid'] != 0
    assert run['samples'] == 8 and run['samples_per_s'] > 0
    # The workload really needed more descriptors than the canary's 1024.
    assert run['peak_fds'] > 1024
    assert run['sharing_strategy'] == 'file_descriptor'


def test_overall_verdict(results):
    assert results['ok'] is True and results['problems'] == []
    assert results['summary'].count('\n') == 0


@pytest.mark.parametrize('command', [
    "runuser -l {user} -c 'ulimit -Sn; ulimit -Hn'",
    'systemd-run --wait --pipe --quiet --collect -p User={user} /bin/sh -c "ulimit -Sn; ulimit -Hn"',
])
def test_the_oracle_agrees(host, command):
    # What the check reported is what a plain login session and a plain service get.
    out = host.check_output(command.format(user=USER)).split()
    assert out == [str(TUNED), str(TUNED)]


def test_no_shared_memory_left_by_the_check_user(host):
    out = host.run("find /dev/shm -maxdepth 1 -name 'torch_*' -user %s" % USER)
    assert out.stdout.strip() == ''


def test_throughput_sweep_and_plot(results):
    sweep = results['contexts']['login']['sweep']
    assert [point['num_workers'] for point in sweep] == [1, 3]
    assert all(point['ok'] and point['samples_per_s'] > 0 for point in sweep)
    svg = os.path.join(RESULTS, '%s-throughput.svg' % results['host'])
    with open(svg) as handle:
        assert '<polyline' in handle.read()


def test_the_role_stopped_what_an_earlier_run_left(host):
    """issue 17.9: prepare.yml left a process of the check user running under the script's
    name (what a killed run leaves); the role's run stopped it."""
    # the transient unit ran (prepare.yml) and ended by the role's SIGKILL, not by itself
    shown = host.check_output('systemctl show -p Result -p ExecMainStatus '
                              'gpufleet-leftover-run.service')
    assert 'Result=signal' in shown and 'ExecMainStatus=9' in shown, shown
    assert host.run('pgrep -u %s -f %s' % (USER, SCRIPT)).rc == 1


def test_a_failed_sweep_point_leaves_no_worker_and_no_shm(host):
    """issue 17.9: a sweep point that runs out of /dev/shm (16 MiB here, like a container's
    64 MB) left its workers running with PPID 1 and torch_* files in /dev/shm, and the next
    context failed; now the run stops them and removes their files."""
    work = '/tmp/gpufleet-shm-repro'
    host.check_output('rm -rf %s && mkdir -p %s' % (work, work))
    facts = shm_repro_facts(host.check_output(
        shm_repro_command(PYTHON, SCRIPT, work, work + '/out.json')))
    record = json.loads(host.file(work + '/out.json').content_string)
    assert record['ok'], record['error']
    point = record['sweep'][0]
    assert not point['ok'] and 'No space left on device' in point['error'], point
    assert facts == {'rc': '0', 'left': '0', 'shm': '0'}, facts


def test_the_job_shape_runs_and_stays_within_the_prediction(host):
    """issue 13.1/13.2: the check runs the job's shape (2 ranks at once, 2 workers each) in a
    login session and a service; each context fits, and every measured peak is at or below the
    demand model's prediction."""
    name = host.check_output('hostname')
    with open(os.path.join(RESULTS, 'job', '%s.json' % name)) as handle:
        data = json.load(handle)
    job = data['job']
    assert job['job']['ranks_per_node'] == 2 and job['demand']['processes'] == 6
    for context in ('login', 'service'):
        run = data['contexts'][context]
        assert run['ok'] is True, run['error']
        assert run['ranks_per_node'] == 2 and len(run['ranks']) == 2
        assert all(rank['ok'] and rank['num_workers'] == 2 for rank in run['ranks'])
        entry = job['contexts'][context]
        assert entry['fits'] is True and entry['short'] == []
        measured, demand = entry['measured'], job['demand']
        assert measured['processes'] == demand['processes']
        assert 0 < measured['fds_main'] <= demand['fds_main']
        assert 0 < measured['fds_worker'] <= demand['fds_worker']
        assert 0 < measured['threads'] <= demand['threads']
        assert 0 < measured['shm_bytes'] <= demand['shm_bytes']


@pytest.mark.parametrize('canary, kind, error', [
    ('shm', 'shm', ('No space left on device', 'Bus error', 'shared memory')),
    ('nproc', 'nproc', ("can't start new thread", 'Resource temporarily unavailable')),
])
def test_a_canary_per_failure_mode_fails_with_the_error_users_see(results, canary, kind, error):
    """issue 13.3: a 64 MB /dev/shm (Docker's default) and a low nproc each make the DataLoader
    fail with the error users see; the check itself is trusted only because they fail."""
    entry = results['canaries'][canary]
    assert entry['failed'] is True and entry['exhausted'] == kind, entry
    assert entry['as_expected'] is True
    assert any(text in entry['error'] for text in error), entry['error']


def test_the_shm_canary_passes_once_shm_is_large_enough(results):
    assert results['canaries']['shm_tuned']['failed'] is False
    assert results['canaries']['shm_tuned']['as_expected'] is True


def test_the_image_pipeline_runs_and_says_the_best_num_workers(host):
    """issue 13.4/13.5: an ImageNet-like JPEG folder, PIL decode, random-resized-crop to 224,
    normalisation, with a num_workers sweep: images/s in total and per worker in each context,
    plotted as SVG and PNG, and the guidance names the num_workers that gave the most."""
    name = host.check_output('hostname')
    folder = os.path.join(RESULTS, 'images')
    with open(os.path.join(folder, '%s.json' % name)) as handle:
        data = json.load(handle)
    for context in ('login', 'service'):
        run = data['contexts'][context]
        assert run['ok'] is True, run['error']
        assert run['pipeline'] == 'images' and run['samples'] == 64
        assert run['samples_per_s'] > 0 and run['samples_per_s_per_worker'] > 0
    sweep = data['contexts']['login']['sweep']
    assert [p['num_workers'] for p in sweep] == [1, 3] and all(p['ok'] for p in sweep)
    best = data['guidance']['best_num_workers']['login']
    rates = dict((p['num_workers'], p['samples_per_s']) for p in sweep)
    rates[data['contexts']['login']['num_workers']] = data['contexts']['login']['samples_per_s']
    assert best['per_s'] == round(max(rates.values()), 2)
    assert rates[best['num_workers']] == max(rates.values())
    assert 'num_workers=%d gave the most' % best['num_workers'] in data['guidance']['summary']
    with open(os.path.join(folder, '%s-throughput.png' % name), 'rb') as handle:
        assert handle.read(8) == b'\x89PNG\r\n\x1a\n'
    with open(os.path.join(folder, '%s-throughput.svg' % name)) as handle:
        assert '<polyline' in handle.read()
    sizes = host.check_output('find /var/lib/gpufleet/dataloader-check/images-n64 -name "*.jpg" '
                              '-printf "%s\\n"').split()
    assert len(sizes) == 64
    assert 60000 < sum(int(s) for s in sizes) / 64.0 < 160000    # about 100 KB each
