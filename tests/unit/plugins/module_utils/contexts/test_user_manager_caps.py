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
