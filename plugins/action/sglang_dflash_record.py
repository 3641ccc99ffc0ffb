# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_dflash_record (documented in plugins/modules/sglang_dflash_record.py): what one service's
switch did, as the host keeps it and as the run reports it.

The record and the messages are decided on the controller (plugin_utils/_outcome.py); the host's files are written by
gpufleet.sglang.sglang_run_state in one module run (the record, the intent cleared, the previous-state copy dropped).
A refusal or a rollback fails the task with its message, naming the host, the unit and what was put back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _outcome
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name, stamped, this_run

ARGUMENT_SPEC = {
    "outcome": {"type": "str", "required": True,
                "choices": ["switched", "reverted", "restarted", "unchanged", "rolled back", "refused"]},
    "plan": {"type": "dict"},
    "refusals": {"type": "list", "elements": "str", "default": []},
    "observed": {"type": "dict", "default": {}},
    "write": {"type": "bool", "default": False},
    "clear_intent": {"type": "bool", "default": False},
    "result": {"type": "dict", "default": {}},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = (task_vars or {}).get("inventory_hostname")
        outcome = args["outcome"]
        result["changed"] = False
        if outcome == "refused":
            message = _outcome.refusal(args["refusals"], args["observed"].get("gateway_checks"), host)
            if message:
                result.update(failed=True, msg=message)
            return result
        plan = args["plan"] or {}
        decided = _outcome.decide(plan, outcome, args["observed"], host, bool(self._task.check_mode), time.time())
        record = decided["record"] if args["write"] else None
        if (record is not None or args["clear_intent"]) and not self._task.check_mode:
            written = self._write(plan, record, task_vars, decided.get("record_update"))
            if written.get("failed"):
                result.update(failed=True, msg=written.get("msg"))
                return result
            result["changed"] = bool(written.get("changed"))
        result.update(service=decided["service"], record=decided["record"])
        if decided["message"]:
            # A rollback: the host fails with what failed and what was put back (the playbook keeps it for the summary).
            result.update(failed=True, msg=decided["message"])
            return result
        run = run_name()
        result["ansible_facts"] = {"sglang_dflash_result": stamped(_outcome.with_service(
            this_run(args["result"], run), host, decided["service"]), run)}
        return result

    def _write(self, plan, record, task_vars, record_update=None):
        """The record (when there is one; else what to add to the one there, a restart's time), the intent cleared
        and the previous-state copy dropped, in one module run on the host."""
        settings = plan.get("settings") or {}
        module_args = {"dir": settings.get("state_dir"), "unit": plan.get("unit"), "clear_intent": True,
                       # A restart's copy holds the files it left untouched: no longer needed either.
                       "drop_snapshot": record is not None or plan.get("mode") == "restart"}
        if record is not None:
            module_args["record"] = record
        elif record_update:
            module_args["record_update"] = record_update
        written = self._execute_module(module_name="gpufleet.sglang.sglang_run_state", module_args=module_args,
                                       task_vars=task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return written
