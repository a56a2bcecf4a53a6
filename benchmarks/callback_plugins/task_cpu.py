# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper (not part of the collection's plugins): the controller CPU time of each task
of a run, for benchmarks/profile_run.py (issue 42 item 1). Enabled with
ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins ANSIBLE_CALLBACKS_ENABLED=task_cpu; writes
JSON to $BENCH_TASK_CPU_FILE at the end.

The CPU of the controller so far, read at every task start and at the end, is the
ansible-playbook process's own (getrusage RUSAGE_SELF), its workers' that were reaped
(RUSAGE_CHILDREN: a worker and the ssh clients it waited for) and its workers' not reaped yet
(/proc/PID/stat of each child, a zombie included: utime, stime, cutime, cstime), so a worker's
CPU counts in the task that ran it whenever it is reaped. A task's share is the difference to
the next reading, split into the main process (strategy, templating, callbacks, results) and
the workers (payload, connection, result parsing). The part before the first task (start-up:
imports, inventory, playbook) is `startup`. The ssh ControlPersist masters, which outlive the
run, are not counted.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: task_cpu
type: aggregate
short_description: Controller CPU time per task (gpufleet.tuning benchmarks)
description:
  - Writes the controller CPU seconds of each task (main process and workers), its wall time,
    its results and their JSON size, to the file named by BENCH_TASK_CPU_FILE.
'''

import json
import os
import resource
import time

from ansible.plugins.callback import CallbackBase

TICK = os.sysconf('SC_CLK_TCK')


def children_cpu(pid):
    """CPU seconds of PID's children that are not reaped yet (zombies included), with the
    descendants they reaped."""
    total = 0.0
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except (IOError, OSError):
            continue
        if int(fields[1]) == pid:
            total += sum(int(f) for f in fields[11:15]) / float(TICK)
    return total


def reading():
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dict(main=own.ru_utime + own.ru_stime,
                workers=reaped.ru_utime + reaped.ru_stime + children_cpu(os.getpid()),
                wall=time.time())


def process_start():
    """When this process started (epoch seconds; /proc/self/stat's starttime)."""
    with open('/proc/uptime') as handle:
        uptime = float(handle.read().split()[0])
    with open('/proc/self/stat') as handle:
        started = int(handle.read().rsplit(')', 1)[1].split()[19]) / float(TICK)
    return time.time() - (uptime - started)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'task_cpu'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.tasks = [dict(name='startup', action='', play='', results=0, result_bytes=0,
                           delegated=False)]
        self.marks = [None]
        self.play = ''

    def mark(self):
        now = reading()
        self.marks.append(now)
        return now

    def v2_playbook_on_play_start(self, play):
        self.play = play.get_name()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.mark()
        self.tasks.append(dict(name=task.get_name(), action=task.action, play=self.play,
                               results=0, result_bytes=0,
                               delegated=bool(task.delegate_to), run_once=bool(task.run_once)))

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def count(self, result):
        task = self.tasks[-1]
        task['results'] += 1
        try:
            task['result_bytes'] += len(json.dumps(result._result, default=str))
        except (TypeError, ValueError):
            pass

    def v2_runner_on_ok(self, result):
        self.count(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.count(result)

    def v2_runner_on_skipped(self, result):
        self.count(result)

    def v2_runner_on_unreachable(self, result):
        self.count(result)

    def v2_playbook_on_stats(self, stats):
        end = self.mark()
        rows = []
        for number, task in enumerate(self.tasks):
            start, stop = self.marks[number], self.marks[number + 1]
            if start is None:       # start-up: from the process start to the first task
                start = dict(main=0.0, workers=0.0, wall=process_start())
            rows.append(dict(task, main_cpu_s=round(stop['main'] - start['main'], 4),
                             workers_cpu_s=round(stop['workers'] - start['workers'], 4),
                             wall_s=round(stop['wall'] - start['wall'], 4)))
        path = os.environ.get('BENCH_TASK_CPU_FILE')
        if path:
            with open(path, 'w') as handle:
                json.dump(dict(tasks=rows, main_cpu_s=end['main'], workers_cpu_s=end['workers']),
                          handle, indent=1)
