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
short_description: Collect the fleet report's rows, place them in their gateways, write the report's files
version_added: "0.1.0"
description:
  - Three uses, on the controller, by C(playbooks/gather_facts.yml) in turn.
  - With O(hosts) - the rows of these hosts (each host's C(sglang_dflash_result) of this run, or with O(from_cache)
    the rows its last gather kept in Ansible's fact cache) and the gateways they are behind (RV(rows), RV(gateways)).
  - With O(rows) - each row placed in its gateways (from O(gateway_read), M(gpufleet.sglang.sglang_gateway_info)'s
    result) and stamped with O(now) (RV(rows), RV(summary)).
  - With O(dest) and O(files) - writes each entry of O(files) into the directory O(dest), making the directory when
    it is missing. Each file is replaced in one step (a temporary file beside it, then a rename) and only when its
    content or mode differs, so a second run with the same rows reports no change.
  - The controller does the writing itself, without a module run per file; C(playbooks/gather_facts.yml) writes
    C(fleet-report.json), C(fleet-report.md) and C(fleet-report.html) with it.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  hosts:
    description: The hosts whose rows to collect (the first use).
    type: list
    elements: str
  from_cache:
    description: With O(hosts), read each host's rows from Ansible's fact cache (C(sglang_fleet_cached_rows)).
    type: bool
    default: false
  rows:
    description: The rows to place in their gateways (the second use; RV(rows) of the first).
    type: list
    elements: dict
  gateway_read:
    description: With O(rows), what each gateway says of its workers (M(gpufleet.sglang.sglang_gateway_info)'s
      C(gateways)).
    type: list
    elements: dict
    default: []
  now:
    description: With O(rows), when the report is made (ISO 8601, UTC).
    type: str
  dest:
    description: The report directory on the controller (the third use; with O(rows), named in RV(summary)).
    type: path
  files:
    description: File name (inside O(dest), no directory part) to its content, as text (the third use).
    type: dict
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
rows:
  description: With O(hosts), the rows of the hosts; with O(rows), the same rows placed in their gateways.
  returned: with O(hosts) or O(rows)
  type: list
  elements: dict
gateways:
  description: With O(hosts), the gateways the rows are behind (none from the cache).
  returned: with O(hosts)
  type: list
  elements: dict
summary:
  description: With O(rows), the report's verdict in one line, and where it is written.
  returned: with O(rows)
  type: str
dest:
  description: The report directory.
  returned: with O(dest) and O(files)
  type: str
  sample: /srv/ansible/fleet-report
written:
  description: The paths of the files written (in check mode, those that would be).
  returned: with O(dest) and O(files)
  type: list
  elements: str
  sample: [/srv/ansible/fleet-report/fleet-report.md]
"""
