# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""limits.conf / limits.d parser, editor and resolver, following Linux-PAM's pam_limits.c.

Plain Python (no Ansible import), runs on Python 3.8 targets.

* ``parse(text, path)`` keeps every line's exact text, so ``render()`` gives back the same
  bytes (decode files with ``text_codec.decode_bytes`` for that guarantee).
* Each line is classified the way ``parse_config_file`` reads it: comments and blank lines, a
  4-field entry, a ``<domain> -`` "no limits" line, or an invalid line (with the reason).
* ``resolve(files, user, ...)`` computes what pam_limits applies for a user at login with its
  precedence: user and uid-range lines over @group and gid-range lines over ``*``; within a
  class the later line wins; for type ``-`` a soft side already set by a more specific class
  returns early and leaves the hard side untouched; soft is clamped to hard.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import grp
import os
import re

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import text_codec
from ansible_collections.gpufleet.tuning.plugins.module_utils.pam import limits_entries as entries

# Domain classes, ordered as pam_limits' LIMITS_DEF_* (lower wins).
CLASS_USER = 0
CLASS_GROUP = 1
CLASS_ALLGROUP = 2
CLASS_ALL = 3
CLASS_DEFAULT = 4
CLASS_KERNEL = 5
CLASS_NONE = 6
CLASS_NAMES = {CLASS_USER: 'user', CLASS_GROUP: 'group', CLASS_ALLGROUP: '%group',
               CLASS_ALL: '%', CLASS_DEFAULT: 'wildcard', CLASS_KERNEL: 'kernel',
               CLASS_NONE: 'none'}

LIMITS_CONF = '/etc/security/limits.conf'
LIMITS_DIR = '/etc/security/limits.d'
TYPES = ('soft', 'hard', '-')

# What can never be part of a domain read from a file: pam_limits splits fields on blanks and
# cuts the line at '#'. Anything else is a name pam_limits compares with strcmp() (users) or
# looks up (groups): ``alice@example.com``, ``DOMAIN\\bob``, ``1x`` all are valid domains.
_NOT_IN_NAME_RE = re.compile(r'[\s#]')
# Linux-PAM versions: None means unknown (read as before 1.6, problems name the difference).
PAM_SPLIT_REST = (1, 6)
PAM_RTTIME_SINCE = (1, 7, 1)
_C_SPACE = ' \t\n\v\f\r'


def split_lines(text):
    """Split keeping each line's terminator; only '\\n' ends a line (as getline does)."""
    return re.findall(r'[^\n]*\n|[^\n]+$', text)


class Domain(object):
    """A parsed domain: kind is 'user', 'uid_range', 'group', 'gid_range', 'allgroup', 'all',
    'wildcard'. For ranges, ``rng`` is (kind, min, max) with kind 'one', 'min' or 'mm'."""

    def __init__(self, text, kind, name=None, rng=None):
        self.text = text
        self.kind = kind
        self.name = name
        self.rng = rng

    @property
    def klass(self):
        return {'user': CLASS_USER, 'uid_range': CLASS_USER, 'group': CLASS_GROUP,
                'gid_range': CLASS_GROUP, 'allgroup': CLASS_ALLGROUP, 'all': CLASS_ALL,
                'wildcard': CLASS_DEFAULT}[self.kind]


def _c_strtoul(text):
    """C ``strtoul(text, &end, 10)`` with pam_limits' checks: (value, rest) or None when it fails
    (no digits, or above ULONG_MAX: errno). ``-N`` wraps modulo 2**64; the uid_t/gid_t it is
    stored in keeps the low 32 bits."""
    match = re.match(r'^[ \t\n\v\f\r]*([+-]?)([0-9]+)', text)
    if not match:
        return None
    value = int(match.group(2))
    if value >= 2 ** 64:
        return None
    if match.group(1) == '-':
        value = (2 ** 64 - value) % 2 ** 64
    return value % 2 ** 32, text[match.end():]


def _parse_range(text):
    """pam_limits' parse_uid_range: None (no ':'), ('one', n, n), ('min', n, None),
    ('mm', a, b); raises ValueError for a malformed range (pam_limits skips the line)."""
    if ':' not in text:
        return None
    body = text[1:] if text[:1] in ('@', '%') else text
    left, right = body.split(':', 1)
    low = None
    if left != '':
        parsed = _c_strtoul(left)
        if parsed is None or parsed[1] != '':
            raise ValueError('range %r has a bad minimum' % text)
        low = parsed[0]
    if right == '':
        if low is None:
            raise ValueError('range %r needs a number after ":"' % text)
        return ('min', low, None)
    parsed = _c_strtoul(right)
    if parsed is None or parsed[1] != '':
        raise ValueError('range %r has a bad maximum' % text)
    if low is None:
        return ('one', parsed[0], parsed[0])
    return ('mm', low, parsed[0])


def parse_domain(text):
    """Domain text -> Domain; raises ValueError with the reason when malformed.

    As pam_limits reads it: a uid/gid range when the text holds ':', ``*``, ``%``, ``@group``,
    ``%group``, else a user name compared literally with the login name (any text, such as
    ``alice@example.com``). Whitespace and ``#`` are refused: they cannot be written into a line.
    """
    if not text:
        raise ValueError('empty domain')
    if _NOT_IN_NAME_RE.search(text):
        raise ValueError('%r: a domain cannot hold blanks or "#" (limits.conf splits fields on '
                         'blanks and starts a comment at "#")' % text)
    rng = _parse_range(text)
    if text == '*':
        return Domain(text, 'wildcard')
    if text == '%':
        return Domain(text, 'all')
    if text[0] == '@':
        if rng:
            return Domain(text, 'gid_range', rng=rng)
        if len(text) == 1:
            raise ValueError('%r names no group' % text)
        return Domain(text, 'group', name=text[1:])
    if text[0] == '%':
        if rng:
            if rng[0] != 'one':
                raise ValueError('%r: ranges are not supported for %%group' % text)
            return Domain(text, 'allgroup', rng=rng)
        return Domain(text, 'allgroup', name=text[1:])
    if rng:
        return Domain(text, 'uid_range', rng=rng)
    return Domain(text, 'user', name=text)


def rttime_problem(pam_version=None):
    """Why an rttime line is reported: pam_limits applies it from Linux-PAM 1.7.1 on."""
    if pam_version is None:
        applied = 'is applied by pam_limits 1.7.1 and later only (older versions ignore the line)'
    elif tuple(pam_version) >= PAM_RTTIME_SINCE:
        applied = 'is applied by this pam_limits (Linux-PAM 1.7.1 and later)'
    else:
        applied = ('is ignored by this pam_limits (Linux-PAM %s; 1.7.1 and later apply it)'
                   % '.'.join(str(part) for part in pam_version))
    return 'rttime %s; gpufleet.tuning does not manage rttime' % applied


def split_fields(body, pam_version=None):
    """The fields pam_limits finds in a line (comment and newline already cut off):
    (fields, value). Before Linux-PAM 1.6, sscanf("%s%s%s%s"): up to four words, any more are
    ignored. From 1.6 on, split(): three words separated by blanks or tabs, then the rest of the
    line, trimmed of blanks and tabs, is the value (``1024 extra`` and ``unlimited\r`` included).
    ``fields`` holds the words (at most four, the value last); ``value`` is the value text."""
    if pam_version is not None and tuple(pam_version) >= PAM_SPLIT_REST:
        rest = body
        fields = []
        for _index in range(3):
            rest = rest.lstrip(' \t')
            match = re.match(r'^[^ \t]+', rest)
            if not match:
                break
            fields.append(match.group(0))
            rest = rest[match.end() + 1:]
        value = rest.strip(' \t') if len(fields) == 3 else ''
        if value:
            fields.append(value)
        return fields, value or None
    words = [w for w in re.split('[%s]+' % _C_SPACE, body) if w]
    return words[:4], (words[3] if len(words) >= 4 else None)


class Line(object):
    """One line of a limits file. ``kind``: 'blank', 'comment', 'entry', 'nolimit', 'invalid'."""

    def __init__(self, raw, lineno, path=None, pam_version=None):
        self.raw = raw
        self.lineno = lineno
        self.path = path
        self.pam_version = pam_version
        self.kind = 'blank'
        self.domain = self.type = self.item = self.value = None
        self.value_text = None          # the value as this pam_limits version reads it
        self.parsed_domain = None
        self.problem = None
        self._classify()

    @property
    def where(self):
        return '%s:%d' % (self.path or '<text>', self.lineno)

    def _classify(self):
        # parse_config_file(): skip leading isspace(), cut at '#', then at '\n'.
        line = self.raw.lstrip(_C_SPACE)
        body = line.split('#', 1)[0].split('\n', 1)[0]
        if not body:
            self.kind = 'comment' if line.startswith('#') else 'blank'
            return
        tokens, value = split_fields(body, self.pam_version)
        try:
            rng_error = None
            _parse_range(tokens[0])
        except ValueError as exc:
            rng_error = str(exc)
        if len(tokens) == 2 and tokens[1].startswith('-'):
            self.kind = 'nolimit'
            self.domain = tokens[0]
            try:
                self.parsed_domain = parse_domain(tokens[0])
            except ValueError as exc:
                self._invalid(str(exc))
            return
        if rng_error:
            self.domain = tokens[0]
            self._invalid('invalid uid range: %s' % rng_error)
            return
        if len(tokens) < 4:
            self._invalid('expected "<domain> <type> <item> <value>", found %d field%s'
                          % (len(tokens), '' if len(tokens) == 1 else 's'))
            return
        self.domain = tokens[0]
        self.type = tokens[1].lower()
        self.item = tokens[2].lower()
        self.kind = 'entry'
        words = [w for w in re.split('[%s]+' % _C_SPACE, body) if w]
        self.value = words[3].lower()
        self.value_text = value.lower()
        if len(words) > 4 and (self.pam_version is None
                               or tuple(self.pam_version) < PAM_SPLIT_REST):
            self.problem = 'text after the value (%r) is ignored' % ' '.join(words[4:])
        try:
            self.parsed_domain = parse_domain(self.domain)
        except ValueError as exc:
            self._invalid(str(exc))
            return
        if self.item == 'rttime':
            self._invalid(rttime_problem(self.pam_version))
            return
        if self.item not in model.ITEMS:
            self._invalid('unknown item %r' % self.item)
            return
        item = model.ITEMS[self.item]
        if self.type not in TYPES and item.kind not in ('logins', 'bool'):
            self._invalid('unknown type %r (soft, hard or -)' % self.type)
            return
        if self.parsed_domain.kind in ('allgroup', 'all') and item.name != 'maxlogins':
            self._invalid('%-domains apply to maxlogins only; pam_limits ignores this line')
            return
        kernel, problem = model.from_limits_conf(item, self.value_text)
        if self.pam_version is None:
            newer_text = split_fields(body, PAM_SPLIT_REST)[1]
            newer_text = newer_text.lower() if newer_text else newer_text
            if newer_text != self.value_text:
                newer = model.from_limits_conf(item, newer_text)
                if newer[0] != kernel:
                    problem = ('Linux-PAM before 1.6 reads the value %r, 1.6 and later read %r '
                               'and %s' % (self.value_text, newer_text,
                                           'skip the line' if newer[0] is None else
                                           'apply %s' % model.format_human(item, newer[0])))
        if kernel is None:
            self._invalid(problem)
            return
        if problem and not self.problem:
            self.problem = problem
        elif problem and problem not in self.problem:
            self.problem = '%s; %s' % (self.problem, problem)

    def _invalid(self, reason):
        self.kind = 'invalid'
        self.problem = reason

    @property
    def key(self):
        """(domain, item) for entries: what an owner of this line manages."""
        return (self.domain, self.item)

    def sides(self):
        if self.type == '-':
            return ('soft', 'hard')
        return (self.type,) if self.type in ('soft', 'hard') else ('soft', 'hard')

    def kernel_value(self, nr_open=None):
        return model.from_limits_conf(self.item, self.value_text, nr_open)[0]

    def as_dict(self):
        result = {'path': self.path, 'line': self.lineno, 'text': self.raw.rstrip('\n')}
        if self.kind in ('entry', 'nolimit'):
            result.update({'domain': self.domain, 'type': self.type, 'item': self.item,
                           'value': self.value})
        if self.problem:
            result['problem'] = self.problem
        return result


class LimitsFile(object):
    def __init__(self, path, text, pam_version=None):
        self.path = path
        #: why pam_limits reads no line from this entry (a directory), or None
        self.problem = None
        self.lines = [Line(raw, n + 1, path, pam_version)
                      for n, raw in enumerate(split_lines(text))]

    def render(self):
        return ''.join(line.raw for line in self.lines)

    def entries(self):
        return [line for line in self.lines if line.kind == 'entry']

    def invalid(self):
        return [line for line in self.lines if line.kind == 'invalid'
                or (line.kind == 'entry' and line.problem)]


def parse(text, path=None, pam_version=None):
    """``pam_version``: Linux-PAM's (major, minor) when known; it decides how the value field is
    read (see split_fields). Unknown (None): read as before 1.6, and a line the versions read
    differently says so in its problem."""
    return LimitsFile(path, text, pam_version)


def format_line(domain, ltype, item, value):
    return '%-15s %-5s %-11s %s\n' % (domain, ltype, item, value)


def pam_order(limits_conf=LIMITS_CONF, limits_dir=LIMITS_DIR, extra=None):
    """The files pam_limits reads, in its order: limits.conf, then limits.d/*.conf sorted by
    name (C locale): glob(3)'s ``*.conf``, so any entry (a link, a directory) but no name
    starting with ``.``. ``extra`` (a path that will exist after a write) is included."""
    paths = [limits_conf]
    names = set()
    if os.path.isdir(limits_dir):
        names.update(name for name in os.listdir(limits_dir)
                     if name.endswith('.conf') and not name.startswith('.'))
    if extra and os.path.dirname(extra) == limits_dir.rstrip('/') and extra.endswith('.conf'):
        names.add(os.path.basename(extra))
    paths.extend(os.path.join(limits_dir, name) for name in sorted(names, key=text_codec.encode_text))
    return paths


# What pam_limits does with an entry it cannot read as a file (pam/limits_entries.py).
SessionBreaker, FAILS, EMPTY, entry_problem = (
    entries.SessionBreaker, entries.FAILS, entries.EMPTY, entries.entry_problem)


def session_failures(limits_conf=LIMITS_CONF, limits_dir=LIMITS_DIR, pam_version=None):
    """The files pam_limits reads (pam_order) that make every session that runs it fail:
    [SessionBreaker], in pam_limits' order ([] on a node whose sessions can open)."""
    found = []
    for path in pam_order(limits_conf, limits_dir):
        problem = entry_problem(path, pam_version, limits_conf)
        if problem is not None and problem[0] == FAILS:
            found.append(SessionBreaker(path, problem[1], problem[2]))
    return found


def read_file(path, pam_version=None):
    """Parsed LimitsFile, or None when the file does not exist (or pam_limits skips it: a
    dangling link from Linux-PAM 1.5.3 on). ``pam_version``: see parse. Raises SessionBreaker
    for a file pam_limits cannot open (entry_problem); a directory is read as pam_limits reads
    it, no line, with ``problem`` saying so."""
    problem = entry_problem(path, pam_version)
    if problem is not None and problem[0] == FAILS:
        raise SessionBreaker(path, problem[1], problem[2])
    if problem is not None:
        parsed = parse('', path, pam_version)
        parsed.problem = '%s (%s)' % (problem[1], problem[2])  # shown after the path
        return parsed
    try:
        with open(path, 'rb') as handle:
            return parse(text_codec.decode_bytes(handle.read()), path, pam_version)
    except (IOError, OSError) as exc:
        if getattr(exc, 'errno', None) == errno.ENOENT:
            return None
        raise


# --- resolution -----------------------------------------------------------------------------

class User(object):
    """What pam_limits knows about a user: name, uid, primary gid, and the groups (names and
    gids) the user is in, primary included (pam_modutil_user_in_group_*)."""

    def __init__(self, name, uid, gid, groups=None, gids=None):
        self.name = name
        self.uid = uid
        self.gid = gid
        self.groups = set(groups or ())
        self.gids = set(gids or ()) | set([gid])


def _in_range(rng, value):
    kind, low, high = rng
    if kind == 'one':
        return value == high
    if kind == 'min':
        return value >= low
    return low <= value <= high


def match_class(line, user, root_wildcards=True):
    """The class with which a line applies to user, or None when it does not apply.

    root_wildcards=False is Debian's and Ubuntu's behaviour (seen on libpam-modules 1.5.2-6):
    ``*`` and ``@name`` lines do not apply to root, while uid ranges and ``@:gid``/``@min:max``
    gid forms do. Upstream's matching code has no such check.
    """
    dom = line.parsed_domain
    if line.domain == user.name:
        return CLASS_USER
    if dom.kind == 'group':
        if user.uid == 0 and not root_wildcards:
            return None
        return CLASS_GROUP if dom.name in user.groups else None
    if dom.kind == 'gid_range':
        if dom.rng[0] == 'one':
            return CLASS_GROUP if dom.rng[2] in user.gids else None
        return CLASS_GROUP if _in_range(dom.rng, user.gid) else None   # primary group only
    if dom.kind == 'all':
        return CLASS_ALL
    if dom.kind == 'allgroup':
        if dom.rng:
            return CLASS_ALLGROUP if dom.rng[2] in user.gids else None
        return CLASS_ALLGROUP if dom.name in user.groups else None
    if dom.kind == 'uid_range':
        return CLASS_USER if _in_range(dom.rng, user.uid) else None
    if dom.kind == 'wildcard':
        if user.uid == 0 and not root_wildcards:
            return None
        return CLASS_DEFAULT
    return None


def matches_nobody(domain):
    """Whether a parsed ``domain`` (``@name``, ``%name``) names a group the node does not
    have: pam_limits looks the group up by name (pam_modutil_user_in_group_nam_nam, getgrnam
    through NSS) and a group it cannot find has no member, so its lines apply to no user."""
    if domain is None or domain.kind not in ('group', 'allgroup') or not domain.name:
        return False
    try:
        return grp.getgrnam(domain.name) is None
    except KeyError:
        return True


class _Side(object):
    __slots__ = ('value', 'klass', 'source')

    def __init__(self, value, klass, source):
        self.value = value
        self.klass = klass
        self.source = source


def resolve(files, user, kernel=None, nr_open=None, root_wildcards=True):
    """What pam_limits applies to ``user`` at login.

    files: LimitsFile objects in pam order. kernel: {item: Limit} the starting values
    (pam_limits reads /proc/1/limits). Returns a dict:
    ``effective`` {item: {soft, hard, soft_source, hard_source}} for rlimit items some line
    sets, ``other`` {item: {value, source}} for maxlogins/maxsyslogins/priority/nonewprivs,
    ``no_limits`` (path:line of an applicable "<domain> -" line, or None).
    """
    kernel = kernel or {}
    state = {}
    other = {}
    for name in model.RLIMIT_ITEMS:
        start = kernel.get(name)
        if start is not None:
            state[name] = {'soft': _Side(start.soft, CLASS_KERNEL, 'kernel'),
                           'hard': _Side(start.hard, CLASS_KERNEL, 'kernel')}
        else:
            state[name] = {'soft': _Side(None, CLASS_NONE, None),
                           'hard': _Side(None, CLASS_NONE, None)}
    for limits_file in files:
        for line in limits_file.lines:
            if line.kind == 'nolimit':
                if line.parsed_domain and line.parsed_domain.kind != 'wildcard' \
                        and match_class(line, user, True) in (CLASS_USER, CLASS_GROUP):
                    return {'effective': {}, 'other': {}, 'no_limits': line.where}
                continue
            if line.kind != 'entry':
                continue
            klass = match_class(line, user, root_wildcards)
            if klass is None:
                continue
            _process(line, klass, state, other, nr_open)
    effective = {}
    for name, sides in state.items():
        soft, hard = sides['soft'], sides['hard']
        if soft.klass >= CLASS_KERNEL and hard.klass >= CLASS_KERNEL:
            continue
        soft_value = soft.value
        soft_source = soft.source
        if soft_value is not None and hard.value is not None \
                and model.exceeds(soft_value, hard.value):
            soft_value = hard.value
            soft_source = '%s (clamped to hard)' % soft.source
        effective[name] = {'soft': soft_value, 'hard': hard.value,
                           'soft_source': soft_source, 'hard_source': hard.source}
    return {'effective': effective, 'other': other, 'no_limits': None}


def _process(line, klass, state, other, nr_open):
    item = model.ITEMS[line.item]
    if klass in (CLASS_ALL, CLASS_ALLGROUP) and item.name != 'maxlogins':
        return
    value = line.kernel_value(nr_open)
    if value is None:
        return
    if item.is_rlimit:
        if line.type not in TYPES:
            return
        sides = state[item.name]
        if line.type in ('soft', '-'):
            if sides['soft'].klass < klass:
                return                      # pam_limits returns early: hard untouched too
            sides['soft'] = _Side(value, klass, line.where)
        if line.type in ('hard', '-'):
            if sides['hard'].klass < klass:
                return
            sides['hard'] = _Side(value, klass, line.where)
        return
    if item.kind == 'logins':
        current = other.get('maxlogins_class', CLASS_NONE)
        if current < klass:
            return
        other['maxlogins_class'] = klass
        other[item.name] = {'value': value, 'source': line.where}
        return
    other[item.name] = {'value': value, 'source': line.where}  # priority, nonewprivs: last wins


def public_other(other):
    return dict((k, v) for k, v in other.items() if not k.endswith('_class'))
