"""The bad-input matrix: every writing module and the limits role, given invalid items, values,
domains, units and suffixes, soft above hard, unlimited nofile, values above fs.nr_open or above
what the node can set, unparsable or malformed files, conflicting later files and read-only
target directories. Each case must fail with a message that names the field or file:line, leave
every watched file byte for byte as it was, with its modification time, and no file added (PAM,
systemd, Docker, Podman, containerd, Slurm and CRI-O configuration, hidden temporary files
included) and, for the role, restart nothing. containerd's and Slurm's refusals need no running
daemon (the files are parsed before anything else): the node has containerd's config, and
slurmd's unit from Debian's package (prepare.yml) with a hand-made slurm.conf per case.

A case is (id, module or 'role', arguments, node set-up, expected substrings). Arguments and
messages may use {above_nr_open}, {nr_open}, {above_ceiling} and {ceiling}, read from the node.
Files are put back to the converged state after every case.
"""
import base64
import os

import pytest

from conftest import (BASELINE, UNIT, node, output, run_module, run_role, services, snapshot,
                      snapshot_diff)

PAM = 'gpufleet.tuning.pam_limits'
SYSTEMD = 'gpufleet.tuning.systemd_limits'
DOCKER = 'gpufleet.tuning.docker_ulimits'
PODMAN = 'gpufleet.tuning.podman_ulimits'
CONTAINERD = 'gpufleet.tuning.containerd_base_spec'
PROFILE = 'gpufleet.tuning.limits_profile'
CRIO = 'gpufleet.tuning.crio_ulimits'
ROLE = 'role'

LIMITS_D = '/etc/security/limits.d'
PAM_FILE = LIMITS_D + '/90-gpufleet-tuning.conf'
SYSTEM_DROPIN = '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'
UNIT_DROPIN_DIR = '/etc/systemd/system/%s.d' % UNIT
UNIT_DROPIN = UNIT_DROPIN_DIR + '/90-gpufleet-tuning.conf'
DAEMON_JSON = '/etc/docker/daemon.json'
PODMAN_DROPIN = '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'
CONFIG_TOML = '/etc/containerd/config.toml'
BASE_SPEC = '/etc/containerd/base.json'
SLURM_CONF = '/etc/slurm/slurm.conf'
# containerd_base_spec may create its spec and restart containerd: a refusal does neither
CONTAINERD_ARGS = {'limits': {'nofile': 16384}, 'create': True, 'restart': 'always'}
# limits_profile's slurm context: nofile 12288 would write slurmd's drop-in (the unit is
# installed, slurmd does not run): the refusal must come before that write
SLURM_ARGS = {'profile': {'nofile': 12288}, 'contexts': ['slurm'], 'backup': True}
CRIO_D = '/etc/crio/crio.conf.d'
CRIO_DROPIN = CRIO_D + '/90-gpufleet-tuning.conf'
# restart: always on a node without CRI-O: a write that got through would also fail the restart
# and be put back, with a new mtime the snapshot sees
CRIO_ARGS = {'ulimits': {'nofile': 8192}, 'restart': 'always'}
SLURM_HEAD = 'ClusterName=gpufleet\nSlurmctldHost=localhost\nProctrackType=proctrack/linuxproc\n'


def read_only(directory):
    """Node set-up: a read-only bind mount of the directory over itself (undone by umount)."""
    return 'mount --bind {0} {0} && mount -o remount,bind,ro {0}'.format(directory)


def write(path, text):
    """Node set-up: ``path`` holds exactly ``text``."""
    data = base64.b64encode(text.encode()).decode()
    return 'mkdir -p %s && echo %s | base64 -d > %s' % (os.path.dirname(path), data, path)


def containerd(config, spec=None):
    """Node set-up: containerd's config.toml (and the base spec it names) hold these texts."""
    return write(CONFIG_TOML, config) + (' && ' + write(BASE_SPEC, spec) if spec else '')


def slurm(text, **included):
    """Node set-up: slurm.conf is SLURM_HEAD + ``text``; ``included`` files next to it."""
    return ' && '.join([write(SLURM_CONF, SLURM_HEAD + text)] +
                       [write('/etc/slurm/' + name.replace('_', '-') + '.conf', body)
                        for name, body in included.items()])


RUNC_V2 = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'


def pam(domain, item, **values):
    return {'limits': [dict(domain=domain, item=item, **values)]}


CASES = [
    # --- pam_limits ---------------------------------------------------------------------
    ('pam-unknown-item', PAM, pam('*', 'fds', value=1024), None,
     ["limits[0].item: unknown limit item 'fds'"]),
    ('pam-domain-with-space', PAM, pam('bad domain', 'nofile', value=4096), None,
     ["limits[0].domain: 'bad domain': a domain cannot hold blanks"]),
    ('pam-percent-domain-for-nofile', PAM,
     {'limits': [{'domain': '*', 'item': 'nproc', 'value': 4096},
                 {'domain': '%ml', 'item': 'nofile', 'value': 4096}]}, None,
     ["limits[1].domain: '%ml' applies to maxlogins only"]),
    ('pam-value-not-a-number', PAM, pam('*', 'nproc', value='lots'), None,
     ["limits[0].value: nproc needs a whole number", "'lots'"]),
    ('pam-size-suffix', PAM, pam('*', 'memlock', value='8XB'), None,
     ["limits[0].value: '8xb' is not a size"]),
    ('pam-duration-suffix', PAM, pam('*', 'cpu', value='5fortnights'), None,
     ["limits[0].value: '5fortnights' is not a duration"]),
    ('pam-soft-above-hard', PAM, pam('*', 'nofile', soft=9000, hard=100), None,
     ['limits[0]: soft 9000 is above hard 100 for nofile']),
    ('pam-unlimited-nofile', PAM, pam('*', 'nofile', value='unlimited'), None,
     ['limits[0]: nofile cannot be unlimited']),
    ('pam-above-nr-open', PAM, pam('*', 'nofile', value='{above_nr_open}'), None,
     ['limits[0] (* nofile): hard nofile {above_nr_open} is above fs.nr_open ({nr_open})']),
    ('pam-above-node-ceiling', PAM, pam('root', 'nofile', value='{above_ceiling}'), None,
     ['limits[0] (root nofile): hard nofile {above_ceiling} is above what login services can '
      'set here ({ceiling}']),
    ('pam-conflicting-later-file', PAM, pam('*', 'nofile', value=8192),
     write(LIMITS_D + '/95-site.conf', '# site\n* hard nofile 4096\n'),
     [LIMITS_D + '/95-site.conf:2 sets * hard nofile 4096 later in pam_limits order, over the '
      'requested * hard nofile 8192', 'nothing written']),
    ('pam-read-only-limits-d', PAM, pam('*', 'nofile', value=8192), read_only(LIMITS_D),
     [PAM_FILE + ': cannot create a temporary file in %s: Read-only file system' % LIMITS_D]),
    ('pam-read-only-limits-d-backup', PAM, dict(pam('*', 'nofile', value=8192), backup=True),
     read_only(LIMITS_D),
     [PAM_FILE + ': cannot write backup ' + PAM_FILE, 'Read-only file system']),
    ('pam-invalid-mode', PAM,
     dict(pam('*', 'nofile', value=8192), path=LIMITS_D + '/80-new.conf', mode='0999'), None,
     ["mode: '0999'"]),
    # --- systemd_limits -----------------------------------------------------------------
    ('systemd-unknown-item', SYSTEMD, {'scope': 'system', 'limits': {'fds': 5}}, None,
     ["limits.fds: unknown limit item 'fds'"]),
    ('systemd-soft-above-hard', SYSTEMD,
     {'scope': 'user', 'limits': {'nofile': {'soft': 9000, 'hard': 100}}}, None,
     ['limits.nofile: soft 9000 is above hard 100 for nofile']),
    ('systemd-unlimited-nofile', SYSTEMD, {'scope': 'system', 'limits': {'nofile': 'unlimited'}},
     None, ['limits.nofile: unlimited is not possible for nofile']),
    ('systemd-above-nr-open', SYSTEMD,
     {'scope': 'system', 'limits': {'nofile': '{above_nr_open}'}}, None,
     ['limits.nofile: hard {above_nr_open} is above fs.nr_open ({nr_open})']),
    ('systemd-unit-above-node-ceiling', SYSTEMD,
     {'unit': UNIT, 'limits': {'nofile': '{above_ceiling}'}}, None,
     ['limits.nofile: hard {above_ceiling} is above what this host lets systemd set']),
    ('systemd-unit-suffix', SYSTEMD,
     {'unit': 'gpufleet-rel-sleeper.timer', 'limits': {'nofile': 4096}}, None,
     ["unit: 'gpufleet-rel-sleeper.timer' is not a unit name that takes Limit*= settings"]),
    ('systemd-dropin-name', SYSTEMD,
     {'scope': 'system', 'dropin': '90-limits.txt', 'limits': {'nofile': 4096}}, None,
     ["dropin: '90-limits.txt' must be a file name ending with .conf"]),
    ('systemd-malformed-manager-dropin', SYSTEMD, {'scope': 'system', 'limits': {'nofile': 8192}},
     "sed -i 's/^\\[Manager\\]$/[Manager/' " + SYSTEM_DROPIN,
     [SYSTEM_DROPIN + ":2: invalid section header '[Manager'"]),
    ('systemd-malformed-unit-dropin', SYSTEMD, {'unit': UNIT, 'limits': {'nofile': 8192}},
     "sed -i 's/^\\[Service\\]$/[Service/' " + UNIT_DROPIN,
     [UNIT_DROPIN + ":2: invalid section header '[Service'"]),
    ('systemd-conflicting-later-dropin', SYSTEMD, {'scope': 'system', 'limits': {'nofile': 8192}},
     write('/etc/systemd/system.conf.d/95-site.conf', '[Manager]\nDefaultLimitNOFILE=4096\n'),
     ['/etc/systemd/system.conf.d/95-site.conf:2: DefaultLimitNOFILE=4096 overrides the '
      'requested nofile 8192']),
    ('systemd-conflicting-later-unit-dropin', SYSTEMD, {'unit': UNIT, 'limits': {'nofile': 8192}},
     write(UNIT_DROPIN_DIR + '/95-site.conf', '[Service]\nLimitNOFILE=1024\n'),
     [UNIT_DROPIN_DIR + '/95-site.conf:2: LimitNOFILE=1024 overrides the requested nofile']),
    ('systemd-read-only-dropin-dir', SYSTEMD, {'scope': 'system', 'limits': {'nofile': 8192}},
     read_only('/etc/systemd/system.conf.d'),
     [SYSTEM_DROPIN + ': cannot create a temporary file in /etc/systemd/system.conf.d: '
      'Read-only file system']),
    ('systemd-unknown-unit', SYSTEMD,
     {'unit': 'gpufleet-no-such-unit.service', 'limits': {'nofile': 4096}}, None,
     ['gpufleet-no-such-unit.service']),
    # --- docker_ulimits -----------------------------------------------------------------
    ('docker-unparsable-daemon-json', DOCKER, {'ulimits': {'nofile': 4096}},
     write(DAEMON_JSON, '{\n  "storage-driver": "vfs",\n  "debug": true,\n'
                        '  "log-level" "info"\n}\n'),
     [DAEMON_JSON + ":4:15: invalid JSON: Expecting ':' delimiter"]),
    ('docker-entry-without-name', DOCKER, {'ulimits': {'nofile': 4096}},
     write(DAEMON_JSON, '{\n  "storage-driver": "vfs",\n  "default-ulimits": {\n'
                        '    "core": {"Soft": 0, "Hard": 0}\n  }\n}\n'),
     [DAEMON_JSON + ':4:5: default-ulimits.core: "Name" must be \'core\'']),
    ('docker-flag-in-unit-dropin', DOCKER, {'ulimits': {'nofile': 4096}},
     write('/etc/systemd/system/docker.service.d/50-flags.conf',
           '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd -H fd:// \\\n'
           '  --default-ulimit nofile=1024:2048\n'),
     ['/etc/systemd/system/docker.service.d/50-flags.conf:3 passes --default-ulimit']),
    ('docker-unknown-item', DOCKER, {'ulimits': {'fds': 1024}}, None,
     ["ulimits.fds: unknown limit item 'fds'"]),
    ('docker-shm-size-suffix', DOCKER, {'shm_size': 'a lot'}, None,
     ["shm_size: 'a lot' is not a size"]),
    ('docker-read-only-etc-docker', DOCKER, {'ulimits': {'nofile': 8192}}, read_only('/etc/docker'),
     [DAEMON_JSON + ': cannot create a temporary file in /etc/docker: Read-only file system']),
    ('docker-unlimited-nofile', DOCKER, {'ulimits': {'nofile': 'unlimited'}}, None,
     ['ulimits.nofile']),
    ('docker-above-nr-open', DOCKER, {'ulimits': {'nofile': '{above_nr_open}'}}, None,
     ['ulimits.nofile']),
    # --- podman_ulimits -----------------------------------------------------------------
    ('podman-malformed-element', PODMAN, {'ulimits': {'nproc': 4096}},
     write(PODMAN_DROPIN, '[containers]\ndefault_ulimits = ["core=0:0", "nofile=many"]\n'),
     [PODMAN_DROPIN + ":2:32: default_ulimits: 'nofile=many' is not NAME=SOFT"]),
    ('podman-unterminated-array', PODMAN, {'ulimits': {'nproc': 4096}},
     write(PODMAN_DROPIN, '# x\n[containers]\ndefault_ulimits = ["core=0:0",\n'),
     [PODMAN_DROPIN + ':3:19: unterminated array']),
    ('podman-soft-above-hard', PODMAN, {'ulimits': {'nofile': {'soft': 9000, 'hard': 100}}}, None,
     ['ulimits.nofile: soft 9000 is above hard 100 for nofile']),
    ('podman-read-only-dropin-dir', PODMAN, {'ulimits': {'nofile': 8192}},
     read_only('/etc/containers/containers.conf.d'),
     [PODMAN_DROPIN + ': cannot create a temporary file in /etc/containers/containers.conf.d']),
    # --- containerd_base_spec (containerd's config.toml and base runtime specs) ------------
    ('containerd-unparsable-config-toml', CONTAINERD, CONTAINERD_ARGS,
     containerd('version = 2\n' + RUNC_V2.rstrip(']\n') + '\n'),
     [CONFIG_TOML + ':2: not valid TOML']),
    ('containerd-base-spec-not-json', CONTAINERD, CONTAINERD_ARGS,
     containerd('version = 2\n' + RUNC_V2 + '  base_runtime_spec = "%s"\n' % BASE_SPEC,
                '{"ociVersion": "1.0.2",'),
     [BASE_SPEC + ':1:24: not valid JSON']),
    ('containerd-base-spec-not-oci', CONTAINERD, CONTAINERD_ARGS,
     containerd("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
                "  base_runtime_spec = '%s'\n" % BASE_SPEC, '{"default-ulimits": {}}'),
     [BASE_SPEC + ': not an OCI runtime spec (no "ociVersion" string)']),
    ('containerd-base-spec-missing', CONTAINERD, CONTAINERD_ARGS,
     containerd('version = 2\n' + RUNC_V2 + '  base_runtime_spec = "/etc/containerd/no.json"\n'),
     ['handler runc: base_runtime_spec /etc/containerd/no.json does not exist']),
    ('containerd-unknown-handler', CONTAINERD, dict(CONTAINERD_ARGS, handlers=['kata']),
     containerd('version = 2\n' + RUNC_V2 + '  base_runtime_spec = "%s"\n' % BASE_SPEC,
                '{"ociVersion": "1.0.2"}'),
     ["handlers: 'kata' is not a runtime handler of %s (configured: runc)" % CONFIG_TOML]),
    # --- crio_ulimits (the hand-made /etc/crio tree of prepare.yml: no CRI-O here) ----------
    ('crio-not-toml', CRIO, CRIO_ARGS,
     write(CRIO_D + '/50-site.conf', '[crio.runtime]\nno_pivot = maybe\n'),
     [CRIO_D + '/50-site.conf:2: not valid TOML', 'CRI-O would not start', 'nothing written']),
    ('crio-soft-above-hard-in-a-drop-in', CRIO, CRIO_ARGS,
     write(CRIO_D + '/50-site.conf', '[crio.runtime]\ndefault_ulimits = ["nofile=2048:1024"]\n'),
     [CRIO_D + '/50-site.conf:2:20: default_ulimits.nofile: soft 2048 is above hard 1024']),
    ('crio-podman-append-attribute', CRIO, CRIO_ARGS,
     write(CRIO_D + '/50-site.conf',
           '[crio.runtime]\ndefault_ulimits = ["nofile=2048:4096", {append=true}]\n'),
     [CRIO_D + "/50-site.conf:2:19: {{append=...}} is Podman's"]),  # {{ }}: fill() formats
    ('crio-later-drop-in-wins', CRIO, CRIO_ARGS,
     write(CRIO_D + '/99-site.conf', '[crio.runtime]\ndefault_ulimits = ["nofile=4096:4096"]\n'),
     [CRIO_D + '/99-site.conf:2:1 sets default_ulimits and CRI-O reads it after ' + CRIO_DROPIN,
      'nothing written']),
    ('crio-path-not-read', CRIO, dict(CRIO_ARGS, path='/etc/crio/gpufleet.conf'), None,
     ['path: /etc/crio/gpufleet.conf is not a file CRI-O reads']),
    ('crio-unlimited-nofile', CRIO, dict(CRIO_ARGS, ulimits={'nofile': 'unlimited'}), None,
     ['ulimits.nofile: unlimited is not possible for nofile']),
    ('crio-hard-only-and-none-set', CRIO, dict(CRIO_ARGS, ulimits={'nofile': {'hard': 8192}}),
     None, ['ulimits.nofile: give both soft and hard']),
    ('crio-read-only-dropin-dir', CRIO, CRIO_ARGS, read_only(CRIO_D),
     [CRIO_DROPIN + ': cannot create a temporary file in %s: Read-only file system' % CRIO_D]),
    ('profile-crio-later-drop-in-wins', PROFILE, {'profile': {'nofile': 8192},
                                                  'contexts': ['crio']},
     write(CRIO_D + '/99-site.conf', '[crio.runtime]\ndefault_ulimits = ["nofile=4096:4096"]\n'),
     ['crio: ' + CRIO_D + '/99-site.conf:2:1 sets default_ulimits', 'nothing written']),
    # --- limits_profile's slurm context (slurm.conf) --------------------------------------
    ('slurm-unparsable-line', PROFILE, SLURM_ARGS, slurm('ThisIsNot a slurm line\n'),
     [SLURM_CONF + ":4: cannot read 'ThisIsNot a slurm line'", 'nothing written']),
    ('slurm-missing-include', PROFILE, SLURM_ARGS, slurm('Include site-limits.conf\n'),
     [SLURM_CONF + ':4: Include /etc/slurm/site-limits.conf: No such file', 'nothing written']),
    ('slurm-bad-line-in-include', PROFILE, SLURM_ARGS,
     slurm('Include site-limits.conf\n',
           site_limits='# site\nPropagateResourceLimitsExcept NOFILE\n'),
     ['/etc/slurm/site-limits.conf:2: cannot read', 'nothing written']),
    ('slurm-both-propagate-options', PROFILE, SLURM_ARGS,
     slurm('PropagateResourceLimitsExcept=MEMLOCK\nPropagateResourceLimits=ALL\n'),
     [SLURM_CONF + ':4: PropagateResourceLimitsExcept and ' + SLURM_CONF +
      ':5: PropagateResourceLimits are both set', 'nothing written']),
    # --- the limits role ----------------------------------------------------------------
    ('role-above-node-ceiling', ROLE,
     {'limits_profile': dict(BASELINE, nofile='{above_ceiling}')}, None,
     ['hard nofile {above_ceiling} is above what login services can set here ({ceiling}']),
    ('role-unlimited-nofile', ROLE, {'limits_profile': dict(BASELINE, nofile='unlimited')}, None,
     ['nofile cannot be unlimited']),
    # lock-outs (issue 31): no value below an item's floor is written, force or not
    ('role-lockout-nofile-0', ROLE, {'limits_profile': {'nofile': 0, 'nproc': 8192}}, None,
     ['profile.nofile: soft nofile 0 is below the floor 1024, which is never written']),
    ('role-lockout-nofile-16-forced', ROLE,
     {'limits_profile': dict(BASELINE, nofile=16), 'limits_force': True}, None,
     ['profile.nofile: soft nofile 16 is below the floor 1024', 'with or without force']),
    ('role-lockout-nproc-1', ROLE, {'limits_profile': dict(BASELINE, nproc=1)}, None,
     ['profile.nproc: soft nproc 1 is below the floor 1024']),
    ('profile-lockout-nofile-value-16', PROFILE,
     {'profile': {'nofile': {'value': 16}}, 'contexts': ['pam', 'systemd_system']},
     None, ['profile.nofile.value: soft nofile 16 is below the floor 1024']),
    ('profile-lockout-maxlogins-0', PROFILE,
     {'profile': {'maxlogins': 0}, 'contexts': ['pam']}, None,
     ['profile.maxlogins: soft maxlogins 0 is below the floor 4']),
    ('pam-lockout-nofile-0', PAM, pam('*', 'nofile', value=0), None,
     ['limits[0].value: soft nofile 0 is below the floor 1024']),
    ('docker-lockout-nofile-0', DOCKER, {'ulimits': {'nofile': 0}}, None,
     ['ulimits.nofile: soft nofile 0 is below the floor 1024']),
    ('systemd-lockout-nproc-1', SYSTEMD, {'scope': 'system', 'limits': {'nproc': 1}}, None,
     ['limits.nproc: soft nproc 1 is below the floor 1024']),
    ('role-unknown-context', ROLE, {'limits_contexts': ['pam', 'kubernetes']}, None,
     ['limits_contexts must be one or more of', 'kubernetes']),
    ('role-bad-domain', ROLE, {'limits_profile': BASELINE, 'limits_domains': ['*', 'bad domain']},
     None, ["domains[1]: 'bad domain': a domain cannot hold blanks"]),
    ('role-conflicting-later-file', ROLE, {'limits_profile': dict(BASELINE, nofile=12288)},
     write(LIMITS_D + '/95-site.conf', '* soft nofile 4096\n* hard nofile 4096\n'),
     [LIMITS_D + '/95-site.conf:1 sets * soft nofile 4096 later in pam_limits order, over the '
      'requested * soft nofile ']),
    ('role-unparsable-daemon-json', ROLE, {'limits_profile': dict(BASELINE, nofile=12288)},
     write(DAEMON_JSON, '{\n  "storage-driver": "vfs",\n  "debug": true,\n'
                        '  "log-level" "info"\n}\n'),
     [DAEMON_JSON + ":4:15: invalid JSON"]),
    ('role-read-only-etc-docker', ROLE,
     {'limits_profile': dict(BASELINE, nofile={'soft': 12288, 'hard': 12288})},
     read_only('/etc/docker'), [DAEMON_JSON + ': cannot write']),
    ('role-docker-only-unlimited-nofile', ROLE,
     {'limits_profile': dict(BASELINE, nofile='unlimited'), 'limits_contexts': ['docker'],
      'limits_units': []},
     None, ['docker: profile.nofile: unlimited is not possible for nofile']),
    # a misspelt verification user used to fail only after every file was written and dockerd
    # and the user managers restarted (issue 17.3)
    ('role-misspelt-verify-user', ROLE,
     {'limits_profile': dict(BASELINE, nofile=12288), 'limits_verify_user': 'trainr'},
     None, ['baseline_user: trainr does not exist on this host', 'nothing was written']),
    ('role-slurm-unparsable-line', ROLE,
     {'limits_profile': dict(BASELINE, nofile=12288), 'limits_contexts': ['slurm'],
      'limits_units': []},
     slurm('ThisIsNot a slurm line\n'), [SLURM_CONF + ':4: cannot read']),
    ('role-unknown-unit', ROLE,
     {'limits_profile': BASELINE, 'limits_units': [UNIT, 'gpufleet-no-such-unit.service']},
     None, ['gpufleet-no-such-unit.service']),
]


def fill(value, facts):
    """{name} placeholders in strings (recursively); a whole-string placeholder of a number
    becomes the number."""
    if isinstance(value, dict):
        return dict((k, fill(v, facts)) for k, v in value.items())
    if isinstance(value, list):
        return [fill(v, facts) for v in value]
    if isinstance(value, str):
        text = value.format(**facts)
        return int(text) if text.isdigit() and text != value else text
    return value


@pytest.fixture(scope='module')
def facts(host):
    """The node's ceilings: fs.nr_open and PID 1's hard nofile (no CAP_SYS_RESOURCE here)."""
    nr_open = output(host, 'cat /proc/sys/fs/nr_open')
    limits = output(host, "awk '/Max open files/ {print $5}' /proc/1/limits")
    return {'nr_open': int(nr_open), 'above_nr_open': int(nr_open) + 1,
            'ceiling': int(limits), 'above_ceiling': int(limits) + 1}


def test_the_matrix_is_big_enough():
    ids = [c.values[0] if hasattr(c, 'values') else c[0] for c in CASES]
    assert len(ids) == len(set(ids))
    refused = [c for c in CASES if not hasattr(c, 'values')]
    assert len(refused) >= 30
    assert len([c for c in refused if c[1] == ROLE]) >= 5
    assert set(c[1] for c in refused) == set([PAM, SYSTEMD, DOCKER, PODMAN, CONTAINERD, CRIO,
                                              PROFILE, ROLE])


@pytest.mark.parametrize('name,module,args,setup,expected', CASES,
                         ids=[c.values[0] if hasattr(c, 'values') else c[0] for c in CASES])
def test_bad_input_is_refused_and_nothing_changes(host, baseline, facts, name, module, args,
                                                  setup, expected):
    args = fill(args, facts)
    expected = fill(expected, facts)
    mounted = setup.split()[2] if setup and setup.startswith('mount --bind') else None
    try:
        if setup:
            node(host, setup)
        before = snapshot(host, mtimes=True)
        if module == ROLE:
            running = services(host)
            rc, printed = run_role(host, **args)
            ok, message = rc == 0, printed
        else:
            ok, result, printed = run_module(host, module, args)
            message = result.get('msg', '')
        after = snapshot(host, mtimes=True)
        assert not ok, '%s accepted %s: %s' % (module, name, printed[-3000:])
        for text in expected:
            assert text in message, 'expected %r in: %s' % (text, message[-3000:])
        assert after == before, snapshot_diff(before, after)
        if module == ROLE:
            assert services(host) == running
    finally:
        if mounted:
            node(host, 'umount %s' % mounted, check=False)
        baseline()
