# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""enroot containers (NVIDIA's unprivileged runtime; pyxis runs it for Slurm jobs): no daemon
and no file of its own for limits. ``enroot start`` runs the container's process in new
namespaces of the calling process, which keeps its limits, so a container started from a login
session gets what that session gets (PAM). Probed as ``enroot``, configured nowhere: the pam
context decides it."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex

from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam
from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts._base import Context
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import commands
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.options import container_image
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import probes

IMAGE = container_image(
    'enroot', 'enroot', what=(
        'The container of the C(enroot) probe, the name of an enroot container of the probe '
        'user (C(enroot create)) or the path of a squashfs image; a login session of the user '
        'runs C(enroot start IMAGE cat /proc/self/limits)'),
    role_what=('An enroot container of O(limits_verify_user) (C(enroot create)) or a squashfs '
               'image for the enroot probe (C(enroot start IMAGE cat /proc/self/limits) from a '
               'login session must work)'))


class Enroot(Context):
    probe = 'enroot'
    # what decides it: the login session's pam_limits files (enroot has no limits setting)
    files = pam.CONTEXT.files
    image = IMAGE
    fallback = 'the limits of the session that starts it (enroot keeps the caller\'s)'

    def probe_command(self, user, uid, params):
        """A login session of ``user`` (PAM, as the login probe) that starts the container."""
        return ['runuser', '-l', user, '-c', 'enroot start %s %s' % (
            shlex.quote(params[self.image_option]), probes.CAT)]

    def verified_with(self, configured, units, host):
        """Where the node has enroot: the pam context decides what its containers get (they
        keep the limits of the login session that starts them)."""
        if 'pam' not in configured or commands.find_binary('enroot') is None:
            return None
        return dict(context='pam', probe=self.probe, image=self.image_option, gap=False,
                    cause=None)

    def report(self, auditor):
        """({'binary': path}, []) where the node has enroot, else (None, [])."""
        binary = commands.find_binary('enroot')
        return (dict(binary=binary) if binary else None), []

    def audit_probe(self, report, auditor):
        return report is not None and bool(auditor.params.get(self.image_option))


CONTEXT = Enroot()
