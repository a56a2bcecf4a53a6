# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes pods on containerd's CRI. A pod container takes its rlimits from the
``base_runtime_spec`` of its runtime handler when the handler has one (a spec taken unedited
from ``ctr oci spec`` carries ``RLIMIT_NOFILE 1024:1024``), else from containerd's own process
(its unit's ``Limit*=``; Go raises a process's soft nofile to its hard one, so a pod gets
containerd's hard nofile as both). So the profile goes into every handler's base spec
(containerd_spec_plan, the plan the containerd_base_spec module makes) and into
``containerd.service``'s ``Limit*=`` (the units context); a base spec is created and referenced
for a handler that has none only when the user asks (``containerd_create_spec``).

Configured as ``containerd_cri``, probed as ``k8s_pod``: a pod started through the CRI by a
CRI client on the node (the collection's client, given as ``cri_client``: a python with grpcio
and the client script), as the kubelet starts one. Without a client the audit *predicts* what a
pod gets, from the handler's base spec or from containerd's process and unit drop-in, and says
so in each row's source. docs/containerd-kubernetes.md."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import (
    systemd_paths as sdpaths)
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import Option, RoleVar
from ansible_collections.gpufleet.tuning.plugins.module_utils.model.items import (
    BY_RLIMIT as ITEM_BY_RLIMIT)

UNIT = 'containerd.service'
KUBELET = 'kubelet.service'
CONFIG = '/etc/containerd/config.toml'
#: what a row's source starts with: the value was seen in a pod, or worked out from files
PROBED = 'probed (a pod started through the CRI)'
PREDICTED = 'predicted (no pod started)'


def client_command(params):
    """The CRI client command that prints a new pod container's /proc/self/limits."""
    return list(params['cri_client']) + [
        'limits', '--image', params['pod_image'], '--handler', params.get('pod_handler') or '']


def oci_limit(entry):
    """An OCI rlimits entry ({type, soft, hard}, RLIM_INFINITY for unlimited) as a Limit."""
    def side(value):
        return model.UNLIMITED if value >= model.RLIM_INFINITY else value
    return model.Limit(side(entry['soft']), side(entry['hard']))


def inherited(name, live):
    """The Limit a pod gets for ``name`` from containerd's own process limits ``live``
    ({soft, hard}): Go raises a process's soft nofile to its hard one."""
    soft, hard = live['soft'], live['hard']
    if name == 'nofile':
        soft = hard
    return model.Limit(soft, hard)


def own_limits(request):
    """{item: (Limit, source)} of every item a pod inherits from containerd's running process
    (read once a call; {} when containerd does not run)."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
    running = request.read('containerd_limits', info.containerd_limits)
    return dict((name, (inherited(name, live),
                        "containerd's own limits (pid %s%s)" % (
                            running['pid'], ', soft raised to hard by Go' if name == 'nofile'
                            else '')))
                for name, live in (running.get('limits') or {}).items())


PATH = Option('containerd_config', 'path', default=CONFIG, description=(
    "containerd's configuration file (the C(containerd_cri) context). A file that does not "
    "parse, a handler's base spec that is missing or not an OCI spec is refused, naming the "
    'file (and C(file:line)), before anything is written.',))
CREATE_SPEC = Option(
    'containerd_create_spec', 'bool', default=False, description=(
        'With the C(containerd_cri) context, create C(/etc/containerd/gpufleet-base-spec.json) '
        "from the node's default spec (C(ctr oci spec)) with the profile, and reference it in "
        'O(containerd_config) for C(runc) and every configured handler that has no base spec. '
        "C(false) leaves such handlers on containerd's own limits (the unit drop-in), with a "
        'warning.',),
    role=RoleVar('limits_containerd_create_spec', default=False, description=(
        'With the C(containerd_cri) context, create /etc/containerd/gpufleet-base-spec.json '
        "from the node's C(ctr oci spec) with the profile and reference it for C(runc) and "
        'every handler that has no base spec; C(false) leaves those handlers on containerd\'s '
        'own limits (the unit drop-in) and warns.',)))
IMAGE = Option(
    'pod_image', 'str', description=(
        "The image of the C(k8s_pod) probe, present in containerd's C(k8s.io) namespace; its "
        'command is run in a new pod container (C(cat /proc/self/limits)); without it (and '
        'O(cri_client)) there is no C(k8s_pod) probe.',),
    role=RoleVar('limits_verify_pod_image', default='', description=(
        "The image of the C(k8s_pod) probe (present in containerd's C(k8s.io) namespace), a "
        'pod started through the CRI, as the kubelet starts one. Empty, or no '
        'O(limits_verify_cri_python), skips that probe.',)))
HANDLER = Option('pod_handler', 'str', default='', description=(
    "The CRI runtime handler of the C(k8s_pod) probe's pod; empty is the default runtime.",))
CRI_CLIENT = Option('cri_client', 'list', elements='str', default=[], description=(
    'The command of a CRI client on the node that starts a pod and prints its limits, for '
    "C(k8s_pod), as separate elements; the collection's client is "
    'C(PYTHON roles/limits/files/cri/cri_client.py) run by a python with grpcio and protobuf '
    '(the limits role copies it; docs/containerd-kubernetes.md). Without it the C(k8s_pod) '
    'probe reports that it could not run.',))


class ContainerdCri(Context):
    name = 'containerd_cri'
    probe = 'k8s_pod'
    own_ipc = True
    task_limit = 'pids.max'
    units = (UNIT,)
    files = (CONFIG, 'base_runtime_spec files', '/etc/systemd/system/containerd.service.d/*.conf')
    path = PATH
    options = (CREATE_SPEC,)
    image = IMAGE
    probe_options = (HANDLER, CRI_CLIENT)
    target = CONFIG
    restart_rank = 0
    fallback = 'containerd\'s own limits (the handler has no base spec)'

    def detect(self, root=''):
        """A Kubernetes node on containerd: containerd's unit and a config.toml whose CRI plugin
        is not disabled, with a kubelet unit or a handler that has a base runtime spec. (Debian's
        and Ubuntu's containerd package leaves the CRI on for dockerd hosts that run no pod.)"""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containerd_cri_conf as cc)
        if not (sdpaths.unit_exists(UNIT, root) and os.path.isfile(root + CONFIG)):
            return False
        try:
            with open(root + CONFIG, 'rb') as handle:
                data = cc.parse(handle.read(), root + CONFIG)[0]
            version = cc.version_of(data, root + CONFIG)
        except (errors.Error, IOError, OSError):
            # present but unreadable: planning it names the file and line
            return sdpaths.unit_exists(KUBELET, root)
        if cc.cri_disabled(data, version):
            return False
        return sdpaths.unit_exists(KUBELET, root) or any(cc.handlers(data, version).values())

    def owns(self, label):
        return label == self.name or label.startswith(self.name + ':')

    def plans(self, request, host, ceiling):
        """One Change per base spec file (label ``containerd_cri:PATH``), then config.toml's
        (label ``containerd_cri``): planned together, once, when the first is asked for."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containerd_spec_plan as csp)
        config = request.paths[self.path_option]
        try:
            planned = csp.plan(host.run_command,
                               lambda path, spec, created: self.spec_limits(
                                   request, ceiling, path, spec, created),
                               config=config,
                               create=request.containerd_create_spec, field='profile')
        except errors.Error as exc:
            failure = changes.Failure('%s (nothing written)' % exc.msg, dict(config=config),
                                      kind=exc.kind)

            def fail():
                raise failure
            return [(self.name, fail)]
        result = dict(config=config, version=planned.version, handlers=planned.handlers,
                      skipped=planned.skipped, create=request.containerd_create_spec)
        writes = dict((path, (old, new)) for path, old, new in planned.writes)
        found = []
        specs = sorted(set(p for p in planned.handlers.values() if p))
        for path in specs:
            old, new = writes.get(path, (None, None))
            if path not in writes:
                old = new = csp.read_text(path)

            def plan(path=path, old=old, new=new):
                mode = safe_file.mode_of(path) if old is not None else 0o644
                return changes.Change(path, dict(result, path=path), old, new, mode=mode)
            found.append(('%s:%s' % (self.name, path), plan))
        old, new = writes.get(config, (None, None))
        if config not in writes:
            old = new = csp.read_text(config)

        def plan_config():
            # handlers left without a base spec (result's handlers: null) keep containerd's
            # own limits: the units context's drop-in gives them the profile
            return changes.Change(config, dict(result, path=config), old, new,
                                  mode=safe_file.mode_of(config))
        found.append((self.name, plan_config))
        return found

    def undo_plans(self, request, host):
        """Each handler's base spec and config.toml back from their oldest backup when only
        what the collection writes there differs; else left, reported as not undone."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
        if not self.detect():
            return []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
        try:
            found = undo_files.undo_containerd(request.paths[self.path_option])
        except changes.Failure as exc:
            failure = exc

            def fail():
                raise failure
            return [(self.name, fail)]
        return [(self.name if path == request.paths[self.path_option]
                 else '%s:%s' % (self.name, path), lambda change=change: change)
                for path, change in found]

    def current(self, label, request, host):
        """What a new pod gets now, the highest of the handlers: each base spec's rlimits
        (``PATH process.rlimits``), and containerd's own limits for an item a spec does not
        list and for every item of a handler without a base spec (:meth:`spec_current`)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containerd_cri_conf as cc)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containerd_spec_plan as csp)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            oci_base_spec as oci)
        found = {}
        try:
            _text, data, version = csp.read_config(request.paths[self.path_option])
            handlers = cc.handlers(data, version)
            specs = [(path, oci.parse(csp.read_text(path), path))
                     for path in sorted(set(p for p in handlers.values() if p))
                     if csp.read_text(path) is not None]
        except (errors.Error, IOError, OSError, ValueError, TypeError, KeyError):
            return {}   # the plan names the file it cannot read
        if not handlers or not all(handlers.values()):
            specs.append((None, None))      # a handler without a base spec (runc's default)
        for path, spec in specs:
            for name, (limit, source) in self.spec_current(request, path, spec).items():
                have = found.get(name)
                if have is None or model.exceeds(limit.hard, have[0].hard) or (
                        model.compare(limit.hard, have[0].hard) == 0 and
                        model.exceeds(limit.soft, have[0].soft)):
                    found[name] = (limit, source)
        return found

    def spec_current(self, request, path, spec):
        """{item: (Limit, source)} what a new pod of a handler whose base spec is ``path``
        (``spec``: its parsed content; None: no spec yet) gets now: the spec's rlimit entries,
        and, for an item the spec does not list, containerd's own (the OCI runtime sets only
        the rlimits the spec lists; the rest are inherited through the shim)."""
        found = {}
        for entry in ((spec or {}).get('process') or {}).get('rlimits') or []:
            try:
                item = ITEM_BY_RLIMIT.get(str(entry.get('type', ''))[len('RLIMIT_'):])
                limit = oci_limit(entry)
            except (AttributeError, KeyError, TypeError, ValueError):
                continue    # the plan's patch names the entry it cannot read
            if item is not None and item.name in request.limits:
                found[item.name] = (limit, '%s process.rlimits' % path)
        for name, value in own_limits(request).items():
            if name in request.limits:
                found.setdefault(name, value)
        return found

    def spec_limits(self, request, ceiling, path, spec, created=False):
        """{item: Limit} to patch into the base spec ``path`` (``spec``: its content; with
        ``created``, the default spec it is created from, and its pods have containerd's own
        limits now): the profile kept at what its pods get now (:meth:`spec_current`), less an
        item the spec does not list whose inherited value already meets the profile (nothing
        to change); a spec created from ``ctr oci spec`` also gets containerd's own value for
        an item outside the profile that the default spec lists (its nofile 1024:1024 would
        lower every pod)."""
        current = self.spec_current(request, path, None if created else spec)
        label = '%s:%s' % (self.name, path)
        limits = request.limits_for(label, current, ceiling)
        listed = set()
        for entry in ((spec or {}).get('process') or {}).get('rlimits') or []:
            kind = entry.get('type', '') if isinstance(entry, dict) else ''
            item = ITEM_BY_RLIMIT.get(str(kind)[len('RLIMIT_'):])
            if item is not None:
                listed.add(item.name)
        for name in list(limits):
            have = current.get(name)
            if name not in listed and have is not None and have[0] == limits[name]:
                del limits[name]
        if created:
            for name, (limit, _source) in own_limits(request).items():
                if name in listed and name not in limits and name not in request.limits:
                    limits[name] = limit
        return limits

    def act(self, change, actions, state, host):
        state['containerd_cri'] = True
        if change.changed and UNIT not in actions['units']:
            # containerd reads base_runtime_spec and config.toml when it starts
            actions['units'].append(UNIT)

    def owed(self, actions, state, host, policy):
        if not state.get('containerd_cri') or UNIT not in actions['units'] or policy != 'when_idle':
            return []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            runtime_live)
        why = runtime_live.containerd_pods_busy(host)
        return [(UNIT, ('%s: running pods keep their old spec, new pods get the profile after '
                        'containerd restarts' % why) if why else None)]

    def restart_context(self, unit):
        return self.probe if unit == UNIT else None

    # --- probed ------------------------------------------------------------------------

    def probe_command(self, user, uid, params):
        if not params.get('cri_client'):
            return ['false', 'no CRI client given (cri_client)']
        return client_command(params)

    def run_probe(self, prober, user, uid, command):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        if command[0] == 'false':
            raise probe_results.ProbeError(
                'k8s_pod: no CRI client on this node (cri_client: a python with grpcio and the '
                'collection\'s cri_client.py)', kind=errors.NOT_RUNNING)
        self.require_active(prober, UNIT, 'pod')
        return prober.proc(command, self.probe)

    def report(self, auditor):
        """The handler's base spec and its rlimits, or containerd's own limits and the unit
        settings that gave them: what a new pod gets, without starting one."""
        if self.name not in auditor.present:
            return None, []
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import (
            containerd_spec_plan as csp)
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import info
        report = dict(config=CONFIG, handler=None, base_spec=None, spec_limits={},
                      spec_index={}, containerd={}, containerd_configured={}, error=None,
                      probed=self.audit_probe(True, auditor))
        try:
            handler, path, by_type = csp.pod_spec(CONFIG, auditor.params.get('pod_handler') or '')
        except errors.Error as exc:
            report['error'] = exc.msg
            return report, ['k8s_pod: %s' % exc.msg]
        report.update(handler=handler, base_spec=path)
        for item in model.ITEMS.values():
            found = by_type.get('RLIMIT_' + (item.rlimit or '')) if item.is_rlimit else None
            if found is not None:
                soft, hard, index = found
                limit = model.Limit(*[model.UNLIMITED if v == model.RLIM_INFINITY else v
                                      for v in (soft, hard)])
                report['spec_limits'][item.name] = limit.as_dict()
                report['spec_index'][item.name] = index
        unit, _pending, _error = info.unit_report(auditor.run, UNIT, False)
        report['containerd_configured'] = unit['configured']
        process = self.main_process_limits(auditor, UNIT)
        if process is not None:
            report['containerd'] = process
        return report, []

    def audit_probe(self, report, auditor):
        return report is not None and bool(auditor.params.get(self.image_option)) \
            and bool(auditor.params.get('cri_client'))

    def configured(self, report):
        """What a new pod gets, item by item, with where it comes from: the base spec's
        rlimit entry, or containerd's process limit and the unit setting behind it; each
        side's place (``soft_place``, ``hard_place``: the base spec, the unit's line), and for
        a base spec entry what changes it (``fix``: this context patches every handler's base
        spec)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import findings
        if not report or report.get('error'):
            return {}
        found = {}
        how = PROBED if report['probed'] else PREDICTED
        spec_at = findings.place(report['base_spec'])
        # the profile patched into the handler's base spec decides every rlimit of a pod
        patch = ('run limits_profile with contexts: [%s] (it patches the profile into %s '
                 'process.rlimits; containerd restarts when no pod runs, and a new pod gets '
                 'it)' % (self.name, report['base_spec']))
        for item, limit in report['spec_limits'].items():
            found[item] = dict(soft=limit['soft'], hard=limit['hard'], source=(
                '%s: %s process.rlimits[%d] RLIMIT_%s (handler %s)' % (
                    how, report['base_spec'], report['spec_index'][item],
                    model.ITEMS[item].rlimit, report['handler'])),
                soft_place=spec_at, hard_place=spec_at, fix=patch)
        why = ('not in the base spec %s' % report['base_spec'] if report['base_spec']
               else 'handler %s has no base spec' % report['handler'])
        for item, live in report['containerd'].items():
            if item in found:
                continue
            # an rlimit the spec does not set is inherited from the shim: containerd's own
            setting = report['containerd_configured'].get(item) or {}
            origin = ('%s:%s' % (setting['source'], setting['line'])
                      if setting.get('source') else 'the unit or manager default')
            limit = inherited(item, live)
            soft, hard = limit.soft, limit.hard
            note = ', soft raised to hard by Go' if item == 'nofile' else ''
            found[item] = dict(soft=soft, hard=hard, source=(
                '%s: containerd\'s own limits (%s%s), set by %s' % (how, why, note, origin)))
            at = findings.place(setting.get('source'), setting.get('line'))
            if at:
                found[item].update(soft_place=at, hard_place=at)
            if report['base_spec']:
                found[item]['fix'] = patch
            elif self.dropin_decides(setting.get('source')):
                found[item]['fix'] = (
                    'run limits_profile with contexts: [%s] (it writes %s; containerd '
                    'restarts when no pod runs, and a new pod gets containerd\'s new limits)'
                    % (self.name, sdpaths.dropin_path(unit=UNIT)))
        return found

    @staticmethod
    def dropin_decides(source):
        """Whether the collection's drop-in for containerd.service would decide a limit now
        set at ``source`` (a unit file or drop-in path; None: the manager's default): every
        place but a drop-in that sorts after it (systemd applies drop-ins in name order)."""
        if not source or not source.endswith('.conf') or '.d/' not in source:
            return True
        return os.path.basename(source) <= sdpaths.DROPIN_NAME

    def predict(self, report):
        """{item: Limit} a new pod gets, from :meth:`configured` (the audit's rows when no
        pod is started)."""
        return dict((item, model.Limit(entry['soft'], entry['hard']))
                    for item, entry in self.configured(report).items())


CONTEXT = ContainerdCri()
