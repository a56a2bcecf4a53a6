"""Issue 32: the tune and the audit agree on every node of every scenario. Linked into each
scenario's tests/ (molecule/*/tests/test_zy_tune_audit_agree.py -> this file, named to run after
the scenario's own tests): a narrower limits line planted for one user is the cause both name;
with it gone neither names it, and a gap left is one the tune's write closes
(tests/scenario_support.py: check_tune_and_audit_agree)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

import scenario_support  # noqa: E402  pylint: disable=wrong-import-position


def test_the_tune_and_the_audit_name_the_same_cause(host):
    scenario_support.check_tune_and_audit_agree(host)
