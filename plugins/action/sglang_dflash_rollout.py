# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_dflash_rollout (documented in plugins/modules/sglang_dflash_rollout.py): the rolling
deployment's decisions across hosts, for playbooks/deploy_dflash.yml.

Of every other host it reads its one documented result fact, sglang_dflash_result, and nothing else; its own host's
result is passed in and returned as that fact. The logic is plugin_utils/_rollout.py, _canary.py and _messages.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _canary, _messages, _rollout
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name, stamped, this_run

RESULT = "sglang_dflash_result"
ARGUMENT_SPEC = {
    "step": {"type": "str", "required": True,
             "choices": ["batch", "failed", "finished", "summary", "canary_check", "canary_judge", "canary_record",
                         "canary_failed"]},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "batch": {"type": "list", "elements": "str", "default": []},
    "result": {"type": "dict", "default": {}},
    "canary": {"type": "raw"},
    "max_fail_percentage": {"type": "raw", "default": 0},
    "reason": {"type": "str"},
    "drafters": {"type": "list", "elements": "dict", "default": []},
    "source": {"type": "dict"},
    "observed": {"type": "dict"},
    "verdict": {"type": "dict"},
    "thresholds": {"type": "dict", "default": {}},
    "min_requests": {"type": "int", "default": 10},
    "on_inconclusive": {"type": "str", "default": "hold"},
    "state_dir": {"type": "path"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        self._vars = task_vars or {}
        self._run = run_name()
        host = self._vars.get("inventory_hostname")
        # The host's own result as this run left it (one a former run left in the fact cache is not this run's).
        args["result"] = this_run(args["result"], self._run)
        result["changed"] = False
        result.update(getattr(self, "_" + args["step"])(args, host))
        facts = result.get("ansible_facts") or {}
        if RESULT in facts:
            facts[RESULT] = stamped(facts[RESULT], self._run)
        return result

    def _results(self, hosts):
        """{host: sglang_dflash_result of this run} of the play's hosts: the one fact of another host that is read."""
        hostvars = self._vars.get("hostvars") or {}
        return dict((h, this_run((hostvars.get(h) or {}).get(RESULT), self._run)) for h in hosts)

    def _batch(self, args, host):
        results = self._results(args["hosts"])
        results[host] = args["result"]
        decided = _rollout.start_batch(results, args["hosts"], args["batch"], host, args["max_fail_percentage"],
                                       args["canary"])
        plan = decided["canary"]
        return {"start": decided["start"], "in_canary": decided["in_canary"], "canary": plan,
                # The canary stage runs on the canary hosts of a real run (check mode switches nothing to judge).
                "check_canary": decided["start"] and decided["in_canary"] and not self._task.check_mode,
                "targets": _rollout.metrics_targets(results, plan["hosts"] + plan["baseline_hosts"]),
                "reason": decided["result"].get("reason"), "ansible_facts": {RESULT: decided["result"]}}

    def _failed(self, args, host):
        return {"ansible_facts": {RESULT: _rollout.failed(args["result"], host, args["reason"])}}

    def _finished(self, args, host):
        return {"ansible_facts": {RESULT: _rollout.finished(args["result"], host, args["drafters"])}}

    def _summary(self, args, host):
        lines = _messages.rollout_summary(self._results(args["hosts"]), args["hosts"])
        return {"msg": lines, "lines": lines}

    def _canary_check(self, args, host):
        """Before any change: the canary's settings and its metrics source; a problem fails this host's batch and holds
        the rollout (no canary, no rollout)."""
        plan = _rollout.canary_plan(args["hosts"], args["canary"])
        refused = _canary.refusal(plan["problem"], args["source"] or {}, host)
        out = {"problem": refused["problem"]}
        if refused["problem"]:
            failed = _rollout.failed(args["result"], host, refused["reason"])
            failed["canary"] = {"action": "hold", "message": refused["problem"]}
            out["ansible_facts"] = {RESULT: failed}
        else:
            out["line"] = _canary.source_line(plan["hosts"], args["source"] or {})
        return out

    def _canary_judge(self, args, host):
        """The canary's verdict over the observed window against the hosts not yet switched (run once)."""
        plan = _rollout.canary_plan(args["hosts"], args["canary"])
        results = self._results(plan["hosts"])
        probe_accept = dict((h, s.get("accept_length")) for h in plan["hosts"]
                            for s in results[h].get("services") or [] if s.get("accept_length") is not None)
        verdict = _canary.verdict(args["observed"] or {}, plan["hosts"], plan["baseline_hosts"], args["thresholds"],
                                  args["min_requests"], args["on_inconclusive"], probe_accept)
        return {"verdict": verdict, "msg": verdict["message"]}

    def _canary_record(self, args, host):
        """A canary host keeps the verdict: in its result, and, unless it goes back (its revert records it then), in
        the record of each service its switch changed, written on the host with the canary's intent cleared."""
        verdict = args["verdict"] or {}
        own = dict(args["result"], canary=verdict)
        if verdict.get("action") != "rollback" and not self._task.check_mode:
            for service in own.get("services") or []:
                if service.get("changed"):
                    self._write_record(args["state_dir"], service["unit"], _canary.record(verdict))
        return {"ansible_facts": {RESULT: own}}

    def _canary_failed(self, args, host):
        """A canary host whose stage failed (its rollback, say): failed, and the rollout held."""
        stage = _canary.stage_failed(args["result"].get("canary"), args["reason"])
        failed = _rollout.failed(args["result"], host, stage["reason"])
        failed["canary"] = stage["result"]
        return {"ansible_facts": {RESULT: failed}}

    def _write_record(self, state_dir, unit, canary):
        """The verdict into the unit's record on the host, and the canary's intent cleared, in one module run."""
        written = self._execute_module(
            module_name="gpufleet.sglang.sglang_run_state",
            module_args={"dir": state_dir, "unit": unit, "record_update": {"canary": canary}, "clear_intent": True},
            task_vars=self._vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        if written.get("failed"):
            raise AnsibleActionFail(written.get("msg"), result=written)
