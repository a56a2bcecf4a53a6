# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 39.1: a plain value never lowers any side, of any item, in any context. Each context's
``current`` is what a new process there gets now, side by side (a login's soft side no line
sets is the login service's; a pod's item its base spec does not list is containerd's own), and
a plain value a context already meets changes nothing there. Driven through the real planners
on files in a tmp root; the property tests draw node values above and below the profile."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import containerd_cri
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf

MANAGER = "the running system manager's default (systemctl show)"
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


class NoCeiling(object):
    nr_open = None

    def hard_ceiling(self, item):
        return None, None


class Host(object):
    def run_command(self, args, environ_update=None):
        return 1, '', 'no commands in this test'


def request_for(limits, domains=('*', 'root'), named=None, manager=None, **options):
    request = Request(dict((k, None) for k in limits), limits, ['pam'], domains=domains,
                      named=named, **options)
    request._read['pam_version'] = None
    request._read['manager_now'] = (manager or {}, MANAGER)
    request._read['login_opener'] = {}      # this process passes on nothing higher
    request._read['systemd_running'] = True
    return request


def pam_root(tmp_path, monkeypatch, limits_conf=''):
    (tmp_path / 'limits.d').mkdir(exist_ok=True)
    (tmp_path / 'limits.conf').write_text(limits_conf)
    monkeypatch.setattr(pam, 'LIMITS_CONF', str(tmp_path / 'limits.conf'))
    monkeypatch.setattr(pam, 'LIMITS_DIR', str(tmp_path / 'limits.d'))
    monkeypatch.setattr(pam, 'root_wildcards', lambda: False)    # Debian: * is not root's
    return str(tmp_path / 'limits.d' / '90-gpufleet-tuning.conf')


def tune_pam(request, target):
    """Plan the pam context and write its file, as limits_profile does."""
    [(label, plan)] = pam.CONTEXT.plans(request, Host(), NoCeiling())
    request.paths[pam.PATH.name] = target
    change = plan()
    if change.changed:
        with open(target, 'w') as handle:
            handle.write(change.new)
    return change


USERS = {'*': conf.User('someone', 65533, 65533, [], []), 'root': conf.User('root', 0, 0, [], [])}


def logins(request):
    """{domain: {item: Limit}} a new login of each domain gets now: what pam_limits applies on
    top of what the login service passes on (the oracle: pam_limits_conf.resolve started from
    the manager's defaults, Debian's rule for root)."""
    paths = conf.pam_order(pam.LIMITS_CONF, pam.LIMITS_DIR)
    files = [f for f in (conf.read_file(path) for path in paths) if f]
    manager = request._read['manager_now'][0]
    found = {}
    for domain in request.domains:
        effective = conf.resolve(files, USERS[domain], kernel=manager,
                                 root_wildcards=False)['effective']
        found[domain] = dict(
            (name, model.Limit(effective[name]['soft'], effective[name]['hard'])
             if name in effective else manager[name]) for name in manager)
    return found


def test_a_login_inherits_the_soft_side_no_line_sets_and_a_tune_keeps_it(tmp_path, monkeypatch):
    """The demo's login soft nproc 96367 -> 8192: no limits line sets nproc, so a login has the
    login service's 96367:96367; a profile of nproc 8192 writes that value, not 8192 (the
    collection's line holds it against an earlier line that would give less)."""
    target = pam_root(tmp_path, monkeypatch)
    manager = {'nproc': model.Limit(96367, 96367)}
    request = request_for({'nproc': model.Limit(8192, 8192)}, manager=manager)
    request.paths[pam.PATH.name] = target
    assert logins(request) == {'*': manager, 'root': manager}
    change = tune_pam(request, target)
    assert logins(request) == {'*': manager, 'root': manager}
    assert [' '.join(line.split()) for line in change.new.splitlines()
            if 'nproc' in line and not line.startswith('#')] == [
        '* soft nproc 96367', '* hard nproc 96367', 'root soft nproc 96367',
        'root hard nproc 96367'], change.new
    # now each side is the collection's own line
    assert pam.CONTEXT.current('pam', request, Host())['nproc'] == (
        manager['nproc'], dict(soft='%s:3' % target, hard='%s:4' % target))
    assert [k.as_dict()['action'] for k in request.kept['pam']] == ['kept', 'kept']


def test_a_login_opened_here_passes_on_this_process_limits_but_not_soft_nofile(
        tmp_path, monkeypatch):
    """`runuser -l` from a process with more than the manager's defaults (a docker exec in a
    node) passes its own on: a login's nproc is the higher of the two; soft nofile is not
    passed on (su and runuser start it at 1024), the manager's is what sshd's sessions get."""
    target = pam_root(tmp_path, monkeypatch)
    request = request_for({'nproc': model.Limit(4096, 4096), 'nofile': model.Limit(2048, 2048)},
                          domains=['*'], manager={'nproc': model.Limit(8192, 96367),
                                                  'nofile': model.Limit(1024, 20000)})
    request._read['login_opener'] = {'nproc': model.Limit(96367, 96367),
                                     'nofile': model.Limit(20000, 20000)}
    request.paths[pam.PATH.name] = target
    now = pam.CONTEXT.domain_current(request, Host())['*']
    assert now['nproc'][0] == model.Limit(96367, 96367)
    assert now['nofile'][0] == model.Limit(1024, 20000)
    change = tune_pam(request, target)
    # the higher of each side on every login: sshd's 8192 soft nproc is raised to what a
    # login opened here has, su -'s 1024 soft nofile to the profile's
    assert [' '.join(line.split()) for line in change.new.splitlines()
            if not line.startswith('#')] == [
        '* soft nproc 96367', '* hard nproc 96367', '* soft nofile 2048', '* hard nofile 20000']


def test_a_site_value_a_domain_already_meets_is_left_alone(tmp_path, monkeypatch):
    """A site's `* 12000:18000` with a profile of nofile 8192 came out 12000:20000: root's
    inherited hard 20000 was written for `*` too. Each domain keeps its own: `*` 12000:18000,
    root (no line applies to it on Debian) gets its soft raised to 8192 and keeps its hard."""
    target = pam_root(tmp_path, monkeypatch, '* soft nofile 12000\n* hard nofile 18000\n')
    request = request_for({'nofile': model.Limit(8192, 8192)},
                          manager={'nofile': model.Limit(1024, 20000)})
    request.paths[pam.PATH.name] = target
    before = logins(request)
    assert before == {'*': {'nofile': model.Limit(12000, 18000)},
                      'root': {'nofile': model.Limit(1024, 20000)}}
    change = tune_pam(request, target)
    assert [' '.join(line.split()) for line in change.new.splitlines()
            if not line.startswith('#')] == [
        '* soft nofile 12000', '* hard nofile 18000', 'root soft nofile 8192',
        'root hard nofile 20000'], change.new
    assert logins(request) == {'*': {'nofile': model.Limit(12000, 18000)},
                               'root': {'nofile': model.Limit(8192, 20000)}}
    # and a second run changes nothing
    assert not tune_pam(request, target).changed


def test_root_left_out_because_it_meets_the_profile_is_not_advised_an_entry(
        tmp_path, monkeypatch):
    """root already has the profile (its own line) and root is a domain of the profile: no
    advice to add a root entry, which would change nothing."""
    target = pam_root(tmp_path, monkeypatch, 'root soft nofile 8192\nroot hard nofile 8192\n')
    request = request_for({'nofile': model.Limit(8192, 8192)},
                          manager={'nofile': model.Limit(1024, 4096)})
    change = tune_pam(request, target)
    assert [' '.join(line.split()) for line in change.new.splitlines()
            if not line.startswith('#')] == ['* soft nofile 8192', '* hard nofile 8192',
                                             'root soft nofile 8192', 'root hard nofile 8192']
    assert not [w for w in change.warnings if 'do not apply to root' in w], change.warnings


def test_a_domain_that_meets_the_profile_still_names_a_narrower_line_that_gives_less(
        tmp_path, monkeypatch):
    """`*` already has the profile (its values are written as they are); a user's own line
    that gives that user less is still reported (the tune and the audit name the same
    cause)."""
    target = pam_root(tmp_path, monkeypatch, '* soft nofile 12000\n* hard nofile 18000\n')
    (tmp_path / 'limits.d' / '05-site.conf').write_text(
        'agree soft nofile 2048\nagree hard nofile 2048\n')
    request = request_for({'nofile': model.Limit(8192, 8192)}, domains=['*'],
                          manager={'nofile': model.Limit(1024, 20000)})
    change = tune_pam(request, target)
    assert [' '.join(line.split()) for line in change.new.splitlines()
            if not line.startswith('#')] == ['* soft nofile 12000', '* hard nofile 18000']
    assert [(o['path'], o['line']) for o in change.result['overrides']] == [
        (str(tmp_path / 'limits.d' / '05-site.conf'), 1),
        (str(tmp_path / 'limits.d' / '05-site.conf'), 2)], change.result['overrides']


def test_a_value_only_the_collections_file_gives_is_kept_there(tmp_path, monkeypatch):
    """A plain value lower than what an earlier run wrote keeps the earlier lines."""
    target = pam_root(tmp_path, monkeypatch)
    with open(target, 'w') as handle:
        handle.write('* soft nofile 50000\n* hard nofile 60000\n')
    request = request_for({'nofile': model.Limit(8192, 8192)}, domains=['*'],
                          manager={'nofile': model.Limit(1024, 20000)})
    request.paths[pam.PATH.name] = target
    assert not tune_pam(request, target).changed
    assert logins(request) == {'*': {'nofile': model.Limit(50000, 60000)}}


# --- the property: every item, node values above and below a plain profile, named sides ---

def step(item):
    """The smallest unit limits.conf writes the item in, in kernel units."""
    return {'size': 1024, 'time': 60}.get(model.ITEMS[item].kind, 1)


def value(item, draw):
    """A kernel value of ``item`` limits.conf can hold (nice: raw 1..40)."""
    if model.ITEMS[item].kind == 'nice':
        return draw(st.integers(1, 40))
    if item != 'nofile' and draw(st.integers(0, 9)) == 0:
        return model.UNLIMITED
    return draw(st.integers(1, 200000)) * step(item)


@st.composite
def pair(draw, item):
    a, b = value(item, draw), value(item, draw)
    return model.Limit(*sorted((a, b), key=lambda v: (v == model.UNLIMITED, v)))


def larger(a, b):
    return a if model.compare(a, b) >= 0 else b


def expected(before, asked, named):
    """What a side gets after the tune: the profile where named, else the larger of before and
    the profile; a soft side above a named hard one is clamped to it."""
    sides = [getattr(asked, s) if named[i] else larger(getattr(before, s), getattr(asked, s))
             for i, s in enumerate(('soft', 'hard'))]
    if model.exceeds(sides[0], sides[1]):
        sides[0] = sides[1]
    return model.Limit(*sides)


ITEMS = list(model.RLIMIT_ITEMS)


def profile_case(draw, items):
    """(item, asked, named): an item of ``items``, a profile value of it and which of its sides
    the profile names, drawn with ``draw`` (a composite strategy's)."""
    item = draw(st.sampled_from(items))
    return item, draw(pair(item)), (draw(st.booleans()), draw(st.booleans()))


@st.composite
def pam_case(draw):
    item, asked, named = profile_case(draw, ITEMS)
    manager = draw(pair(item))
    if item == 'nofile' and manager.soft < 1024:
        # a login service's soft nofile below 1024 (su and runuser's) is left out here
        manager = model.Limit(1024, max(manager.hard, 1024))
    lines = {}
    for domain in ('*', 'root'):
        if draw(st.booleans()):
            lines[domain] = (draw(pair(item)), draw(st.sampled_from(['both', 'soft', 'hard'])))
    return item, asked, named, manager, lines


def lines_text(item, lines):
    out = []
    for domain, (limit, sides) in sorted(lines.items()):
        for side in ('soft', 'hard'):
            if sides in (side, 'both'):
                out.append('%s %s %s %s' % (domain, side, item,
                                            model.to_limits_conf(item, getattr(limit, side))))
    return ''.join(line + '\n' for line in out)


@SETTINGS
@given(case=pam_case())
def test_property_a_login_of_every_domain_never_loses_a_side_not_named(tmp_path, monkeypatch,
                                                                       case):
    item, asked, named, manager, lines = case
    if item == 'nofile' and model.UNLIMITED in (manager.soft, manager.hard):
        return
    target = pam_root(tmp_path, monkeypatch, lines_text(item, lines))
    if (tmp_path / 'limits.d' / '90-gpufleet-tuning.conf').exists():
        (tmp_path / 'limits.d' / '90-gpufleet-tuning.conf').unlink()
    request = request_for({item: asked}, named=dict([(item, named)]),
                          manager={item: manager})
    request.paths[pam.PATH.name] = target
    before = logins(request)
    change = tune_pam(request, target)
    after = logins(request)
    for domain in ('*', 'root'):
        want = expected(before[domain][item], asked, named)
        assert after[domain][item] == want, (domain, before[domain][item], change.new)
        # every side is the collection's line, so that an earlier line (a package's limits.d
        # file) cannot take it away
        written = [line.split()[:3] for line in change.new.splitlines()
                   if line.startswith(domain + ' ')]
        assert [domain, 'soft', item] in written and [domain, 'hard', item] in written, \
            change.new


# --- k8s_pod (containerd_cri): an item the base spec does not list is containerd's own ------

def cri_root(tmp_path, rlimits):
    spec = tmp_path / 'base.json'
    spec.write_text(json.dumps({'ociVersion': '1.0.2-dev',
                                'process': {'args': ['sh'], 'rlimits': rlimits}}, indent=4))
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n'
                      '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                      '  runtime_type = "io.containerd.runc.v2"\n'
                      '  base_runtime_spec = "%s"\n' % spec)
    return str(config), str(spec)


def cri_request(limits, config, own, named=None):
    request = Request(dict((k, None) for k in limits), limits, ['containerd_cri'],
                      named=named, paths={'containerd_config': config})
    request._read['containerd_limits'] = {'pid': 4242, 'limits': dict(
        (name, {'soft': limit.soft, 'hard': limit.hard}) for name, limit in own.items())}
    return request


def tune_cri(request, spec):
    for label, plan in containerd_cri.CONTEXT.plans(request, Host(), NoCeiling()):
        change = plan()
        if change.changed:
            with open(change.path, 'w') as handle:
                handle.write(change.new)


def pod(spec, own):
    """{item: Limit} a new pod gets: the spec's rlimits, containerd's own for the rest (the
    oracle, reference section 9)."""
    with open(spec) as handle:
        listed = dict((entry['type'][len('RLIMIT_'):].lower(), model.Limit(*[
            model.UNLIMITED if v == model.RLIM_INFINITY else v
            for v in (entry['soft'], entry['hard'])]))
            for entry in json.load(handle)['process']['rlimits'])
    return dict((name, listed.get(name, limit)) for name, limit in own.items())


def test_a_pod_keeps_containerds_nproc_that_the_base_spec_does_not_list(tmp_path):
    """The demo's k8s_pod nproc 96367:96367 -> 8192:8192: the base spec lists nofile only, so
    pods inherit containerd's nproc; a profile of nproc 8192 leaves the spec without one."""
    config, spec = cri_root(tmp_path, [{'type': 'RLIMIT_NOFILE', 'soft': 1024, 'hard': 1024}])
    own = {'nproc': model.Limit(96367, 96367), 'nofile': model.Limit(20000, 20000)}
    request = cri_request({'nproc': model.Limit(8192, 8192), 'nofile': model.Limit(8192, 8192)},
                          config, own)
    assert pod(spec, own) == {'nproc': model.Limit(96367, 96367),
                              'nofile': model.Limit(1024, 1024)}
    tune_cri(request, spec)
    assert pod(spec, own) == {'nproc': model.Limit(96367, 96367),
                              'nofile': model.Limit(8192, 8192)}
    with open(spec) as handle:
        assert [e['type'] for e in json.load(handle)['process']['rlimits']] == ['RLIMIT_NOFILE']
    assert containerd_cri.CONTEXT.current('containerd_cri', request, Host())['nproc'] == (
        model.Limit(96367, 96367), "containerd's own limits (pid 4242)")


CRI_ITEMS = [name for name in model.RLIMIT_ITEMS if model.ITEMS[name].kind != 'nice']


@st.composite
def cri_case(draw):
    item, asked, named = profile_case(draw, CRI_ITEMS)
    own = draw(pair(item))
    if item == 'nofile':
        own = model.Limit(own.hard, own.hard)     # Go raises containerd's soft nofile
    listed = draw(st.one_of(st.none(), pair(item)))
    return item, asked, named, own, listed


@SETTINGS
@given(case=cri_case())
def test_property_a_pod_never_loses_a_side_not_named(tmp_path, case):
    item, asked, named, own, listed = case
    rlimits = [] if listed is None else [{
        'type': 'RLIMIT_' + model.ITEMS[item].rlimit,
        'soft': model.RLIM_INFINITY if listed.soft == model.UNLIMITED else listed.soft,
        'hard': model.RLIM_INFINITY if listed.hard == model.UNLIMITED else listed.hard}]
    config, spec = cri_root(tmp_path, rlimits)
    request = cri_request({item: asked}, config, {item: own}, named=dict([(item, named)]))
    before = pod(spec, {item: own})[item]
    tune_cri(request, spec)
    after = pod(spec, {item: own})[item]
    assert after == expected(before, asked, named), (before, after)
    if listed is None and not any(named) and expected(before, asked, named) == before:
        with open(spec) as handle:     # met already: the spec is left as it is
            assert json.load(handle)['process']['rlimits'] == []
