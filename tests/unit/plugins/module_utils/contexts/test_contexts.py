"""The registry of contexts (module_utils/contexts): one record per context, from which the
modules' choices, the audit's texts and targets, the role's probes and the actions follow."""
import os
import subprocess
import sys

from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.run import profile_plan as pp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))


def test_the_two_vocabularies_come_from_the_records():
    assert registry.CONFIGURED == pp.CONTEXTS == [
        'pam', 'systemd_system', 'systemd_user', 'docker', 'containerd', 'containerd_cri', 'podman',
        'slurm', 'crio']
    assert registry.PROBED == effective.CONTEXTS == [
        'login', 'ssh', 'service', 'user_manager', 'docker', 'k8s_pod', 'podman', 'enroot',
        'slurm_job']
    names = [c.name for c in registry.REGISTRY if c.name]
    probes = [c.probe for c in registry.REGISTRY if c.probe]
    assert len(set(names)) == len(names) and len(set(probes)) == len(probes)


def test_every_record_names_its_files_and_a_fallback_when_probed():
    for context in registry.REGISTRY:
        assert context.files, context
        if context.probe:
            assert context.fallback, context


def test_probe_map_is_what_the_role_probes():
    assert registry.probe_map(['pam', 'systemd_system', 'systemd_user', 'docker',
                               'containerd', 'podman']) == [
        dict(context='pam', probe='login', image=None),
        dict(context='systemd_system', probe='service', image=None),
        dict(context='systemd_user', probe='user_manager', image=None),
        dict(context='docker', probe='docker', image='docker_image'),
        dict(context='podman', probe='podman', image='podman_image')]
    assert registry.probe_map(['containerd']) == []


def test_a_deferred_restart_names_the_probed_context_it_leaves_pending():
    assert registry.restart_context('docker.service') == 'docker'
    assert registry.restart_context('user@1001.service') == 'user_manager'
    assert registry.restart_context('slurmd.service') == 'slurm_job'
    assert registry.restart_context('containerd.service') == 'k8s_pod'
    assert registry.restart_context('kubelet.service') == 'unit:kubelet.service'


def test_labels_of_planned_changes_belong_to_one_record():
    assert registry.owner('pam').name == 'pam'
    assert registry.owner('unit:containerd.service') is registry.owner('unit:x.service')
    assert registry.owner('docker').probe == 'docker'


def test_audit_texts_and_targets_come_from_the_records():
    assert audit.FALLBACK == {
        'login': 'no limits line (inherited from the login service)',
        'ssh': "sshd's own limits (its unit or the manager default)",
        'service': "systemd's built-in default",
        'user_manager': "the user manager's own limits",
        'docker': 'inherited from containerd',
        'k8s_pod': "containerd's own limits (the handler has no base spec)",
        'podman': "Podman's built-in default",
        'enroot': "the limits of the session that starts it (enroot keeps the caller's)",
        'slurm_job': 'slurmd.service (the unit file or the manager default)',
    }
    assert audit.UNIT_FALLBACK == 'the unit or manager default'
    assert audit.TARGETS == [
        ('pam', '/etc/security/limits.d/90-gpufleet-tuning.conf'),
        ('systemd_system', '/etc/systemd/system.conf.d/90-gpufleet-tuning.conf'),
        ('systemd_user', '/etc/systemd/user.conf.d/90-gpufleet-tuning.conf'),
        ('docker', '/etc/docker/daemon.json'),
        ('containerd_cri', '/etc/containerd/config.toml'),
        ('podman', '/etc/containers/containers.conf.d/90-gpufleet-tuning.conf'),
        ('slurm', '/etc/slurm/slurm.conf'),
        ('crio', '/etc/crio/crio.conf.d/90-gpufleet-tuning.conf'),
    ]
    assert pp.DEFAULTS == dict(
        pam_path='/etc/security/limits.d/90-gpufleet-tuning.conf',
        docker_daemon_json='/etc/docker/daemon.json',
        containerd_config='/etc/containerd/config.toml',
        podman_dropin='/etc/containers/containers.conf.d/90-gpufleet-tuning.conf',
        slurm_conf='/etc/slurm/slurm.conf',
        crio_dropin='/etc/crio/crio.conf.d/90-gpufleet-tuning.conf')


class Host(object):
    """run_command for actions(): no unit runs, no docker binary."""

    def run_command(self, args, environ_update=None):
        return 0, '0\n', ''

    def get_bin_path(self, name):
        return None


def test_actions_fold_each_context_and_defer_with_the_context_pending():
    unit = changes.Change('/x/slurmd.conf', dict(daemon_reload_required=True,
                                                 restart_required=['slurmd.service',
                                                                   'docker.service']),
                          'a', 'b')
    system = changes.Change('/x/system.conf', dict(reexec_required=True), 'a', 'a')
    result = pp.actions([('systemd_system', system), ('unit:slurmd.service', unit)], Host(),
                        'never')
    assert result['reexec'] is True and result['daemon_reload'] is True
    assert result['units'] == ['slurmd.service'] and result['docker'] is True
    assert result['deferred'] == [
        dict(unit='docker.service', reason='restart policy never', context='docker'),
        dict(unit='slurmd.service', reason='restart policy never', context='slurm_job')]
    assert result['running_containers'] == {'count': None, 'live_restore': False}


def test_a_probe_error_carries_its_kind():
    assert issubclass(effective.ProbeError, errors.Error)
    assert effective.ProbeError('x').kind == errors.HOST
    assert effective.ProbeError('x', kind=errors.NOT_RUNNING).kind == 'not_running'


def test_read_only_reports_load_no_planner():
    code = ('import sys\n'
            'sys.path.insert(0, %r)\n'
            'from ansible_collections.gpufleet.tuning.plugins.module_utils.run import audit\n'
            'from ansible_collections.gpufleet.tuning.plugins.module_utils.run import effective\n'
            'print(sorted(m.rsplit(".", 1)[1] for m in sys.modules\n'
            '             if m.startswith("ansible_collections.gpufleet.tuning.plugins.'
            'module_utils.")))\n' % os.path.join(ROOT, 'build', 'collections'))
    loaded = subprocess.check_output([sys.executable, '-c', code], universal_newlines=True)
    for planner in ('pam_limits_plan', 'systemd_plan', 'runtime_plan', 'docker_plan',
                    'podman_plan', 'profile_plan'):
        assert "'%s'" % planner not in loaded, loaded


def loaded_by(*modules):
    code = ('import sys\n'
            'sys.path.insert(0, %r)\n' % os.path.join(ROOT, 'build', 'collections')
            + ''.join('import ansible_collections.gpufleet.tuning.plugins.module_utils.%s\n' % m
                      for m in modules)
            + 'print(sorted(m.rsplit(".", 1)[1] for m in sys.modules\n'
              '             if m.startswith("ansible_collections.gpufleet.tuning.plugins.'
              'module_utils.")))\n')
    return subprocess.check_output([sys.executable, '-c', code], universal_newlines=True)


def test_podman_code_does_not_load_dockers_module():
    loaded = loaded_by('runtimes.podman_plan', 'runtimes.containers_conf')
    assert "'docker_daemon_json'" not in loaded and "'docker_plan'" not in loaded, loaded


def documented_choices(path, option):
    """The choices of ``option`` in a module's DOCUMENTATION or a role's argument_specs."""
    import ast
    import yaml
    with open(os.path.join(ROOT, path)) as handle:
        text = handle.read()
    if path.endswith('.py'):
        for node in ast.parse(text).body:
            if isinstance(node, ast.Assign) and node.targets[0].id == 'DOCUMENTATION':
                return yaml.safe_load(node.value.value)['options'][option]['choices']
    return yaml.safe_load(text)['argument_specs']['main']['options'][option]['choices']


def test_the_documented_choices_are_the_registrys():
    """Ansible needs them as static YAML: a new context adds its name there too, and this test
    says where it was forgotten."""
    assert documented_choices('plugins/modules/limits_profile.py', 'contexts') == \
        registry.CONFIGURED
    assert documented_choices('roles/limits/meta/argument_specs.yml', 'limits_contexts') == \
        registry.CONFIGURED
    assert documented_choices('plugins/modules/effective_limits.py', 'contexts') == \
        registry.PROBED


def test_a_read_only_command_several_plans_ask_runs_once_per_call():
    # the running system manager's `systemctl show`: the systemd context's live check and
    # every context that keeps the manager's defaults read it; one run per limits_profile call
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Request
    runs = []

    class Host(object):
        def run_command(self, args, environ_update=None):
            runs.append((list(args), environ_update))
            return 0, 'out %d' % len(runs), ''
    request, host = Request({}, {}, []), Host()
    show = ['systemctl', 'show', '--property=DefaultLimitNOFILE']
    first = request.run(host, show, environ_update={'LANG': 'C'})
    assert request.run(host, show, environ_update={'LANG': 'C'}) == first == (0, 'out 1', '')
    assert request.run(host, show) == (0, 'out 2', '')
    assert request.run(host, show + ['user@1001.service'], environ_update={'LANG': 'C'})[1] == 'out 3'
    assert len(runs) == 3
