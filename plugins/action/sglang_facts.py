# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller side of gpufleet.sglang.sglang_facts (documented in plugins/modules/sglang_facts.py).

Runs the module on the host as Ansible would. With plan_settings (the fleet report), it also judges each
selected service with the deployment's own plan, here in Python, and returns the report's rows in place of the
facts: the facts (about 230 KB a host, most of it the release's flags) are never stored as a host variable or
templated, which is what made the report's per-host cost on the controller several times that of `setup`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._records import host_rows

# What a judged result keeps of the module's own (the rest, the facts, went into the rows).
_KEPT_KEYS = ("ansible_facts", "warnings", "deprecations")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True  # the module reads only; it writes its on-host caches outside check mode
    _supports_async = True  # as a plain module run (without plan_settings)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        module_args = dict(self._task.args)
        plan_settings = module_args.pop("plan_settings", None)
        if plan_settings is not None and not isinstance(plan_settings, dict):
            raise AnsibleActionFail("plan_settings must be a dict of the role's settings "
                                    "(sglang_dflash__settings), not %r" % (plan_settings,))
        if plan_settings is not None and self._task.async_val:
            raise AnsibleActionFail("plan_settings needs the facts at once: run this task without async")
        # As ansible.builtin's own action for modules does: async where the connection has none of its own.
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        facts = self._execute_module(module_name="gpufleet.sglang.sglang_facts", module_args=module_args,
                                     task_vars=task_vars, wrap_async=wrap_async)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if plan_settings is None:
            result.update(facts)
            return result
        result.update((key, facts[key]) for key in _KEPT_KEYS if key in facts)
        result["changed"] = False
        result["fleet_rows"] = host_rows(task_vars.get("inventory_hostname"), facts, dict(plan_settings))
        return result
