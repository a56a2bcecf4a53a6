"""CRI-O's default_ulimits (crio_conf, crio_plan) against CRI-O's documented syntax and order.

Sources (cri-o/cri-o): docs/crio.conf.5.md (default_ulimits: "<ulimit name>=<soft limit>:<hard
limit>"), docs/crio.conf.d.5.md (crio.conf first, then crio.conf.d by name, the file sorted last
wins: "00-default.conf" and "10-custom.conf"), pkg/config/template.go (what `crio config`
writes: `[crio.runtime]`, a tab-indented list), pkg/config/config.go (UpdateFromPath:
filepath.Walk; UpdateFromDropInFile: a []string field, so a later list replaces the earlier one),
internal/config/ulimits (go-units ParseUlimit at start), test/command.bats ("invalid ulimits"),
test/testdata/config/config-v1.17.0.toml (a whole crio.conf, copied into crio_data/).
CRI-O is not packaged in Debian 12: no test here runs it.
"""
import os
from collections import OrderedDict

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as m
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes.runtime_plan import RuntimeRequest

U = m.UNLIMITED
L = m.Limit
V117 = os.path.join(os.path.dirname(__file__), 'crio_data', 'config-v1.17.0.toml')

# pkg/config/template.go, rendered with DefaultUlimits = ["nofile=1024:2048", "nproc=-1:-1"]
TEMPLATE = ('# The crio.runtime table contains settings pertaining to the OCI runtime used\n'
            '# and options for how to set up and manage the OCI runtime.\n'
            '[crio.runtime]\n\n'
            '# A list of ulimits to be set in containers by default, specified as\n'
            '# "<ulimit name>=<soft limit>:<hard limit>", for example:\n'
            '# "nofile=1024:2048"\n'
            '# If nothing is set here, settings will be inherited from the CRI-O daemon\n'
            'default_ulimits = [\n\t"nofile=1024:2048",\n\t"nproc=-1:-1",\n]\n\n'
            '# If true, the runtime will not use pivot_root, but instead use MS_MOVE.\n'
            'no_pivot = false\n')


def tree(tmp_path, files):
    """An /etc/crio tree under tmp_path: {relative path: text}; returns (main, dropin dir)."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / 'crio.conf.d').mkdir(exist_ok=True)
    return str(tmp_path / 'crio.conf'), str(tmp_path / 'crio.conf.d')


def request(path, purge=False, force=False, **limits):
    return RuntimeRequest(OrderedDict((k, L(*v)) for k, v in limits.items()), path,
                          purge=purge, force=force)


def test_the_template_crio_config_writes():
    doc, limits, place = crio_conf.read('/etc/crio/crio.conf', TEMPLATE)
    assert limits == OrderedDict([('nofile', L(1024, 2048)), ('nproc', L(U, U))])
    assert place == '/etc/crio/crio.conf:9:1'


def test_a_whole_crio_conf_of_cri_o_with_the_list_commented_out():
    with open(V117) as handle:
        text = handle.read()
    assert '#default_ulimits = [\n#]\n' in text
    doc, limits, place = crio_conf.read(V117, text)
    assert (limits, place) == (None, None)
    # setting it inserts one key right after [crio.runtime]; every other byte stays
    new = cc.set_values(text, crio_conf.TABLE, {
        crio_conf.KEY: crio_conf.render_value(OrderedDict(nofile=L(4096, 8192)))}, V117)
    inserted = 'default_ulimits = [\n  "nofile=4096:8192",\n]\n'
    assert new.replace(inserted, '', 1) == text
    assert new.index(inserted) == text.index('[crio.runtime]\n') + len('[crio.runtime]\n')
    assert crio_conf.read(V117, new)[1] == OrderedDict(nofile=L(4096, 8192))


# test/command.bats "invalid ulimits", then go-units ParseUlimit's own refusals
@pytest.mark.parametrize('element,message', [
    ('doesntexist=2042', "unknown"),
    ('nproc=2042:42', 'soft 2042 is above hard 42'),
    ('nofile', 'nofile'),
    ('nofile=-1:1024', 'nofile'),
    ('NOFILE=5', 'NOFILE'),
])
def test_elements_cri_o_refuses_at_start_name_file_line_column(element, message):
    text = '[crio.runtime]\ndefault_ulimits = [\n  "core=0:0",\n  "%s",\n]\n' % element
    with pytest.raises(cc.TomlError) as info:
        crio_conf.read('/etc/crio/crio.conf.d/50-site.conf', text)
    assert str(info.value).startswith('/etc/crio/crio.conf.d/50-site.conf:4:3: ')
    assert message in str(info.value) and 'CRI-O would not start' in str(info.value)


@pytest.mark.parametrize('text,where', [
    ('[crio.runtime\ndefault_ulimits = []\n', '/x.conf:1: not valid TOML'),
    ('[crio.runtime]\ndefault_ulimits = ["nofile=1:1"\n', '/x.conf:3: not valid TOML'),
    ('[crio.runtime]\nno_pivot = false\nno_pivot = true\n', '/x.conf:3: not valid TOML'),
    ('[crio.runtime]\ndefault_ulimits = "nofile=1:1"\n', '/x.conf:2:19: default_ulimits must be '
     'an array of strings'),
    # Podman's attribute: CRI-O's field is a plain []string
    ('[crio.runtime]\ndefault_ulimits = ["nofile=1:1", {append=true}]\n',
     "/x.conf:2:19: {append=...} is Podman's"),
    ('[crio]\nruntime = {default_ulimits = ["nofile=1:1"]}\n', '/x.conf: default_ulimits is set '
     'in a form'),
])
def test_files_cri_o_would_not_decode(text, where):
    with pytest.raises(cc.TomlError) as info:
        crio_conf.read('/x.conf', text)
    assert str(info.value).startswith(where), str(info.value)
    assert info.value.kind == errors.UNPARSABLE


def test_dotted_keys_are_the_same_setting():
    assert crio_conf.read('/x', '[crio]\nruntime.default_ulimits = ["nofile=5:6"]\n')[1] == \
        OrderedDict(nofile=L(5, 6))


def test_files_in_cri_o_order(tmp_path):
    main, dropins = tree(tmp_path, {
        'crio.conf': '', 'crio.conf.d/10-custom.conf': '', 'crio.conf.d/00-default.conf': '',
        'crio.conf.d/05-dir/a.conf': '', 'crio.conf.d/.hidden': '', 'crio.conf.d/zz.toml': ''})
    names = [os.path.relpath(p, str(tmp_path)) for p in crio_conf.config_files(main, dropins)]
    assert names == ['crio.conf', 'crio.conf.d/.hidden', 'crio.conf.d/00-default.conf',
                     'crio.conf.d/05-dir/a.conf', 'crio.conf.d/10-custom.conf',
                     'crio.conf.d/zz.toml']
    os.unlink(main)
    assert crio_conf.config_files(main, dropins)[0].endswith('.hidden')


def test_where_a_new_drop_in_is_read():
    files = ['/etc/crio/crio.conf', '/etc/crio/crio.conf.d/00-default.conf',
             '/etc/crio/crio.conf.d/95-site/a.conf', '/etc/crio/crio.conf.d/99-last.conf']
    assert crio_plan.sorted_in(files, '/etc/crio/crio.conf.d/90-gpufleet-tuning.conf',
                               crio_conf.MAIN) == \
        files[:2] + ['/etc/crio/crio.conf.d/90-gpufleet-tuning.conf'] + files[2:]
    assert crio_plan.sorted_in(files[1:], '/etc/crio/crio.conf', crio_conf.MAIN)[0] == \
        '/etc/crio/crio.conf'


def test_the_last_file_wins_whole(tmp_path):
    # crio.conf.d(5): 10-custom.conf is applied after 00-default.conf; the list is replaced
    main, dropins = tree(tmp_path, {
        'crio.conf': TEMPLATE,
        'crio.conf.d/00-default.conf': '[crio.runtime]\ndefault_ulimits = ["core=0:0"]\n',
        'crio.conf.d/10-custom.conf': '# site\n[crio.runtime]\ndefault_ulimits = ["nofile=7:8"]\n'})
    found = crio_conf.effective(crio_conf.config_files(main, dropins))
    assert [place.rsplit('/', 1)[1] for place, _limits in found] == [
        'crio.conf:9:1', '00-default.conf:2:1', '10-custom.conf:3:1']
    assert crio_plan.configured(found) == {'nofile': dict(
        soft=7, hard=8, source=dropins + '/10-custom.conf:3:1')}


def test_plan_writes_a_new_drop_in_then_nothing(tmp_path):
    main, dropins = tree(tmp_path, {'crio.conf': TEMPLATE})
    path = dropins + '/90-gpufleet-tuning.conf'
    change = crio_plan.plan_crio(request(path, nofile=(16384, 16384), memlock=(U, U)),
                                 main, dropins)
    assert change.current is None and change.changed
    assert change.new == crio_conf.HEADER + (
        '[crio.runtime]\ndefault_ulimits = [\n  "nofile=16384:16384",\n  "memlock=-1:-1",\n]\n')
    assert change.result['decided_by'] == path + ':3:1'   # ours is read after crio.conf
    assert change.result['restart_required']
    assert change.result['configured']['nofile'] == dict(soft=16384, hard=16384,
                                                         source=path + ':3:1')
    change.apply()
    again = crio_plan.plan_crio(request(path, nofile=(16384, 16384), memlock=(U, U)),
                                main, dropins)
    assert not again.changed and not again.result['restart_required']
    assert again.result['files'] == [main, path]


def test_plan_edits_only_its_value(tmp_path):
    own = ('# ours, with a comment\n[crio.runtime]\n# keep me\ndefault_ulimits = ["core=0:0", '
           '"nofile=1024:1024"]  # trailing\nno_pivot = true\n\n[crio.image]\npause_image = "p"\n')
    main, dropins = tree(tmp_path, {'crio.conf.d/90-gpufleet-tuning.conf': own})
    path = dropins + '/90-gpufleet-tuning.conf'
    change = crio_plan.plan_crio(request(path, nofile=(4096, 8192)), main, dropins)
    assert change.new == own.replace('["core=0:0", "nofile=1024:1024"]',
                                     '[\n  "core=0:0",\n  "nofile=4096:8192",\n]')
    purged = crio_plan.plan_crio(request(path, purge=True, nofile=(4096, 8192)), main, dropins)
    assert '"core=0:0"' not in purged.new and '# keep me\n' in purged.new


def test_a_side_left_out_comes_from_the_drop_in_or_is_refused(tmp_path):
    main, dropins = tree(tmp_path, {})
    path = dropins + '/90-gpufleet-tuning.conf'
    with pytest.raises(changes.Failure, match='ulimits.nofile: give both soft and hard'):
        crio_plan.plan_crio(request(path, nofile=(None, 8192)), main, dropins)


def test_a_later_file_setting_the_list_is_refused_unless_forced(tmp_path):
    later = '[crio.runtime]\ndefault_ulimits = ["nofile=1024:1024"]\n'
    main, dropins = tree(tmp_path, {'crio.conf.d/99-site.conf': later})
    path = dropins + '/90-gpufleet-tuning.conf'
    with pytest.raises(changes.Failure) as info:
        crio_plan.plan_crio(request(path, nofile=(8192, 8192)), main, dropins)
    assert info.value.msg == ('%s/99-site.conf:2:1 sets default_ulimits and CRI-O reads it after '
                              '%s: its list replaces this one whole (nothing written; force=true '
                              'writes it anyway)' % (dropins, path))
    forced = crio_plan.plan_crio(request(path, force=True, nofile=(8192, 8192)), main, dropins)
    assert forced.changed and forced.result['overridden_by'] == [dropins + '/99-site.conf:2:1']
    assert forced.result['decided_by'] == dropins + '/99-site.conf:2:1'
    assert 'replaces this one whole' in forced.warnings[0]


def test_a_broken_file_anywhere_refuses_the_plan(tmp_path):
    main, dropins = tree(tmp_path, {'crio.conf': '[crio.runtime]\ndefault_ulimits = [\n'})
    with pytest.raises(changes.Failure) as info:
        crio_plan.plan_crio(request(dropins + '/90-gpufleet-tuning.conf', nofile=(5, 5)),
                            main, dropins)
    assert info.value.msg.startswith(main + ':')
    assert info.value.msg.endswith('(CRI-O would not start) (nothing written)')
    assert info.value.kind == errors.UNPARSABLE


def test_a_path_cri_o_does_not_read_is_refused(tmp_path):
    main, dropins = tree(tmp_path, {})
    with pytest.raises(changes.Failure, match='path: /etc/crio.conf.d/x.conf is not a file CRI-O '
                       'reads'):
        crio_plan.plan_crio(request('/etc/crio.conf.d/x.conf', nofile=(5, 5)), main, dropins)


def test_unlimited_nofile_is_refused(tmp_path):
    main, dropins = tree(tmp_path, {})
    with pytest.raises(changes.Failure, match='ulimits.nofile'):
        crio_plan.plan_crio(request(dropins + '/90-gpufleet-tuning.conf', nofile=(U, U)),
                            main, dropins)
