"""The fleet summary's hosts that could not be audited (issue 31.16): grouped by the kind of
failure, not by the raw message (which holds a temporary path, PIDs, addresses and host names),
one line per kind with the folded host list and one short example; and the terminal's per-host
table (issue 31.17): the gaps only by default, with their count and where the full table is."""
import pytest

from ansible_collections.gpufleet.tuning.plugins.filter import fleet_summary as fsf
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import fleet_summary as fs

from ansible.errors import AnsibleFilterError


def tmp_dir_failure(stamp, cause):
    """What Ansible says when it cannot make its temporary directory (about 600 characters)."""
    tmp = '~/.ansible/tmp/ansible-tmp-%s' % stamp
    return ('unreachable: Failed to create temporary directory. In some cases, you may have been '
            'able to authenticate and did not have permissions on the target directory. Consider '
            'changing the remote tmp path in ansible.cfg to a path rooted in "/tmp", for more '
            'error information use -vvv. Failed command was: ( umask 77 && mkdir -p "` echo '
            '~/.ansible/tmp `"&& mkdir "` echo %s `" && echo ansible-tmp-%s="` echo %s `" ), '
            'exited with result 1, stdout output: %s' % (tmp, stamp, tmp, cause))


STOPPED = 'Error response from daemon: container %s is not running'
SSH = 'unreachable: Failed to connect to the host via ssh: '
MESSAGES = {
    'node01': tmp_dir_failure('1733390000.123-4567-89012345678', STOPPED % ('3f2a' * 16)),
    'node02': tmp_dir_failure('1733390001.456-4568-11111111111', STOPPED % ('9b1c' * 16)),
    'node03': tmp_dir_failure('1733390002.789-4569-22222222222',
                              'mkdir: cannot create directory: Read-only file system'),
    'node04': SSH + 'ssh: connect to host 10.0.0.4 port 22: Connection refused',
    'node05': SSH + 'ssh: connect to host 10.0.0.5 port 22: Connection refused',
    'node07': SSH + 'ssh: connect to host 10.0.0.7 port 22: Connection refused',
    'node08': SSH + 'ssh: connect to host node08 port 22: Connection timed out',
    'node09': SSH + 'Host key verification failed.',
    'node10': SSH + 'trainer@10.0.0.10: Permission denied (publickey,password).',
    'node11': 'audit failed: MODULE FAILURE\nSee stdout/stderr for the exact error',
    'node12': 'audit failed: The module failed to execute correctly, you probably need to set '
              'the interpreter.\nSee stdout/stderr for the exact error',
    'node13': 'audit failed: dockerd (pid 4242) on node13 stopped answering',
    'node14': 'audit failed: dockerd (pid 977) on node14 stopped answering',
}


def not_audited(message):
    return dict(audited=False, rows=[], errors=[dict(context='host', msg=message)])


@pytest.mark.parametrize('host, kind', [
    ('node01', ('unreachable', 'container not running')),
    ('node03', ('unreachable', 'remote temp directory')),
    ('node04', ('unreachable', 'ssh connection refused')),
    ('node08', ('unreachable', 'ssh timed out')),
    ('node09', ('unreachable', 'ssh host key')),
    ('node10', ('unreachable', 'ssh auth')),
    ('node11', ('failed', 'module failure')),
    ('node12', ('failed', 'python missing')),
    ('node13', ('failed', 'other')),
])
def test_classify(host, kind):
    assert fs.classify(MESSAGES[host]) == kind


def test_classify_more_kinds():
    assert fs.classify(SSH + 'Could not resolve hostname gpu-9: Name or service not known') == (
        'unreachable', 'name resolution')
    assert fs.classify(SSH + 'ssh: connect to host 10.1.1.1 port 22: No route to host') == (
        'unreachable', 'no route to host')
    assert fs.classify('audit failed: job.num_workers: 0 is below 1') == ('failed', 'bad input')
    assert fs.classify('audit failed: Missing sudo password') == ('failed', 'become (sudo)')
    assert fs.classify('unreachable: something new') == ('unreachable', 'other')


def test_the_variable_parts_are_normalised_away():
    one, two = MESSAGES['node01'], MESSAGES['node02']
    assert one != two
    assert fs.normalise(one) == fs.normalise(two)
    for part in ('1733390000', 'ansible-tmp-1733', '3f2a3f2a', '~/.ansible/tmp/'):
        assert part not in fs.normalise(one), part
    assert fs.normalise('connect to host 10.0.0.4 port 22') == 'connect to host IP port N'
    assert fs.normalise('from /tmp/pytest-7/x.sock and /var/tmp/y') == 'from TMP and TMP'
    assert fs.normalise('trainer@gpu-01.dc1: Permission denied') == 'USER@HOST: Permission denied'
    # the host's own name, not a longer name that starts with it
    assert fs.normalise_for(MESSAGES['node13'], 'node13') == fs.normalise_for(
        MESSAGES['node14'], 'node14') == 'audit failed: dockerd (pid N) on HOST stopped answering'
    assert fs.normalise_for('node13b is down', 'node13') == 'node13b is down'


def test_unaudited_hosts_are_grouped_by_kind_one_short_line_each():
    hosts = dict((host, not_audited(message)) for host, message in MESSAGES.items())
    hosts.update(('node%02d' % n, dict(audited=True, rows=[], errors=[])) for n in (6, 15))
    summary = fs.build(hosts)
    assert summary['hosts'] == 15 and summary['audited'] == 2
    groups = dict((g['why'], g) for g in summary['unaudited'])
    assert sorted(groups) == sorted([
        'unreachable: container not running', 'unreachable: remote temp directory',
        'unreachable: ssh connection refused', 'unreachable: ssh timed out',
        'unreachable: ssh host key', 'unreachable: ssh auth', 'failed: module failure',
        'failed: python missing', 'failed: other'])
    refused = groups['unreachable: ssh connection refused']
    assert (refused['count'], refused['hosts']) == (3, 'node[04-05,07]')
    assert refused['example'] == MESSAGES['node04']
    stopped = groups['unreachable: container not running']
    assert (stopped['count'], stopped['hosts']) == (2, 'node[01-02]')
    # the example is node01's message on one line, without the command and its temporary
    # path, cut to 160 characters
    whole = ('unreachable: Failed to create temporary directory (exited 1): Error response from '
             'daemon: container %s is not running' % ('3f2a' * 16))
    assert stopped['example'] == whole[:fs.EXAMPLE_CHARS - 3] + '...'
    assert len(stopped['example']) == fs.EXAMPLE_CHARS
    assert groups['unreachable: remote temp directory']['example'] == (
        'unreachable: Failed to create temporary directory (exited 1): mkdir: cannot create '
        'directory: Read-only file system')
    # unknown messages that differ only in PIDs and host names are one group
    other = groups['failed: other']
    assert (other['count'], other['hosts']) == (2, 'node[13-14]')
    assert other['example'] == MESSAGES['node13']
    # the largest group leads
    assert summary['unaudited'][0] is refused
    text = fs.lines(summary)
    lines = [line for line in text if 'not audited' in line]
    assert len(lines) == len(groups)
    assert lines[0] == ('3 hosts not audited (unreachable: ssh connection refused): '
                        'node[04-05,07]; e.g. "%s"' % MESSAGES['node04'])
    assert all(len(line) < 260 for line in lines), max(lines, key=len)
    assert not any('1733390001' in line for line in text)       # node02's temp path: not shown
    assert any(line.startswith('- 2 hosts not audited (unreachable: container not running)')
               for line in fs.lines(summary, markdown=True))


def test_many_hosts_of_one_kind_stay_one_line():
    hosts = dict(('gpu-%03d' % n, not_audited(
        SSH + 'ssh: connect to host 10.0.%d.%d port 22: Connection timed out' % (n // 250, n % 250)))
        for n in range(1, 301) if n % 7)
    summary = fs.build(hosts, limit=4)
    assert len(summary['unaudited']) == 1
    group = summary['unaudited'][0]
    assert group['count'] == 258 and group['why'] == 'unreachable: ssh timed out'
    assert group['hosts'] == 'gpu-[001-006,008-013,015-020,022-027,...] (+234 more hosts)'
    assert len(fs.lines(summary)) == 2


def test_unprobed_contexts_are_grouped_by_the_normalised_reason():
    hosts = dict(('n%d' % n, dict(audited=True, rows=[], errors=[dict(
        context='docker', msg='docker run exited 125 after %d s: /tmp/probe-%d.cid exists'
        % (n, n * 31))])) for n in range(1, 4))
    summary = fs.build(hosts)
    assert summary['unprobed'] == [dict(
        context='docker', count=3, hosts='n[1-3]',
        why='docker run exited 125 after 1 s: /tmp/probe-31.cid exists')]


ROWS = [dict(host='gpu-%d' % h, context=c, item='nofile', actual='1024:4096',
             expected='65536:65536', gap=('soft+hard' if (h, c) in ((1, 'login'), (3, 'docker'))
                                          else ''), source='/etc/security/limits.conf:%d' % h)
        for h in (1, 2, 3) for c in ('login', 'docker')]
#: the findings of those rows, as the audit returns them (with the host, as the report has)
FOUND = [dict(findings.from_row(r, findings.row_status(r)), host=r['host']) for r in ROWS]


def test_the_terminal_table_shows_the_failing_findings_only_with_their_count():
    lines = fs.table_lines(FOUND, full='/srv/reports/limits-audit.md')
    assert lines[0] == ('2 of 6 findings (host x context x item) fail; the full table is in '
                        '/srv/reports/limits-audit.md (audit_show=all prints it here)')
    assert lines[1].split() == ['host', 'context', 'item', 'status', 'actual', 'expected',
                                'short', 'cause']
    assert [line.split()[:2] for line in lines[2:]] == [['gpu-1', 'login'], ['gpu-3', 'docker']]
    assert lines[2] == ('%-20s %-26s %-8s %-11s %-24s %-24s %-9s %s' % (
        'gpu-1', 'login', 'nofile', 'gap', '1024:4096', '65536:65536', 'soft+hard',
        '/etc/security/limits.conf:1'))


def test_the_terminal_table_shows_every_finding_when_asked():
    lines = fs.table_lines(FOUND, show='all', full='r.md')
    assert lines[0] == '2 of 6 findings (host x context x item) fail; every finding:'
    assert len(lines) == 2 + len(ROWS)
    assert lines[3].split()[:2] == ['gpu-1', 'docker'] and lines[3].split()[-1].endswith(':1')
    assert lines[3].split()[3] == 'ok'


def test_the_markdown_table_has_every_finding_with_its_status():
    lines = fs.table_lines(FOUND, markdown=True)
    assert lines[0] == '| host | context | item | status | actual | expected | short | cause |'
    assert len(lines) == 2 + len(FOUND)
    assert lines[2].startswith('| gpu-1 | login | nofile | gap | 1024:4096 |')


def test_a_fleet_without_gaps_prints_the_count_and_no_table():
    clean = [dict(f, status='ok') for f in FOUND]
    assert fs.table_lines(clean, full='r.md') == [
        '0 of 6 findings (host x context x item) fail; the full table is in r.md '
        '(audit_show=all prints it here)']
    assert fs.table_lines([]) == [
        '0 of 0 findings (host x context x item) fail (audit_show=all prints it here)']


def test_the_filter_refuses_an_unknown_audit_show():
    assert fsf.audit_table_text(FOUND, 'gaps', 'r.md').count('\n') == 3
    with pytest.raises(AnsibleFilterError, match="audit_show: 'some' is not one of gaps, all"):
        fsf.audit_table_text(FOUND, 'some')
