# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Modules a filter file imports when a filter of it runs, not when the file is loaded.

Ansible resolves a collection's filter by loading every filter file of the collection (each
file may define several filters), in a worker process forked per host and task, and its
collection loader compiles each file and each module it imports from source there (no
bytecode cache). A task that names one filter of ours therefore paid for importing all of
them: the contexts registry, the failure classifier and the report writers, about 0.15 s of
controller CPU per host and task (benchmarks/profile.md). Each filter file imports what it
uses through ``module()``: loading the file costs its own source only; the first call of a
filter that uses the module imports it (once per process).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

PACKAGE = 'ansible_collections.gpufleet.tuning.plugins.'


class _Module(object):
    """A module of the collection (``module_utils.model.classify``), imported on the first
    attribute read."""

    def __init__(self, name):
        self._name = PACKAGE + name
        self._module = None

    def __getattr__(self, attribute):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)

    def __repr__(self):
        return '<imported on use: %s>' % self._name


def module(name):
    """The collection's module ``name`` (relative to its plugins package), imported on first
    use."""
    return _Module(name)
