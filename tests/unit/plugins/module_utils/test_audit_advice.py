"""The audit's advice for a gap (issue 32: the evaluation says what would fix it): each kind of
evidence gives its advice, and no evidence gives none."""
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit

PAM_TARGET = '/etc/security/limits.d/90-gpufleet-tuning.conf'


def test_a_setting_not_applied_yet_is_its_action():
    assert audit.advice_for('service', dict(soft=4096, hard=4096, source='/etc/x.conf', line=2),
                            dict(soft=1024, hard=4096), pending='systemctl daemon-reexec') == \
        'systemctl daemon-reexec'


def test_a_line_that_sets_the_value_is_named_with_what_it_sets():
    configured = dict(soft=2048, hard=2048, soft_source='/etc/security/limits.d/05-a.conf:1',
                      hard_source='/etc/security/limits.d/05-a.conf:2')
    assert audit.advice_for('login', configured, dict(soft=2048, hard=2048), sides=['soft']) == (
        'raise or remove /etc/security/limits.d/05-a.conf:1 (it sets 2048:2048); limits_profile '
        'does not edit files it does not own')
    assert audit.advice_for('login', configured, dict(soft=2048, hard=2048)).startswith(
        'raise or remove /etc/security/limits.d/05-a.conf:1; /etc/security/limits.d/05-a.conf:2 ')
    dropin = dict(soft=512, hard=512, source='/etc/systemd/system.conf.d/99-site.conf', line=2)
    assert audit.advice_for('service', dropin, dict(soft=512, hard=512)).startswith(
        'raise or remove /etc/systemd/system.conf.d/99-site.conf:2 (it sets 512:512)')


def test_the_tunes_own_file_says_run_the_tune():
    configured = dict(soft=1024, hard=1024, soft_source=PAM_TARGET + ':3',
                      hard_source=PAM_TARGET + ':4')
    assert audit.advice_for('login', configured, dict(soft=1024, hard=1024)).startswith(
        'run limits_profile: %s:3; %s:4, the file it writes' % (PAM_TARGET, PAM_TARGET))


def test_no_file_says_which_context_the_tune_writes():
    assert audit.advice_for('login', {}, dict(soft=1024, hard=4096)) == (
        'run limits_profile with contexts: [pam] (it writes %s)' % PAM_TARGET)
    assert audit.advice_for('unit:slurmd.service', {}, dict(soft=1024, hard=4096)) == (
        'run limits_profile with units: [slurmd.service] (a drop-in with Limit*= for it)')


def test_lines_pam_limits_cannot_apply():
    configured = dict(soft=2000000, hard=2000000, soft_source='/etc/security/limits.d/x.conf:1',
                      hard_source='/etc/security/limits.d/x.conf:1')
    blocked = ['/etc/security/limits.d/x.conf:1 (hard nofile 2000000 is above fs.nr_open 1048576)']
    assert audit.advice_for('login', configured, dict(soft=1024, hard=4096), blocked) == (
        'change %s: pam_limits cannot apply it, so the session keeps its defaults' % blocked[0])


def test_no_evidence_no_advice():
    """A file sets other values than the process gets, and nothing says why: no advice."""
    configured = dict(soft=4096, hard=4096, source='/etc/docker/daemon.json', line=3)
    assert audit.advice_for('docker', configured, dict(soft=1024, hard=1024)) == ''
    assert audit.advice_for('no_such_context', {}, None) == ''
