"""plugins/module_utils/reports/kernel_ceilings.py and the watch's kernel metrics: the audit's
kernel rows (live, configured with file:line, gap, configured-not-applied) on a planted tree."""

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.host import sysctl_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import kernel_ceilings as kc
from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import textfile_metrics as tm

PROC = {'fs.file-max': 2466093, 'fs.file-nr': '1351\t0\t2466093', 'fs.nr_open': 1048576,
        'vm.max_map_count': 65530, 'fs.inotify.max_user_instances': 128,
        'fs.inotify.max_user_watches': 524288, 'kernel.pid_max': 4194304,
        'kernel.threads-max': 1030000}


def _tree(tmp_path, files):
    for path, text in files.items():
        full = tmp_path / path.lstrip('/')
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    for key, value in PROC.items():
        full = tmp_path / 'proc/sys' / conf.normalize(key)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text('%s\n' % value)
    return str(tmp_path)


def test_rows_show_live_configured_source_gap_and_use(tmp_path):
    root = _tree(tmp_path, {'/usr/lib/sysctl.d/50-pid-max.conf': 'kernel.pid_max = 4194304\n',
                            '/etc/sysctl.d/90-gpufleet-tuning.conf': '# x\nvm.max_map_count = 65530\n'})
    rows = dict((r['name'], r) for r in kc.rows({'fs.inotify.max_user_instances': 8192,
                                                 'vm.max_map_count': 1000}, root))
    assert list(rows) == list(kc.CEILINGS)
    assert rows['fs.file-max']['in_use'] == 1351
    assert rows['fs.file-max']['node_exporter'] == 'node_filefd_maximum'
    assert rows['kernel.pid_max']['source'] == '/usr/lib/sysctl.d/50-pid-max.conf:1'
    assert rows['kernel.pid_max']['state'] == kc.OK
    assert rows['vm.max_map_count']['source'] == '/etc/sysctl.d/90-gpufleet-tuning.conf:2'
    assert (rows['vm.max_map_count']['gap'], rows['vm.max_map_count']['state']) == (0, kc.OK)
    inotify = rows['fs.inotify.max_user_instances']
    assert (inotify['gap'], inotify['state'], inotify['source']) == (8064, kc.BELOW, None)
    assert 'the kernel default: no sysctl file sets it' in inotify['reason']
    assert kc.warnings(list(rows.values())) == ['kernel: ' + inotify['reason']]


def test_a_configured_value_the_kernel_does_not_have_is_not_applied(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/90-gpufleet-tuning.conf': 'vm.max_map_count = 1048576\n'})
    row = [r for r in kc.rows({'vm.max_map_count': 1048576}, root)
           if r['name'] == 'vm.max_map_count'][0]
    assert row['state'] == kc.NOT_APPLIED
    assert row['configured'] == 1048576 and row['gap'] == 1048576 - 65530
    # writable here (a planted tree): the advice is the command that applies it
    assert row['read_only'] is False
    assert 'systemd-sysctl (or sysctl --system) applies it' in row['reason']


def test_unknown_names_and_bad_values_name_the_field(tmp_path):
    root = _tree(tmp_path, {})
    with pytest.raises(kc.KernelError) as caught:
        kc.rows({'vm.no_such': 1}, root)
    assert 'sysctl.vm.no_such: unknown sysctl' in str(caught.value)
    with pytest.raises(kc.KernelError) as caught:
        kc.rows({'vm.max_map_count': 'many'}, root)
    assert "sysctl.vm.max_map_count: 'many' is not an integer" in str(caught.value)


def test_metrics_carry_what_node_exporter_cannot_know_and_none_of_its_names(tmp_path):
    root = _tree(tmp_path, {'/etc/sysctl.d/90-gpufleet-tuning.conf': 'vm.max_map_count = 1048576\n'})
    rows = kc.rows({'vm.max_map_count': 1048576}, root)
    rows[[r['name'] for r in rows].index('vm.max_map_count')]['read_only'] = True
    text = tm.render_audit({'kernel': rows}, [], 1000.0)
    assert 'gpufleet_limits_sysctl_configured{sysctl="vm.max_map_count"} 1048576' in text
    assert 'gpufleet_limits_sysctl_minimum{sysctl="vm.max_map_count"} 1048576' in text
    assert 'gpufleet_limits_sysctl_gap{sysctl="vm.max_map_count"} 983046' in text
    assert 'gpufleet_limits_sysctl_not_applied{sysctl="vm.max_map_count",read_only="1"} 1' in text
    assert 'gpufleet_limits_sysctl_minimum{sysctl="fs.nr_open"}' not in text
    for name in ('node_filefd', 'node_processes', 'node_sysctl'):
        assert name not in text
    assert text.count('# HELP gpufleet_limits_sysctl_configured ') == 1


def test_node_exporter_names_follow_its_sysctl_collector():
    """collector/sysctl_linux.go: node_sysctl_ + the name with . and - made _."""
    for name, (metric, collector) in kc.NODE_EXPORTER.items():
        if collector == 'sysctl':
            assert metric == 'node_sysctl_' + name.replace('.', '_').replace('-', '_')
    assert set(kc.NODE_EXPORTER) == set(kc.CEILINGS) == set(conf.KNOWN)
