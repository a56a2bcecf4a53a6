"""Judge what tests/reliability/fleet_test.sh left in its output directory.

    python3 tests/reliability/check_fleet.py OUT --unreachable NODE --failing NODE
        --healthy NODE [NODE ...] [--strict-audit]

Hard checks (exit 1 when one fails): tune_gpu_nodes.yml exited non-zero; its PLAY RECAP shows
the unreachable node with unreachable=1, the failing node with failed=1 and every healthy node
with failed=0 unreachable=0; the playbook's error lines name both bad nodes with their reason
(the read-only limits.d for the failing one); the healthy nodes' login sessions, services and
containers run with the lab profile; the failing node's files are byte for byte as before and
its limits.d was still read-only (the failure was the real one); the audit wrote its JSON and
Markdown reports and lists every node, the healthy ones without gaps; its terminal output
names the unreachable node in one short line of its kind ("N hosts not audited (unreachable:
KIND): HOSTS; e.g. ...") and counts the gap rows of its per-host table.

The audit report must list the unreachable node with an "unreachable" error and the failing
node with its gaps to the profile. It should also say why the failing node could not be tuned
(the audit is a separate, read-only run, so today it cannot): what it lacks is printed as
"AUDIT GAP" lines, fatal with --strict-audit.
"""
import argparse
import json
import os
import re
import sys

PROFILE = {'nofile': (16384, 16384), 'nproc': (8192, 8192),
           'memlock': (8 * 1024 * 1024, 8 * 1024 * 1024)}
RECAP = re.compile(r'^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)')
PROC_LIMIT = re.compile(r'^Max (open files|processes|locked memory)\s+(\S+)\s+(\S+)')
ITEMS = {'open files': 'nofile', 'processes': 'nproc', 'locked memory': 'memlock'}


def read(out, name):
    with open(os.path.join(out, name)) as handle:
        return handle.read()


def recap(log):
    """{host: {'unreachable': n, 'failed': n}} from the last PLAY RECAP."""
    tail = log[log.rfind('PLAY RECAP'):]
    rows = {}
    for line in tail.splitlines():
        match = RECAP.match(line.strip())
        if match:
            rows[match.group(1)] = {'unreachable': int(match.group(4)),
                                    'failed': int(match.group(5))}
    return rows


def reason(log, host, kind):
    """The text after 'fatal: [host]: KIND! =>' (up to the next task or fatal line)."""
    start = log.find('fatal: [%s]: %s!' % (host, kind))
    if start < 0:
        return None
    end = len(log)
    for marker in ('\nTASK [', '\nfatal: [', '\nPLAY RECAP', '\nRUNNING HANDLER'):
        position = log.find(marker, start + 1)
        if 0 <= position < end:
            end = position
    return ' '.join(log[start:end].replace('\\n', ' ').split())


def proc_limits(text):
    limits = {}
    for line in text.splitlines():
        match = PROC_LIMIT.match(line)
        if match:
            limits[ITEMS[match.group(1)]] = tuple(
                -1 if v == 'unlimited' else int(v) for v in match.group(2, 3))
    return limits


def meets(got, wanted):
    """Are both sides of ``got`` (soft, hard; -1 is unlimited) at least ``wanted``'s?"""
    return got is not None and all(g == -1 or g >= w for g, w in zip(got, wanted))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('out')
    parser.add_argument('--unreachable', required=True)
    parser.add_argument('--failing', required=True)
    parser.add_argument('--healthy', nargs='+', required=True)
    parser.add_argument('--strict-audit', action='store_true')
    args = parser.parse_args()
    out = args.out
    problems, gaps, notes = [], [], []

    log = read(out, 'tune.log')
    tune_rc = int(read(out, 'tune.rc'))
    if tune_rc == 0:
        problems.append('tune_gpu_nodes.yml exited 0 with a node down and one failing')
    rows = recap(log)
    expected = {args.unreachable: {'unreachable': 1, 'failed': 0},
                args.failing: {'unreachable': 0, 'failed': 1}}
    for host in args.healthy:
        expected[host] = {'unreachable': 0, 'failed': 0}
    for host, counts in sorted(expected.items()):
        if rows.get(host) != counts:
            problems.append('recap for %s: %s, expected %s' % (host, rows.get(host), counts))

    why_down = reason(log, args.unreachable, 'UNREACHABLE')
    if not why_down:
        problems.append('no "fatal: [%s]: UNREACHABLE!" line' % args.unreachable)
    else:
        notes.append('unreachable: %s' % why_down[:300])
    why_failed = reason(log, args.failing, 'FAILED')
    if not why_failed:
        problems.append('no "fatal: [%s]: FAILED!" line' % args.failing)
    elif not ('/etc/security/limits.d' in why_failed and 'read-only' in why_failed.lower()):
        problems.append('the failure of %s does not say that /etc/security/limits.d is '
                        'read-only: %s' % (args.failing, why_failed[:1500]))
    else:
        notes.append('failed: %s' % why_failed[:300])
    for host in args.healthy:
        if reason(log, host, 'FAILED') or reason(log, host, 'UNREACHABLE'):
            problems.append('%s, a healthy node, has a fatal line' % host)

    for host in args.healthy:
        for context in ('login', 'service', 'container'):
            got = proc_limits(read(out, '%s.%s' % (host, context)))
            for item, wanted in PROFILE.items():
                # a plain profile value is a minimum: a higher value the node had is kept
                if not meets(got.get(item), wanted):
                    problems.append('%s %s %s: %s, expected at least %s'
                                    % (host, context, item, got.get(item), wanted))

    before, after = read(out, 'failing-before.sha256'), read(out, 'failing-after.sha256')
    if not before.strip():
        problems.append('no checksums of the failing node')
    elif before != after:
        problems.append('files of the failing node changed:\n%s\n---\n%s' % (before, after))
    mount = read(out, 'failing-mount.txt').split()
    if len(mount) < 4 or 'ro' not in mount[3].split(','):
        problems.append('limits.d of the failing node is no longer mounted read-only')

    audit_rc = int(read(out, 'audit.rc'))
    report_path = os.path.join(out, 'audit', 'limits-audit.json')
    if not os.path.exists(report_path) or not os.path.exists(
            os.path.join(out, 'audit', 'limits-audit.md')):
        problems.append('the audit (rc %d) wrote no JSON/Markdown report' % audit_rc)
        report, markdown = {'hosts': {}}, ''
    else:
        with open(report_path) as handle:
            report = json.load(handle)
        markdown = read(out, os.path.join('audit', 'limits-audit.md'))
    hosts = report.get('hosts', {})
    for host in args.healthy + [args.failing]:
        if host not in hosts:
            problems.append('the audit report lacks %s, a reachable node' % host)
    for host in args.healthy:
        if hosts.get(host, {}).get('gaps'):
            problems.append('the audit finds gaps on healthy %s: %s' % (host, hosts[host]['gaps']))

    down = hosts.get(args.unreachable, {})
    down_errors = [e.get('msg', '') for e in down.get('errors', [])]
    if not down:
        problems.append('the audit report does not list %s (unreachable)' % args.unreachable)
    elif not [m for m in down_errors if 'unreachable' in m.lower()]:
        problems.append('the audit report lists %s without saying it was unreachable: %s'
                        % (args.unreachable, down_errors))
    else:
        notes.append('audit: %s %s' % (args.unreachable, down_errors[0][:160]))
        if args.unreachable not in markdown:
            gaps.append('limits-audit.md does not mention %s (the JSON does)' % args.unreachable)
    # The terminal (issue 31.16, 31.17): the unreachable node in one short line of its kind
    # (not the raw 600-character message with its temporary path), and the per-host table's
    # count of gaps (the gap rows only; the full table is in the Markdown report).
    audit_log = read(out, 'audit.log')
    kinds = [line.strip() for line in audit_log.splitlines()
             if 'hosts not audited (unreachable: ' in line and args.unreachable in line]
    if not kinds:
        problems.append('the audit\'s fleet summary has no "hosts not audited (unreachable: KIND)" '
                        'line naming %s' % args.unreachable)
    elif len(kinds[0]) > 400 or 'ansible-tmp-' in kinds[0]:
        problems.append('the audit\'s line for %s is not short (%d characters): %s'
                        % (args.unreachable, len(kinds[0]), kinds[0][:600]))
    else:
        notes.append('audit terminal: %s' % kinds[0][:200])
    if ' findings (host x context x item) fail' not in audit_log:
        problems.append('the audit\'s terminal table does not count its gaps')
    failing = hosts.get(args.failing, {})
    if not failing.get('gaps'):
        problems.append('%s (tuning failed) has no gaps in the audit report' % args.failing)
    else:
        notes.append('audit: %s has %d gaps (%s)' % (
            args.failing, len(failing['gaps']),
            ', '.join(sorted(set('%s %s' % (g['context'], g['item']) for g in failing['gaps'])))))
    if 'read-only' not in json.dumps(failing).lower():
        gaps.append('the audit report shows the gaps of %s but not why it could not be tuned '
                    '(its /etc/security/limits.d is read-only; only the tune run said so)'
                    % args.failing)

    for note in notes:
        print('fleet: ' + note)
    for gap in gaps:
        print('AUDIT GAP: ' + gap)
    if problems:
        print('fleet check failed:\n  ' + '\n  '.join(problems))
        return 1
    if gaps and args.strict_audit:
        print('fleet check failed: audit gaps with --strict-audit')
        return 1
    print('fleet check: tune rc %d, audit rc %d; recap %s; healthy %s have the profile in login, '
          'service and container; %s unchanged; %d audit gaps'
          % (tune_rc, audit_rc, json.dumps(rows, sort_keys=True), ' '.join(args.healthy),
             args.failing, len(gaps)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
