"""Differential test: for many generated layouts of /etc/systemd/system.conf plus system.conf.d
drop-ins across /etc, /run, /usr/local/lib and /usr/lib, what gpufleet.tuning.systemd_limits_info
reports as `configured` equals what `systemctl show` says after `systemctl daemon-reexec`; items
no file sets keep the manager's built-in values. A second set of layouts does the same for a
unit's Limit*= (unit file plus drop-ins) after `daemon-reload`.

Layouts come from fixed seeds (SYSTEMD_DIFFERENTIAL_CASES manager layouts, default 48, and a
quarter as many unit layouts): masking by same-named files and /dev/null links, invalid
assignments (garbage, soft above hard, blanks before the colon, lower-case suffixes), SOFT:HARD,
infinity, size suffixes and fractions, hex and octal counts, time spans, comments, continuation
lines, wrong sections, assignments outside any section and, rarely, a broken section header.
Values stay harmless for the node (nothing is started while a layout is in place).
"""
import base64
import os
import random

import pytest

from conftest import limits_model as m

CASES = int(os.environ.get('SYSTEMD_DIFFERENTIAL_CASES', '48'))
UNIT_CASES = max(8, CASES // 4)
DIRS = ['/etc/systemd', '/run/systemd', '/usr/local/lib/systemd', '/usr/lib/systemd']
UNIT_DIRS = ['/etc/systemd/system', '/run/systemd/system', '/usr/lib/systemd/system']
NAMES = ['10-a.conf', '20-b.conf', '50-mid.conf', '90-gpufleet-tuning.conf', '99-z.conf',
         'A-upper.conf', 'zz.conf.off']
ITEMS = ['NOFILE', 'NOFILE', 'NOFILE', 'NPROC', 'MEMLOCK', 'STACK', 'CORE', 'CPU', 'SIGPENDING',
         'MSGQUEUE', 'LOCKS', 'FSIZE', 'RTPRIO', 'NICE', 'AS']
SHOW = ['NOFILE', 'NPROC', 'MEMLOCK', 'STACK', 'CORE', 'CPU', 'SIGPENDING', 'MSGQUEUE', 'LOCKS',
        'FSIZE', 'RTPRIO', 'NICE', 'AS', 'DATA', 'RSS']
UNIT = 'gpufleet-difft.service'


def value_for(rng, item):
    """A value text: mostly valid, sometimes what systemd refuses."""
    roll = rng.random()
    if roll < 0.12:
        return rng.choice(['lots', '', '3000 :4000', '2Ki', 'INFINITY', '9000:100',
                           'infinity:100', '1k', '"4096"', '4096 # note', '-5:5', '18446744073709551615'])
    if item in ('NOFILE', 'NPROC', 'SIGPENDING', 'LOCKS'):
        numbers = [1024, 2048, 4096, 8192, 12000, 16384]
        if roll < 0.2:
            return rng.choice(['0x1000', '010000', '+4096'])
        if roll < 0.5:
            soft, hard = sorted(rng.sample(numbers, 2))
            return '%d:%s' % (soft, rng.choice([str(hard), str(hard), 'infinity']))
        if roll < 0.55:
            return 'infinity'
        return str(rng.choice(numbers))
    if item in ('MEMLOCK', 'STACK', 'CORE', 'MSGQUEUE', 'FSIZE', 'AS'):
        sizes = ['64K', '512K', '1M', '8M', '16M', '1G', '8388608', '1.5M', '1G 512M', '0', '4 M',
                 '2048B']
        if roll < 0.45:
            return '%s:%s' % (rng.choice(['64K', '1M', '8M']), rng.choice(['16M', 'infinity', '1G']))
        if roll < 0.55:
            return 'infinity'
        return rng.choice(sizes)
    if item == 'CPU':
        return rng.choice(['90', '2min', '1h30min', '1500ms', '0.5s', 'infinity', '60:120',
                           '1h:infinity', '3 parsecs'])
    if item == 'NICE':
        return rng.choice(['-5', '+5', '5', '0', '30', '-21', '+19:-10'])
    if item == 'RTPRIO':
        return rng.choice(['0', '10', '50:99', '99'])
    raise AssertionError(item)


def file_text(rng, prefix, section, allow_bad_header=True):
    lines = []
    if rng.random() < 0.3:
        lines.append('%sLimitNOFILE=%d' % (prefix, rng.choice([1111, 2222])))  # outside section
    lines.append('[%s]' % section)
    for _n in range(rng.randint(0, 6)):
        item = rng.choice(ITEMS)
        value = value_for(rng, item)
        roll = rng.random()
        if roll < 0.06:
            lines.append('# %sLimit%s=%s' % (prefix, item, value))
        elif roll < 0.09:
            lines.append('; %sLimit%s=%s' % (prefix, item, value))
        elif roll < 0.12:
            lines.append('%slimit%s=%s' % (prefix, item.lower(), value))      # wrong case
        elif roll < 0.15:
            lines.append('[Other]\n%sLimit%s=%s\n[%s]' % (prefix, item, value, section))
        elif roll < 0.19 and value and ':' not in value:
            lines.append('%sLimit%s=\\\n%s' % (prefix, item, value))           # continuation
        elif roll < 0.23:
            lines.append('  %sLimit%s = %s  ' % (prefix, item, value))
        else:
            lines.append('%sLimit%s=%s' % (prefix, item, value))
        if allow_bad_header and rng.random() < 0.03:
            lines.append('[%s' % section)                                       # broken header
    return '\n'.join(lines) + ('\n' if rng.random() < 0.9 else '')


def manager_layout(case):
    rng = random.Random(7000 + case)
    layout = {'/etc/systemd/system.conf': file_text(rng, 'Default', 'Manager')
              if rng.random() < 0.7 else ''}
    for _n in range(rng.randint(0, 6)):
        path = '%s/system.conf.d/%s' % (rng.choice(DIRS), rng.choice(NAMES))
        layout[path] = file_text(rng, 'Default', 'Manager')
    if rng.random() < 0.15:
        layout['/etc/systemd/system.conf.d/%s' % rng.choice(NAMES)] = None   # /dev/null mask
    return layout


def unit_layout(case):
    rng = random.Random(9000 + case)
    fragment = '%s/%s' % (rng.choice(UNIT_DIRS), UNIT)
    text = '[Unit]\nDescription=differential\n[Service]\nExecStart=/bin/true\n'
    layout = {fragment: text + file_text(rng, '', 'Service', False).replace('[Service]\n', '', 1)}
    for _n in range(rng.randint(1, 5)):
        path = '%s/%s.d/%s' % (rng.choice(UNIT_DIRS), UNIT, rng.choice(NAMES))
        layout[path] = file_text(rng, '', 'Service')
    return layout


def write_script(layout, clean):
    script = ['rm -rf ' + ' '.join(clean)]
    for path, text in sorted(layout.items(), key=lambda kv: kv[1] is None):
        script.append('mkdir -p %s' % os.path.dirname(path))
        if text is None:
            script.append('rm -f %s && ln -s /dev/null %s' % (path, path))
        else:
            script.append('echo %s | base64 -d > %s' % (
                base64.b64encode(text.encode()).decode(), path))
    return ' && '.join(script)


def show_names(prefix):
    return ['%sLimit%s%s' % (prefix, rlimit, soft) for rlimit in SHOW for soft in ('', 'Soft')]


def show_raw(host, prefix, unit=''):
    out = host.check_output('systemctl show --property=%s %s' % (','.join(show_names(prefix)), unit))
    return dict(line.split('=', 1) for line in out.splitlines() if '=' in line)


def show(host, prefix, unit=''):
    values = show_raw(host, prefix, unit)
    result = {}
    for rlimit in SHOW:
        item = m.item_from_systemd_key('Limit' + rlimit)
        key = '%sLimit%s' % (prefix, rlimit)
        result[item.name] = {'soft': m.from_systemd_show(item, values[key + 'Soft']),
                             'hard': m.from_systemd_show(item, values[key])}
    return result


MANAGER_CLEAN = ['%s/system.conf.d' % d for d in DIRS]


@pytest.fixture(scope='module')
def pristine_manager(host):
    """Move every manager file aside; restore and re-execute afterwards."""
    host.check_output('rm -rf /root/difft && mkdir -p /root/difft && '
                      'tar -C / -cf /root/difft/saved.tar --ignore-failed-read '
                      'etc/systemd/system.conf ' + ' '.join(p.lstrip('/') for p in MANAGER_CLEAN
                                                            if host.file(p).exists))
    host.check_output(write_script({'/etc/systemd/system.conf': ''}, MANAGER_CLEAN)
                      + ' && systemctl daemon-reexec')
    baseline = show(host, 'Default')
    yield baseline
    host.check_output('rm -rf %s && tar -C / -xf /root/difft/saved.tar && systemctl daemon-reexec'
                      % ' '.join(MANAGER_CLEAN))


def compare(configured, live, baseline, context):
    for name, values in live.items():
        if name in configured:
            expected = {'soft': configured[name]['soft'], 'hard': configured[name]['hard']}
        else:
            expected = baseline[name]
        assert values == expected, '%s: %s' % (context, name)


@pytest.mark.parametrize('case', range(CASES))
def test_manager_configured_equals_systemctl_show(host, module, pristine_manager, case):
    layout = manager_layout(case)
    host.check_output(write_script(layout, MANAGER_CLEAN) + ' && systemctl daemon-reexec')
    live = show(host, 'Default')
    ok, result, out = module('gpufleet.tuning.systemd_limits_info', {'scope': 'system'})
    assert ok, out
    # the module's live defaults are what systemctl show says, for every layout
    reported = result['manager']['live']
    assert dict((name, reported.get(name)) for name in live) == live, layout
    configured = result['manager']['configured']
    context = 'case %d layout %r configured %r invalid %r' % (
        case, layout, configured, result['manager']['invalid'])
    compare(configured, live, pristine_manager, context)


UNIT_CLEAN = ['%s/%s' % (d, UNIT) for d in UNIT_DIRS] + ['%s/%s.d' % (d, UNIT) for d in UNIT_DIRS]


@pytest.fixture(scope='module')
def unit_baseline(host):
    host.check_output(write_script({'/etc/systemd/system/' + UNIT:
                                    '[Service]\nExecStart=/bin/true\n'}, UNIT_CLEAN)
                      + ' && systemctl daemon-reload')
    baseline = show(host, '', UNIT)
    yield baseline
    host.check_output('rm -rf %s && systemctl daemon-reload' % ' '.join(UNIT_CLEAN))


@pytest.mark.parametrize('case', range(UNIT_CASES))
def test_unit_configured_equals_systemctl_show(host, module, unit_baseline, case):
    layout = unit_layout(case)
    host.check_output(write_script(layout, UNIT_CLEAN) + ' && systemctl daemon-reload')
    live = show(host, '', UNIT)
    ok, result, out = module('gpufleet.tuning.systemd_limits_info', {'units': [UNIT]})
    assert ok, out
    report = result['units'][UNIT]
    context = 'unit case %d layout %r configured %r invalid %r' % (
        case, layout, report['configured'], report['invalid'])
    assert report['live'] == live
    compare(report['configured'], live, unit_baseline, context)
