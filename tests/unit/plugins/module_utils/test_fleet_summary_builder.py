"""The audit's fleet summary (module_utils/reports/fleet_summary.py) over 1,000 synthetic hosts: counts
per context and item, grouping by what hosts have and why, folded host names, unaudited and
unprobed hosts, and the rendered lines."""
import random

from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import fleet_summary as fs

CONTEXTS = ['login', 'system_service', 'user_service', 'docker', 'k8s_pod']
ITEMS = ['nofile', 'nproc', 'memlock']
OK = dict(actual='16384:16384', expected='16384:16384', gap='', source='/etc/x:1')


def row(context, item, **changes):
    out = dict(OK, context=context, item=item)
    out.update(changes)
    return out


def synthetic_fleet(count=1000, seed=15):
    """``count`` hosts gpu-0001..; a known set is short in known ways."""
    rng = random.Random(seed)
    hosts, truth = {}, {}
    for number in range(1, count + 1):
        name = 'gpu-%04d' % number
        rows = [row(c, i) for c in CONTEXTS for i in ITEMS]
        errors = []
        if number <= 40:                                 # 1..40: login nofile soft short
            rows[0] = row('login', 'nofile', actual='1024:20000', gap='soft',
                          source='no limits line (inherited from the login service)')
            truth.setdefault(('login', 'nofile', '1024:20000'), set()).add(name)
        elif number % 97 == 0:                           # scattered: docker memlock both sides
            index = CONTEXTS.index('docker') * 3 + 2
            rows[index] = row('docker', 'memlock', actual='65536:65536', gap='soft+hard',
                              source='dockerd default (no default-ulimits)')
            truth.setdefault(('docker', 'memlock', '65536:65536'), set()).add(name)
        if 500 < number <= 510:                          # a stopped user manager
            rows = [r for r in rows if r['context'] != 'user_service']
            errors = [dict(context='user_service', msg='user manager not running')]
        report = dict(audited=True, rows=rows, errors=errors)
        if number in (999, 1000):
            why = dict(context='host', msg='unreachable: timeout')
            report = dict(audited=False, rows=[], errors=[why])
        hosts[name] = report
    # dict order must not matter
    items = list(hosts.items())
    rng.shuffle(items)
    return dict(items), truth


def test_counts_and_groups_for_1000_hosts():
    hosts, truth = synthetic_fleet()
    summary = fs.build(hosts)
    assert summary['hosts'] == 1000
    assert summary['audited'] == 998
    scattered = truth[('docker', 'memlock', '65536:65536')]
    assert summary['short_hosts'] == 40 + len(scattered)
    by_key = dict(((i['context'], i['item']), i) for i in summary['items'])
    assert set(by_key) == {('login', 'nofile'), ('docker', 'memlock')}
    login = by_key['login', 'nofile']
    assert login['short'] == 40 and login['of'] == 998
    assert [(g['actual'], g['gap'], g['count']) for g in login['groups']] == [
        ('1024:20000', 'soft', 40)]
    assert login['groups'][0]['hosts'] == 'gpu-[0001-0040]'
    docker = by_key['docker', 'memlock']
    assert docker['short'] == len(scattered) == 10      # 97, 194, ..., 970 (none <= 40)
    assert docker['groups'][0]['source'] == 'dockerd default (no default-ulimits)'
    # the larger item leads
    assert summary['items'][0]['context'] == 'login'
    # user_service was probed on 988 audited hosts (10 could not be)
    assert fs.build(hosts)['unprobed'] == [dict(
        context='user_service', why='user manager not running', count=10,
        hosts='gpu-[0501-0510]')]
    # grouped by kind (issue 31.16), with one example message
    assert summary['unaudited'] == [dict(status='unreachable', kind='ssh timed out',
                                         why='unreachable: ssh timed out', count=2,
                                         hosts='gpu-[0999-1000]',
                                         example='unreachable: timeout')]


def test_rendered_lines_lead_with_the_counts():
    hosts = synthetic_fleet()[0]
    text = fs.lines(fs.build(hosts))
    assert text[0] == 'FLEET SUMMARY: 1000 hosts, 998 audited, 50 short of the profile somewhere'
    assert text[1] == 'login nofile: 40 of 998 hosts short'
    assert 'have 1024:20000 (want 16384:16384, soft short)' in text[2]
    assert text[2].rstrip().endswith('gpu-[0001-0040]')
    assert '2 hosts not audited (unreachable: ssh timed out): gpu-[0999-1000]; ' \
        'e.g. "unreachable: timeout"' in text
    markdown = fs.lines(fs.build(hosts), markdown=True)
    assert markdown[0] == '## Fleet summary'
    assert '| login | nofile | 40/998 | 1024:20000 (want 16384:16384) | soft |' in markdown[6]
    # the summary stays short however many hosts: one line per group, not per host
    assert len(text) < 12 and len(markdown) < 14


def test_a_clean_fleet_says_so():
    hosts = dict(('n%d' % i, dict(audited=True, rows=[row('login', 'nofile')], errors=[]))
                 for i in range(5))
    summary = fs.build(hosts)
    assert summary['items'] == [] and summary['short_hosts'] == 0
    assert fs.lines(summary)[-1].startswith('every audited host meets the profile')


def test_fold_hosts():
    assert fs.fold_hosts(['gpu-1', 'gpu-2', 'gpu-3', 'gpu-7', 'db']) == 'db, gpu-[1-3,7]'
    # folded on the last number in the name
    assert fs.fold_hosts(['n01.dc1', 'n02.dc1', 'n01.dc2']) == 'n01.dc[1-2], n02.dc1'
    odd = ['a%d' % i for i in range(1, 1001) if i % 2]
    assert fs.fold_hosts(odd) == 'a[1,3,5,7,9,11,13,15,17,19,21,23,...] (+488 more hosts)'
    assert fs.fold_hosts(odd, limit=3) == 'a[1,3,5,...] (+497 more hosts)'
    assert fs.fold_hosts(['x', 'y', 'z'], limit=2) == 'x, y (+1 more hosts)'
    # a padded run that crosses into more digits stays one range
    assert fs.fold_hosts(['gpu-0999', 'gpu-1000']) == 'gpu-[0999-1000]'
    assert fs.fold_hosts(['gpu-009', 'gpu-010', 'gpu-011']) == 'gpu-[009-011]'


def test_reused_probes_are_counted_and_said():
    """limits_audit's probe_max_age: the summary says on how many hosts a context's rows come
    from an earlier probe, and since when, before anything else."""
    hosts = {}
    for number in range(1, 6):
        rows = [row('login', 'nofile'), row('docker', 'nofile')]
        if number <= 3:
            rows[1].update(how='reused', proved_at='2026-12-05T07:0%d:00Z' % number)
        hosts['gpu-%d' % number] = dict(audited=True, rows=rows, errors=[])
    summary = fs.build(hosts)
    assert summary['reused'] == [dict(context='docker', count=3, oldest='2026-12-05T07:01:00Z',
                                      hosts='gpu-[1-3]')]
    text = fs.lines(summary)
    assert text[1].startswith('docker: reused on 3 hosts a probe made since 2026-12-05T07:01:00Z')
    assert text[1].endswith(': gpu-[1-3]')
    assert text[-1].startswith('every audited host meets the profile')
    markdown = fs.lines(summary, markdown=True)
    assert markdown[4].startswith('- docker: reused on 3 hosts')
    assert fs.build({'gpu-1': dict(audited=True, rows=[row('docker', 'nofile')])})['reused'] == []
