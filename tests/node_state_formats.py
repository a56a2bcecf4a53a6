"""Validators of the formats the drift watch writes for Kubernetes tooling, from the formats'
own documentation and code (docs/node-state.md cites them), used by the unit tests and by the
watch scenario on the node's real files:

* Node Feature Discovery local feature files (kubernetes-sigs/node-feature-discovery
  docs/usage/customization-guide.md, "Local feature source": ``<namespace>/<name>[=<value>]``,
  ``#`` comments, ``# +expiry-time=<RFC3339>``, 64 kB) with Kubernetes' rules for a qualified
  label name (a DNS subdomain prefix of at most 253 characters, a name of at most 63:
  alphanumeric at both ends, ``-_.`` inside) and a label value (at most 63, the same
  characters, may be empty); NFD denies the kubernetes.io and k8s.io namespaces except
  feature.node.kubernetes.io;
* node-problem-detector custom plugin monitor configurations
  (kubernetes/node-problem-detector pkg/custompluginmonitor/types/config.go and types.go,
  docs/custom_plugin_monitor.md): plugin "custom", Go durations, a permanent rule's condition
  among the default conditions, no rule timeout above the global one, the rule's path present.
"""
import datetime
import json
import re

NFD_MAX_BYTES = 64 * 1024
_NAME = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
_DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
_RFC3339 = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$')
_GO_DURATION = re.compile(r'^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')
_DURATION_UNITS = {'ns': 1e-9, 'us': 1e-6, 'µs': 1e-6, 'ms': 1e-3, 's': 1, 'm': 60, 'h': 3600}


class FormatError(AssertionError):
    """The text breaks the documented format; the message names the line or field."""


def check_label_name(key, where):
    if '/' not in key:
        raise FormatError('%s: label %r has no namespace (NFD wants <namespace>/<name>)'
                          % (where, key))
    prefix, name = key.split('/', 1)
    if not prefix or len(prefix) > 253 or not all(_DNS_LABEL.match(p) for p in prefix.split('.')):
        raise FormatError('%s: namespace %r is not a DNS subdomain' % (where, prefix))
    if (prefix.endswith('kubernetes.io') or prefix.endswith('k8s.io')) and \
            not prefix.endswith('feature.node.kubernetes.io'):
        raise FormatError('%s: namespace %r is denied by NFD' % (where, prefix))
    if len(name) > 63 or not _NAME.match(name):
        raise FormatError('%s: label name %r is not a valid name (63 characters at most, '
                          'alphanumeric at both ends, -_. inside)' % (where, name))


def check_label_value(value, where):
    if len(value) > 63 or (value and not _NAME.match(value)):
        raise FormatError('%s: label value %r is not a valid label value' % (where, value))


def parse_nfd_features(text, name='feature file'):
    """{label: (value, expiry datetime or None)} of an NFD local feature file; FormatError
    names the line that breaks the format."""
    if len(text.encode('utf-8')) > NFD_MAX_BYTES:
        raise FormatError('%s: larger than 64 kB: NFD ignores it' % name)
    labels, expiry = {}, None
    for number, line in enumerate(text.splitlines(), 1):
        where = '%s line %d' % (name, number)
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith('#'):
            directive = stripped[1:].strip()
            if directive.startswith('+expiry-time='):
                when = directive.split('=', 1)[1]
                if not _RFC3339.match(when):
                    raise FormatError('%s: expiry-time %r is not RFC3339' % (where, when))
                expiry = datetime.datetime.strptime(when[:19], '%Y-%m-%dT%H:%M:%S').replace(
                    tzinfo=datetime.timezone.utc)
            continue
        key, _sep, value = stripped.partition('=')
        value = value if _sep else 'true'
        check_label_name(key, where)
        check_label_value(value, where)
        if key in labels:
            raise FormatError('%s: label %s given twice' % (where, key))
        labels[key] = (value, expiry)
    return labels


def go_duration(text, where):
    if not isinstance(text, str) or not _GO_DURATION.match(text):
        raise FormatError('%s: %r is not a Go duration' % (where, text))
    return sum(float(n) * _DURATION_UNITS[u] for n, _f, u in
               re.findall(r'([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)', text))


_GLOBAL_KEYS = {'invoke_interval', 'timeout', 'max_output_length', 'concurrency',
                'enable_message_change_based_condition_update', 'skip_initial_status'}
_TOP_KEYS = {'plugin', 'pluginConfig', 'source', 'conditions', 'rules', 'metricsReporting'}
_RULE_KEYS = {'type', 'condition', 'reason', 'path', 'args', 'timeout', 'invoke_interval'}


def check_npd_config(text, path_exists=None):
    """The parsed custom plugin monitor config; FormatError names the field. An unknown key is
    an error here (NPD's JSON decoding would ignore it: a typo would silently not apply).
    ``path_exists``: a function that says whether a rule's path exists (NPD refuses to start
    without it)."""
    data = json.loads(text)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise FormatError('unknown keys %s' % sorted(unknown))
    if data.get('plugin') != 'custom':
        raise FormatError('plugin must be "custom", not %r' % data.get('plugin'))
    if not isinstance(data.get('source'), str) or not data['source']:
        raise FormatError('source must be a non-empty string')
    glob = data.get('pluginConfig') or {}
    if set(glob) - _GLOBAL_KEYS:
        raise FormatError('unknown pluginConfig keys %s' % sorted(set(glob) - _GLOBAL_KEYS))
    timeout = go_duration(glob.get('timeout', '5s'), 'pluginConfig.timeout')
    go_duration(glob.get('invoke_interval', '30s'), 'pluginConfig.invoke_interval')
    for key in ('max_output_length', 'concurrency'):
        if key in glob and (not isinstance(glob[key], int) or isinstance(glob[key], bool)
                            or glob[key] < 1):
            raise FormatError('pluginConfig.%s must be a positive integer' % key)
    conditions = data.get('conditions') or []
    for index, cond in enumerate(conditions):
        if set(cond) != {'type', 'reason', 'message'} or not all(
                isinstance(cond[k], str) and cond[k] for k in cond):
            raise FormatError('conditions[%d] needs type, reason and message' % index)
    types = set(c['type'] for c in conditions)
    if not data.get('rules'):
        raise FormatError('no rules')
    for index, rule in enumerate(data['rules']):
        where = 'rules[%d]' % index
        if set(rule) - _RULE_KEYS:
            raise FormatError('%s: unknown keys %s' % (where, sorted(set(rule) - _RULE_KEYS)))
        if rule.get('type') not in ('temporary', 'permanent'):
            raise FormatError('%s: type must be temporary or permanent' % where)
        if rule['type'] == 'permanent' and rule.get('condition') not in types:
            raise FormatError('%s: permanent problem %r has no default condition'
                              % (where, rule.get('condition')))
        if not rule.get('reason') or not rule.get('path'):
            raise FormatError('%s: reason and path are required' % where)
        if 'timeout' in rule and go_duration(rule['timeout'], where + '.timeout') > timeout:
            raise FormatError('%s: timeout is greater than the global timeout' % where)
        if 'invoke_interval' in rule:
            go_duration(rule['invoke_interval'], where + '.invoke_interval')
        if path_exists is not None and not path_exists(rule['path']):
            raise FormatError('%s: path %s does not exist' % (where, rule['path']))
    return data
