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
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import (
    _canary,
    _experiment,
    _experiment_report,
    _messages,
    _rollout,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name, stamped, this_run

RESULT = "sglang_dflash_result"
ARGUMENT_SPEC = {
    "step": {"type": "str", "required": True,
             "choices": ["batch", "failed", "finished", "summary", "canary_check", "canary_judge", "canary_record",
                         "canary_failed", "experiment_assign", "experiment_judge", "experiment_end",
                         "experiment_rollout"]},
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
    "judge": {"type": "dict", "default": {}},
    "min_requests": {"type": "int", "default": 10},
    "on_inconclusive": {"type": "str", "default": "hold"},
    "state_dir": {"type": "path"},
    "experiment": {"type": "raw"},
    "state": {"type": "dict"},
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
        verdict = _canary.verdict(args["observed"] or {}, plan["hosts"], plan["baseline_hosts"], args["judge"],
                                  args["min_requests"], args["on_inconclusive"])
        return {"verdict": verdict, "msg": verdict["message"]}

    def _canary_record(self, args, host):
        """A canary host keeps the verdict: in its result, and, unless it goes back (its revert records it then), in
        the record of each of its services, written on the host with the canary's intent cleared."""
        verdict = args["verdict"] or {}
        own = dict(args["result"], canary=verdict)
        if verdict.get("action") != "rollback" and not self._task.check_mode:
            # Every service of a canary host was under the canary's eye (one switched earlier, whose canary window
            # a cut run left, too); a service never switched has no record, and gets none.
            for service in own.get("services") or []:
                self._write_record(args["state_dir"], service["unit"], {"canary": _canary.record(verdict)})
        return {"ansible_facts": {RESULT: own}}

    def _canary_failed(self, args, host):
        """A canary host whose stage failed (its rollback, say): failed, and the rollout held."""
        stage = _canary.stage_failed(args["result"].get("canary"), args["reason"])
        failed = _rollout.failed(args["result"], host, stage["reason"])
        failed["canary"] = stage["result"]
        return {"ansible_facts": {RESULT: failed}}

    def _write_record(self, state_dir, unit, update):
        """A verdict into the unit's record on the host (update: its keys), and the window's intent cleared, in one
        module run."""
        written = self._execute_module(
            module_name="gpufleet.sglang.sglang_run_state",
            module_args={"dir": state_dir, "unit": unit, "record_update": update, "clear_intent": True},
            task_vars=self._vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        if written.get("failed"):
            raise AnsibleActionFail(written.get("msg"), result=written)

    # The experiment (playbooks/experiment_dflash.yml, plugin_utils/_experiment.py).

    def _experiment_config(self, args):
        config, problem = _experiment.settings(args["experiment"])
        if problem:
            raise AnsibleActionFail(problem)
        # The experiment's own judge settings over the role's (sglang_dflash_judge).
        config["judge"] = dict(args["judge"], **config["judge"])
        return config

    def _experiment_assign(self, args, host):
        """Each host learns the arms (the same assignment on every host, decided from every host's survey) and its
        own: a host of an arm starts its batch, the others (the control, other kinds) serve on untouched. A fleet
        where the arms cannot be like the control is refused on every host before any change."""
        config, problem = _experiment.settings(args["experiment"])
        results = self._results(args["hosts"])
        results[host] = args["result"]
        own = dict(args["result"], host=host, batch=list(args["batch"]))
        if problem:
            return {"start": False, "ansible_facts": {RESULT: _rollout.failed(own, host, problem)}}
        assignment = _experiment.assign(results, args["hosts"], config)
        arm = _experiment.arm_of(assignment, host)
        stopped = _rollout.rollout_stopped(results, args["hosts"], args["max_fail_percentage"], args["batch"])
        own["experiment"] = {"arm": arm, "assignment": assignment, "settings": config,
                             "chunks": -(-config["max_window"] // config["chunk"]),
                             "targets": _rollout.metrics_targets(results, args["hosts"])}
        if assignment["problem"]:
            own.update(state=_rollout.FAILED, reason="host %s: cannot start the experiment: %s. Nothing was "
                                                     "changed on this host." % (host, assignment["problem"]))
        elif stopped and arm:
            own.update(state=_rollout.NOT_STARTED, reason=stopped)
        else:
            own.update(state=None if arm else _rollout.DONE, reason=None, services=[])
        return {"start": own["state"] is None, "arm": arm, "assignment": assignment,
                "ansible_facts": {RESULT: own}}

    def _experiment_judge(self, args, host):
        """One more chunk of the window judged (run once); when decided, the report's files."""
        config = self._experiment_config(args)
        assignment = (args["result"].get("experiment") or {}).get("assignment") or {}
        results = self._results(args["hosts"])
        state = args["state"]
        if state is None:
            not_ready = ["%s (%s)" % (h, (results.get(h) or {}).get("reason") or "not switched")
                         for hosts in (assignment.get("arms") or {}).values() for h in hosts
                         if (results.get(h) or {}).get("state") != _rollout.DONE]
            why = assignment.get("problem") or (
                "an arm's host was not switched: %s" % "; ".join(not_ready) if not_ready else None)
            if why:
                state = {"samples": [], "seconds": 0, "failed": [], "done": True, "outcome": "not started",
                         "winner": None, "roll_back_now": [], "lines": [], "decision": {"message": why}}
        state = _experiment.judge(state, args["observed"], assignment, config)
        out = {"state": state, "line": _experiment.message(state, assignment)}
        if state["done"]:
            out["report_files"] = {
                "experiment-report.json": _experiment_report.report_json(state, assignment, config),
                "experiment-report.html": _experiment_report.report_html(state, assignment, out["line"])}
        return out

    def _experiment_end(self, args, host):
        """Each host keeps the verdict; the hosts of every arm but the winner go back (none on a hold). A host the
        experiment did not change (it already ran its arm's setting) stays as it is: going back is the revert to the
        operator's command, which would change a host the experiment never touched."""
        assignment = (args["result"].get("experiment") or {}).get("assignment") or {}
        state = args["state"] or {}
        own = dict(args["result"])
        own["experiment"] = dict(own.get("experiment") or {}, outcome=state.get("outcome"),
                                 winner=state.get("winner"), message=_experiment.message(state, assignment))
        changed = [service for service in own.get("services") or [] if service.get("changed")]
        back = bool(changed) and host in _experiment.final_roll_back(state, assignment)
        if not back and not self._task.check_mode and args["state_dir"]:
            # The window is over for a host that keeps its arm (the winner's, an arm held for a person to look at):
            # its intent says so no longer (a later run would take it for a cut window), its record says the verdict.
            # A host going back records it with its revert.
            verdict = {"outcome": state.get("outcome"), "winner": state.get("winner"),
                       "arm": own["experiment"].get("arm")}
            for service in changed:
                self._write_record(args["state_dir"], service["unit"], {"experiment": verdict})
        if state.get("outcome") in ("hold", "not started"):
            own.update(state=_rollout.FAILED, reason=own["experiment"]["message"])
        return {"roll_back": back, "ansible_facts": {RESULT: own}}

    def _experiment_rollout(self, args, host):
        """The winner onto the rest of the fleet, batch by batch: every host not already on it (the control, the
        hosts of the other arms, now back), unless the operator asked for the verdict only."""
        config = self._experiment_config(args)
        results = self._results(args["hosts"])
        results[host] = args["result"]
        own = dict(args["result"], host=host, batch=list(args["batch"]))
        experiment = own.get("experiment") or {}
        winner = experiment.get("winner")
        stopped = _rollout.rollout_stopped(results, args["hosts"], args["max_fail_percentage"], args["batch"])
        start = bool(winner) and config["rollout"] and experiment.get("arm") != winner and \
            own.get("state") != _rollout.FAILED and not stopped
        if start:
            own.update(state=None, reason=None)
        elif stopped and winner:
            own.update(state=_rollout.NOT_STARTED, reason=stopped)
        return {"start": start, "arm": winner, "ansible_facts": {RESULT: own}}
