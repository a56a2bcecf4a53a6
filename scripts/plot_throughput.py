"""The demo's picture: images/s of the training job per context before and after tuning, and
images/s against num_workers (the sweep in the login session after tuning), as PNG and SVG.

    python3 scripts/plot_throughput.py build/lab
        from the results `make demo` fetched (LAB_DIR/job-before/, LAB_DIR/job-after/): writes
        LAB_DIR/throughput.json (the figures plotted, dated by the job's results), LAB_DIR/throughput.png and .svg
    python3 scripts/plot_throughput.py --data benchmarks/demo-throughput.json --out docs/images/throughput
        the same picture from a saved throughput.json (the README's image)
    python3 scripts/plot_throughput.py build/lab --save benchmarks/demo-throughput.json
        also keep the figures under benchmarks/ (with the date and machine they were measured on)

The PNG records in its metadata (tEXt "Source") the sha256 of the figures and of this script, so
that a test can tell a committed image from a stale one (tests/unit/scripts/test_plot_throughput.py).
A context that failed before tuning is drawn as a bar of 0 labelled with what ran out.
Needs matplotlib (requirements-dev.txt); draws with the Agg backend, no display.
"""
import argparse
import glob
import hashlib
import json
import os
import platform
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
ORDER = ('login', 'service', 'user_service', 'container', 'podman', 'slurm_job', 'k8s_pod')
TITLE_BARS = 'images/s per context, before and after tuning'
TITLE_SWEEP = 'num_workers sweep: login, one rank, after tuning'


def load_phase(lab, phase):
    paths = sorted(glob.glob(os.path.join(lab, phase, '*.json')))
    if not paths:
        raise SystemExit('%s/%s: no results; run make demo (lab/demo_job.sh) first' % (lab, phase))
    with open(paths[0]) as handle:
        return os.path.splitext(os.path.basename(paths[0]))[0], json.load(handle)


def context_rows(results):
    rows = {}
    for name, run in (results.get('contexts') or {}).items():
        rows[name] = {'ok': bool(run.get('ok')), 'images_per_s': float(run.get('samples_per_s') or 0.0),
                      'exhausted': run.get('exhausted') or ('' if run.get('ok') else 'error'),
                      'nofile_soft': run.get('nofile_soft'),
                      'shm_size_mib': round((run.get('shm_size_bytes') or 0) / 2.0 ** 20)}
    return rows


def sweep_points(results):
    """The login session's sweep. A job of one rank measured its own run alone too: that run is
    a point of its worker count. In a job of several ranks the first rank measures the sweep
    alone once the job is done, while its own run shared the node with the other ranks: that
    run is not a point of the same curve."""
    login = (results.get('contexts') or {}).get('login') or {}
    points = [{'num_workers': int(p['num_workers']), 'ok': bool(p.get('ok')),
               'images_per_s': float(p.get('samples_per_s') or 0.0)} for p in login.get('sweep') or []]
    counts = set(p['num_workers'] for p in points)
    if points and not login.get('ranks') and login.get('ok') and login.get('num_workers') \
            and login['num_workers'] not in counts:
        points.append({'num_workers': int(login['num_workers']), 'ok': True,
                       'images_per_s': float(login.get('samples_per_s') or 0.0)})
    return sorted(points, key=lambda p: p['num_workers'])


def collect(lab):
    node, before = load_phase(lab, 'job-before')
    _node, after = load_phase(lab, 'job-after')
    measured = os.path.getmtime(sorted(glob.glob(os.path.join(lab, 'job-after', '*.json')))[0])
    job = (after.get('job') or {}).get('job') or {}
    return {
        'source': 'make demo: the training job of lab/demo_job.yml on %s (lab/demo_job.sh before, after)' % node,
        'written': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(measured)),
        'machine': '%d cores, %s, load average %s when plotted' % (
            os.cpu_count() or 0, platform.machine(), ' '.join('%.1f' % v for v in os.getloadavg())),
        'job': {key: job[key] for key in ('ranks_per_node', 'num_workers', 'batch_size', 'prefetch_factor',
                                          'tensors_per_batch') if key in job},
        'before': context_rows(before),
        'after': context_rows(after),
        'sweep': sweep_points(after),
    }


def ordered(names):
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def source_stamp(data_path):
    """What the PNG records: the figures' file and hash, and this script's hash."""
    return 'data %s sha256=%s; script scripts/plot_throughput.py sha256=%s' % (
        os.path.relpath(os.path.abspath(data_path), ROOT), sha256(data_path), sha256(os.path.abspath(__file__)))


def render(data, out, stamp):
    """Write OUT.png and OUT.svg; returns their paths."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    plt.rcParams.update({'svg.fonttype': 'none', 'svg.hashsalt': 'gpufleet', 'font.size': 9})

    fig, (bars, curve) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={'width_ratios': [3, 2]})
    names = ordered(set(data['before']) | set(data['after']))
    width = 0.38
    for offset, phase, label, colour in ((-width / 2, 'before', 'before tuning', '#c0504d'),
                                         (width / 2, 'after', 'after tuning', '#4f81bd')):
        values = [data[phase].get(n, {}).get('images_per_s', 0.0) if data[phase].get(n, {}).get('ok') else 0.0
                  for n in names]
        drawn = bars.bar([i + offset for i in range(len(names))], values, width, label=label, color=colour)
        for rect, name in zip(drawn, names):
            row = data[phase].get(name)
            if row is None:
                continue
            text = '%.1f' % row['images_per_s'] if row['ok'] else 'failed:\n%s' % (row['exhausted'] or 'error')
            bars.annotate(text, (rect.get_x() + rect.get_width() / 2, rect.get_height()), ha='center',
                          va='bottom', fontsize=7, xytext=(0, 2), textcoords='offset points')
    bars.set_xticks(range(len(names)))
    bars.set_xticklabels(names)
    bars.set_ylabel('images/s (all ranks)')
    bars.set_title(TITLE_BARS)
    bars.legend(loc='upper left', fontsize=8)
    bars.set_ylim(0, max([1.0] + [r['images_per_s'] for p in ('before', 'after') for r in data[p].values()]) * 1.35)

    sweep = data.get('sweep') or []
    good = [p for p in sweep if p['ok']]
    if good:
        curve.plot([p['num_workers'] for p in good], [p['images_per_s'] for p in good], marker='o',
                   color='#4f81bd', label='num_workers sweep')
    failed = [p for p in sweep if not p['ok']]
    if failed:
        curve.plot([p['num_workers'] for p in failed], [0.0] * len(failed), 'x', color='#c0504d',
                   label='failed point')
    if not sweep:
        curve.text(0.5, 0.5, 'no num_workers sweep in these results', ha='center', transform=curve.transAxes)
    curve.set_xticks(sorted({p['num_workers'] for p in sweep}) or [0])
    curve.set_xlabel('num_workers')
    curve.set_ylabel('images/s (one rank)')
    curve.set_ylim(bottom=0)
    curve.set_title(TITLE_SWEEP)
    if sweep:
        curve.legend(loc='lower right', fontsize=8)
    fig.text(0.01, 0.01, '%s; %s' % (data.get('written', ''), data.get('machine', '')), fontsize=6, color='#666666')
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    paths = (out + '.png', out + '.svg')
    fig.savefig(paths[0], dpi=100, metadata={'Source': stamp, 'Software': 'scripts/plot_throughput.py'})
    fig.savefig(paths[1], metadata={'Date': None, 'Description': stamp})
    plt.close(fig)
    return paths


def check_files(out, data):
    """Problems (a list of strings) with OUT.png and OUT.svg as render() writes them for DATA:
    a PNG, an SVG that parses, the two titles and every context of DATA in the SVG's text."""
    from xml.etree import ElementTree
    problems = []
    try:
        with open(out + '.png', 'rb') as handle:
            if handle.read(8) != b'\x89PNG\r\n\x1a\n':
                problems.append('%s.png is not a PNG' % out)
    except OSError as exc:
        problems.append('%s.png: %s' % (out, exc))
    try:
        tree = ElementTree.parse(out + '.svg')
    except (OSError, ElementTree.ParseError) as exc:
        return problems + ['%s.svg: %s' % (out, exc)]
    text = ' '.join(t for node in tree.iter() for t in (node.text or '',) if t.strip())
    for wanted in [TITLE_BARS, TITLE_SWEEP, 'before tuning', 'after tuning', 'num_workers'] \
            + ordered(set(data['before']) | set(data['after'])):
        if wanted not in text:
            problems.append('%s.svg does not say %r' % (out, wanted))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('lab', nargs='?', help='LAB_DIR of make demo (build/lab)')
    parser.add_argument('--data', help='plot this throughput.json instead of a lab\'s results')
    parser.add_argument('--out', help='OUT.png and OUT.svg (default: LAB_DIR/throughput, or beside --data)')
    parser.add_argument('--save', help='also copy the figures to this file (benchmarks/demo-throughput.json)')
    args = parser.parse_args(argv)
    if bool(args.lab) == bool(args.data):
        parser.error('give LAB_DIR or --data')
    if args.lab:
        data = collect(args.lab)
        data_path = os.path.join(args.lab, 'throughput.json')
        with open(data_path, 'w') as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.write('\n')
        if args.save:
            with open(args.save, 'w') as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
                handle.write('\n')
            data_path = args.save
        out = args.out or os.path.join(args.lab, 'throughput')
    else:
        data_path = args.data
        with open(data_path) as handle:
            data = json.load(handle)
        out = args.out or os.path.splitext(args.data)[0]
    for path in render(data, out, source_stamp(data_path)):
        print('wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
