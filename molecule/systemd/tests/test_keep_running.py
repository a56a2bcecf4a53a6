"""Issue 39.1 on a real node: a lower DefaultLimitNOFILE= in system.conf.d that no reexec has
applied yet does not hide what the running manager gives new services (systemctl show). A
plain profile of nofile 8192 keeps the running value (check mode: nothing on the node
changes; the pending file is removed afterwards)."""
PENDING = '/etc/systemd/system.conf.d/05-gpufleet-test-pending.conf'


def running_nofile(host):
    out = host.check_output('systemctl show -p DefaultLimitNOFILESoft -p DefaultLimitNOFILE')
    values = dict(line.split('=', 1) for line in out.splitlines() if '=' in line)
    return int(values['DefaultLimitNOFILESoft']), int(values['DefaultLimitNOFILE'])


def test_a_lower_pending_system_conf_does_not_hide_the_running_default(host):
    from conftest import run_module
    running = running_nofile(host)
    print('running manager nofile: %s:%s' % running)
    assert running[0] > 4096 and running[1] > 4096, running
    host.check_output("mkdir -p /etc/systemd/system.conf.d && printf '[Manager]\\n"
                      "DefaultLimitNOFILE=1024:4096\\n' > %s" % PENDING)
    try:
        ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile', dict(
            profile={'nofile': 8192}, contexts=['systemd_system']), check=True, diff=True)
    finally:
        host.check_output('rm -f %s' % PENDING)
    assert ok, output
    assert running_nofile(host) == running
    kept = [k for k in result['limits_kept'] if k['item'] == 'nofile']
    print(kept)
    # each side of the running default above 8192 is kept (none lowered to the pending file's
    # 1024:4096 or to 8192); before the fix the file's 4096 was "raised" to 8192
    want = sorted((side, value) for side, value in zip(('soft', 'hard'), running)
                  if value > 8192)
    assert want, running
    assert sorted((k['side'], k['after']) for k in kept if k['action'] == 'kept') == want, kept
    assert not [k for k in kept if k['before'] in (1024, 4096)], kept
