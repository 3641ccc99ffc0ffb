# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_fleet_rows (documented in plugins/modules/sglang_fleet_rows.py): the fleet report's rows of
one host.

Runs gpufleet.sglang.sglang_info on the host as Ansible would, then judges each selected service with the
deployment's own plan, here on the controller, and returns only the report's rows: the facts (about 230 KB a host,
most of it the release's flags) are never stored as a host variable or templated, which is what made the report's
per-host cost on the controller several times that of `setup`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_plan import report_rows
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import given_or_task_settings, role_settings

# What the rows' result keeps of the module's own (the rest, the facts, went into the rows).
_KEPT_KEYS = ("ansible_facts", "warnings", "deprecations")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True  # sglang_facts only reads; it writes its on-host caches outside check mode
    _supports_async = False  # the rows need the facts at once

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        module_args = dict(self._task.args)
        plan_settings, problem = given_or_task_settings(module_args.pop("plan_settings", None), task_vars,
                                                        self._templar.template)
        if problem:
            result.update(failed=True, changed=False, msg=problem)
            return result
        if not isinstance(plan_settings, dict):
            raise AnsibleActionFail("plan_settings must be a dict of the role's settings (its variables without the "
                                    "sglang_dflash_ prefix), or unset, not %r" % (plan_settings,))
        facts = self._execute_module(module_name="gpufleet.sglang.sglang_info", module_args=module_args,
                                     task_vars=task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update((key, facts[key]) for key in _KEPT_KEYS if key in facts)
        result["changed"] = False
        result["fleet_rows"] = report_rows(task_vars.get("inventory_hostname"), facts, role_settings(plan_settings))
        return result
