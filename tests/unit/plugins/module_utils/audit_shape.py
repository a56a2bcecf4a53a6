"""Audit results shaped as limits_audit returns them, for the outlet tests: the rows the
module derives from its probes (one per probed context and profile item, ``gap`` the short
sides), so that the findings (reports/findings.py) are evaluated from the same evidence as on
a node. Fixtures that give only ``contexts`` and ``gaps`` get their rows here."""
import json


def with_rows(result, items=None):
    """A copy of ``result`` whose ``rows`` start with one row per probed context (its
    ``contexts``, less those whose probe failed) and item (``items``, else the result's
    ``expected``, else nofile): ``gap`` from ``gaps``, ``how`` pending for a busy probe."""
    data = json.loads(json.dumps(result))
    errors = data.get('errors') or []
    failed = set(e['context'] for e in errors if e.get('kind') != 'busy')
    busy = set(e['context'] for e in errors if e.get('kind') == 'busy')
    short = dict(((g['context'], g['item']), g) for g in data.get('gaps') or [])
    items = items or list(data.get('expected') or {}) or ['nofile']
    names = [c for c in data.get('contexts') or {} if c not in failed]
    names += [c for c, _i in sorted(short) if c not in names]
    names += [c for c in sorted(busy) if c not in names]
    rows = []
    for context in names:
        limits = ((data.get('contexts') or {}).get(context) or {}).get('limits') or {}
        for item in items:
            gap = short.get((context, item))
            got = limits.get(item) or {}
            want = (data.get('expected') or {}).get(item) or {}
            rows.append(dict(context=context, item=item,
                             actual='%s:%s' % (got.get('soft'), got.get('hard')),
                             expected='%s:%s' % (want.get('soft'), want.get('hard')), gap='+'.join(gap.get('sides') or ['soft'])
                             if gap else '', how='pending' if context in busy else 'probed'))
    data['rows'] = rows + (data.get('rows') or [])
    return data
