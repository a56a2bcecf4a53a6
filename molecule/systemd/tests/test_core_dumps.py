"""Issue 33.3: limits_audit reports kernel.core_pattern and where cores go, and a profile that
lets cores grow without bound where they land without a size cap gets a warning, from the
audit and from limits_profile alike (systemd/core_dumps.py: root_risk). The node shares the lab
host's kernel.core_pattern (/proc/sys is read-only in it); a crash shows the cores land where
the audit says."""
from conftest import USER, run_module

PROFILE = {'core': 'unlimited', 'nofile': 4096}
CRASH_DIR = '/tmp/gpufleet-core-check'


def test_the_audit_reports_where_cores_go(host):
    pattern = host.file('/proc/sys/kernel/core_pattern').content_string.rstrip('\n')
    ok, result, _out = run_module(host, 'gpufleet.tuning.limits_audit', {'profile': PROFILE, 'user': USER})
    assert ok, result['output']
    core = result['core']
    assert core['pattern'] == pattern and core['core_limit'] == 'unlimited:unlimited'
    if pattern.startswith('|'):
        assert core['kind'] == 'pipe' and core['handler'], core
        return
    if pattern.startswith('/'):
        assert core['kind'] == 'path' and core['store']['mount'], core
        assert bool(core['warning']) == core['store']['on_root'], core
        return
    assert core['kind'] == 'relative', core
    assert "in the crashing process's working directory" in core['lands']
    assert core['warning'].startswith('core unlimited: kernel.core_pattern %s writes cores into '
                                      "each crashing process's working directory" % pattern)
    assert core['warning'] in result['output'], result['output']
    # the kernel agrees: a process that crashes with core unlimited leaves its core in its cwd
    host.check_output('rm -rf %s && mkdir %s' % (CRASH_DIR, CRASH_DIR))
    try:
        host.run("cd %s && sh -c 'ulimit -c unlimited; sleep 30 & p=$!; sleep 0.3; kill -SEGV $p; "
                 "wait $p'" % CRASH_DIR)
        left = host.check_output('ls %s' % CRASH_DIR).split()
        assert [name for name in left if name.startswith(pattern.split('%')[0])], left
    finally:
        host.run('rm -rf %s' % CRASH_DIR)


def test_limits_profile_warns_as_the_audit_does_and_not_for_a_small_core(host):
    ok, audit, _out = run_module(host, 'gpufleet.tuning.limits_audit', {'profile': PROFILE, 'user': USER})
    assert ok, audit['output']
    ok, result, _out = run_module(host, 'gpufleet.tuning.limits_profile',
                                  {'profile': PROFILE, 'contexts': ['systemd_system']}, check=True)
    assert ok, result['output']
    said = 'core: %s' % audit['core']['warning']
    assert (said in result['output']) == bool(audit['core']['warning']), result['output']
    ok, result, _out = run_module(host, 'gpufleet.tuning.limits_profile', {
        'profile': {'core': {'soft': 0, 'hard': 'unlimited'}, 'nofile': 4096},
        'contexts': ['systemd_system']}, check=True)
    assert ok, result['output']
    assert 'kernel.core_pattern' not in result['output'], result['output']
