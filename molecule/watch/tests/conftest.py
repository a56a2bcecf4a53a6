"""Helpers for the watch scenario's testinfra tests: Prometheus' HTTP API on the node, the
metrics file, the watch's journal, bounded waits."""
import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'build', 'collections'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from scenario_support import key, samples  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

# converge.yml's timer: 20 s plus up to 2 s of random delay.
INTERVAL, DELAY = 20, 2
PERIOD = INTERVAL + DELAY
UNIT = 'gpufleet-limits-watch'
METRICS_DIR = '/var/lib/prometheus/node-exporter'
METRICS = METRICS_DIR + '/gpufleet_limits.prom'
PROFILE = '/etc/gpufleet-tuning/limits-watch.json'
CODE = '/usr/local/lib/gpufleet-tuning/ansible_collections/gpufleet/tuning/plugins/module_utils'
CONVERGE = os.path.join(ROOT, 'molecule', 'watch', 'converge.yml')
REMOVE = os.path.join(ROOT, 'molecule', 'watch', 'remove.yml')
API = 'http://127.0.0.1:9090/api/v1/'
# issue 34: the watch's outlets besides the metrics
STATE_DIR = '/var/lib/gpufleet-tuning/watch'
NPD_PLUGIN = '/usr/local/lib/gpufleet-tuning/npd/check_gpufleet_limits.sh'
NPD_CONFIG = '/etc/gpufleet-tuning/gpufleet-limits-plugin-monitor.json'
NFD_FILE = '/etc/kubernetes/node-feature-discovery/features.d/gpufleet-limits'
APT_HOOK = '/etc/apt/apt.conf.d/80gpufleet-limits-watch'

_GET = ('python3 -c "import sys, urllib.request; '
        'print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" %s')


def api(host, path):
    """The data of a Prometheus HTTP API answer (read on the node, Prometheus is on loopback)."""
    out = host.check_output(_GET % ("'" + API + path + "'"))
    answer = json.loads(out)
    assert answer['status'] == 'success', answer
    return answer['data']


def firing(host, name=None):
    """Labels of the firing gpufleet alerts (all of them, or those called ``name``)."""
    return [a['labels'] for a in api(host, 'alerts')['alerts']
            if a['state'] == 'firing' and a['labels']['alertname'].startswith('GpufleetLimits')
            and (name is None or a['labels']['alertname'] == name)]


def query(host, expr):
    from urllib.parse import quote
    return api(host, 'query?query=' + quote(expr))['result']


def metrics(host):
    return samples(host.file(METRICS).content_string)


def wait_for(what, check, timeout, step=1.0):
    """Poll ``check`` (returns a true value when done) for at most ``timeout`` seconds;
    returns (value, seconds waited); fails naming ``what``."""
    started = time.time()
    last = None
    while time.time() - started < timeout:
        last = check()
        if last:
            return last, time.time() - started
        time.sleep(step)
    raise AssertionError('%s: not within %s s (last: %r)' % (what, timeout, last))


def journal_since(host, since, priority='err'):
    """The watch's journal messages of at least ``priority`` since the unix time ``since``."""
    return host.run('journalctl -q -u %s.service -p %s --since @%d -o cat' % (
        UNIT, priority, int(since))).stdout


def npd(host, answer='', shell='sh'):
    """The node-problem-detector plugin as NPD runs it: (exit status, trimmed stdout)."""
    got = host.run('%s %s %s' % (shell, NPD_PLUGIN, answer))
    return got.rc, got.stdout.strip()


def nfd_labels(host):
    """{label: value} of the NFD feature file, validated against NFD's documented format."""
    from node_state_formats import parse_nfd_features
    return dict((k, v[0]) for k, v in parse_nfd_features(
        host.file(NFD_FILE).content_string, NFD_FILE).items())
