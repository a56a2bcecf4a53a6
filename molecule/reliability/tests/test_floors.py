"""The floors (plugins/module_utils/model/floors.py, issue 31 item 1), tried on a real node: a
login session, su and a user manager of a user whose every limit sits at its floor still work
(the floors are not too low), and a user with nofile 0, the profile that locked nodes out in
issue 31, cannot log in (why no value below a floor is ever written). The lines are written by pam_limits itself for the
floors (it accepts them) and by hand below them (it refuses those)."""
import json

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

from conftest import USER, node, output, run_module

FLOOR_FILE = '/etc/security/limits.d/05-floor-test.conf'


def limits_conf_value(name, floor):
    """A floor in limits.conf units (KiB for sizes, minutes for cpu)."""
    return m.to_limits_conf(m.ITEMS[name], floor)


def test_a_user_at_every_floor_can_log_in_and_work(host):
    entries = [{'domain': USER, 'item': name, 'value': limits_conf_value(name, floor)}
               for name, (floor, _why) in sorted(m.FLOORS.items())]
    try:
        ok, result, printed = run_module(host, 'gpufleet.tuning.pam_limits',
                                         {'path': FLOOR_FILE, 'limits': entries})
        assert ok and result['changed'], printed[-3000:]
        got = m.parse_proc_limits(output(host, "runuser -l %s -c 'cat /proc/self/limits'" % USER))
        for name, (floor, _why) in m.FLOORS.items():
            if name in got:
                assert got[name] == m.Limit(floor, floor), (name, got[name])
        # a login shell that starts programs, su, and the user's own manager with a service
        work = ("runuser -l %s -c 'python3 -c \"import json, os; print(json.dumps(os.uname()))\""
                " && ls /etc >/dev/null && ulimit -n'" % USER)
        assert output(host, work).split()[-1] == str(m.FLOORS['nofile'][0])
        assert output(host, "su - %s -c 'id -un'" % USER).strip() == USER
        uid = output(host, 'id -u %s' % USER).strip()
        node(host, 'systemctl restart user@%s.service' % uid)
        assert output(host, 'systemctl is-active user@%s.service || true' % uid).strip() == 'active'
        # systemd-run --user talks to the manager on its socket, there a moment after the
        # restart returns
        node(host, 'for i in $(seq 60); do test -S /run/user/%s/systemd/private && exit 0; '
                   'sleep 0.25; done; exit 1' % uid)
        as_user = 'runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%s ' % (USER, uid)
        node(host, as_user + 'systemd-run --user --quiet --unit=gpufleet-floor-probe sleep 60')
        try:
            pid = output(host, as_user + 'systemctl --user show -p MainPID --value '
                         'gpufleet-floor-probe').strip()
            service = m.parse_proc_limits(output(host, 'cat /proc/%s/limits' % pid))
            assert service['nofile'].soft >= 1024, service['nofile']
        finally:
            node(host, as_user + 'systemctl --user stop gpufleet-floor-probe', check=False)
    finally:
        node(host, 'rm -f %s %s.*~' % (FLOOR_FILE, FLOOR_FILE), check=False)
        node(host, 'systemctl restart user@$(id -u %s).service' % USER, check=False)


def test_below_the_nofile_floor_a_login_cannot_open(host):
    """What the floor prevents: with nofile 0 (which the pam_limits module refuses) written by
    hand, a login of the user fails."""
    ok, result, _printed = run_module(host, 'gpufleet.tuning.pam_limits', {
        'path': FLOOR_FILE, 'limits': [{'domain': USER, 'item': 'nofile', 'value': 0}]})
    assert not ok and 'below the floor 1024' in result.get('msg', json.dumps(result))
    try:
        node(host, "printf '%%s\\n' '%s soft nofile 0' '%s hard nofile 0' > %s"
             % (USER, USER, FLOOR_FILE))
        rc, out = node(host, "su - %s -c 'python3 -c \"import json, ssl; print(1)\"'" % USER,
                       check=False)
        assert rc != 0, out
    finally:
        node(host, 'rm -f %s' % FLOOR_FILE, check=False)
