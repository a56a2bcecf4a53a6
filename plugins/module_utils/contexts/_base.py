# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a context is: the record every context of the registry (``contexts/__init__.py``)
fills in. Private to the collection.

A context is a place where a training process can start and get its limits. It has one name
where it is configured (``pam``, ``systemd_system``, ... : limits_profile's ``contexts``) and,
when a new process of its own can be started to read them, one name where it is probed
(``login``, ``service``, ...: effective_limits' ``contexts``). docs/contexts.md has the table.

Planners and reports are imported inside the methods that use them, so that a read-only
report (effective_limits, limits_audit) that walks the registry loads no planner.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class NotCovered(Exception):
    """A context the pids probe does not cover (ssh, k8s_pod)."""


class Request(object):
    """limits_profile's request, parsed once (``limits``: {item: Limit} from
    limits_model.parse_profile) with the options the contexts need, as plain values."""

    def __init__(self, profile, limits, contexts, domains=('*', 'root'), units=(),
                 force=False, on_conflict='fail', dropin=None, docker_shm_size=None,
                 paths=None, slurm_conf_edit=True,
                 containerd_create_spec=False, podman_shm_size=None, named=None):
        self.profile = profile          # what the user wrote: {item: value or {soft, hard}}
        self.limits = limits            # the same, parsed: {item: Limit}
        # {item: (soft named, hard named)}: a side not named is a minimum (model.keep)
        self.named = dict(named) if named is not None else {}
        self.kept = {}                  # {label: [model.Kept]}, filled by limits_for
        self._read = {}                 # what the node was read for once in this call (read)
        self.contexts = list(contexts)  # the configured contexts to write
        self.domains = list(domains)
        self.units = list(units)
        self.force = force
        self.on_conflict = on_conflict
        self.dropin = dropin
        self.docker_shm_size = docker_shm_size  # bytes, parsed once (or None)
        self.podman_shm_size = podman_shm_size  # containers.conf shm_size, bytes (or None)
        self.paths = dict(paths or {})  # {path option: path} (pam_path, docker_daemon_json, ...)
        self.slurm_conf_edit = slurm_conf_edit
        self.containerd_create_spec = containerd_create_spec  # containerd_cri: create base specs
        self.pids = None                # the profile's pids (model/pids.TasksMax), or None

    def read(self, key, function):
        """``function()``, read from the node once for this call: what several contexts read
        (Linux-PAM's version from dpkg's status file, the system manager's defaults) is not
        read again."""
        if key not in self._read:
            self._read[key] = function()
        return self._read[key]

    def run(self, host, args, **kwargs):
        """``host.run_command(args, **kwargs)`` run once for this call: for the read-only
        commands several plans ask the same (the running system manager's ``systemctl show``,
        read by the systemd context's live check and by every context that keeps its
        defaults)."""
        env = tuple(sorted((kwargs.get('environ_update') or {}).items()))
        return self.read(('run', tuple(args), env), lambda: host.run_command(args, **kwargs))

    def limits_for(self, label, current, ceiling=None):
        """{item: Limit} to write for ``label``: the profile, with every higher value the
        context has now (``current``: {item: (Limit, source)}) kept on the sides the profile
        does not name (model.keep), capped at the node's hard ceiling. What was kept or
        lowered is recorded in ``kept[label]``."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import (
            limits_model as model)
        limits, records = {}, []
        for name, asked in self.limits.items():
            have, source = current.get(name) or (None, None)
            top = ceiling.hard_ceiling(name)[0] if ceiling is not None else None
            limit, found = model.keep(name, asked, self.named.get(name, (False, False)), have,
                                      source, top)
            limits[name] = limit
            records.extend(found)
        self.kept[label] = records
        return limits


class Context(object):
    """One context. Subclasses set the attributes and override the methods they need."""

    #: where it is configured: limits_profile's ``contexts`` value (None: not a choice)
    name = None
    #: where it is probed: effective_limits' ``contexts`` value (None: no probe of its own)
    probe = None
    #: the files it is configured in (documentation and the audit)
    files = ()
    #: limits_profile's option naming the file it writes (an options.Option), and that file's
    #: default
    path = None
    target = None
    #: the option of effective_limits and limits_audit naming its probe's image (an Option)
    image = None
    #: its other options of limits_profile (and the limits role): its policies. Declared on the
    #: record only, like ``path`` and ``image``: the registry collects them into the modules'
    #: argument_spec, scripts/gen_option_docs.py into their documentation.
    options = ()
    #: its probe's other options (effective_limits, limits_audit)
    probe_options = ()

    @property
    def path_option(self):
        """limits_profile's option naming the file it writes (``pam_path``), or None."""
        return self.path.name if self.path else None

    @property
    def image_option(self):
        """The effective_limits option its probe needs (``docker_image``), or None."""
        return self.image.name if self.image else None

    def configured_options(self):
        """Every option of limits_profile it owns, its path first."""
        return ((self.path,) if self.path else ()) + tuple(self.options)

    def probed_options(self):
        """Every option of effective_limits and limits_audit its probe owns, its image first."""
        return ((self.image,) if self.image else ()) + tuple(self.probe_options)
    #: units that get the profile as ``Limit*=`` when this context is written (containerd)
    units = ()
    #: a change to it reaches user managers only through their restart (a PAM session or
    #: the managers' defaults)
    session = False
    #: order of its restarts in ``actions.deferred`` (lower first)
    restart_rank = 9
    #: where a probed value comes from when no file sets it
    fallback = ''
    #: every record, in planning order: set by the registry (contexts/__init__.py), so that a
    #: record that needs the others does not import the registry
    registry = ()
    #: the item kinds it carries (contexts/kinds.py): ``pids`` where the audit reads the
    #: pids.max of its new processes and limits_profile may write one (run/pids_audit.py,
    #: run/pids_set.py iterate the records that carry it)
    kinds = ('rlimit',)
    #: pids: its own drop-in carries the profile's pids, so it is planned even for a profile of
    #: pids alone (run/pids_set.carries)
    pids_dropin = False
    #: pids: its new processes live under user-.slice, whose drop-in carries the profile's pids
    #: (run/pids_set.Pids.plans)
    pids_user_slice = False
    #: pids: its new processes are containers, whose own cgroup decides unless a user slice
    #: holds them (run/pids_audit.source_of)
    pids_container = False
    #: the failure classifier (model/classify.py, "why did my job die"): a job here has its
    #: own /dev/shm and IPC namespace (a container: logind's RemoveIPC does not reach it, its
    #: runtime sizes /dev/shm); the task limit a thread that cannot start here usually meets
    #: first (``pids.max`` or ``nproc``; None: only the values decide); a line of a job's
    #: output that shows it ran here (a regex, for a caller that did not say where)
    own_ipc = False
    task_limit = None
    shown_by = None

    def job_context(self):
        """Where a job ran here, as the failure classifier reads it (classify.Where)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import classify
        return classify.Where(self.probe, self.own_ipc, self.task_limit)

    # --- configured: detection and planning (limits_profile) ---------------------------

    def detect(self, root=''):
        """Is the context present on the node? From files only (no service manager query)."""
        return False

    def target_path(self, root=''):
        """The file the limits role writes on this node (``target`` unless the node says
        otherwise)."""
        return self.target

    def owns(self, label):
        """Is ``label`` (a planned change's context: ``pam``, ``unit:NAME``) this context's?"""
        return label == self.name

    def plans(self, request, host, ceiling):
        """[(label, plan)]: ``plan()`` returns the changes.Change of one file, writing nothing,
        or raises changes.Failure."""
        return []

    def undo_plans(self, request, host):
        """[(label, plan)] for limits_profile's ``state=absent``: ``plan()`` returns the
        changes.Change that takes back what the collection wrote here (its result's ``undo``
        says how, undo_files), or None when nothing of it is there; it writes nothing."""
        return []

    def current(self, label, request, host):
        """{item: (Limit, source)}: what a new process of ``label`` gets now, before this run,
        for the items of ``request`` ({} or a missing item: unknown, and the profile is written
        as asked). Read from the same files and managers the plan reads. ``source``: one text
        when one setting sets both sides, else {'soft': text, 'hard': text}, each side the line
        that sets it (model.keep.side_source)."""
        return {}

    def limits(self, label, request, host, ceiling):
        """The limits ``label``'s plan writes: the request, never lower than now unless named
        (Request.limits_for)."""
        return request.limits_for(label, self.current(label, request, host), ceiling)

    def act(self, change, actions, state, host):
        """Fold a planned change into limits_profile's ``actions`` (``state``: scratch space
        shared by the contexts during one call)."""

    def settle(self, actions, state, host):
        """Adjust ``actions`` once every change is folded in."""

    def owed(self, actions, state, host, policy):
        """[(unit, why)]: the restarts of workload units this context owes, which the
        restart policy may defer; ``why`` says why a restart now would disturb a workload ('':
        it would not; None: let the unit's cgroup tell)."""
        return []

    def verified_with(self, configured, units, host):
        """For a context probed but not configured (``ssh``): its entry in limits_profile's
        ``probes`` ({context, probe, image, gap, cause}) where the files this call writes
        (``configured`` contexts, ``units``) decide what its new processes get, or None (the
        verification leaves it out). ``host``: the AnsibleModule (read-only commands)."""
        return None

    def restart_context(self, unit):
        """The probed context a restart of ``unit`` applies to, or None when not this one's."""
        return None

    # --- probed: effective_limits and limits_audit ---------------------------------------

    def probe_command(self, user, uid, params):
        """The command whose output is the /proc/PID/limits text of a new process here."""
        raise NotImplementedError

    def run_probe(self, prober, user, uid, command):
        """{item: Limit} a new process gets; raises probe_results.ProbeError."""
        return prober.proc(command, self.probe)

    @staticmethod
    def require_active(prober, unit, what):
        """Raise a NOT_RUNNING ProbeError when ``unit`` is not active: no ``what`` can start."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        try:
            prober.run(['systemctl', 'is-active', '--quiet', unit])
        except probe_results.ProbeError:
            raise probe_results.ProbeError(
                '%s is not running, so no %s can start here' % (unit, what),
                kind=errors.NOT_RUNNING)

    @staticmethod
    def main_process_limits(auditor, unit):
        """{item: {soft, hard}} of ``unit``'s running main process (what the processes it
        starts inherit), or None when it has none."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live
        process = systemd_live.unit_live(auditor.run, unit).get('process')
        return systemd_live.limits_dict(process) if process else None

    def report(self, auditor):
        """(the read-only report of its files, or None when absent; warnings)."""
        return None, []

    def problems(self, report):
        """[{'source', 'msg', ...}]: what :meth:`report` found that stops the context or will
        (the audit's and the drift watch's ``problems``)."""
        return []

    def not_applied(self, report, host):
        """{(probed context, item): action} for the values its files set that a running
        process has not taken yet, said only with evidence (the audit's ``owed``)."""
        return {}

    def audit_probe(self, report, auditor):
        """Does the audit probe this context?"""
        return report is not None

    def configured(self, report):
        """{item: {soft, hard, source, ...}} its files set, from :meth:`report`."""
        return {}

    def check_probe_params(self, params):
        """Refuse its probe options that cannot be read (model.LimitError naming the option),
        before anything runs."""

    # --- the pids kind (contexts/kinds.py; run/pids_audit.py, run/pids_set.py) -------------

    def pids_chain(self, prober, probe, user, uid, params):
        """The cgroups.Chain of a new process of ``probe`` (this record's probed name or a
        label it owns); ProbeError, or NotCovered where the pids probe cannot reach it. By
        default its probe command with the chain command in place of ``cat
        /proc/self/limits`` (host/cgroups.chain_command)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
        from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        command = cgroups.chain_command(self.probe_command(user, uid, params))
        if command is None:
            raise NotCovered(probe)
        try:
            return cgroups.parse_chain(prober.run(command), probe)
        except pids.LimitError as exc:
            raise probe_results.ProbeError(str(exc))

    @staticmethod
    def pid_chain(pid, what):
        """The cgroups.Chain of running process ``pid`` (``what``'s main process); ProbeError
        when there is none."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
        from ansible_collections.gpufleet.tuning.plugins.module_utils.reports import probe_results
        if not pid.isdigit() or pid == '0':
            raise probe_results.ProbeError('%s has no main process' % what,
                                           kind=errors.NOT_RUNNING)
        chain = cgroups.chain_of_pid(pid)
        if chain is None:
            raise probe_results.ProbeError('%s: process %s is gone' % (what, pid))
        return chain

    @staticmethod
    def file_owner(where):
        """'ours' when ``where`` (file:line) is a file limits_profile writes (its systemd or
        containers.conf drop-in), else 'theirs'."""
        import os
        from ansible_collections.gpufleet.tuning.plugins.module_utils.host import runtime_paths
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_paths
        name = os.path.basename(where.split(':', 1)[0])
        ours = (systemd_paths.DROPIN_NAME, os.path.basename(runtime_paths.CONTAINERS_DROPIN))
        return 'ours' if name in ours else 'theirs'

    def pids_source(self, root=''):
        """(source, owner) of a container's pids.max where no file of a systemd unit sets it
        (its runtime's default or file), or None (the cgroup's creator decides)."""
        return None

    def pids_advice(self, owner, decides=''):
        """What closes a pids gap here when that is particular to the context, or None."""
        return None

    def pids_post(self, pids, label, change):
        """``change`` (its planned drop-in for ``label``) with the pids setting it carries
        (``pids``: run/pids_set.Pids)."""
        return change

    def predict(self, report):
        """{item: Limit} a new process here would get, worked out from :meth:`report` without
        starting one: the audit's rows when it does not probe (``{}``: no prediction)."""
        return {}
