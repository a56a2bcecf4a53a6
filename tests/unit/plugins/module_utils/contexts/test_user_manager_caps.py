"""contexts/systemd_user.py manager_unit_caps: a ``user@.service.d`` drop-in with
``LimitNOFILE=4096`` caps every user manager, so user.conf's defaults cannot reach user services
(issue 31 item 7): the tune refuses or warns, and the audit warns, naming file:line."""
import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import systemd_user


def unit(root, path, text):
    full = os.path.join(str(root), path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as handle:
        handle.write(text)


def test_a_drop_in_below_the_profile_is_named_with_its_line(tmp_path):
    unit(tmp_path, '/lib/systemd/system/user@.service', '[Unit]\nDescription=u\n[Service]\n'
         'ExecStart=/lib/systemd/systemd --user\n')
    unit(tmp_path, '/etc/systemd/system/user@.service.d/limits.conf',
         '# site\n[Service]\nLimitNOFILE=4096\nLimitNPROC=infinity\n')
    caps = systemd_user.manager_unit_caps(
        {'nofile': {'soft': 16384, 'hard': 16384}, 'nproc': {'soft': 8192, 'hard': 8192}},
        str(tmp_path))
    assert [(c['item'], c['path'], c['line']) for c in caps] == [
        ('nofile', '/etc/systemd/system/user@.service.d/limits.conf', 3)]
    assert caps[0]['reason'] == (
        '/etc/systemd/system/user@.service.d/limits.conf:3: LimitNOFILE=4096 caps every user '
        'manager (user@.service) at hard nofile 4096, so its user services cannot get nofile '
        '16384')


def test_no_cap_when_the_unit_sets_enough_or_nothing(tmp_path):
    unit(tmp_path, '/lib/systemd/system/user@.service', '[Service]\nLimitNOFILE=1024:65536\n')
    assert systemd_user.manager_unit_caps({'nofile': {'soft': 16384, 'hard': 65536}},
                                          str(tmp_path)) == []
    assert systemd_user.manager_unit_caps({'memlock': {'soft': 1, 'hard': 'unlimited'}},
                                          str(tmp_path)) == []


def test_the_audit_names_the_cap_below_the_profile_where_user_conf_sets_nothing(tmp_path):
    # issue 40: user.conf sets no DefaultLimitNOFILE; the drop-in caps the manager below the
    # profile. The audit's cause and advice name the drop-in's line (what the tune refuses to
    # write past), not "the user manager's own limits" and "run limits_profile"
    from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
    unit(tmp_path, '/lib/systemd/system/user@.service', '[Service]\nExecStart=x\n')
    dropin = '/etc/systemd/system/user@.service.d/limits.conf'
    unit(tmp_path, dropin, '# site\n[Service]\nLimitNOFILE=4096\n')
    wanted = systemd_user.wanted_by({}, {'nofile': 16384, 'pids': 4096, 'nproc': 'x'})
    assert wanted == {'nofile': {'soft': 16384, 'hard': 16384}}
    caps = systemd_user.manager_unit_caps(wanted, str(tmp_path))
    configured = systemd_user.CONTEXT.configured({'manager': {'configured': {}},
                                                 'manager_unit_caps': caps})
    actual = {'soft': 4096, 'hard': 4096}
    assert audit.source_of('user_manager', configured['nofile'], actual) == dropin + ':3'
    text, at = audit.advice_at('user_manager', configured['nofile'], actual, sides=('soft',))
    assert text.startswith('raise or remove %s:3' % dropin)
    assert at == {'path': dropin, 'line': 3}
    # without the profile (user.conf's defaults only) nothing is capped: the old advice
    assert systemd_user.manager_unit_caps(systemd_user.wanted_by({}, None), str(tmp_path)) == []
