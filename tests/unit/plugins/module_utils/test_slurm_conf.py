# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_conf: the reader agrees with SchedMD/slurm src/common/parse_config.c (comments,
continuations, escapes, case-insensitive keys, Include) and slurm_rlimits_info.c
(parse_rlimits); the editor keeps every byte it does not own."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.tuning.plugins.module_utils.model import limits_model as model
from ansible_collections.gpufleet.tuning.plugins.module_utils.slurm import slurm_conf as sc

CONF = '/etc/slurm/slurm.conf'


def parse(files, path=CONF):
    def reader(name):
        if name not in files:
            raise IOError(2, 'No such file or directory')
        return files[name]
    return sc.parse(path, reader)


# (physical text, what _get_next_line gives): parse_config.c's _strip_comments,
# _strip_continuation and _strip_escapes in that order
LOGICAL = [
    ('A=1 # note\n', ['A=1 ']),
    ('A=a\\#b\n', ['A=a#b\n']),               # an escaped # is kept (and unescaped)
    ('A=a\\\\#b\n', ['A=a\\']),             # an even run of backslashes: # starts a comment
    ('A=1,\\\n2\n', ['A=1,2\n']),           # continuation joins the next line
    ('A=1,\\  \n2\n', ['A=1,2\n']),         # blanks after the backslash are allowed
    ('A=1\\\\\n', ['A=1\\\n']),             # an even run is not a continuation
    ('A=1 # x \\\nB=2\n', ['A=1 ', 'B=2\n']),  # the comment goes first: no continuation
    ('\n   \n# only\n', []),
]


@pytest.mark.parametrize('text,expected', LOGICAL)
def test_logical_lines_follow_get_next_line(text, expected):
    assert [e.text for e in sc.logical_lines(text, CONF)] == expected


def test_keys_are_case_insensitive_and_the_last_value_wins():
    config = parse({CONF: 'propagateresourcelimits=NOFILE\nPROPAGATERESOURCELIMITS=CORE\n'})
    entry = config.get('PropagateResourceLimits')
    assert (entry.value, entry.number) == ('CORE', 2)


def test_quoted_value_and_node_lines_with_many_pairs():
    config = parse({CONF: 'ClusterName="gpu fleet"\nNodeName=n1 CPUs=2 State=UNKNOWN\n'})
    assert config.get('clustername').value == 'gpu fleet'
    assert config.get('nodename').value == 'n1'


@pytest.mark.parametrize('text,where', [
    ('ClusterName=a\nthis is not slurm\n', '/etc/slurm/slurm.conf:2'),
    ('ClusterName=a b\n', '/etc/slurm/slurm.conf:1'),         # leftover after the value
    ('A=1\nB=\\\n\n', '/etc/slurm/slurm.conf:2'),             # empty value
])
def test_unparsable_line_names_file_and_line(text, where):
    with pytest.raises(sc.SlurmConfError) as info:
        parse({CONF: text})
    assert info.value.msg.startswith(where + ':')
    assert info.value.where == where


def test_include_is_relative_to_slurm_conf_and_takes_cluster_name():
    config = parse({CONF: 'ClusterName=GPU\nInclude %c-limits.conf\n',
                    '/etc/slurm/gpu-limits.conf': 'PropagateResourceLimitsExcept=NOFILE\n'})
    entry = config.get(sc.EXCEPT)
    assert entry.where == '/etc/slurm/gpu-limits.conf:1'
    assert sorted(config.files) == ['/etc/slurm/gpu-limits.conf', CONF]


def test_include_keyword_any_case_absolute_path():
    config = parse({CONF: 'INCLUDE /opt/x.conf\n', '/opt/x.conf': 'A=1\n'})
    assert config.get('a').where == '/opt/x.conf:1'


def test_missing_include_is_refused_at_its_line():
    with pytest.raises(sc.SlurmConfError) as info:
        parse({CONF: 'ClusterName=a\n\nInclude missing.conf\n'})
    assert info.value.msg.startswith('/etc/slurm/slurm.conf:3: Include /etc/slurm/missing.conf')


def test_glob_include_is_refused():
    with pytest.raises(sc.SlurmConfError) as info:
        parse({CONF: 'Include conf.d/*.conf\n', '/etc/slurm/conf.d/a.conf': 'A=1\n'})
    assert 'does not expand globs' in info.value.msg


def test_both_propagate_options_refused_naming_both_lines():
    config = parse({CONF: 'PropagateResourceLimits=ALL\nA=1\nPropagateResourceLimitsExcept=NOFILE\n'})
    with pytest.raises(sc.SlurmConfError) as info:
        sc.propagated(config)
    assert '/etc/slurm/slurm.conf:3: PropagateResourceLimitsExcept' in info.value.msg
    assert '/etc/slurm/slurm.conf:1: PropagateResourceLimits ' in info.value.msg


# parse_rlimits: value -> the rlimits propagated
RLIMIT_CASES = [
    ('', None, set(sc.ITEM_OF)),                                     # default ALL
    ('PropagateResourceLimits=ALL', None, set(sc.ITEM_OF)),
    ('PropagateResourceLimits=NONE', None, set()),
    ('PropagateResourceLimits=NOFILE,RLIMIT_CORE', None, {'NOFILE', 'CORE'}),
    ('PropagateResourceLimitsExcept="NOFILE MEMLOCK"', None, set(sc.ITEM_OF) - {'NOFILE', 'MEMLOCK'}),
    ('PropagateResourceLimitsExcept=ALL', None, set()),
    ('PropagateResourceLimitsExcept=NONE', None, set(sc.ITEM_OF)),
    ('PropagateResourceLimits=nofile', 'not a limit Slurm knows', None),  # names are upper case
    ('PropagateResourceLimits=None', 'not a limit Slurm knows', None),    # NONE exactly
]


@pytest.mark.parametrize('line,error,expected', RLIMIT_CASES)
def test_propagated_follows_parse_rlimits(line, error, expected):
    config = parse({CONF: line + '\n'})
    if error:
        with pytest.raises(sc.SlurmConfError) as info:
            sc.propagated(config)
        assert error in info.value.msg and info.value.where == CONF + ':1'
        return
    flags, _entry = sc.propagated(config)
    assert set(n for n, on in flags.items() if on) == expected


EDITS = [
    # no line: one is appended, the file otherwise untouched (a missing last newline added)
    ('ClusterName=a', CONF, 'ClusterName=a\n' + sc.MARK
     + 'PropagateResourceLimitsExcept=NOFILE,MEMLOCK\n'),
    # Except: the value grows, the rest of the line (comment, blanks) is kept
    ('A=1\nPropagateResourceLimitsExcept=CORE   # site\nB=2\n', CONF,
     'A=1\nPropagateResourceLimitsExcept=CORE,NOFILE,MEMLOCK   # site\nB=2\n'),
    # PropagateResourceLimits=ALL: every other limit listed
    ('propagateresourcelimits = ALL\n', CONF,
     'propagateresourcelimits = CPU,FSIZE,DATA,STACK,CORE,RSS,NPROC,AS\n'),
    ('PropagateResourceLimits=NOFILE\n', CONF, 'PropagateResourceLimits=NONE\n'),
]


@pytest.mark.parametrize('text,path,expected', EDITS)
def test_plan_text_edits_only_the_value(text, path, expected):
    target, new, _what = sc.plan_text(parse({CONF: text}), ['nofile', 'memlock', 'nice'])
    assert (target, new) == (path, expected)
    again = parse({CONF: new})
    assert sc.plan_text(again, ['nofile', 'memlock'])[0] is None      # idempotent


def test_plan_text_edits_the_included_file_that_decides():
    files = {CONF: 'Include limits.conf\n', '/etc/slurm/limits.conf': 'PropagateResourceLimits=NOFILE,CORE\n'}
    target, new, _what = sc.plan_text(parse(files), ['nofile'])
    assert (target, new) == ('/etc/slurm/limits.conf', 'PropagateResourceLimits=CORE\n')


def test_nothing_to_do_when_not_propagated():
    assert sc.plan_text(parse({CONF: 'PropagateResourceLimits=NONE\n'}), ['nofile'])[0] is None


def test_continued_setting_is_not_rewritten():
    with pytest.raises(sc.SlurmConfError):
        sc.plan_text(parse({CONF: 'PropagateResourceLimitsExcept=CORE,\\\nSTACK\n'}), ['nofile'])


@pytest.mark.parametrize('propagate,slurmd,submit,expected', [
    (True, (16384, 16384), 1024, (1024, 16384)),          # the submit shell's soft value
    (True, (16384, 16384), 65536, (16384, 16384)),        # capped at slurmd's hard
    (False, (16384, 16384), 1024, (16384, 16384)),        # slurmd's
    (True, (8, model.UNLIMITED), model.UNLIMITED, (model.UNLIMITED, model.UNLIMITED)),
])
def test_job_limit_follows_ulimits_c(propagate, slurmd, submit, expected):
    got = sc.job_limit(propagate, model.Limit(*slurmd), submit)
    assert (got.soft, got.hard) == expected
