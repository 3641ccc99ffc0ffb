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
short_description: The fleet report on the controller - its gateways, then its files
version_added: "0.1.0"
description:
  - Two uses by C(playbooks/gather_facts.yml) in turn, and a third for any report a playbook renders itself.
  - With O(hosts) only - the gateways the hosts are behind (RV(gateways)), read from each host's C(sglang_dflash_result)
    of this run; none with O(from_cache).
  - With O(hosts) and O(dest) - the report. Each host's rows (its C(sglang_dflash_result) of this run, else why its
    report task gave none, or with O(from_cache) the rows its last gather kept in Ansible's fact cache) are placed in
    their gateways (from O(gateway_read), M(gpufleet.sglang.sglang_gateway_info)'s result), stamped with O(now) and
    written to O(dest) as C(fleet-report.json), C(fleet-report.md) and, with O(html_template), C(fleet-report.html).
    The rows go from the hosts' results to the files without passing through a task's arguments.
  - With O(dest) and O(files) - writes each entry of O(files) into O(dest).
  - Each file is replaced in one step (a temporary file beside it, then a rename) and only when its content or mode
    differs; the directory is made when it is missing. The controller does the writing itself, without a module run
    per file.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  hosts:
    description: The hosts of the report.
    type: list
    elements: str
  from_cache:
    description: With O(hosts), read each host's rows from Ansible's fact cache (C(sglang_fleet_cached_rows)).
    type: bool
    default: false
  gateway_read:
    description: With O(hosts) and O(dest), what each gateway says of its workers
      (M(gpufleet.sglang.sglang_gateway_info)'s C(gateways)).
    type: list
    elements: dict
    default: []
  now:
    description: With O(hosts) and O(dest), when the report is made (ISO 8601, UTC).
    type: str
  dest:
    description: The report directory on the controller.
    type: path
  html_template:
    description:
      - With O(hosts) and O(dest), the template of C(fleet-report.html), found as M(ansible.builtin.template) finds
        its O(ansible.builtin.template#module:src) and rendered with the rows as C(sglang_fleet_rows).
      - Omitted, no HTML is written.
    type: str
  keep_rows:
    description: With O(hosts) and O(dest), also return each reached host's rows (RV(rows_by_host)), for Ansible's
      fact cache.
    type: bool
    default: false
  files:
    description: File name (inside O(dest), no directory part) to its content, as text.
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
- name: Which gateways the hosts are behind
  gpufleet.sglang.sglang_fleet_report:
    hosts: "{{ groups['gpu_inference'] }}"
  register: fleet

- name: Write the fleet report
  gpufleet.sglang.sglang_fleet_report:
    hosts: "{{ groups['gpu_inference'] }}"
    now: "{{ now(utc=true).strftime('%Y-%m-%dT%H:%M:%SZ') }}"
    dest: /srv/ansible/fleet-report
    html_template: fleet-report.html.j2

- name: Write a report rendered here
  gpufleet.sglang.sglang_fleet_report:
    dest: /srv/ansible/experiment
    files:
      experiment.md: "{{ experiment_rows | to_nice_yaml }}"
"""

RETURN = r"""
gateways:
  description: With O(hosts) only, the gateways the hosts are behind (none from the cache).
  returned: with O(hosts) and no O(dest)
  type: list
  elements: dict
summary:
  description: The report's verdict in one line, and where it is written.
  returned: with O(hosts) and O(dest)
  type: str
  sample: 31 of 32 hosts can take the deployment; report in /srv/ansible/fleet-report
rows_by_host:
  description: Each reached host's rows, as the report has them.
  returned: with O(keep_rows)
  type: list
  elements: dict
  contains:
    host:
      description: The host.
      type: str
    rows:
      description: Its rows.
      type: list
      elements: dict
dest:
  description: The report directory.
  returned: with O(dest)
  type: str
  sample: /srv/ansible/fleet-report
written:
  description: The paths of the files written (in check mode, those that would be).
  returned: with O(dest)
  type: list
  elements: str
  sample: [/srv/ansible/fleet-report/fleet-report.md]
"""
