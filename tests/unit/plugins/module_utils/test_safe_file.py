"""plugins/module_utils/core/safe_file.py: the backups a write keeps."""


def test_backups_are_pruned_to_the_oldest_and_the_newest(tmp_path):
    """Issue 31 item 18: NAME.PID.DATE~ backups were never pruned. The oldest (the file before
    the collection's first write) and the newest ones are kept."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file as sf
    target = tmp_path / 'daemon.json'
    target.write_text('{}')
    names = ['daemon.json.%d.2026-12-0%d@10:00:00~' % (100 + day, day) for day in range(1, 9)]
    for name in names:
        (tmp_path / name).write_text(name)
    (tmp_path / 'daemon.json.bak').write_text('not ours')
    removed = sf.prune_backups(str(target), keep=4)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([names[0]] + names[-3:] + ['daemon.json', 'daemon.json.bak'])
    assert sorted(removed) == sorted(str(tmp_path / n) for n in names[1:5])
    assert sf.backups(str(target))[0].endswith(names[0])
