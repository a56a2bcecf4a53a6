"""Issue 39.1 on a real node: a lower DefaultLimitNOFILE= in system.conf that no reexec has
applied yet does not hide what the running manager gives new services (systemctl show). A
plain profile of nofile 2048 keeps the running value. Check mode: the tune changes nothing;
system.conf and the role's drop-in (moved aside so that system.conf decides the files' value)
are put back as they were."""
SYSTEM_CONF = '/etc/systemd/system.conf'
OURS = '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'
SAVED = '/root/keep-running-saved'


def running_nofile(host):
    out = host.check_output('systemctl show -p DefaultLimitNOFILESoft -p DefaultLimitNOFILE')
    values = dict(line.split('=', 1) for line in out.splitlines() if '=' in line)
    return int(values['DefaultLimitNOFILESoft']), int(values['DefaultLimitNOFILE'])


def test_a_lower_pending_system_conf_does_not_hide_the_running_default(host):
    from conftest import run_module
    running = running_nofile(host)
    print('running manager nofile: %s:%s' % running)
    assert running[0] > 2048 and running[1] > 2048, running
    host.check_output('rm -rf %s && mkdir -p %s && cp -a %s %s/ && mv %s %s/'
                      % (SAVED, SAVED, SYSTEM_CONF, SAVED, OURS, SAVED))
    try:
        host.check_output("printf '\\n[Manager]\\nDefaultLimitNOFILE=1024:2048\\n' >> %s"
                          % SYSTEM_CONF)
        ok, result, output = run_module(host, 'gpufleet.tuning.limits_profile', dict(
            profile={'nofile': 2048}, contexts=['systemd_system']), check=True, diff=True)
    finally:
        host.check_output('cp -a %s/system.conf %s && cp -a %s/%s %s && rm -rf %s' % (
            SAVED, SYSTEM_CONF, SAVED, OURS.rsplit('/', 1)[1], OURS, SAVED))
    assert ok, output
    assert running_nofile(host) == running
    kept = [k for k in result['limits_kept'] if k['item'] == 'nofile']
    print(kept)
    # both sides of the running default are kept (none lowered to the pending file's
    # 1024:2048 or to 2048); before the fix the file's 1024:2048 counted and 2048 was written
    assert sorted((k['side'], k['after']) for k in kept if k['action'] == 'kept') == [
        ('hard', running[1]), ('soft', running[0])], kept
    assert 'DefaultLimitNOFILE=%s' % ('%d:%d' % running if running[0] != running[1]
                                      else running[0]) in output, output
