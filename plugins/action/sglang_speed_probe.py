# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_speed_probe's controller half (the module measures on the host,
plugins/modules/sglang_speed_probe.py): which concurrency levels to measure at, and, against a baseline, the gates.

The levels are the operator's, else 1 and the load the host carried just before the switch (O(load)); with a
O(baseline) (the previous server's figures) the new server's figures are judged by the speed gates
(plugin_utils/_speed_gates.py) and the task fails with the reason when they do not pass.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _messages, _speed_gates

# The options the controller reads; the module takes and ignores them.
CONTROLLER_OPTIONS = ("load", "max_concurrency", "baseline", "min_speedup", "min_accept_length")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        judge = dict((k, args.pop(k, None)) for k in CONTROLLER_OPTIONS)
        if "load" in self._task.args or args.get("concurrency"):
            args["concurrency"] = _speed_gates.probe_levels(args.get("concurrency"), judge["load"],
                                                            int(judge["max_concurrency"] or 64))
        measured = self._execute_module(module_name="gpufleet.sglang.sglang_speed_probe", module_args=args,
                                        task_vars=task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(measured)
        baseline = judge["baseline"]
        if measured.get("failed") or "baseline" not in self._task.args:
            return result
        before = baseline if isinstance(baseline, dict) and not baseline.get("skipped") else None
        verdict = _speed_gates.verdict(measured, before, judge["min_accept_length"], judge["min_speedup"])
        verdict["summary"] = _speed_gates.summary_line(measured, before, verdict["speedup"], verdict.get("speedups"))
        result["verdict"] = verdict
        if not verdict["passed"]:
            result.update(failed=True, msg=_messages.speed_gates_message(verdict))
        return result
