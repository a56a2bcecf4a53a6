# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a new SSH session gets, worked out from sshd's PAM stack and sshd's own limits (the
ssh context's evidence, contexts/ssh.py): whether the stack runs pam_limits on limits.d, where
each side comes from, and what makes limits.d reach the session (one list for the tune's cause
and the audit's advice)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam.pam_stack import (
    pam_file, pam_stack)

SSHD_CONFIG = '/etc/ssh/sshd_config'
PAM_SERVICE = 'sshd'
LIMITS_CONF = '/etc/security/limits.conf'
LIMITS_DIR = '/etc/security/limits.d'


def limits_at(lines):
    """The pam_limits session lines of a stack, the first one (PamLine) or None."""
    found = [line for line in lines if line.is_limits()]
    return found[0] if found else None


def why_no_pam(report):
    """Why pam_limits does not run in an SSH session ('' when it does)."""
    if report.get('use_pam') == 'no':
        return ('%s: UsePAM no (sshd -T), so sshd runs no PAM session and limits.conf does not '
                'apply to SSH sessions' % report['sshd_config'])
    if report.get('pam_limits') is None:
        off = report.get('pam_limits_commented') or []
        return ('%s has no session line with pam_limits%s, so limits.conf does not apply to '
                'SSH sessions' % (report['pam_file'], ' (%s is commented out)' % ', '.join(off)
                                  if off else ''))
    return ''


def why_not_read(report):
    """Why limits.d (the pam context's file) does not reach an SSH session ('' when it does):
    sshd runs no pam_limits (why_no_pam), or its pam_limits line reads another (``conf=``)."""
    why = why_no_pam(report)
    if why or not report.get('pam_limits_conf'):
        return why
    return ('%s runs pam_limits with conf=%s: SSH sessions read that file only, not %s or '
            "%s/*.conf (the profile's file)"
            % (report['pam_limits'], report['pam_limits_conf'], LIMITS_CONF, LIMITS_DIR))


def stack_report(use_pam):
    """The part of the report that says whether sshd's session stack runs pam_limits: the
    stack read (pam_stack, includes followed), ``use_pam`` from ``sshd -T`` (None: unknown)."""
    lines, commented = pam_stack(PAM_SERVICE)
    found = limits_at(lines)
    return dict(sshd_config=SSHD_CONFIG, pam_file=pam_file(PAM_SERVICE), use_pam=use_pam,
                pam_limits=found.where if found is not None else None,
                pam_limits_conf=found.conf() if found is not None else None,
                pam_limits_commented=commented)


def sshd_source(report, item):
    """Where sshd's own value of ``item`` comes from: its unit's ``Limit*=`` line, else the
    manager's ``DefaultLimit*=`` line, else systemd's built-in default."""
    unit = report.get('unit') or 'sshd'
    setting = (report.get('unit_configured') or {}).get(item) or {}
    if setting.get('source'):
        return '%s:%s (%s %s)' % (setting['source'], setting.get('line'), unit,
                                  setting.get('value'))
    default = (report.get('manager_configured') or {}).get(item) or {}
    if default.get('source'):
        return '%s:%s (%s; %s sets no %s)' % (default['source'], default.get('line'),
                                              default.get('value'), unit,
                                              model.systemd_key(item))
    return "%s sets no %s: systemd's built-in default" % (unit, model.systemd_key(item))


def fixes_for(report, unit=None):
    """What makes limits.d reach an SSH session where it does not (why_not_read): the sshd or
    PAM line to change, and, with sshd's ``unit``, giving sshd the profile itself. One list for
    the tune's cause (Ssh.verified_with) and the audit's advice (predicted)."""
    fixes = []
    if report.get('use_pam') == 'no':
        fixes.append('set UsePAM yes in %s' % SSHD_CONFIG)
    elif report.get('pam_limits') is not None:
        fixes.append('drop conf= from %s' % report['pam_limits'])
    else:
        fixes.append('add (or uncomment) `session required pam_limits.so` in %s%s' % (
            report['pam_file'], ' (%s)' % ', '.join(report['pam_limits_commented'])
            if report.get('pam_limits_commented') else ''))
    if unit is not None:
        fixes.append('give sshd the profile: add %s to units (limits role: limits_units), '
                     'which writes its Limit*= and restarts it under the restart policy' % unit)
    return fixes


def evidence_fix(report):
    """(the audit's advice for a side no limits line sets, its place) where sshd's
    pam_limits reads limits.d: the pam context's file, which sshd's session then applies."""
    from ansible_collections.gpufleet.tuning.plugins.module_utils.contexts import pam
    return ("run limits_profile with contexts: [pam] (it writes %s, which sshd's pam_limits "
            '(%s) applies)' % (pam.CONTEXT.target_path() or pam.TARGET, report['pam_limits']),
            dict(path=pam.CONTEXT.target_path() or pam.TARGET, line=None))


def both(soft, hard):
    """``file:line`` of a soft and a hard side as one text (``file:1 (soft), :2 (hard)``)."""
    if soft == hard:
        return soft
    soft_file, _sep, soft_line = soft.rpartition(':')
    hard_file, _sep, hard_line = hard.rpartition(':')
    if soft_file == hard_file and soft_line.isdigit() and hard_line.isdigit():
        return '%s:%s (soft), :%s (hard)' % (soft_file, soft_line, hard_line)
    return 'soft: %s; hard: %s' % (soft, hard)


def predicted(report):
    """{item: {soft, hard, source, soft_source, hard_source}}: what a new SSH session gets,
    side by side: a pam_limits line (file:line) where sshd runs pam_limits and a line sets the
    side, else sshd's own value (inherited) with where that comes from (each side's own
    evidence in ``soft_source`` and ``hard_source``)."""
    if not report:
        return {}
    sshd = report.get('sshd') or {}
    pam = {} if why_no_pam(report) else (report.get('effective') or {})
    why = why_no_pam(report)
    found = {}
    for item in sorted(set(sshd) | set(pam)):
        own = sshd.get(item) or {}
        lines = pam.get(item) or {}
        sides, sources = {}, []
        for side in ('soft', 'hard'):
            if lines.get(side) is not None:
                sides[side] = lines[side]
                sources.append((side, lines.get(side + '_source')))
            else:
                sides[side] = own.get(side)
                sources.append((side, None))
        pam_sources = [s for _side, s in sources if s]
        if not pam_sources:
            source = 'inherited from sshd: %s' % sshd_source(report, item)
            if why:
                source = '%s; %s' % (why, source)
        elif len(pam_sources) == 2:
            source = 'pam_limits (%s): %s' % (report['pam_limits'], both(*pam_sources))
        else:
            source = 'pam_limits (%s): %s' % (report['pam_limits'], '; '.join(
                '%s: %s' % (side, s if s else 'inherited from sshd: ' + sshd_source(report, item))
                for side, s in sources))
        found[item] = dict(soft=sides['soft'], hard=sides['hard'], source=source, **dict(
            ('%s_source' % side, s or sshd_source(report, item)) for side, s in sources))
        blocked = why_not_read(report)
        if blocked:
            # limits.d does not reach SSH sessions: the line that stops it is the advice
            found[item].update(fix='%s: %s' % (blocked, '; or '.join(fixes_for(report))))
        else:
            for side, given in sources:
                if not given:
                    text, at = evidence_fix(report)
                    found[item].update({'%s_fix' % side: text, '%s_fix_place' % side: at})
    return found
