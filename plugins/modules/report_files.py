#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: report_files
short_description: Write report files on the controller without starting a module process
version_added: 0.1.0
description:
  - Writes each file of O(files) into O(dir) on the B(controller), creating O(dir) when it is
    missing. An action plugin, it runs in the controller's own process, so a fleet report
    costs no module run (M(ansible.builtin.file) and M(ansible.builtin.copy) start a Python
    process for each call, two for a copy).
  - A file whose content is already O(files)' is left alone (idempotent); a changed file is
    written atomically (a temporary file in the same directory, then a rename) keeping an
    existing file's owner and mode.
  - C(playbooks/audit_limits.yml) writes its four reports with it in one call -
    C(limits-audit.json), C(limits-audit.md), C(limits-audit.junit.xml) (JUnit XML, filter
    C(gpufleet.tuning.audit_junit)) and C(limits-audit.sarif) (SARIF 2.1.0, filter
    C(gpufleet.tuning.audit_sarif)) - and each host's probe proofs.
  - The content is written as given; rendering (JSON, XML, SARIF) is the caller's, so a file
    is only as valid as the text passed (the audit's JUnit and SARIF are checked against their
    schemas in the tests, docs/audit.md).
author:
  - gpufleet.tuning contributors (@gpufleet)
options:
  dir:
    description: The directory on the controller (created with mode C(0755) when missing).
    type: path
    required: true
  files:
    description: File name (no directory part) -> its text content.
    type: dict
    required: true
  mode:
    description: The mode of a file created; an existing file keeps its own.
    type: raw
    default: '0644'
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Runs on the controller only, in its own process; the host of the task is not contacted.
extends_documentation_fragment:
  - gpufleet.tuning.attributes
'''

EXAMPLES = r'''
- name: Write the fleet report on the controller
  gpufleet.tuning.report_files:
    dir: "{{ playbook_dir }}/audit-reports"
    files:
      report.json: "{{ report | to_nice_json }}\n"
      report.md: "# Report\n"
  run_once: true

- name: Write an audit report as JUnit XML and SARIF for a CI job
  gpufleet.tuning.report_files:
    dir: "{{ playbook_dir }}/audit-reports"
    files:
      limits-audit.junit.xml: "{{ audit_report | gpufleet.tuning.audit_junit }}"
      limits-audit.sarif: "{{ audit_report | gpufleet.tuning.audit_sarif | to_nice_json }}\n"
  run_once: true
'''

RETURN = r'''
dir:
  description: O(dir) as an absolute path.
  returned: always
  type: str
paths:
  description: Every file of O(files), as absolute paths in name order.
  returned: always
  type: list
  elements: str
  sample: [/srv/audit-reports/limits-audit.json, /srv/audit-reports/limits-audit.junit.xml,
           /srv/audit-reports/limits-audit.md, /srv/audit-reports/limits-audit.sarif]
changed_paths:
  description: The files that were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
'''
