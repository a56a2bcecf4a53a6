"""Check what `make demo` left in build/lab: before tuning every lab node had gaps to the
profile, after tuning none, in every context, and no probe failed."""
import json
import os
import sys

lab = sys.argv[1] if len(sys.argv) > 1 else 'build/lab'
with open(os.path.join(lab, 'before', 'limits-audit.json')) as handle:
    before = json.load(handle)['hosts']
with open(os.path.join(lab, 'after', 'limits-audit.json')) as handle:
    after = json.load(handle)['hosts']
problems = []
slurm_nodes = 0
slurm_hosts = []
k8s_nodes = 0
if len(after) < 3:
    problems.append('expected 3 lab nodes, the audit saw %d' % len(after))
for host in sorted(after):
    if not before.get(host, {}).get('gaps'):
        problems.append('%s: no gaps before tuning: the audit could not have shown a change' % host)
    if after[host].get('gaps'):
        problems.append('%s: gaps after tuning: %s' % (host, after[host]['gaps']))
    if after[host].get('errors'):
        problems.append('%s: probes failed: %s' % (host, after[host]['errors']))
    contexts = sorted(after[host].get('contexts', {}))
    for wanted in ('login', 'service', 'user_manager', 'docker'):
        if wanted not in contexts:
            problems.append('%s: context %s was not probed (%s)' % (host, wanted, contexts))
    if 'slurm_job' in contexts:
        # the Slurm node (LAB_SLURM_NODES): a job from a default login got less before, not after
        slurm_nodes += 1
        slurm_hosts.append(host)
        if not [g for g in before[host].get('gaps', []) if g['context'] == 'slurm_job']:
            problems.append('%s: no slurm_job gap before tuning' % host)
    if 'k8s_pod' in contexts:
        # the Kubernetes node (LAB_K8S_NODES): a new pod got the ctr base spec's 1024:1024
        # before, the profile after, each row naming the base spec entry it comes from
        k8s_nodes += 1
        rows = dict((when, [r for r in audit[host].get('rows', []) if r['context'] == 'k8s_pod'
                            and r['item'] == 'nofile'])
                    for when, audit in (('before', before), ('after', after)))
        if [r['actual'] for r in rows['before']] != ['1024:1024'] or not rows['before'][0]['gap']:
            problems.append('%s: k8s_pod nofile before tuning is not the 1024:1024 trap: %s'
                            % (host, rows['before']))
        if [r['actual'] for r in rows['after']] != [after[host]['contexts']['k8s_pod']['limits']
                                                    ['nofile']['human']] or rows['after'][0]['gap']:
            problems.append('%s: k8s_pod nofile after tuning: %s' % (host, rows['after']))
        for row in rows['before'] + rows['after']:
            if 'process.rlimits' not in row['source'] or row.get('how') not in ('predicted', 'probed'):
                problems.append('%s: k8s_pod row without its base spec source: %s' % (host, row))
if os.environ.get('LAB_K8S_NODES', '1') != '0' and not k8s_nodes:
    problems.append('no lab node was a Kubernetes node (LAB_K8S_NODES): k8s_pod was not shown')
if os.environ.get('LAB_SLURM_NODES', '1') != '0' and not slurm_nodes:
    problems.append('no lab node ran Slurm (LAB_SLURM_NODES): the slurm_job context was not shown')
# The fleet summary (issue 15) leads the reports: before tuning it counts every node short and
# folds their names; after tuning it counts none.
with open(os.path.join(lab, 'before', 'limits-audit.json')) as handle:
    summary_before = json.load(handle).get('summary') or {}
with open(os.path.join(lab, 'after', 'limits-audit.json')) as handle:
    summary_after = json.load(handle).get('summary') or {}
short_items = [i for i in summary_before.get('items', []) if i['short'] == len(after)]
if summary_before.get('short_hosts') != len(after) or not short_items:
    problems.append('fleet summary before tuning: %s' % summary_before)
elif not any('[' in g['hosts'] for g in short_items[0]['groups']):
    problems.append('fleet summary before tuning did not fold the host names: %s' % short_items[0])
if summary_after.get('short_hosts') != 0 or summary_after.get('items'):
    problems.append('fleet summary after tuning: %s' % summary_after)
with open(os.path.join(lab, 'before', 'limits-audit.md')) as handle:
    if '## Fleet summary' not in handle.read().split('| host |')[0]:
        problems.append('before/limits-audit.md does not lead with the fleet summary')
# The terminal prints the gap rows only (audit_show: gaps, issue 31.17); the Markdown keeps
# every row: after tuning, with no gap, each node's rows are still there.
with open(os.path.join(lab, 'after', 'limits-audit.md')) as handle:
    per_host = handle.read().partition('## Per host')[2].split('\n## ')[0]
    table_rows = [line for line in per_host.splitlines() if line.startswith('| ')]
for host in sorted(after):
    if len([line for line in table_rows if line.startswith('| %s |' % host)]) \
            != len(after[host].get('rows', [])):
        problems.append('after/limits-audit.md does not hold every row of %s' % host)
# The training job on the job node (issue 13, lab/demo_job.sh): before, it failed in the login,
# service and container contexts with the real error; after, it ran with images/s above 0.
import check_demo_job  # noqa: E402 pylint: disable=wrong-import-position
job_problems, job_line = check_demo_job.check(lab, slurm_hosts)
problems += job_problems
# The demo's picture (scripts/plot_throughput.py): images/s per context before and after, and the
# num_workers sweep of the login session after tuning, as PNG and SVG.
import plot_throughput  # noqa: E402 pylint: disable=wrong-import-position
try:
    with open(os.path.join(lab, 'throughput.json')) as handle:
        plotted = json.load(handle)
except (OSError, ValueError) as exc:
    problems.append('the demo wrote no plot data: %s' % exc)
else:
    problems += plot_throughput.check_files(os.path.join(lab, 'throughput'), plotted)
    if len([p for p in plotted['sweep'] if p['ok'] and p['images_per_s'] > 0]) < 2:
        problems.append('the num_workers sweep has fewer than 2 measured points: %s' % plotted['sweep'])
if problems:
    print('demo check failed:\n  ' + '\n  '.join(problems))
    sys.exit(1)
print('demo check: %d nodes, %d gaps before, 0 after, contexts login/service/user_manager/docker'
      ', slurm_job on %d, k8s_pod on %d' % (
          len(after), sum(len(h.get('gaps', [])) for h in before.values()), slurm_nodes,
          k8s_nodes))
print(job_line)
