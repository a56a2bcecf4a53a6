"""Issue 39 item 2: a limits.d entry that pam_limits cannot open makes every session that runs
pam_limits fail (seen on Debian 12, libpam-modules 1.5.2-6+deb12u2: ``runuser -l``, ``runuser -u``,
``su -`` and user@UID.service all fail with "Error in service module" on a dangling
``limits.d/50-x.conf`` link and on a link loop; a directory named ``60-d.conf`` and a link to
/dev/null let them open). Linux-PAM's parse_config_file: fopen() failing is PAM_SERVICE_ERR,
except ENOENT from 1.5.3 on (skipped). The tune refuses before anything happens, the audit
reports the node broken, and a directory is read as pam_limits reads it (no raw [Errno 21])."""
import os

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam as pam_context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_plan as plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import fleet_summary
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import node_state
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp

DEBIAN_12 = (1, 5, 2)
DEBIAN_13 = (1, 7, 0)


@pytest.fixture
def layout(tmp_path):
    security = tmp_path / 'security'
    limits_d = security / 'limits.d'
    limits_d.mkdir(parents=True)
    (security / 'limits.conf').write_text('* soft nofile 4096\n')
    (limits_d / '10-site.conf').write_text('* hard nofile 8192\n')
    return str(security / 'limits.conf'), str(limits_d)


def test_a_dangling_link_fails_every_session_before_pam_1_5_3(layout):
    limits_conf, limits_d = layout
    link = os.path.join(limits_d, '50-x.conf')
    os.symlink('/nonexistent', link)
    [found] = conf.session_failures(limits_conf, limits_d, DEBIAN_12)
    assert found.path == link
    text = str(found)
    assert text.startswith(link + ' is a symbolic link to /nonexistent, which does not exist')
    assert 'every session that runs pam_limits already fails to open' in text
    assert 'Remove the link (rm %s)' % link in text
    # the readers say the same instead of reading it as absent
    with pytest.raises(conf.SessionBreaker) as raised:
        conf.read_file(link, DEBIAN_12)
    assert raised.value.path == link
    # version unknown: read as before 1.5.3 (a refusal, not a restart into a failed session)
    assert [e.path for e in conf.session_failures(limits_conf, limits_d, None)] == [link]
    # the pam_limits module refuses to plan on it, naming it (it read it as absent before)
    with pytest.raises(changes.Failure) as refused:
        plan.plan_entries([], os.path.join(limits_d, '90-gpufleet-tuning.conf'),
                          limits_conf=limits_conf, limits_dir=limits_d, pam_version=DEBIAN_12)
    assert refused.value.msg.startswith(link + ' is a symbolic link')
    # Linux-PAM 1.5.3 and later skip it: nothing breaks, the file reads as absent
    assert conf.session_failures(limits_conf, limits_d, DEBIAN_13) == []
    assert conf.read_file(link, DEBIAN_13) is None


def test_a_link_loop_a_fifo_and_a_socket_fail_whatever_the_version(layout, tmp_path):
    import socket
    limits_conf, limits_d = layout
    os.symlink('51-loop.conf', os.path.join(limits_d, '51-loop.conf'))
    os.mkfifo(os.path.join(limits_d, '52-fifo.conf'))
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(os.path.join(limits_d, '53-sock.conf'))
        found = conf.session_failures(limits_conf, limits_d, DEBIAN_13)
    finally:
        sock.close()
    assert [os.path.basename(e.path) for e in found] == ['51-loop.conf', '52-fifo.conf',
                                                         '53-sock.conf']
    assert 'cannot be opened (Too many levels of symbolic links)' in str(found[0])
    assert 'is a FIFO' in str(found[1]) and 'the session hangs' in str(found[1])
    # never opened here either (a FIFO would block the module)
    with pytest.raises(conf.SessionBreaker):
        conf.read_file(os.path.join(limits_d, '52-fifo.conf'), DEBIAN_13)


def test_a_missing_limits_conf_fails_sessions_before_1_5_3_only(layout):
    limits_conf, limits_d = layout
    os.remove(limits_conf)
    [found] = conf.session_failures(limits_conf, limits_d, DEBIAN_12)
    assert found.path == limits_conf and 'is missing' in str(found)
    assert conf.session_failures(limits_conf, limits_d, DEBIAN_13) == []
    # a file about to be written (the pam plan's target) is no problem
    assert conf.read_file(os.path.join(limits_d, '90-new.conf'), DEBIAN_12) is None


def test_a_directory_named_conf_is_read_as_pam_limits_reads_it(layout):
    """Was: [Errno 21] Is a directory. pam_limits' fopen succeeds on a directory and its
    getline reads nothing: sessions open, no line of it applies."""
    limits_conf, limits_d = layout
    directory = os.path.join(limits_d, '60-d.conf')
    os.mkdir(directory)
    assert conf.session_failures(limits_conf, limits_d, DEBIAN_12) == []
    parsed = conf.read_file(directory, DEBIAN_12)
    assert parsed.lines == [] and parsed.problem.startswith('is a directory')
    report = info.pam_report(dict(user=None, limits_conf=limits_conf, limits_dir=limits_d,
                                  root_wildcards='false'))
    assert report['session_errors'] == []
    assert report['unread'] == [dict(path=directory, msg=directory + ' is a directory: '
                                     'pam_limits opens it and reads no line from it (remove it '
                                     'or rename it without .conf)')]
    # the pam_limits module's plan warns and goes on
    change = plan.plan_entries([], os.path.join(limits_d, '90-gpufleet-tuning.conf'),
                               limits_conf=limits_conf, limits_dir=limits_d,
                               pam_version=DEBIAN_12)
    assert any(w.startswith(directory + ' is a directory') for w in change.warnings)


def test_pam_order_reads_what_glob_conf_matches(layout):
    limits_conf, limits_d = layout
    for name in ('.hidden.conf', 'README', '20-b.conf'):
        open(os.path.join(limits_d, name), 'w').close()
    assert [os.path.basename(p) for p in conf.pam_order(limits_conf, limits_d)] == [
        'limits.conf', '10-site.conf', '20-b.conf']


def test_the_audit_reports_a_broken_node(layout, monkeypatch):
    limits_conf, limits_d = layout
    link = os.path.join(limits_d, '50-x.conf')
    os.symlink('/nonexistent', link)
    monkeypatch.setattr(info.versions, 'pam_version', lambda host=None: DEBIAN_12)
    report = info.pam_report(dict(user=None, limits_conf=limits_conf, limits_dir=limits_d,
                                  root_wildcards='false'))
    # the other files are still read; the broken one is a problem of the login context
    read = [f['path'] for f in report['files']]
    assert read == [limits_conf, os.path.join(limits_d, '10-site.conf')]
    [problem] = pam_context.CONTEXT.problems(report)
    assert problem['source'] == link and problem['state'] == 'broken'
    assert problem['msg'].startswith(link + ' is a symbolic link')
    # node state and fleet summary read it as broken, not as "0 short"
    result = dict(contexts={'login': {}}, gaps=[], rows=[], errors=[],
                  problems=[dict(problem, context='login')])
    found = node_state.verdict(result)
    assert found.state == node_state.BROKEN and found.contexts['login'] == 'broken'
    assert node_state.EXIT[found.state] == 1
    # every context whose sessions run pam_limits is stopped: named once, with the cause
    assert found.contexts == {'login': 'broken', 'ssh': 'broken', 'user_manager': 'broken'}
    assert node_state.message(found).startswith('broken: login, ssh, user_manager: ' + link)
    summary = fleet_summary.build({'gpu-1': dict(result, audited=True), 'gpu-2': dict(
        contexts={}, gaps=[], rows=[], errors=[], problems=[], audited=True)})
    assert summary['broken_hosts'] == 1 and summary['short_hosts'] == 0
    text = fleet_summary.lines(summary)
    assert text[0] == 'FLEET SUMMARY: 2 hosts, 2 audited, 0 short of the profile somewhere, 1 broken'
    assert text[1].startswith('login, ssh, user_manager problem on 1 hosts (broken): ' + link)


class _Request(object):
    def __init__(self, contexts):
        self.contexts = contexts


def test_the_tune_refuses_before_anything_when_sessions_fail(layout, monkeypatch):
    limits_conf, limits_d = layout
    link = os.path.join(limits_d, '50-x.conf')
    os.symlink('/nonexistent', link)
    monkeypatch.setattr(pam_context, 'LIMITS_CONF', limits_conf)
    monkeypatch.setattr(pam_context, 'LIMITS_DIR', limits_d)
    monkeypatch.setattr(pam_context, 'pam_version', lambda request, host: DEBIAN_12)
    # a user manager's restart opens a PAM session too: refused without pam in the contexts
    for contexts in (['pam'], ['systemd_user'], ['systemd_system', 'docker']):
        with pytest.raises(changes.Failure) as raised:
            pp.check_sessions(_Request(contexts), None)
        assert raised.value.msg.startswith('pam: %s is a symbolic link' % link)
        assert raised.value.msg.endswith('(nothing written, nothing restarted)')
        assert raised.value.result['session_errors'][0]['path'] == link
    # a container runtime alone opens no session
    pp.check_sessions(_Request(['docker']), None)
    os.remove(link)
    pp.check_sessions(_Request(['pam', 'systemd_user']), None)


def test_an_unchanged_run_owes_no_restart_to_a_manager_it_cannot_read(monkeypatch):
    """The cause of the restart on a converged node: ``systemctl --user show`` runs through
    runuser's PAM session, which the broken limits.d failed, and a manager whose limits could
    not be read was owed a restart (it then stayed down)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_plan
    from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
        systemd_paths as sdpaths)
    sdlive = systemd_plan.sdlive
    expected = {'nofile': m.Limit(16384, 20000)}
    live = {'answer': (None, 'runuser: cannot open session: Error in service module')}
    monkeypatch.setattr(sdlive, 'systemd_running', lambda root='': True)
    monkeypatch.setattr(sdlive, 'running_user_managers', lambda run: [('user@1001.service', 1001)])
    monkeypatch.setattr(sdlive, 'manager_live', lambda run, scope, user, uid: live['answer'])
    monkeypatch.setattr(systemd_plan, '_user_name', lambda uid: 'trainer')

    def check(changed):
        result = {}
        systemd_plan.live_check(lambda *a, **k: (0, '', ''), result, sdpaths.USER, None,
                                expected, changed)
        return result['restart_required']
    assert check(False) == []
    assert check(True) == ['user@1001.service']
    live['answer'] = ({'nofile': m.Limit(1024, 4096)}, None)      # its own word: stale
    assert check(False) == ['user@1001.service']
    live['answer'] = (dict(expected), None)
    assert check(False) == []
