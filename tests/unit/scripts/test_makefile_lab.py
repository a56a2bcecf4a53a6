"""The Makefile's lab targets (make demo, demo-test, lab-up, lab-down, bench-job-contexts) follow
LAB_DIR and LAB_PREFIX, as lab/lab.sh and lab/demo_job.sh do: the demo's inventory, reports and
job results are LAB_DIR's, and its closing hint names the lab-down command of that lab (on a
shared host the default prefix may be someone else's lab). Dry runs (make -n) only."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
MAKE = shutil.which('make')
pytestmark = pytest.mark.skipif(MAKE is None, reason='no make here')


def dry_run(*args, **env_vars):
    """The commands ``make -n ARGS`` would run, with LAB_* only from ``env_vars``."""
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(('LAB_', 'MAKE')) and k != 'MFLAGS')
    env.update(env_vars)
    proc = subprocess.run([MAKE, '--no-print-directory', '-n'] + list(args), cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def lines_with(text, needle):
    return [line for line in text.splitlines() if needle in line]


def test_make_demo_keeps_its_lab_in_lab_dir_and_names_its_lab_down(tmp_path):
    lab = str(tmp_path / 'x')
    out = dry_run('demo', 'LAB_DIR=' + lab, 'LAB_PREFIX=gpufleet-other')
    assert 'build/lab' not in out, lines_with(out, 'build/lab')
    assert lines_with(out, 'lab/lab.sh up') == [
        "LAB_PREFIX='gpufleet-other' LAB_DIR='%s' lab/lab.sh up" % lab]
    for phase in ('node', 'before', 'after'):
        assert lines_with(out, 'lab/demo_job.sh ' + phase) == [
            "LAB_PREFIX='gpufleet-other' LAB_DIR='%s' lab/demo_job.sh %s" % (lab, phase)]
    playbooks = lines_with(out, 'ansible-playbook')
    assert len(playbooks) == 3 and all(' -i %s/inventory.yml ' % lab in p for p in playbooks)
    assert 'audit_reports_dir=%s/before' % lab in playbooks[0]
    assert 'audit_reports_dir=%s/after' % lab in playbooks[2]
    assert 'cat %s/before/limits-audit.md' % lab in out and 'cat %s/after/limits-audit.md' % lab in out
    assert 'scripts/bench_job_contexts.py --show %s\n' % lab in out
    assert 'scripts/plot_throughput.py %s\n' % lab in out
    hint = "make lab-down LAB_PREFIX='gpufleet-other' LAB_DIR='%s'" % lab
    assert lines_with(out, 'removes the lab') == ['echo; echo "%s removes the lab"' % hint]
    # the hint, run, removes that lab: its containers and its inventory
    down = dry_run('lab-down', 'LAB_PREFIX=gpufleet-other', 'LAB_DIR=' + lab)
    assert down.strip() == "LAB_PREFIX='gpufleet-other' LAB_DIR='%s' lab/lab.sh down" % lab


def test_a_lab_named_in_the_environment_or_relative_to_the_checkout(tmp_path):
    out = dry_run('demo', LAB_PREFIX='gpufleet-mine', LAB_DIR='build/mine-demo')
    lab = os.path.join(ROOT, 'build', 'mine-demo')
    assert lines_with(out, 'removes the lab') == [
        'echo; echo "make lab-down LAB_PREFIX=\'gpufleet-mine\' LAB_DIR=\'%s\' removes the lab"'
        % lab]
    assert ' -i %s/inventory.yml ' % lab in lines_with(out, 'ansible-playbook')[0]


def test_the_default_lab_and_its_plain_lab_down():
    out = dry_run('demo')
    lab = os.path.join(ROOT, 'build', 'lab')
    assert lines_with(out, 'removes the lab') == ['echo; echo "make lab-down removes the lab"']
    assert lines_with(out, 'lab/lab.sh up') == ["LAB_PREFIX='gpufleet-lab' LAB_DIR='%s' lab/lab.sh up"
                                                % lab]
    assert ' -i %s/inventory.yml ' % lab in lines_with(out, 'ansible-playbook')[0]


def test_demo_test_and_bench_job_contexts_check_and_remove_the_same_lab(tmp_path):
    lab = str(tmp_path / 'x')
    for target, reader in (('demo-test', 'scripts/check_demo.py'),
                           ('bench-job-contexts', 'scripts/bench_job_contexts.py')):
        out = dry_run(target, 'LAB_DIR=' + lab, 'LAB_PREFIX=gpufleet-other')
        assert lines_with(out, reader)[-1] == 'python3 %s %s' % (reader, lab), out
        assert lines_with(out, 'lab/lab.sh down')[-1] == (
            "LAB_PREFIX='gpufleet-other' LAB_DIR='%s' lab/lab.sh down" % lab)
