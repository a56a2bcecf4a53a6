"""playbooks/classify_failure.yml's pod mode with crictl: the shell command that finds the pod's
last container, rendered as Ansible renders it and run by bash against a crictl stand-in that
filters as crictl does (``crictl pods --name RE --namespace RE``: Go regular expressions,
matched anywhere in the name, newest pod first; ``crictl ps -a --pod ID -q``: newest container
first; ``--latest``: the newest only). The node of molecule/kubernetes has no crictl (Debian
packages none): the scenario runs the playbook with the collection's CRI client
(classify_cri_client)."""
import os
import subprocess

import pytest
from ansible import template as templating
from ansible.parsing.dataloader import DataLoader

if not hasattr(templating, 'trust_as_template'):
    # the unit tests' Python 3.8 lane has an older ansible-core: this renders the playbook as
    # the controller does (ansible-core 2.19 and later, Python 3.11+)
    pytest.skip('ansible-core before 2.19 has no trust_as_template', allow_module_level=True)
Templar, trust_as_template = templating.Templar, templating.trust_as_template

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'classify_failure.yml')

CRICTL = r'''#!/bin/bash
# crictl pods --name RE --namespace RE [--latest] -q / crictl ps -a --pod ID [--latest] -q,
# over $PODS and $CONTAINERS (one "ID NAME NAMESPACE" / "POD-ID CONTAINER-ID" a line, newest
# first); --latest: the first only
latest=cat
[[ " $* " == *" --latest "* ]] && latest='head -n 1'
case "$1" in
pods)
    name=$3 namespace=$5
    while read -r id pod ns; do
        if [[ $pod =~ $name ]] && [[ $ns =~ $namespace ]]; then echo "$id"; fi
    done < "$PODS" | $latest ;;
ps)
    while read -r pod id; do
        if [[ $pod == "$4" ]]; then echo "$id"; fi
    done < "$CONTAINERS" | $latest ;;
esac
exit 0
'''


LOADER = DataLoader()


def find_task():
    play = LOADER.load_from_file(PLAYBOOK)[0]
    for task in play['tasks']:
        for inner in task.get('block', []):
            if inner['name'] == "Find the pod's containers":
                return play['vars'], inner['ansible.builtin.shell']['cmd']
    raise AssertionError('no task "Find the pod\'s containers"')


def run(tmp_path, pod, namespace='default'):
    play_vars, cmd = find_task()
    variables = dict(play_vars, classify_pod=pod, classify_pod_namespace=namespace)
    # a playbook's task text is a template to Ansible
    shell = Templar(loader=LOADER, variables=variables).template(trust_as_template(cmd))
    bindir = tmp_path / 'bin'
    bindir.mkdir(exist_ok=True)
    crictl = bindir / 'crictl'
    crictl.write_text(CRICTL)
    crictl.chmod(0o755)
    (tmp_path / 'pods').write_text(
        'p4 trainer-0 kube-default\n'   # another namespace whose name holds "default"
        'p3 trainer-01 default\n'       # another pod whose name starts with trainer-0
        'p2 trainerx0 default\n'        # a dot of the name is no wildcard
        'p1 trainer-0 default\n'
        'p0 trainer.0 default\n')
    (tmp_path / 'containers').write_text('p1 c1-new\np1 c1-old\np2 c2\np3 c3\np4 c4\np0 c0\n')
    env = dict(os.environ, PATH='%s:%s' % (bindir, os.environ['PATH']),
               PODS=str(tmp_path / 'pods'), CONTAINERS=str(tmp_path / 'containers'))
    proc = subprocess.run(['bash', '-c', shell], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


def test_the_named_pod_s_newest_container_and_no_other_pod_s(tmp_path):
    assert run(tmp_path, 'trainer-0') == (0, 'c1-new', '')
    assert run(tmp_path, 'trainer.0')[1] == 'c0'
    assert run(tmp_path, 'trainer-0', 'kube-default')[1] == 'c4'


def test_no_such_pod_is_named_in_the_error(tmp_path):
    assert run(tmp_path, 'trainer-1') == (1, '', 'no pod trainer-1 in namespace default')
    assert run(tmp_path, 'trainer', 'default')[0] == 1
