"""Alert -> re-tune (issue 34 item 4) for the watch scenario: the collection's rulebook
(extensions/eda/rulebooks/gpufleet_limits_retune.yml) run by a real ansible-rulebook on the
controller, the node's Alertmanager sending to its webhook, the node in a site-like inventory
(converge.yml's profile as group variables)."""
import ast
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import yaml
from conftest import CONVERGE, ROOT, wait_for

RULEBOOK = 'gpufleet.tuning.gpufleet_limits_retune'
# build/eda-venv from `make eda` (requirements-eda.txt); GPUFLEET_ANSIBLE_RULEBOOK for another
ANSIBLE_RULEBOOK = os.environ.get('GPUFLEET_ANSIBLE_RULEBOOK') or os.path.join(
    ROOT, 'build', 'eda-venv', 'bin', 'ansible-rulebook')
TOKEN = 'gpufleet-watch-test-token'
ALERTMANAGER_CONFIG = '/etc/prometheus/alertmanager.yml'
NOWHERE = 'route:\n  receiver: nowhere\nreceivers:\n  - name: nowhere\n'


def converge_vars():
    """converge.yml's profile (its play's variables and the limits role's): the inventory's
    group variables, as a site keeps them."""
    with open(CONVERGE) as handle:
        play = yaml.safe_load(handle)[0]
    found = dict(play['vars'])
    found.update(play['roles'][0]['vars'])
    return found


def free_port():
    sock = socket.socket()
    sock.bind(('', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def gateway(name):
    """The docker bridge address of the node: where the node reaches this controller."""
    return subprocess.check_output(
        ['docker', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.Gateway}}{{end}}',
         name], universal_newlines=True).strip()


def alertmanager_config(url):
    """Route the drift watch's alerts by alertname and host to the rulebook's webhook (a short
    group_wait for the test; a site keeps its own)."""
    return yaml.safe_dump({
        'route': {'receiver': 'gpufleet-retune', 'group_by': ['alertname', 'host'],
                  'group_wait': '1s', 'group_interval': '5s', 'repeat_interval': '1h'},
        'receivers': [{'name': 'gpufleet-retune', 'webhook_configs': [{
            'url': url, 'send_resolved': True,
            'http_config': {'authorization': {'credentials': TOKEN}}}]}]})


def set_alertmanager(host, config):
    host.check_output("printf '%%s' '%s' > %s" % (config, ALERTMANAGER_CONFIG))
    host.check_output('amtool check-config %s' % ALERTMANAGER_CONFIG)
    host.check_output('systemctl restart prometheus-alertmanager.service')
    wait_for('Alertmanager ready', lambda: host.run(
        'python3 -c "import urllib.request; urllib.request.urlopen('
        "'http://127.0.0.1:9093/-/ready', timeout=2)\"").rc == 0, 60)


class Rulebook(object):
    """ansible-rulebook running the collection's rulebook, its output in a file."""

    def __init__(self, node, workdir):
        assert os.access(ANSIBLE_RULEBOOK, os.X_OK), (
            'no ansible-rulebook at %s: `make eda` installs it (requirements-eda.txt), or set '
            'GPUFLEET_ANSIBLE_RULEBOOK' % ANSIBLE_RULEBOOK)
        self.node = node
        self.port = free_port()
        # what the tests post to; the node's Alertmanager posts to node_url
        self.url = 'http://127.0.0.1:%d/alertmanager' % self.port
        self.node_url = 'http://%s:%d/alertmanager' % (gateway(node), self.port)
        inventory = os.path.join(workdir, 'inventory')
        os.makedirs(os.path.join(inventory, 'group_vars'))
        with open(os.path.join(inventory, 'hosts.yml'), 'w') as handle:
            yaml.safe_dump({'gpu_nodes': {'hosts': {node: {
                'ansible_connection': 'community.docker.docker'}}}}, handle)
        with open(os.path.join(inventory, 'group_vars', 'gpu_nodes.yml'), 'w') as handle:
            yaml.safe_dump(converge_vars(), handle)
        self.log = os.path.join(workdir, 'ansible-rulebook.log')
        env = dict(os.environ, GPUFLEET_EDA_PORT=str(self.port), GPUFLEET_EDA_TOKEN=TOKEN,
                   ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1',
                   # ansible-playbook and ansible-galaxy of the tools' venv (this pytest's)
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
        with open(self.log, 'w') as out:
            self.proc = subprocess.Popen(
                [ANSIBLE_RULEBOOK, '-r', RULEBOOK, '-i', inventory, '-vv', '--print-events',
                 '-E', 'GPUFLEET_EDA_PORT,GPUFLEET_EDA_TOKEN'],
                cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
        wait_for('ansible-rulebook listening on port %d' % self.port, self._listening, 90)

    def _listening(self):
        assert self.proc.poll() is None, 'ansible-rulebook exited:\n' + self.output()
        try:
            socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def output(self):
        with open(self.log) as handle:
            return handle.read()

    def events(self):
        """The events the rulebook received, as --print-events shows them (Python literals),
        those printed whole so far (a line of 80 stars closes each)."""
        found = []
        for block in self.output().split('[received event]')[1:]:
            text, closed, _rest = block.partition('\n' + '*' * 80 + '\n')
            if closed:
                found.append(ast.literal_eval(text.split('\nEvent:\n', 1)[1]))
        return found

    def notifications(self, status):
        """Alertmanager's own notifications with this status that reached the rulebook."""
        return [e for e in self.events() if e['payload']['status'] == status
                and e['meta']['headers'].get('User-Agent', '').startswith('Alertmanager/')]

    def recaps(self):
        """The PLAY RECAPs of the playbook runs written whole so far:
        [{host: {'ok': N, 'changed': N, ...}}]."""
        runs = []
        for block in re.findall(r'PLAY RECAP \*+\n((?:\S+ +: ok=.*ignored=\d+ *\n)+)',
                                self.output()):
            runs.append(dict(
                (name, dict((k, int(v)) for k, v in re.findall(r'(\w+)=(\d+)', counts)))
                for name, counts in re.findall(r'(\S+) +: (ok=.*)', block)))
        return runs

    def post(self, payload, token=TOKEN):
        """POST an Alertmanager notification to the webhook; the HTTP status."""
        request = urllib.request.Request(self.url, data=json.dumps(payload).encode(),
                                         headers={'Content-Type': 'application/json'})
        if token:
            request.add_header('Authorization', 'Bearer %s' % token)
        try:
            return urllib.request.urlopen(request, timeout=10).status
        except urllib.error.HTTPError as error:
            return error.code

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def notification(alertname, host, status='firing', **labels):
    """An Alertmanager webhook notification (version 4) of one alert, grouped by alertname and
    host as alertmanager_config routes them."""
    labels = dict(labels, alertname=alertname, host=host, instance=host + ':9100', job='node')
    return {'version': '4', 'groupKey': '{}:{alertname="%s", host="%s"}' % (alertname, host),
            'truncatedAlerts': 0, 'status': status, 'receiver': 'gpufleet-retune',
            'groupLabels': {'alertname': alertname, 'host': host}, 'commonLabels': dict(labels),
            'commonAnnotations': {}, 'externalURL': 'http://127.0.0.1:9093',
            'alerts': [{'status': status, 'labels': labels, 'annotations': {},
                        'startsAt': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                        'endsAt': '0001-01-01T00:00:00Z', 'generatorURL': '',
                        'fingerprint': '0'}]}
