"""Slurm jobs get the profile after the role: srun and sbatch from a login session with the
distribution's default soft limits, before (recorded in prepare) and after; the files the role
wrote and kept; effective_limits' slurm_job probe and the audit's rows with their sources."""
from conftest import DROPIN, PROFILE, SLURM_CONF, job_soft_hard, slurmd_limit

ADDED = ("# gpufleet.tuning: the profile's limits come from slurmd, not from the submit shell\n"
         "PropagateResourceLimitsExcept=NOFILE,NPROC,MEMLOCK\n")


def test_a_job_got_the_submit_shells_1024_before_the_role(host):
    # prepare ran `ulimit -Sn; srun bash -c "ulimit -Sn; ulimit -Hn"` as trainer
    assert host.file('/root/job-before.txt').content_string.split() == ['1024', '1024', '20000']


def at_least(pair, value):
    return all(v == 'unlimited' or int(v) >= value for v in pair)


def test_an_srun_job_from_a_default_login_gets_the_profile(host):
    # slurmd's values (at least the profile's; its higher hard limit kept), not the shell's 1024
    nofile = slurmd_limit(host)
    assert at_least(nofile, 16384), nofile
    assert job_soft_hard(host, 'srun') == ['1024'] + nofile


def test_an_sbatch_job_from_a_default_login_gets_the_profile(host):
    assert job_soft_hard(host, 'sbatch') == ['1024'] + slurmd_limit(host)


def test_nproc_comes_from_slurmd_too(host):
    out = host.check_output("runuser -l trainer -c 'srun --quiet bash -c \"ulimit -Su; ulimit -Hu\"'")
    nproc = slurmd_limit(host, 'Max processes')
    assert at_least(nproc, 8192) and out.split() == nproc, (out, nproc)


def test_slurm_conf_keeps_every_site_byte_and_gets_one_line(host):
    text = host.file(SLURM_CONF).content_string
    assert text.endswith(ADDED)
    site = text[:-len(ADDED)]
    recorded = dict(line.split()[::-1] for line in
                    host.file('/root/slurm-before.sha256').content_string.splitlines())
    digest = host.check_output("head -c %d %s | sha256sum" % (len(site.encode()), SLURM_CONF))
    assert digest.split()[0] == recorded[SLURM_CONF]
    assert host.file('/etc/slurm/site-nodes.conf').sha256sum == recorded['/etc/slurm/site-nodes.conf']
    assert host.file(SLURM_CONF).mode == 0o644


def test_slurmd_runs_with_its_drop_in(host):
    dropin = host.file(DROPIN).content_string
    nofile = slurmd_limit(host)
    assert at_least(nofile, 16384), nofile
    assert 'LimitNOFILE=%s' % (nofile[0] if nofile[0] == nofile[1] else ':'.join(nofile)) \
        in dropin, dropin
    assert 'LimitNPROC=' in dropin


def test_effective_limits_probes_a_job(host, module):
    ok, result, _out = module('gpufleet.tuning.effective_limits', dict(
        user='trainer', contexts=['login', 'slurm_job'], expect=PROFILE))
    assert ok, result
    job = result['contexts']['slurm_job']
    assert 'srun' in job['command'] and 'ulimit -S -n 1024' in job['command']
    assert job['limits']['nofile']['human'] == ':'.join(slurmd_limit(host))
    # the login session keeps the default 1024: its gap is there, the job's is not
    assert [g['context'] for g in result['gaps'] if g['item'] == 'nofile'] == ['login']


def test_the_audit_names_where_a_jobs_values_come_from(host, module):
    ok, result, _out = module('gpufleet.tuning.limits_audit', dict(profile=PROFILE, user='trainer'))
    assert ok, result
    assert 'slurm' in result['present']
    rows = dict((r['item'], r) for r in result['rows'] if r['context'] == 'slurm_job')
    assert rows['nofile']['actual'] == ':'.join(slurmd_limit(host)) and rows['nofile']['gap'] == ''
    line = len(host.file(SLURM_CONF).content_string.splitlines())
    assert rows['nofile']['source'] == (
        '%s:4 (not propagated: %s:%d PropagateResourceLimitsExcept=NOFILE,NPROC,MEMLOCK)'
        % (DROPIN, SLURM_CONF, line))


def test_the_audit_reads_a_jobs_pids_max_from_inside_the_job(host, module):
    """issue 33.1: with pids in the profile, the job's row is the pids.max of the cgroup the
    job step runs in, read by the step itself (srun runs the chain), with the cgroup that
    decides and what sets it."""
    ok, result, _out = module('gpufleet.tuning.limits_audit',
                              dict(profile=dict(PROFILE, pids=1024), user='trainer'))
    assert ok, result
    row = [r for r in result['rows'] if r['context'] == 'slurm_job' and r['item'] == 'pids'][0]
    assert 'slurm_job' not in result['pids']['not_covered']
    chain = row['pids']['chain']
    assert chain and chain[0]['cgroup'] == row['pids']['cgroup'], row
    # the smallest pids.max of the chain is the row's value, and its cgroup decides
    numbers = [int(c['max']) for c in chain if c['max'] != 'max']
    assert row['actual'] == (str(min(numbers)) if numbers else 'max'), row
    assert row['source'], row
    print('slurm_job pids: %s from %s (%s)' % (row['actual'], row['cgroup'], row['source']))


def site_slurm_conf(host):
    """Put the site's slurm.conf back as prepare wrote it (without the two lines added)."""
    assert host.file(SLURM_CONF).content_string.endswith(ADDED)
    host.check_output('head -n -2 %s > /root/site.conf && cat /root/site.conf > %s'
                      % (SLURM_CONF, SLURM_CONF))


def test_before_the_role_the_audit_says_which_jobs_get_less_and_why(host, module, pristine_slurm):
    # the site's slurm.conf as it was (default ALL) and slurmd with its drop-in
    site_slurm_conf(host)
    host.check_output('systemctl restart slurmd.service')
    hard = slurmd_limit(host)[1]
    assert job_soft_hard(host, 'srun') == ['1024', '1024', hard]
    ok, result, out = module('gpufleet.tuning.limits_audit', dict(profile=PROFILE, user='trainer'))
    assert ok, result
    row = [r for r in result['rows'] if r['context'] == 'slurm_job' and r['item'] == 'nofile'][0]
    assert row['actual'] == '1024:%s' % hard and row['gap'] == 'soft'
    # issue 39.5: each side names what decides it: slurm.conf (no Propagate line: ALL) the soft
    # one, from the submit side assumed for every item (the kernel's defaults), slurmd's
    # drop-in the hard one
    assert row['source'] == (
        "soft: %s (no PropagateResourceLimits line: ALL) propagates the submit shell's soft "
        "nofile 1024 (the kernel's defaults); hard: %s:4" % (SLURM_CONF, DROPIN))
    # nproc's default is the kernel's too: half of threads-max
    nproc = int(host.file('/proc/sys/kernel/threads-max').content_string) // 2
    assert ('jobs take memlock, nofile, nproc from the submitting shell, not from slurmd: a job '
            'submitted from a shell with the default soft limits (memlock 8MiB, nofile 1024, '
            'nproc %d) gets those' % nproc) in out
    assert 'PropagateResourceLimitsExcept=MEMLOCK,NOFILE,NPROC fixes it' in out


def test_with_slurm_conf_edit_off_slurm_conf_is_left_and_the_gap_named(host, module, pristine_slurm):
    site_slurm_conf(host)
    before = host.file(SLURM_CONF).sha256sum
    ok, result, out = module('gpufleet.tuning.limits_profile', dict(
        profile=PROFILE, contexts=['slurm'], slurm_conf_edit=False))
    assert ok, result
    assert host.file(SLURM_CONF).sha256sum == before
    assert result['per_context']['slurm']['propagated'] == ['nofile', 'nproc', 'memlock']
    assert ('/etc/slurm/slurm.conf sets neither PropagateResourceLimits nor ...Except (default '
            'ALL): jobs take nofile, nproc, memlock from the submitting shell') in out
    assert 'slurm_conf_edit is off' in out
