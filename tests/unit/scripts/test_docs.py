"""Docs that cannot drift (scripts/docs_check.py): every runnable shell block of README.md and
docs/ names one runner that runs it, the cheap ones run here (one in a fresh clone), and every
figure quoted with a fact marker is its source's (a benchmarks/ file or a count of the code)."""
import json
import os
import re
import shutil
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import docs_check  # noqa: E402  pylint: disable=wrong-import-position

# The blocks run ansible-playbook from the controller's environment (Python 3.11 and
# ansible-core 2.19 in CI); `make unit-py38` reruns the unit tests for module code only.
CONTROLLER = pytest.mark.skipif(sys.version_info < (3, 10) or not shutil.which(
    'ansible-playbook', path=os.path.dirname(sys.executable)),
    reason='the docs\' blocks run on the controller (Python 3.10+, ansible-playbook beside it)')


def controller_env():
    env = dict(os.environ)
    env['PATH'] = os.path.dirname(sys.executable) + os.pathsep + env.get('PATH', '')
    env.pop('ANSIBLE_COLLECTIONS_PATH', None)    # a block that needs the collection says how
    env['ANSIBLE_FORCE_COLOR'] = '0'
    return env


def test_every_run_marker_names_a_known_runner_before_a_shell_block():
    found, problems = docs_check.marked()
    assert problems == []
    used = set(b['runner'] for b in found)
    # every runner runs something (a runner left with no block is a stale registry entry)
    assert used == set(docs_check.RUNNERS), (used, set(docs_check.RUNNERS))


def test_each_runner_is_wired_where_it_says():
    found, _problems = docs_check.marked()
    with open(os.path.join(ROOT, 'Makefile')) as handle:
        makefile = handle.read()
    recipe = makefile.split('\ndemo-test:')[1].split('\n\n')[0]
    assert 'scripts/docs_check.py run demo-test' in recipe
    # demo-test runs the blocks once: the target no longer runs `make demo` beside them
    assert '$(MAKE) demo\n' not in recipe
    with open(os.path.join(ROOT, '.ci', 'run')) as handle:
        ci_lines = set(line.strip() for line in handle if line.strip() and not line.startswith('#'))
    for block in (b for b in found if b['runner'] == 'ci'):
        commands = [line.split('#')[0].strip() for line in block['text'].splitlines()]
        for command in [c for c in commands if c]:
            assert command in ci_lines, '%s:%d: .ci/run does not run %r' % (block['file'], block['line'], command)


def test_a_marker_without_a_shell_block_or_with_an_unknown_runner_is_refused(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'README.md').write_text('<!-- run: unit -->\n```yaml\na: 1\n```\n'
                                        '<!-- run: nightly -->\n```sh\ntrue\n```\n')
    _found, problems = docs_check.marked(str(tmp_path))
    assert len(problems) == 2
    assert 'README.md:1' in problems[0] and 'not followed by a ```sh block' in problems[0]
    assert 'README.md:5' in problems[1] and "unknown runner 'nightly'" in problems[1]


@CONTROLLER
def test_the_unit_blocks_run():
    assert docs_check.run('unit', env=controller_env()) == 0


@CONTROLLER
def test_the_fresh_clone_blocks_run_in_a_fresh_clone():
    if not os.path.exists(os.path.join(ROOT, '.git')):
        pytest.skip('not a git checkout: nothing to clone')
    # the blocks' text from this checkout, run in a clone of its committed tree
    assert docs_check.run('fresh-clone', fresh=True, env=controller_env()) == 0


def test_a_failing_block_fails_its_runner(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'README.md').write_text('<!-- run: unit -->\n```sh\ntrue\nfalse\necho never\n```\n')
    assert docs_check.run('unit', root=str(tmp_path)) == 1


def test_every_quoted_figure_is_its_source():
    found, problems = docs_check.facts()
    assert problems == []
    keys = [key for _where, key, _said, _wanted in found]
    # the README's figures and the reliability suite's count are among them
    assert any(where.startswith('README.md') for where, _k, _s, _w in found)
    assert 'count:bad-inputs' in keys


def test_a_stale_figure_is_found_and_rewritten(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'benchmarks').mkdir()
    (tmp_path / 'benchmarks' / 'b.json').write_text('{"after": {"login": {"images_per_s": 11.24}}, "n": [3, 12345]}')
    text = ('runs at <!-- fact: benchmarks/b.json#after.login.images_per_s -->9.8 images/s, '
            '<!-- fact: benchmarks/b.json#n.1 -->12,345 files, <!-- fact: benchmarks/b.json#n.0 -->3 nodes\n')
    (tmp_path / 'README.md').write_text(text)
    found, problems = docs_check.facts(str(tmp_path))
    assert [f[3] for f in found] == ['11.2', '12,345', '3']
    assert problems == ['README.md:1: benchmarks/b.json#after.login.images_per_s says 9.8, its source 11.2']
    docs_check.facts(str(tmp_path), write=True)
    assert (tmp_path / 'README.md').read_text() == text.replace('-->9.8', '-->11.2')
    assert docs_check.facts(str(tmp_path))[1] == []


def test_a_list_item_is_chosen_by_its_values_and_must_be_one(tmp_path):
    """`[key=value,...]` picks the one row with those values (the headline's rows move when a
    run has another shape); none or several is a problem, not a guess."""
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'benchmarks').mkdir()
    rows = [{'nodes': 4, 'approach': 'ping', 'phase': 'rerun', 'vs_ping': 1.0},
            {'nodes': 4, 'approach': 'gpufleet', 'phase': 'rerun', 'vs_ping': 1.97},
            {'nodes': 32, 'approach': 'gpufleet', 'phase': 'audit', 'vs_ping': 2.18},
            {'nodes': 4, 'approach': 'gpufleet', 'phase': 'audit', 'vs_ping': 2.86}]
    (tmp_path / 'benchmarks' / 'r.json').write_text(json.dumps(rows))
    (tmp_path / 'README.md').write_text(
        '<!-- fact: benchmarks/r.json#[approach=gpufleet,phase=rerun].vs_ping -->1.97x at '
        'N=<!-- fact: benchmarks/r.json#[approach=gpufleet,phase=rerun].nodes -->4 and '
        '<!-- fact: benchmarks/r.json#[nodes=32,phase=audit].vs_ping -->2.18x\n'
        '<!-- fact: benchmarks/r.json#[phase=audit].vs_ping -->2.86x '
        '<!-- fact: benchmarks/r.json#[phase=converge].vs_ping -->1.00x '
        '<!-- fact: benchmarks/r.json#[phase].vs_ping -->1.00x\n')
    found, problems = docs_check.facts(str(tmp_path))
    assert [f[3] for f in found] == ['1.97', '4', '2.18']
    assert [p.split('.vs_ping: ', 1)[-1] for p in problems] == [
        "2 items match [phase=audit], not one'", "0 items match [phase=converge], not one'",
        "[phase] is not [key=value,...]'"], problems


def test_a_fact_of_no_source_is_refused(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'README.md').write_text('<!-- fact: count:nothing -->3 and <!-- fact: /etc/passwd#a -->1 '
                                        'and <!-- fact: count:bad-inputs --> many\n')
    _found, problems = docs_check.facts(str(tmp_path))
    assert len(problems) == 3
    assert "unknown count 'nothing'" in problems[0]
    assert 'benchmarks/FILE.json#path or count:NAME' in problems[1]
    assert 'not followed by a figure' in problems[2]


def test_the_bad_input_count_is_the_suites():
    with open(os.path.join(ROOT, 'molecule', 'reliability', 'tests', 'test_bad_input.py')) as handle:
        text = handle.read()
    # an independent count: the CASES list's entries are its top-level "(" lines
    body = text.split('\nCASES = [', 1)[1].split('\n]\n', 1)[0]
    assert docs_check.count_bad_inputs(ROOT) == len(re.findall(r'^    \(', body, re.M))


def test_the_default_profile_is_written_once():
    """roles/limits/defaults/main.yml holds the default profile; no doc repeats its values
    (a copy drifts when the default changes): the docs link the file instead."""
    import yaml
    with open(os.path.join(ROOT, 'roles', 'limits', 'defaults', 'main.yml')) as handle:
        profile = yaml.safe_load(handle)['limits_profile']
    first = list(profile.items())[:2]
    # any spelling of its first two items next to each other: `{nofile: N, nproc: M`, the YAML
    # block form, or "nofile N, nproc M" in prose
    patterns = [r'%s:?\s*%s\s*[,\n]\s*%s:?\s*%s\b' % (re.escape(str(k1)), re.escape(str(v1)),
                                                      re.escape(str(k2)), re.escape(str(v2)))
                for (k1, v1), (k2, v2) in [first]]
    for path in docs_check.doc_files() + [os.path.join(ROOT, 'lab', 'lab_vars.yml')]:
        with open(path) as handle:
            text = handle.read()
        for pattern in patterns:
            assert not re.search(pattern, text), '%s repeats the default profile' % os.path.relpath(path, ROOT)


def test_limits_profile_probes_return_names_every_probed_context():
    """limits_profile's RETURN `probes` lists the configured -> probed names: every context of
    the registry with a name and a probe of its own (it once listed five of seven)."""
    import yaml
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import REGISTRY
    from ansible_collections.gpufleet.tuning.plugins.modules import limits_profile
    text = ' '.join(yaml.safe_load(limits_profile.RETURN)['probes']['description'])
    for record in REGISTRY:
        if record.name and record.probe:
            said = 'C(%s) -> C(%s)' % (record.name, record.probe) if record.name != record.probe \
                else 'C(%s)' % record.name
            assert said in text, said


def test_the_readme_links_every_module():
    with open(os.path.join(ROOT, 'README.md')) as handle:
        text = handle.read()
    names = sorted(os.path.basename(p)[:-3] for p in os.listdir(os.path.join(ROOT, 'plugins', 'modules'))
                   if p.endswith('.py') and p != '__init__.py')
    assert len(names) == docs_check.count_modules(ROOT)
    for name in names:
        assert '`%s`' % name in text, name
    assert '(docs/modules/README.md)' in text


def bootstrap_changes():
    """What scripts/bootstrap-host.sh changes on the host, read from the script: the apt
    packages it installs, the sysctls it sets with their values, the files it writes outside
    the checkout."""
    with open(os.path.join(ROOT, 'scripts', 'bootstrap-host.sh')) as handle:
        script = handle.read()
    sysctl = re.compile(r'((?:fs|vm|kernel|net)\.[a-z_.]+):([0-9]+)$')
    pairs = [pair.split(':', 1) for line in script.splitlines() if line.startswith('for pair in ')
             for pair in line.split(' in ', 1)[1].split(';')[0].split()]
    sysctls = [tuple(p) for p in pairs if sysctl.match(':'.join(p))]
    # for pair in COMMAND:PACKAGE ...: the package that brings a missing command
    packages = [p[1] for p in pairs if not sysctl.match(':'.join(p))]
    packages += re.findall(r'need\+=\(([a-z0-9.+-]+)\)', script)
    packages += re.findall(r'\bjre=([a-z0-9.+-]+)', script)
    files = re.findall(r'install -m [0-7]+ \S+ (/\S+)', script) + re.findall(r'>(/var/log/\S+)', script)
    return packages, sysctls, files


def test_the_readme_names_every_change_the_bootstrap_makes_on_the_host():
    packages, sysctls, files = bootstrap_changes()
    assert 'docker.io' in packages and 'openjdk-17-jre-headless' in packages, packages
    assert ('fs.inotify.max_user_instances', '8192') in sysctls, sysctls
    assert '/usr/local/bin/promtool' in files, files
    with open(os.path.join(ROOT, 'README.md')) as handle:
        try_it = handle.read().split('\n## Try it\n', 1)[1].split('\n## ', 1)[0]
    text = ' '.join(try_it.split())
    missing = [p for p in packages if '`%s`' % p not in text]
    missing += ['%s to %s' % (key, value) for key, value in sysctls
                if not re.search(r'`%s`[^.;]* to %s\b' % (re.escape(key), value), text)]
    missing += [f for f in files if '`%s`' % f not in text and '`%s`' % os.path.dirname(f) not in text]
    assert missing == [], 'README.md, Try it, does not say what bootstrap-host.sh changes: %s' % missing
