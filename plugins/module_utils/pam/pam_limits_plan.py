# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a limits.d file edit: requested entries -> new file text, conflicts, overrides,
guard violations. Plain Python; the pam_limits module is a thin shell around it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.host import host_limits
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import pam_limits_conf as conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec

HEADER = ('# Managed by gpufleet.tuning.pam_limits: resource limits for login sessions.\n'
          '# Lines for other domains and items, and comments, are kept as they are.\n')


class PlanError(errors.Error):
    """Input that cannot be planned; the message names the entry and field."""

    kind = errors.BAD_INPUT


class Entry(object):
    """A requested entry: domain, item (Item), limit (Limit; None for state=absent)."""

    def __init__(self, index, domain, item, limit, field=None):
        self.index = index
        self.domain = domain
        self.item = item
        self.limit = limit
        self.field = field or 'limits[%d]' % index     # what the user wrote it as

    @property
    def key(self):
        return (self.domain, self.item.name)

    @property
    def where(self):
        return '%s (%s %s)' % (self.field, self.domain, self.item.name)

    def lines(self):
        """The limits.conf lines that express this entry: always one soft and one hard line.

        Two lines rather than one '-' line: pam_limits returns early for '-' when a more
        specific class already set the soft side, and then skips the hard side too.
        """
        return [conf.format_line(self.domain, 'soft', self.item.name,
                                 model.to_limits_conf(self.item, self.limit.soft, self.where)),
                conf.format_line(self.domain, 'hard', self.item.name,
                                 model.to_limits_conf(self.item, self.limit.hard, self.where))]

    def as_dict(self):
        result = {'domain': self.domain, 'item': self.item.name}
        if self.limit is not None:
            result['soft'] = self.limit.soft
            result['hard'] = self.limit.hard
        return result


def check_domain(where, domain):
    """The parsed domain; PlanError naming ``where`` when pam_limits would not read it."""
    try:
        return conf.parse_domain(domain)
    except ValueError as exc:
        raise PlanError('%s: %s' % (where, exc))


def check_domain_item(where, domain, parsed, item):
    if parsed.kind in ('all', 'allgroup') and item.name != 'maxlogins':
        raise PlanError('%s: %r applies to maxlogins only (pam_limits ignores it for %s)'
                        % (where, domain, item.name))


def check_limit(where, item, limit):
    """PlanError naming ``where`` for a limit limits.conf cannot express or PAM cannot apply."""
    try:
        for side in ('soft', 'hard'):
            model.to_limits_conf(item, getattr(limit, side), '%s.%s' % (where, side))
    except model.LimitError as exc:
        raise PlanError(str(exc))
    if item.name == 'nofile' and model.UNLIMITED in (limit.soft, limit.hard):
        raise PlanError('%s: nofile cannot be unlimited (%s): Linux-PAM >= 1.5.2 silently '
                        'substitutes fs.nr_open and older PAM fails the login (EPERM); '
                        'give a number' % (where, model.UNLIMITED_MEANS))


def profile_entries(limits, domains, field='profile', by_domain=None):
    """Typed entries of a parsed profile ({item: Limit}, from limits_model.parse_profile) for
    each domain, with the same checks as :func:`parse_entries`; errors name ``profile.ITEM``
    (and ``domains[N]``). ``by_domain``: {domain: {item: Limit}}, the entry of a domain it
    names instead of the profile (contexts/pam.py ``domain_limits``: the profile kept at what
    the domain's login has now)."""
    by_domain = by_domain or {}
    entries = []
    seen = {}
    for position, domain in enumerate(domains):
        where = 'domains[%d]' % position
        if domain in seen:
            raise PlanError('%s: duplicates domains[%d]' % (where, seen[domain]))
        seen[domain] = position
        parsed = check_domain(where, domain)
        for name, limit in limits.items():
            item = model.ITEMS[name]
            field_name = '%s.%s' % (field, name)
            check_domain_item(where, domain, parsed, item)
            check_limit(field_name, item, limit)
            if domain in by_domain and name in by_domain[domain]:
                limit = by_domain[domain][name]
                check_limit(field_name, item, limit)
            entries.append(Entry(len(entries), domain, item, limit, field_name))
    return entries


def parse_entries(raw_entries, state):
    """Module input -> [Entry]; PlanError naming limits[N].field for anything wrong."""
    entries = []
    seen = {}
    for index, raw in enumerate(raw_entries or []):
        where = 'limits[%d]' % index
        if not isinstance(raw, dict):
            raise PlanError('%s: must be a mapping with domain, item and value or soft/hard'
                            % where)
        unknown = sorted(set(raw) - set(['domain', 'item', 'value', 'soft', 'hard']))
        if unknown:
            raise PlanError('%s: unknown key(s): %s' % (where, ', '.join(unknown)))
        domain = raw.get('domain')
        if not isinstance(domain, str) or not domain.strip():
            raise PlanError('%s.domain: required' % where)
        domain = domain.strip()
        parsed = check_domain(where + '.domain', domain)
        try:
            item = model.get_item(raw.get('item'), where + '.item')
        except model.LimitError as exc:
            raise PlanError(str(exc))
        check_domain_item(where + '.domain', domain, parsed, item)
        limit = None
        if state == 'present':
            spec = dict((k, raw[k]) for k in ('value', 'soft', 'hard') if raw.get(k) is not None)
            if not spec:
                raise PlanError('%s: needs value, or soft and hard' % where)
            if 'value' not in spec and ('soft' not in spec or 'hard' not in spec):
                raise PlanError('%s (%s %s): give both soft and hard (or value for both)'
                                % (where, domain, item.name))
            try:
                limit = model.parse_limit(item, spec, where)
            except model.LimitError as exc:
                raise PlanError(str(exc))
            check_limit(where, item, limit)
        entry = Entry(index, domain, item, limit)
        if entry.key in seen:
            raise PlanError('%s: duplicates limits[%d] (same domain and item)'
                            % (where, seen[entry.key]))
        seen[entry.key] = index
        entries.append(entry)
    return entries


def check_ceilings(entries, ceiling, force=False):
    """Guards against values that cannot apply. Returns (errors, forced_warnings)."""
    refused = []
    warnings = []
    for entry in entries:
        if entry.limit is None or not entry.item.is_rlimit:
            continue
        if entry.item.name == 'nofile' and ceiling.nr_open \
                and model.exceeds(entry.limit.hard, ceiling.nr_open):
            refused.append('%s: hard nofile %s is above fs.nr_open (%d): the kernel refuses it and '
                           'login sessions would fail or lose all their limits'
                           % (entry.where, entry.limit.hard, ceiling.nr_open))
            continue
        top, reason = ceiling.hard_ceiling(entry.item)
        if top is not None and model.exceeds(entry.limit.hard, top):
            message = ('%s: hard %s %s is above what login services can set here (%s, %s): '
                       'upstream PAM would refuse logins and Debian/Ubuntu PAM silently drops '
                       'every limit of the session' % (
                           entry.where, entry.item.name,
                           model.format_human(entry.item, entry.limit.hard),
                           model.format_human(entry.item, top), reason))
            host_limits.forced(message, force, refused, warnings)
    return refused, warnings


def _lines_value(lines, nr_open=None):
    """The (soft, hard) a group of same-key lines sets, in file order, or None if invalid."""
    soft = hard = None
    for line in lines:
        if line.kind != 'entry' or line.type not in conf.TYPES or line.problem:
            return None
        value = line.kernel_value(nr_open)
        if value is None:
            return None
        if line.type in ('soft', '-'):
            soft = value
        if line.type in ('hard', '-'):
            hard = value
    return soft, hard


def plan_file(current_text, entries, state, exclusive=False, pam_version=None, prune=()):
    """New file text for the request. ``current_text`` is None for a missing file;
    ``pam_version`` decides how its lines are read (pam_limits_conf.parse). ``prune``: domains
    whose lines for items not in ``entries`` are removed (limits_profile's own file holds
    exactly the profile for the domains it writes; other domains' lines stay)."""
    limits_file = conf.parse(current_text or '', None, pam_version)
    wanted = dict((e.key, e) for e in entries)
    by_key = {}
    for line in limits_file.lines:
        if line.kind in ('entry', 'invalid', 'nolimit') and line.domain is not None:
            by_key.setdefault((line.domain, line.item), []).append(line)
    out = []
    written = set()
    for line in limits_file.lines:
        if line.kind not in ('entry', 'invalid', 'nolimit'):
            out.append(line.raw)
            continue
        key = (line.domain, line.item) if line.domain is not None else None
        entry = wanted.get(key) if key else None
        if entry is None:
            pruned = state == 'present' and key is not None and key[0] in prune
            if not (exclusive and state == 'present') and not pruned:
                out.append(line.raw)
            continue
        if state == 'absent':
            continue
        if key in written:
            continue
        written.add(key)
        group = by_key[key]
        current = _lines_value(group)
        if current == (entry.limit.soft, entry.limit.hard):
            out.extend(l.raw for l in group)       # already right: keep the bytes
        else:
            out.extend(entry.lines())
    if state == 'present':
        missing = [e for e in entries if e.key not in written]
        if missing:
            if out and not out[-1].endswith('\n'):
                out[-1] += '\n'                      # never glue onto an unterminated line
            if current_text is None or not (current_text or '').strip():
                if not out:
                    out.append(HEADER)
            for entry in missing:
                out.extend(entry.lines())
    return ''.join(out)


def entry_value(entry, sides):
    """The requested value of ``sides`` of an entry, as limits.conf shows it."""
    values = []
    for side in sides:
        values.append(model.to_limits_conf(entry.item, getattr(entry.limit, side), side))
    return ':'.join(sorted(set(values), key=values.index))


def find_conflicts(entries, files, target, replaced=None):
    """Lines in other files, later in pam order, with the same domain and item, that set a side
    to another value: the requested entry would never apply. Also returns overrides: narrower
    lines (user, uid range, @group) that win over a requested wildcard (or group) entry."""
    conflicts = []
    overrides = []
    order = [f.path for f in files]
    target_index = order.index(target) if target in order else len(order)
    for entry in entries:
        if entry.limit is None:
            continue
        wanted_class = conf.parse_domain(entry.domain).klass
        for position, limits_file in enumerate(files):
            if limits_file.path == target:
                continue
            for line in limits_file.lines:
                if line.kind != 'entry' or line.item != entry.item.name:
                    continue
                if line.domain == entry.domain:
                    value = line.kernel_value()
                    if position < target_index:
                        sides = [s for s in line.sides() if value != getattr(entry.limit, s)]
                        if sides and replaced is not None:
                            record = line.as_dict()
                            record.update({
                                'entry': entry.as_dict(), 'sides': sides, 'kind': 'replaced',
                                'reason': '%s (%s %s %s %s) is read earlier: %s now gets %s %s %s'
                                          % (line.where, line.domain, line.type, line.item,
                                             line.value, entry.domain, '/'.join(sides),
                                             entry.item.name, entry_value(entry, sides))})
                            replaced.append(record)
                        continue
                    sides = [s for s in line.sides() if value != getattr(entry.limit, s)]
                    if sides:
                        record = line.as_dict()
                        # the item and the domain named on both sides: which line, which
                        # request it defeats
                        record.update({'entry': entry.as_dict(), 'sides': sides,
                                       'reason': '%s sets %s %s %s %s later in pam_limits '
                                                 'order, over the requested %s %s %s %s'
                                                 % (line.where, line.domain, '/'.join(sides),
                                                    line.item, line.value, entry.domain,
                                                    '/'.join(sides), entry.item.name,
                                                    entry_value(entry, sides))})
                        conflicts.append(record)
                    continue
                klass = line.parsed_domain.klass if line.parsed_domain else None
                # a line for a group the node does not have overrides nobody (it matches no
                # user): no warning about the users it matches
                if klass is not None and klass < wanted_class and wanted_class in (
                        conf.CLASS_DEFAULT, conf.CLASS_GROUP) and gives_less(line, files, entry) \
                        and not conf.matches_nobody(line.parsed_domain):
                    record = line.as_dict()
                    record.update({'entry': entry.as_dict(), 'kind': 'narrower',
                                   'reason': '%s (%s) overrides %s for the users it matches: '
                                             '%s gets %s %s %s instead of %s'
                                             % (line.where, conf.CLASS_NAMES[klass],
                                                entry.domain, line.domain, line.type,
                                                line.item, clamped_value(line, files, entry),
                                                entry_value(entry, line.sides()))})
                    overrides.append(record)
    return conflicts, overrides


def gives_less(line, files, entry):
    """Whether a narrower ``line`` gives its users less than ``entry`` on a side it sets (a
    soft value above the hard one counts as the hard one, as pam_limits clamps it): a narrower
    line that gives as much or more keeps nobody below the profile (issue 32: root's own
    ``nofile 16384`` line was reported as overriding a ``*`` 16384, "16384 instead of 16384").
    A value that cannot be read counts as less."""
    value = line.kernel_value()
    for side in line.sides():
        wanted = getattr(entry.limit, side)
        if wanted is None:
            continue
        got = clamped_hard(line, files, entry) if side == 'soft' and line.type == 'soft' \
            else None
        if got is None or value is None or model.exceeds(got, value):
            got = value
        if got is None or model.compare(got, wanted) < 0:
            return True
    return False


def clamped_hard(line, files, entry):
    """The hard value a narrower soft-only line's users have: the domain's own hard line, else
    the entry's."""
    hard = entry.limit.hard
    for limits_file in files:
        for other in limits_file.lines:
            if other.kind == 'entry' and other.domain == line.domain and \
                    other.item == line.item and other.type in ('hard', '-'):
                hard = other.kernel_value()
    return hard


def clamped_value(line, files, entry):
    """What a narrower soft-only line gives its users: pam_limits clamps a soft value above
    the hard one to it, and the hard one is the domain's own hard line or else the entry's
    (issue 31: ``@ml soft memlock unlimited`` was said to give unlimited under a hard 8192)."""
    value = line.kernel_value()
    if line.type != 'soft' or value is None:
        return line.value
    hard = clamped_hard(line, files, entry)
    if hard is None or not model.exceeds(value, hard):
        return line.value
    return '%s (its %s, clamped to the hard %s)' % (
        model.to_limits_conf(entry.item, hard), line.value, model.format_human(entry.item, hard))


def wildcard_root_warnings(entries, asked=()):
    """Advice to add root's own entry where a ``*`` entry has none; not when root is one of
    the ``asked`` domains (root gets its own entry then)."""
    domains = set(e.key for e in entries)
    warnings = []
    for entry in entries:
        if entry.domain == '*' and entry.limit is not None and 'root' not in asked \
                and ('root', entry.item.name) not in domains:
            warnings.append('%s: "*" entries do not apply to root (limits.conf(5)); add a root '
                            'entry for %s if root runs training jobs'
                            % (entry.where, entry.item.name))
    return warnings


def read_layout(limits_conf, limits_dir, target, pam_version=None):
    """Parsed files in pam order (the target included even when it does not exist yet)."""
    files = []
    for path in conf.pam_order(limits_conf, limits_dir, extra=target):
        parsed = conf.read_file(path, pam_version)
        if parsed is None:
            parsed = conf.parse('', path, pam_version)
        files.append(parsed)
    return files


def target_is_read(target, limits_conf, limits_dir):
    """Does pam_limits read ``target`` at all?"""
    if os.path.abspath(target) == os.path.abspath(limits_conf):
        return True
    return (os.path.dirname(os.path.abspath(target)) == os.path.abspath(limits_dir)
            and target.endswith('.conf'))


def file_mode(mode, result=None):
    """The mode option (an octal string such as '0644', or an int) -> int; Failure naming it."""
    if isinstance(mode, str):
        try:
            mode = int(mode, 8)
        except ValueError:
            raise changes.Failure('mode: %r is not an octal file mode such as 0644' % mode, result)
    if not isinstance(mode, int) or isinstance(mode, bool) or not 0 <= mode <= 0o7777:
        raise changes.Failure('mode: %r is not a file mode between 0000 and 7777' % (mode,),
                              result)
    return mode


def plan_change(params, ceiling=None, pam_version=None):
    """The pam_limits module's plan: its parameters mapped in this one place (``limits``,
    ``path``, ``state``, ``exclusive``, ``on_conflict``, ``force``, ``mode``, ``limits_conf``,
    ``limits_dir``), then :func:`plan_entries`. ``pam_version``: the node's Linux-PAM
    (versions.pam_version), None when unknown. Returns a changes.Change; raises
    changes.Failure."""
    result = new_result(params['path'])
    mode = file_mode(params['mode'], result)
    try:
        entries = parse_entries(params['limits'], params['state'])
    except PlanError as exc:
        raise changes.Failure(str(exc), result, kind=exc.kind)
    return plan_entries(entries, params['path'], params['state'], params['exclusive'],
                        params['on_conflict'], params['force'], mode, params['limits_conf'],
                        params['limits_dir'], ceiling, result, pam_version)


def new_result(path):
    return dict(changed=False, path=path, entries=[], conflicts=[], overrides=[], invalid=[])


def plan_entries(entries, path, state='present', exclusive=False, on_conflict='fail',
                 force=False, mode=0o644, limits_conf=conf.LIMITS_CONF,
                 limits_dir=conf.LIMITS_DIR, ceiling=None, result=None, pam_version=None,
                 prune=()):
    """Guards, layout, conflicts and the new file for typed ``entries`` ([Entry]); nothing
    written. ``pam_version``: Linux-PAM's, which decides how existing lines are read (None:
    unknown, pam_limits_conf.parse). Returns a changes.Change; raises changes.Failure."""
    result = result if result is not None else new_result(path)
    result['entries'] = [e.as_dict() for e in entries]

    refused, forced = check_ceilings(entries, ceiling or host_limits.Ceiling(), force)
    if refused:
        raise changes.Failure('; '.join(refused), result, errors=refused)
    warnings = forced + wildcard_root_warnings(entries, prune)
    if not target_is_read(path, limits_conf, limits_dir):
        warnings.append('%s is not read by pam_limits (only %s and %s/*.conf are)'
                        % (path, limits_conf, limits_dir))

    try:
        files = read_layout(limits_conf, limits_dir, path, pam_version)
        current = safe_file.read_bytes(path)
    except (safe_file.FileError, IOError, OSError) as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))
    for limits_file in files:
        result['invalid'].extend(line.as_dict() for line in limits_file.invalid())
    warnings.extend('%s:%s: %s' % (r['path'], r['line'], r['problem']) for r in result['invalid'])
    warnings.extend('%s %s' % (f.path, f.problem) for f in files if f.problem)

    if state == 'present':
        replaced = []
        conflicts, overrides = find_conflicts(entries, files, path, replaced)
        result['replaced'] = replaced
        result['conflicts'] = conflicts
        result['overrides'] = overrides
        if conflicts:
            message = 'requested entries are overridden later in pam_limits order: ' + '; '.join(
                c['reason'] for c in conflicts)
            if on_conflict == 'fail':
                raise changes.Failure(message + ' (nothing written; fix those files or set '
                                                'on_conflict=warn; limits role: '
                                                'limits_on_conflict: warn)', result)
            warnings.append(message)

    current_text = text_codec.decode_bytes(current)
    try:
        new_text = plan_file(current_text, entries, state, exclusive, pam_version, prune)
    except PlanError as exc:
        raise changes.Failure(str(exc), result, kind=errors.kind_of(exc))

    changed = not (current_text is None and (state == 'absent' or not new_text)
                   or current_text is not None and new_text == current_text)
    change = changes.Change(path, result, current_text, new_text if changed else current_text,
                            changed=changed, mode=mode)
    change.warnings = warnings
    return change
