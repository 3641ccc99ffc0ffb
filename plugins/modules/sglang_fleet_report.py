#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The documentation of an action plugin (plugins/action/sglang_fleet_report.py): it runs on the controller only.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_fleet_report
short_description: Write the fleet report's files on the controller
version_added: "0.1.0"
description:
  - Writes each entry of O(files) into the directory O(dest) on the controller, making the directory when it is
    missing. Each file is replaced in one step (a temporary file beside it, then a rename) and only when its content
    or mode differs, so a second run with the same rows reports no change.
  - The controller does the writing itself, without a module run per file; C(playbooks/gather_facts.yml) writes
    C(fleet-report.json), C(fleet-report.md) and C(fleet-report.html) with it.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  dest:
    description: The report directory on the controller.
    type: path
    required: true
  files:
    description: File name (inside O(dest), no directory part) to its content, as text.
    type: dict
    required: true
  mode:
    description: The mode of each file written (the directory, when it is made, gets C(0755)).
    type: raw
    default: "0644"
attributes:
  action:
    description: Runs as an action plugin on the controller.
    support: full
  check_mode:
    support: full
    details:
      - Writes nothing and says which files would change.
  diff_mode:
    support: full
    details:
      - The content before and after of each file that changes.
  platform:
    support: full
    platforms: posix
    details:
      - The controller.
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_info
"""

EXAMPLES = r"""
- name: Write the fleet report
  gpufleet.sglang.sglang_fleet_report:
    dest: "{{ playbook_dir }}/../fleet-report"
    files:
      fleet-report.json: "{{ {'hosts': sglang_fleet_rows} | to_nice_json }}\n"
      fleet-report.md: "{{ sglang_fleet_rows | gpufleet.sglang.sglang_fleet_markdown }}"
"""

RETURN = r"""
dest:
  description: The report directory.
  returned: always
  type: str
  sample: /srv/ansible/fleet-report
written:
  description: The paths of the files written (in check mode, those that would be).
  returned: always
  type: list
  elements: str
  sample: [/srv/ansible/fleet-report/fleet-report.md]
"""
