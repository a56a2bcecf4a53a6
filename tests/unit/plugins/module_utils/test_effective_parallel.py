"""effective.run_probes: probes run at the same time and report what they report one after
another, in the same order (plugins/module_utils/run/effective.py)."""
import os
import sys
import threading

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective

sys.path.insert(0, os.path.dirname(__file__))
from test_effective import run_module  # noqa: E402 pylint: disable=wrong-import-position


def test_parallel_probes_overlap():
    # Three probes that each wait for the other two: they only finish when all three run at
    # the same time (one after another, the first one's barrier would break).
    barrier = threading.Barrier(3, timeout=30)

    def waits(value):
        def call():
            barrier.wait()
            return value
        return call

    assert effective.run_probes([waits(1), waits(2), waits(3)], parallel=True) == [1, 2, 3]


def test_serial_probes_do_not_overlap():
    barrier = threading.Barrier(2, timeout=0.2)

    def waits():
        barrier.wait()

    with pytest.raises(threading.BrokenBarrierError):
        effective.run_probes([waits, waits], parallel=False)


def test_errors_stay_in_order_and_other_errors_propagate():
    def fails(msg, kind=None):
        def call():
            raise effective.ProbeError(msg, kind=kind)
        return call

    for parallel in (True, False):
        outcomes = effective.run_probes([fails('a', 'not_running'), lambda: {'x': 1}, fails('b')],
                                        parallel=parallel)
        assert [str(o) if isinstance(o, effective.ProbeError) else o for o in outcomes] == [
            'a', {'x': 1}, 'b']
        assert [getattr(o, 'kind', None) for o in outcomes] == ['not_running', None, 'host']

    def crashes():
        raise ValueError('not a probe error')

    with pytest.raises(ValueError):
        effective.run_probes([lambda: 1, crashes], parallel=True)


@pytest.mark.skipif(os.geteuid() != 0, reason='runuser -l needs root')
def test_module_parallel_and_serial_results_are_identical(tmp_path):
    # Real probes on this machine: two logins (login and the slurm submit shell's stand-in is
    # not here), the service probe (an error without systemd as PID 1) and a missing unit.
    args = {'contexts': ['login', 'service'], 'user': 'root',
            'units': ['gpufleet-no-such-unit'], 'expect': {'nofile': 1024}}
    serial = run_module(tmp_path, dict(args, parallel=False))
    parallel = run_module(tmp_path, dict(args, parallel=True))
    for result in (serial, parallel):
        result.pop('invocation', None)
    assert parallel == serial
    assert list(parallel['contexts']) == ['login', 'service', 'unit:gpufleet-no-such-unit.service']


class Host(object):
    """What Prober needs of the AnsibleModule: get_bin_path (real lookups on PATH)."""

    @staticmethod
    def get_bin_path(name):
        for directory in os.environ.get('PATH', '').split(os.pathsep):
            path = os.path.join(directory, name)
            if os.access(path, os.X_OK):
                return path
        return None


def test_execute_reads_output_written_after_a_second_by_a_grandchild():
    # The output comes late and from a grandchild (as a login shell's cat does): all of it is
    # read, in the C locale, with stdin from /dev/null.
    prober = effective.Prober(Host(), timeout=10, grace=5)
    rc, out, err = prober.execute(['sh', '-c', '(sleep 1.2; echo "late $LC_ALL"; cat) & wait'])
    assert (rc, out, err) == (0, 'late C\n', '')


def test_execute_gives_up_on_output_a_left_process_keeps_open():
    prober = effective.Prober(Host(), timeout=0, grace=1)
    rc, out, err = prober.execute(['sh', '-c', 'echo early; sleep 3 &'])
    assert rc == 124 and 'still open 1 s after the start' in err


def test_run_reports_a_missing_command_and_a_failure():
    prober = effective.Prober(Host(), timeout=10)
    with pytest.raises(effective.ProbeError, match='no-such-probe-command is not installed'):
        prober.run(['no-such-probe-command'])
    with pytest.raises(effective.ProbeError, match=r"sh -c 'echo bad >&2; exit 3' failed "
                                                   r"\(rc 3\): bad"):
        prober.run(['sh', '-c', 'echo bad >&2; exit 3'])
