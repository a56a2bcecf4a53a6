"""systemd as the oracle for the cases ported from its own test suite (tests/unit/plugins/
module_utils/test_oracle_systemd.py): each value goes into a unit of its own, one daemon-reload, and
`systemctl show` says what systemd made of it; it must be what from_systemd_config says (a value
it refuses leaves the unit's default). Then `systemd-analyze verify` judges the unit and the
drop-in this scenario's converge wrote."""
import base64

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from unit.plugins.module_utils.test_oracle_systemd import CASES, SINCE

UNIT = 'gpufleet-oracle%d.service'
BODY = '[Service]\nType=oneshot\nExecStart=/bin/true\n'
# every item the ported cases use (the rlimit_parse table covers them all, issue 31)
KEYS = dict((name, m.systemd_key(name)) for name in sorted(set(case[1] for case in CASES)))


def _show(host, unit, key):
    props = dict(line.split('=', 1) for line in host.check_output(
        'systemctl show -p %s -p %sSoft %s' % (key, key, unit)).splitlines())
    return m.Limit(m.from_systemd_show(None, props[key + 'Soft']),
                   m.from_systemd_show(None, props[key]))


@pytest.fixture(scope='module')
def shown(host):
    script = []
    units = [BODY] + [BODY + '%s=%s\n' % (KEYS[item], text) for _s, item, text, _e in CASES]
    for index, body in enumerate(units):
        script.append('echo %s | base64 -d > /etc/systemd/system/%s' % (
            base64.b64encode(body.encode('utf-8')).decode(), UNIT % index))
    host.check_output(' && '.join(script))
    host.check_output('systemctl daemon-reload')
    try:
        default = dict((item, _show(host, UNIT % 0, key)) for item, key in KEYS.items())
        version = int(host.check_output('systemctl --version').split()[1])
        yield default, [_show(host, UNIT % (n + 1), KEYS[case[1]]) for n, case in
                        enumerate(CASES)], version
    finally:
        host.check_output('rm -f /etc/systemd/system/gpufleet-oracle*.service && '
                          'systemctl daemon-reload')


@pytest.mark.parametrize('index', range(len(CASES)))
def test_systemctl_show_agrees_with_the_model(shown, index):
    default, results, version = shown
    source, item, text, expected = CASES[index]
    if version < SINCE.get((item, text), 0):
        expected = None          # this release refuses it: the unit keeps its default
    got = results[index]
    assert got == (expected if expected is not None else default[item]), \
        '%s: %s=%r (systemd %d)' % (source, KEYS[item], text, version)


def test_systemd_analyze_verify_accepts_what_we_wrote(host):
    """The managed unit with the drop-in converge wrote: no resource value systemd ignores."""
    out = host.run('systemd-analyze verify gpufleet-sleeper.service')
    text = out.stdout + out.stderr
    assert 'resource' not in text.lower() and 'Limit' not in text, text
    assert host.file('/etc/systemd/system/gpufleet-sleeper.service.d/'
                     '90-gpufleet-tuning.conf').exists
