"""Differential test: for many generated limits.conf + limits.d layouts, what
gpufleet.tuning.pam_limits_info says pam_limits applies equals what a real `su -` session gets.

Layouts are generated from a fixed seed (PAM_DIFFERENTIAL_CASES of them, default 40) with user
lines, uid ranges, @group and gid ranges, '*', soft/hard/- types, later files overriding earlier
ones, comments, invalid lines and, rarely, a "<domain> -" no-limits line. Values stay below the
node's ceilings (PID 1's hard limits; hard nofile 20000 in this sandbox's containers).
"""
import base64
import os
import random

import pytest

from conftest import login_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m

CASES = int(os.environ.get('PAM_DIFFERENTIAL_CASES', '40'))
USERS = ['alice', 'bob', 'carol', 'root']
DOMAINS = ['*', '*', '*', 'alice', 'bob', 'carol', 'root', '@ml', '@data', '@root', '@alice',
           '1000:2000', '2000:', ':1002', '0:', '@:3001', '@3000:3000', '@2999:3001',
           'nosuchuser', '@nosuchgroup', '@:0']
TYPES = ['soft', 'hard', '-']
FILE_NAMES = ['10-a.conf', '20-nproc.conf', '50-b.conf', '90-gpufleet-tuning.conf', '99-z.conf',
              'zz.conf.disabled', 'A-upper.conf']


def value_for(rng, item, pid1):
    """A limits.conf value text that the node can apply (at or below PID 1's hard limit)."""
    hard = pid1[item].hard
    if item == 'nofile':
        return str(rng.choice([1024, 2048, 4096, 8192, 12000, 16384, 19999]))
    if item == 'nproc':
        return str(rng.choice([512, 1024, 4096, 30000]))
    # stack and data stay large enough for a shell to run (a 0 stack segfaults the session)
    sizes = {'core': [0, 1024, 65536], 'fsize': [1024, 65536, 1048576],
             'stack': [8192, 16384, 65536], 'data': [1048576, 4194304]}
    if item in sizes:
        if hard == m.UNLIMITED and rng.random() < 0.3:
            return 'unlimited'
        return str(rng.choice(sizes[item]))
    if item == 'memlock':
        return str(rng.choice([64, 1024, 4096, 8192]))         # KiB, PID 1 hard is 8 MiB here
    if item == 'cpu':
        return rng.choice(['unlimited', '10', '600'])
    if item == 'sigpending':
        return str(rng.choice([1024, 4096, 50000]))
    if item == 'msgqueue':
        return str(rng.choice([8192, 409600, 819200]))
    raise AssertionError(item)


ITEMS = ['nofile', 'nofile', 'nproc', 'core', 'stack', 'memlock', 'cpu', 'sigpending',
         'msgqueue', 'fsize', 'data']


def generate(case, pid1):
    rng = random.Random(1000 + case)
    files = {'/etc/security/limits.conf': []}
    for name in rng.sample(FILE_NAMES, rng.randint(0, 4)):
        files['/etc/security/limits.d/' + name] = []
    for path in files:
        lines = files[path]
        if rng.random() < 0.5:
            lines.append('# case %d %s' % (case, path))
        for _n in range(rng.randint(0, 7)):
            item = rng.choice(ITEMS)
            sep = rng.choice([' ', '\t', '   '])
            lines.append(sep.join([rng.choice(DOMAINS), rng.choice(TYPES), item,
                                   value_for(rng, item, pid1)]))
        if rng.random() < 0.15:
            lines.append(rng.choice(['garbage line', '* soft nofiles 5', '* maybe nofile 5']))
        if rng.random() < 0.04:
            lines.append('%s -' % rng.choice(['bob', '@data', ':1001']))
    return dict((path, '\n'.join(lines) + ('\n' if lines else '')) for path, lines in files.items())


def write_layout(host, layout):
    script = ['rm -f /etc/security/limits.d/*']
    for path, text in layout.items():
        script.append('echo %s | base64 -d > %s' % (
            base64.b64encode(text.encode()).decode(), path))
    host.check_output(' && '.join(script))


def expected_side(eff, side, baseline):
    value = eff[side]
    if value is not None:
        return value
    if side == 'soft' and eff['hard'] is not None and m.exceeds(baseline.soft, eff['hard']):
        return eff['hard']            # the inherited soft is clamped to the new hard
    return getattr(baseline, side)


@pytest.fixture(scope='module')
def baselines(host):
    """What each user's session gets with no limits lines at all."""
    host.check_output('tar -C /etc -cf /root/security-differential.tar security')
    host.check_output('rm -f /etc/security/limits.d/* && : > /etc/security/limits.conf')
    result = dict((user, login_limits(host, user)) for user in USERS)
    yield result
    host.check_output('rm -rf /etc/security && tar -C /etc -xf /root/security-differential.tar')


@pytest.mark.parametrize('case', range(CASES))
def test_info_equals_su_session(host, module, baselines, case):
    pid1 = m.parse_proc_limits(host.file('/proc/1/limits').content_string)
    layout = generate(case, pid1)
    write_layout(host, layout)
    for user in USERS:
        ok, result = module('gpufleet.tuning.pam_limits_info', {'user': user})
        assert ok, result
        got = login_limits(host, user)
        base = baselines[user]
        effective = result['effective']
        context = 'case %d user %s layout %r info %r' % (case, user, layout, effective)
        for item in got:
            if item in effective:
                for side in ('soft', 'hard'):
                    assert getattr(got[item], side) == expected_side(
                        effective[item], side, base[item]), '%s: %s %s' % (context, item, side)
            else:
                assert got[item] == base[item], '%s: %s untouched' % (context, item)
