"""cri_log (roles/limits/files/cri): a pod container's stdout and stderr from its CRI log file."""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', '..', '..', 'roles', 'limits', 'files', 'cri'))

import cri_log  # noqa: E402  pylint: disable=wrong-import-position

# Lines as containerd's CRI writes them (pkg/cri/io/logger.go: timestamp RFC3339Nano, stream,
# tag F for a full line, P for a partial one the next chunk continues).
LOG = (
    '2026-12-03T17:59:22.123456789Z stdout F {"ok": true, "samples_per_s": 1.12}\n'
    '2026-12-03T17:59:22.223456789Z stderr P RuntimeError: unable to open shared memory object '
    '</torch_7_1>\n'
    '2026-12-03T17:59:22.223456790Z stderr F  in read-write mode: Too many open files (24)\n'
    '2026-12-03T17:59:22.323456789Z stdout F \n'
    '2026-12-03T17:59:22.423456789Z stdout F tab\there \u2028 not a line break\n'
)


def test_parse_joins_partial_lines_and_splits_streams():
    out, err = cri_log.parse_cri_log(LOG)
    assert out == '{"ok": true, "samples_per_s": 1.12}\n\ntab\there \u2028 not a line break\n'
    assert err == ('RuntimeError: unable to open shared memory object </torch_7_1> in read-write '
                   'mode: Too many open files (24)\n')


def test_parse_skips_lines_that_are_not_log_entries():
    out, err = cri_log.parse_cri_log('garbage\n2026-12-03T00:00:00Z other F x\n\n'
                                     '2026-12-03T00:00:00Z stdout F\n')
    assert (out, err) == ('\n', '')


def test_read_waits_for_the_last_line(tmp_path):
    path = tmp_path / 'job.log'
    path.write_text('2026-12-03T00:00:00Z stdout F first\n2026-12-03T00:00:01Z stdout F sec')

    def finish():
        time.sleep(0.3)
        with open(str(path), 'a') as handle:
            handle.write('ond\n')
    writer = threading.Thread(target=finish)
    writer.start()
    try:
        out, _err = cri_log.read_cri_log(str(path), settle=5.0)
    finally:
        writer.join()
    assert out == 'first\nsecond\n'


def test_read_of_a_missing_log_gives_nothing_after_settle(tmp_path):
    started = time.time()
    assert cri_log.read_cri_log(str(tmp_path / 'none.log'), settle=0.3) == ('', '')
    assert time.time() - started >= 0.3


def test_tail_reads_the_end_and_leaves_out_the_line_the_cut_falls_in(tmp_path):
    path = tmp_path / '0.log'
    path.write_text(LOG)
    # the whole file when it is shorter than the limit
    assert cri_log.tail_cri_log(str(path), 1 << 16) == cri_log.parse_cri_log(LOG)
    # a cut inside the partial stderr line: that chunk is left out, not read as a line
    data = LOG.encode('utf-8')
    cut = len(data) - data.index(b' in read-write mode') - 5
    out, err = cri_log.tail_cri_log(str(path), cut)
    assert out == '\ntab\there \u2028 not a line break\n'
    assert err == ''
    # a cut at the start of a line keeps that line
    last = LOG.split('\n')[-2].encode('utf-8') + b'\n'
    assert cri_log.tail_cri_log(str(path), len(last)) == (
        'tab\there \u2028 not a line break\n', '')
    assert cri_log.tail_cri_log(str(path), len(last) - 1) == ('', '')


def test_tail_of_a_missing_log_gives_nothing(tmp_path):
    assert cri_log.tail_cri_log(str(tmp_path / 'none.log'), 100) == ('', '')
