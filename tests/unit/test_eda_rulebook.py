"""The drift watch's re-tune rulebook (extensions/eda/rulebooks/) against what it names: the
alerts it acts on are the shipped rules' alerts whose advice is a re-tune, its playbook is the
limits play tune_gpu_nodes.yml imports, its host the one path the filter and the throttle read.
The rulebook runs for real in the watch scenario (molecule/watch/tests/test_watch.py)."""
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
HOST = 'event.payload.commonLabels.host'


def _load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def _rule():
    ruleset, = _load('extensions', 'eda', 'rulebooks', 'gpufleet_limits_retune.yml')
    rule, = ruleset['rules']
    return ruleset, rule


def test_acts_on_the_alerts_whose_advice_is_a_retune():
    rules = [r for group in _load('roles', 'limits_watch', 'files',
                                  'gpufleet-limits.rules.yml')['groups'] for r in group['rules']]
    advised = set(r['alert'] for r in rules
                  if 'rerun tune_gpu_nodes.yml --tags limits' in r['annotations']['description'])
    condition = _rule()[1]['condition']
    names = set(re.findall(r'"(Gpufleet\w+)"', condition))
    assert names == advised == {'GpufleetLimitsBelowProfile', 'GpufleetKernelCeilingBelowMinimum'}
    assert 'event.payload.status == "firing"' in condition
    assert '%s is defined' % HOST in condition


def test_runs_the_limits_play_on_the_alert_s_host_when_idle():
    ruleset, rule = _rule()
    source, = ruleset['sources']
    hosts_filter, = source['filters']
    assert hosts_filter['eda.builtin.insert_hosts_to_meta']['host_path'] == HOST[len('event.'):]
    assert rule['throttle']['group_by_attributes'] == [HOST]
    assert rule['throttle']['once_within'] == '15 minutes'
    action = rule['action']['run_playbook']
    assert action['name'] == 'gpufleet.tuning.tune_limits'
    assert action['extra_vars'] == {'gpufleet_hosts': '{{ %s }}' % HOST,
                                    'limits_docker_restart': 'when_idle'}
    # the same play tune_gpu_nodes.yml runs under its tag limits
    imports = [p['ansible.builtin.import_playbook'] for p in _load('playbooks',
                                                                   'tune_gpu_nodes.yml')
               if 'ansible.builtin.import_playbook' in p]
    assert imports == ['tune_limits.yml']
    play, = _load('playbooks', 'tune_limits.yml')
    task, = play['tasks']
    assert task['ansible.builtin.import_role']['name'] == 'gpufleet.tuning.limits'
    assert task['tags'] == ['limits']
