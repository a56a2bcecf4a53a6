# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning CRI-O's ``default_ulimits`` drop-in (crio_ulimits). Nothing is written here.

Every file CRI-O reads (crio.conf, then crio.conf.d in its order) is read first: one that CRI-O
would refuse fails the plan naming file:line, and a file read after the drop-in that sets
``default_ulimits`` too (its list would replace ours whole) is refused unless ``force``."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.gpufleet.tuning.plugins.module_utils.core import changes
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import container_limits as ctl
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import containers_conf as cc
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import crio_conf
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import errors
from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.runtimes import runtime_plan
from ansible_collections.gpufleet.tuning.plugins.module_utils.core import safe_file
from ansible_collections.gpufleet.tuning.plugins.module_utils.core.safe_file import FileError, read_bytes


def configured(found):
    """{item: {soft, hard, source}} of the list CRI-O uses (the last file's), or {}."""
    if not found:
        return {}
    place, limits = found[-1]
    return dict((name, dict(soft=limit.soft, hard=limit.hard, source=place))
                for name, limit in limits.items())


def plan_crio(req, main=None, dropin_dir=None, ceiling=None):
    """The Change of ``req.path`` (a runtime_plan.RuntimeRequest, limits parsed once);
    ``main`` and ``dropin_dir`` default to CRI-O's (crio_conf.MAIN, DROPIN_DIR)."""
    main = main or crio_conf.MAIN
    dropin_dir = dropin_dir or crio_conf.DROPIN_DIR
    path = req.path
    result = dict(changed=False, path=path, restart_required=False, default_ulimits=[],
                  files=[], configured={}, decided_by=None, overridden_by=[])
    warnings = []
    try:
        if path != main and not path.startswith(dropin_dir.rstrip('/') + '/'):
            raise model.LimitError('path: %s is not a file CRI-O reads (%s, or a file under %s)'
                                   % (path, main, dropin_dir))
        files = crio_conf.config_files(main, dropin_dir)
        result['files'] = files
        crio_conf.effective([f for f in files if f != path])   # what CRI-O would refuse
        raw = read_bytes(path)
        text = raw.decode('utf-8', 'surrogateescape') if raw is not None else ''
        doc, current, _place = crio_conf.read(path, text)
        current = current or OrderedDict()
        requested = ctl.complete_limits(req.limits, current, req.field)
        runtime_plan.guard(req, result, ceiling, warnings, requested)
        final = cc.merge_ulimits(current, requested, req.purge)
        if final == current and doc.get(crio_conf.TABLE, crio_conf.KEY) is not None:
            new_text = text
        elif not text.strip():
            new_text = crio_conf.HEADER + cc.set_values('', crio_conf.TABLE, {
                crio_conf.KEY: crio_conf.render_value(final)}, path)
        else:
            new_text = cc.set_values(text, crio_conf.TABLE, {
                crio_conf.KEY: crio_conf.render_value(final) if final else None}, path)
        order = files if path in files else sorted_in(files, path, main)
        found = crio_conf.effective(order, path, new_text)
    except (cc.TomlError, model.LimitError, FileError) as exc:
        raise changes.Failure('%s (nothing written)' % exc, result, kind=errors.kind_of(exc))
    result['files'] = order
    result['default_ulimits'] = [model.to_ulimit_string(n, l) for n, l in final.items()]
    result['configured'] = configured(found)
    result['decided_by'] = found[-1][0] if found else None
    later = order[order.index(path) + 1:]
    for place, limits in found:
        if place.rsplit(':', 2)[0] in later:
            result['overridden_by'].append(place)
    if result['overridden_by'] and final:
        why = ('%s sets default_ulimits and CRI-O reads it after %s: its list replaces this one '
               'whole' % (result['overridden_by'][-1], path))
        if not req.force:
            raise changes.Failure('%s (nothing written; force=true writes it anyway)' % why,
                                  result, kind=errors.REFUSED)
        warnings.append(why)
    change = changes.Change(path, result, text if raw is not None else None, new_text,
                            mode=safe_file.mode_of(path))
    result['restart_required'] = change.changed
    change.warnings = warnings
    return change


def sorted_in(files, path, main):
    """``files`` with ``path`` (not there yet) where CRI-O will read it: crio.conf first, a
    drop-in where filepath.Walk meets it (path components compared in order)."""
    if path == main:
        return [path] + files
    index = len(files)
    for i, other in enumerate(files):
        if other != main and other.split('/') > path.split('/'):
            index = i
            break
    return files[:index] + [path] + files[index:]
