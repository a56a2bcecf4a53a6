"""Issue 31 on a real node, through limits_profile as the role calls it: a user@.service drop-in
that caps every user manager (item 7), a template unit in ``units`` (item 11) and an item
removed from the profile (item 12). Each case uses files of its own and removes them."""
import re

from conftest import node, output, run_module

USER_CAP = '/etc/systemd/system/user@.service.d/40-site-cap.conf'
TEMPLATE = 'gpufleet-rel-train@.service'
INSTANCE = 'gpufleet-rel-train@1.service'
OWN_DROPIN = '85-issue31.conf'


def test_a_user_manager_cap_is_refused_naming_its_line(host):
    node(host, "mkdir -p %s && printf '%%s\\n' '# site' '[Service]' 'LimitNOFILE=4096' > %s "
               "&& systemctl daemon-reload" % (USER_CAP.rsplit('/', 1)[0], USER_CAP))
    try:
        args = {'profile': {'nofile': 16384}, 'contexts': ['systemd_user'],
                'dropin': OWN_DROPIN}
        ok, result, printed = run_module(host, 'gpufleet.tuning.limits_profile', args)
        assert not ok, printed[-3000:]
        assert ('%s:3: LimitNOFILE=4096 caps every user manager (user@.service) at hard nofile '
                '4096, so its user services cannot get nofile' % USER_CAP) in result['msg']
        assert 'nothing written' in result['msg']
        assert node(host, 'test -e /etc/systemd/user.conf.d/%s' % OWN_DROPIN, check=False)[0] != 0
        ok, result, printed = run_module(host, 'gpufleet.tuning.limits_profile',
                                         dict(args, on_conflict='warn'), check=True)
        assert ok and '%s:3: LimitNOFILE=4096 caps every user manager' % USER_CAP in printed
        assert any(USER_CAP in gap for gap in result['known_gaps']), result['known_gaps']
    finally:
        node(host, 'rm -f %s && systemctl daemon-reload' % USER_CAP)


def test_a_template_unit_gets_its_drop_in_and_its_running_instance_is_pending(host):
    node(host, "printf '%%s\\n' '[Service]' 'ExecStart=/bin/sleep 1000' "
               "> /etc/systemd/system/%s && systemctl daemon-reload && systemctl start %s"
         % (TEMPLATE, INSTANCE))
    dropin_dir = '/etc/systemd/system/%s.d' % TEMPLATE
    try:
        pid = output(host, 'systemctl show -p MainPID --value %s' % INSTANCE).strip()
        ok, result, printed = run_module(host, 'gpufleet.tuning.limits_profile', {
            'profile': {'nofile': 16384}, 'contexts': ['pam'], 'domains': ['gpufleet-nobody'],
            'pam_path': '/etc/security/limits.d/85-issue31.conf', 'units': [TEMPLATE]})
        assert ok, printed[-3000:]
        assert 'LimitNOFILE=' in output(host, 'cat %s/90-gpufleet-tuning.conf' % dropin_dir)
        deferred = result['actions']['deferred']
        assert [d['unit'] for d in deferred if d['unit'].startswith('gpufleet-rel-train')] == [
            INSTANCE], deferred
        assert TEMPLATE in result['units'] and TEMPLATE not in result['probe_units']
        # the running instance (a job) was not restarted
        assert output(host, 'systemctl show -p MainPID --value %s' % INSTANCE).strip() == pid
        assert result['actions']['daemon_reload'] is True
        # a new instance gets the drop-in once systemd has reloaded
        node(host, 'systemctl daemon-reload && systemctl start gpufleet-rel-train@2.service')
        new = output(host, 'cat /proc/$(systemctl show -p MainPID --value '
                           'gpufleet-rel-train@2.service)/limits')
        assert int(re.search(r'Max open files\s+(\d+)', new).group(1)) >= 16384, new
    finally:
        node(host, 'systemctl stop gpufleet-rel-train@1.service gpufleet-rel-train@2.service; '
                   'rm -rf /etc/systemd/system/%s %s /etc/security/limits.d/85-issue31.conf*; '
                   'systemctl daemon-reload' % (TEMPLATE, dropin_dir), check=False)


def test_an_item_removed_from_the_profile_leaves_its_own_file(host):
    path = '/etc/systemd/system.conf.d/%s' % OWN_DROPIN
    args = {'contexts': ['systemd_system'], 'dropin': OWN_DROPIN}
    try:
        ok, _result, printed = run_module(host, 'gpufleet.tuning.limits_profile',
                                          dict(args, profile={'nofile': 16384, 'nproc': 8192}))
        assert ok, printed[-3000:]
        assert 'DefaultLimitNPROC=' in output(host, 'cat %s' % path)
        ok, result, printed = run_module(host, 'gpufleet.tuning.limits_profile',
                                         dict(args, profile={'nofile': 16384}), diff=True)
        assert ok and result['changed'], printed[-3000:]
        assert 'DefaultLimitNPROC=' not in output(host, 'cat %s' % path)
        # the diff (printed by --diff) shows the removal
        plain = re.sub(r'\x1b\[[0-9;]*m', '', printed)
        assert re.search(r'^-DefaultLimitNPROC=', plain, re.M), plain[-3000:]
    finally:
        node(host, 'rm -f %s %s.*~' % (path, path), check=False)


def test_a_lower_plain_profile_lowers_nothing_and_warns_about_nothing(host):
    """Issue 31 items 1-2: a plain value below what the converged node has is a minimum: no
    file changes (every watched file's checksum as before), nothing restarts, and the run warns
    about none of the sides it kept (issue 39.3: they are in limits_kept, and a kept side needs
    no decision)."""
    from conftest import BASELINE, run_role, services, snapshot, snapshot_diff
    before, running = snapshot(host), services(host)
    rc, out = run_role(host, limits_profile=dict(BASELINE, nofile=12288))
    assert rc == 0, out[-3000:]
    assert snapshot(host) == before, snapshot_diff(before, snapshot(host))
    assert services(host) == running
    assert 'kept: the node already has' not in out, out[-3000:]
    assert 'values the profile does not set as asked' not in out, out[-3000:]
    assert re.search(r'changed=0\s', out), out[-3000:]
