# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""limits_profile's ``pids``: the profile's pids value goes to the knobs the collection can own
and no rlimit planner sees it (model/pids.py). Planned with the other files, written by the
same engine (systemd/restarts.py), all or nothing:

* ``systemd_system``: ``DefaultTasksMax=`` in the system manager's drop-in (services);
* ``systemd_user``: ``DefaultTasksMax=`` in user.conf's drop-in (user services, which a user
  manager gives its own default on cgroup v2), owing a restart of each running user manager
  that says it runs less (``systemctl --user show``);
* ``unit:NAME``: ``TasksMax=`` in the unit's drop-in;
* ``pam`` or ``systemd_user`` (login sessions, user services): a ``user-.slice`` drop-in,
  planned as ``unit:user-.slice`` (a daemon-reload applies it to running slices);
* ``podman``: ``pids_limit`` in its containers.conf drop-in;
* Docker (no daemon-wide default), CRI-O and the kubelet: not written (docs/limit-model.md).

Which context carries which is its record's (Context.kinds, pids_dropin, pids_user_slice,
pids_post); this module names none.

Private to the collection."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils import contexts as registry
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import cgroups
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import pids as pids_model
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import pids_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import systemd_live as sdlive

SLICE_LABEL = registry.UNIT_PREFIX + pids_plan.USER_SLICE


def split(profile):
    """(the profile without pids, its TasksMax or None); changes.Failure naming profile.pids
    (the floor applies: the value is written)."""
    rest, value = pids_model.split_profile(profile)
    if value is None:
        return rest, None
    try:
        return rest, pids_model.parse_profile_value(value, 'profile.pids')
    except pids_model.LimitError as exc:
        raise changes.Failure(str(exc))


def carries(context):
    """Does ``context`` write a drop-in that pids needs when the profile has nothing else
    (the system manager's, the units', Podman's: Context.pids_dropin)?"""
    return 'pids' in context.kinds and context.pids_dropin


def _slice_wanted(request):
    """Is the user-.slice drop-in wanted: a context asked whose new processes live under
    user-.slice (login sessions, user services: Context.pids_user_slice)?"""
    return any(c.pids_user_slice and 'pids' in c.kinds and c.name in request.contexts
               for c in registry.REGISTRY)


class Pids(object):
    """What the pids plans need, read once a call."""

    def __init__(self, value, host, run=None):
        self.value = value
        #: run(args, **kwargs): the call's Request.run (read-only answers kept for the call)
        self.run = run or (host.run_command if host is not None else None)
        self.kernel_max = cgroups.kernel_tasks_max()
        self._live = False
        #: the profile has no rlimit: the carriers' drop-ins keep every line they have now
        self.only = False

    def _run(self, args):
        from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
        return self.run(args, environ_update=commands.live_env())

    def live_default(self):
        """The running system manager's DefaultTasksMax (a TasksMax), or None: from the
        manager's one ``systemctl show`` (systemd_live.manager_show), which the systemd
        contexts' live checks ask too."""
        if self._live is False:
            self._live = None
            if sdlive.systemd_running():
                props, _error = sdlive.manager_show(self._run)
                self._live = _tasks_max(props)
        return self._live

    def user_defaults(self):
        """{user@UID.service: TasksMax or None} of the running user managers, in each one's
        own word (its ``systemctl --user show``, run as its user: systemd_live.manager_show,
        the same command the systemd_user context's live check runs; None where it cannot be
        read)."""
        import pwd
        if not sdlive.systemd_running():
            return {}
        found = {}
        for unit, uid in sdlive.running_user_managers(self._run):
            try:
                user = pwd.getpwuid(uid).pw_name
            except KeyError:
                found[unit] = None
                continue
            props, _error = sdlive.manager_show(self._run, pids_plan.sdpaths.USER, user, uid)
            found[unit] = _tasks_max(props)
        return found

    def plans(self, request):
        """[(label, plan)] of the files that only pids needs (the user-.slice drop-in)."""
        if not _slice_wanted(request) or not sdlive.systemd_running():
            return []
        dropin = request.dropin or pids_plan.sdpaths.DROPIN_NAME
        return [(SLICE_LABEL,
                 lambda: pids_plan.plan_user_slice(self.value, self.kernel_max, dropin))]

    def post(self, label, change):
        """``change`` (a context's planned drop-in) with the pids setting it can carry. With a
        profile of pids alone (``only``), the drop-in's text now is the base: no Limit*= line is
        pruned, and nothing is written where pids needs nothing. ``rlimits_changed`` in the
        result says whether the drop-in changed before pids was added: a pids setting alone
        owes no restart of the user managers (profile_plan.actions)."""
        if self.only and label != SLICE_LABEL:
            change.new = change.current
            change.changed = False
            for flag in ('reexec_required', 'daemon_reload_required'):
                if flag in change.result:
                    change.result[flag] = False
            if 'restart_required' in change.result:
                change.result['restart_required'] = []
        change.result['rlimits_changed'] = change.changed
        if label == SLICE_LABEL:
            return change
        try:
            record = registry.owner(label)
        except KeyError:
            return change
        if 'pids' not in record.kinds:
            return change
        return record.pids_post(self, label, change)

    def manager_default(self):
        """The system manager's DefaultTasksMax now: its file's, else the running manager's,
        else systemd's built-in 15%."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.systemd import tasks_max
        found = tasks_max.default_tasks_max()
        if found.where:
            return found.value
        return self.live_default() or pids_model.TasksMax(
            permyriad=pids_model.SYSTEMD_DEFAULT_PERMYRIAD)

    def add_podman(self, change, root=''):
        """The Podman drop-in ``change`` with ``pids_limit`` where Podman gives less
        (runtimes/podman_plan.add_pids_limit)."""
        from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import podman_plan
        return podman_plan.add_pids_limit(change, self.value, self.kernel_max, root)


def _tasks_max(props):
    """The DefaultTasksMax of a manager's ``systemctl show`` properties, or None."""
    text = ((props or {}).get(sdlive.TASKS_MAX_PROPERTY) or '').strip()
    try:
        return pids_model.from_systemd(text) if text else None
    except pids_model.LimitError:
        return None


def undo_plans(request):
    """limits_profile ``state=absent``: the ``user-.slice`` drop-in removed (with ``pam`` or
    ``systemd_user`` asked), owing a daemon-reload. The other pids settings live in the
    drop-ins their contexts remove."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.undo import undo_files
    if not _slice_wanted(request):
        return []
    path = pids_plan.slice_dropin(request.dropin or pids_plan.sdpaths.DROPIN_NAME)

    def plan():
        found = undo_files.remove_owned(undo_files.ROOT + path, 'drop-in')
        if found is not None:
            found.result.update(reexec_required=False, daemon_reload_required=True,
                                restart_required=[])
        return found
    return [(SLICE_LABEL, plan)]
