"""limits_profile's warnings (issue 39 item 3): only what needs a decision is a warning, and a
converged node's rerun warns about nothing that did not change. A kept side was one warning of
about 2,400 characters a host on every run, idempotent reruns included."""
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_run


class Change(object):
    def __init__(self, changed):
        self.changed = changed


KEPT = [dict(context='pam', item='nofile', side='soft', action='kept', message='soft kept'),
        dict(context='pam', item='nofile', side='hard', action='raised', message='hard raised'),
        dict(context='docker', item='nproc', side='hard', action='lowered',
             message='hard nproc lowered from 96367 (x) to 8192, as the profile names it')]
OVERRIDES = [dict(kind='narrower', reason='/d/10-site.conf:1 (user) overrides * ...'),
             dict(kind='replaced', reason='/d/50-site.conf:2 (* hard nofile 18000) is read '
                                          'earlier: * now gets hard nofile 16000')]


def test_only_a_lowered_side_is_a_warning():
    assert profile_run.kept_warnings(dict(limits_kept=KEPT)) == [
        'docker: hard nproc lowered from 96367 (x) to 8192, as the profile names it']
    assert profile_run.kept_warnings(dict(limits_kept=KEPT[:2])) == []
    assert profile_run.kept_warnings({}) == []


def test_a_replaced_site_line_is_said_on_the_run_that_writes_not_on_every_rerun():
    result = dict(overrides=OVERRIDES)
    written = profile_run.override_warnings(result, [('pam', Change(True))])
    assert written == ['pam: ' + r['reason'] for r in OVERRIDES]
    # the rerun: the file is as written; the narrower line still keeps a user below
    rerun = profile_run.override_warnings(result, [('pam', Change(False)),
                                                   ('docker', Change(True))])
    assert rerun == ['pam: /d/10-site.conf:1 (user) overrides * ...']
