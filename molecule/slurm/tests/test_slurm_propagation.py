"""issue 39 item 5: slurm_job is predicted by one rule for every item. For five slurm.conf
variants (PropagateResourceLimits=ALL, NONE, NOFILE; PropagateResourceLimitsExcept=NPROC,
NOFILE,NPROC), on a real slurmd whose drop-in gives nproc a soft value below its hard one, the
prediction (the slurm context's, as the audit and the Slurm health check make it, with the
caller's submit side slurm_submit_limits) is compared with what `srun -w NODE` gives a job
submitted from a shell at `ulimit -Sn 1500; ulimit -Su 3000`, nofile and nproc alike; and a
propagated value above slurmd's hard limit (ulimit -Su 7000) is capped at it. slurmd restarts
once per variant (slurmctld is not restarted: srun and slurmstepd read PropagateResourceLimits
from slurm.conf themselves)."""
import json

import pytest

from conftest import DROPIN, SLURM_CONF

# the module_utils the limits_watch role installed (the Slurm health check's audit)
LIB = '/usr/local/lib/gpufleet-tuning'
SUBMIT = {'nofile': 1500, 'nproc': 3000}
# slurmd's nproc for these checks: a soft value below the hard one (line 4 of the drop-in)
NPROC = (4000, 6000)
VARIANTS = ['PropagateResourceLimits=ALL', 'PropagateResourceLimits=NONE',
            'PropagateResourceLimits=NOFILE', 'PropagateResourceLimitsExcept=NPROC',
            'PropagateResourceLimitsExcept=NOFILE,NPROC']
PREDICT = r'''
import json, sys
sys.path.insert(0, %r)
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import slurm
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import drift_watch
auditor = slurm.LocalAuditor(drift_watch.LocalHost())
auditor.params = {'profile': {}, 'slurm_submit_limits': json.loads(sys.argv[1])}
report, _warnings = slurm.CONTEXT.report(auditor)
print(json.dumps(slurm.CONTEXT.configured(report)))
''' % LIB


def wait_idle(host):
    host.check_output('for i in $(seq 30); do sinfo -h -o %t | grep -qx idle && exit 0; '
                      'sleep 1; done; exit 1')


def use(host, line):
    """slurm.conf as the site wrote it, with ``line`` as its Propagate line; slurmd restarted."""
    text = host.file(SLURM_CONF).content_string
    site = ''.join(kept for kept in text.splitlines(True) if not kept.startswith(
        ('PropagateResource', '# gpufleet.tuning:')))
    host.check_output('printf %%s %s > %s' % (quote(site + line + '\n'), SLURM_CONF))
    # five restarts within systemd's StartLimitIntervalSec: its start limit is reset first
    host.check_output('systemctl reset-failed slurmd.service; systemctl restart slurmd.service')
    wait_idle(host)


def quote(text):
    return "'%s'" % text.replace("'", "'\\''")


def job(host, nofile=1500, nproc=3000):
    """{item: (soft, hard)} of a job step from `srun -w NODE` in trainer's login shell at
    `ulimit -Sn NOFILE; ulimit -Su NPROC` (the issue's check)."""
    node = host.check_output('sinfo -h -o %N').strip()
    out = host.check_output(
        "runuser -l trainer -c 'ulimit -Sn %d; ulimit -Su %d; srun --quiet -w %s bash -c "
        "\"ulimit -Sn; ulimit -Hn; ulimit -Su; ulimit -Hu\"'" % (nofile, nproc, node)).split()
    return {'nofile': tuple(out[0:2]), 'nproc': tuple(out[2:4])}


def predicted(host, submit):
    found = json.loads(host.check_output('python3 -c %s %s' % (
        quote(PREDICT), quote(json.dumps(submit)))))
    return dict((item, (str(found[item]['soft']), str(found[item]['hard'])))
                for item in ('nofile', 'nproc')), found


@pytest.fixture(scope='module')
def slurmd_nproc(host):
    """slurmd's drop-in at LimitNPROC=4000:6000 for these checks; the files and slurmd are put
    back afterwards (as conftest.pristine_slurm does)."""
    host.check_output('tar -C / -cf /root/slurm-propagation.tar etc/slurm '
                      'etc/systemd/system/slurmd.service.d')
    host.check_output("sed -i 's/^LimitNPROC=.*/LimitNPROC=%d:%d/' %s && systemctl daemon-reload"
                      % (NPROC + (DROPIN,)))
    yield
    host.check_output('rm -rf /etc/slurm /etc/systemd/system/slurmd.service.d && '
                      'tar -C / -xf /root/slurm-propagation.tar && systemctl daemon-reload && '
                      'systemctl reset-failed slurmd.service; systemctl restart slurmd.service')
    wait_idle(host)


@pytest.mark.parametrize('line', VARIANTS)
def test_the_prediction_is_what_srun_gives_for_nofile_and_nproc(host, slurmd_nproc, line):
    use(host, line)
    got = job(host)
    want, found = predicted(host, SUBMIT)
    print('%s: srun %s, predicted %s' % (line, got, want))
    assert want == got, (line, found)
    # the rule: a propagated item is the submit shell's soft value with slurmd's hard one
    propagated = {'PropagateResourceLimits=ALL': ('nofile', 'nproc'),
                  'PropagateResourceLimits=NOFILE': ('nofile',),
                  'PropagateResourceLimitsExcept=NPROC': ('nofile',)}.get(line, ())
    conf_line = len(host.file(SLURM_CONF).content_string.splitlines())
    for item in ('nofile', 'nproc'):
        if item in propagated:
            assert got[item][0] == str(SUBMIT[item])
            assert found[item]['soft_source'].startswith('%s:%d %s propagates' % (
                SLURM_CONF, conf_line, line)), found[item]
        else:
            assert found[item]['soft_source'].startswith('%s:' % DROPIN), found[item]
        assert found[item]['hard_source'].startswith('%s:' % DROPIN), found[item]
    assert got['nproc'][1] == str(NPROC[1])


def test_a_propagated_value_above_slurmds_hard_is_capped_at_it(host, slurmd_nproc):
    use(host, 'PropagateResourceLimits=ALL')
    got = job(host, nproc=7000)
    want, found = predicted(host, dict(SUBMIT, nproc=7000))
    print('ALL, ulimit -Su 7000: srun %s, predicted %s' % (got, want))
    assert got['nproc'] == (str(NPROC[1]), str(NPROC[1]))
    assert want == got, found


def test_the_audit_with_the_callers_submit_side_names_each_sides_line(host, slurmd_nproc, module):
    """limits_audit with slurm_submit_limits: the probe submits from that shell, and the row's
    source is the prediction's (each side's line), not 'that file does not decide it' (the
    issue: nproc's source named the drop-in that decides the hard side as not deciding)."""
    use(host, 'PropagateResourceLimits=ALL')
    ok, result, _out = module('gpufleet.tuning.limits_audit', dict(
        profile={'nofile': 16384, 'nproc': 8192}, user='trainer', slurm_submit_limits=SUBMIT))
    assert ok, result
    rows = dict((r['item'], r) for r in result['rows'] if r['context'] == 'slurm_job')
    got = job(host)
    conf_line = len(host.file(SLURM_CONF).content_string.splitlines())
    for item, line in (('nofile', 4), ('nproc', 5)):
        assert tuple(rows[item]['actual'].split(':')) == got[item], (rows[item], got)
        assert rows[item]['source'] == (
            "soft: %s:%d PropagateResourceLimits=ALL propagates the submit shell's soft %s %d "
            '(slurm_submit_limits); hard: %s:%d' % (SLURM_CONF, conf_line, item, SUBMIT[item],
                                                    DROPIN, line)), rows[item]
