# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_dflash_plan (documented in plugins/modules/sglang_dflash_plan.py): the controller's decision
for one host.

Reads the host once (gpufleet.sglang.sglang_info, with the options the settings imply) and decides on the controller
(plugin_utils/_host_plan.py): each service's plan and steps, the lines that show it, every reason to refuse it, the
gateway checks to make first; or the fleet report's rows; or where the drafters come from; or a failed switch's
rollback. The facts (about 230 KB a host, most of it the release's flags) are never kept as a host variable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _drafter_delivery, _host_plan, _speculation, _steps
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import run_name, stamped
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import given_or_task_settings, role_settings

FACTS_MODULE = "gpufleet.sglang.sglang_info"
SPECULATION_MODULE = "gpufleet.sglang.sglang_speculation_info"
ARGUMENT_SPEC = {
    # Unset (the role's tasks): the role's variables as this task sees them (_settings.settings_from_vars).
    "settings": {"type": "dict"},
    "mode": {"type": "str", "default": "deploy",
             "choices": ["deploy", "survey", "report", "verify", "drafters", "rollback"]},
    # Seconds of traffic the day-two check reads (verify: the settings' verify_window by default; report: none read
    # without it, one probe request per switched service with 0).
    "verify_window": {"type": "float"},
    # verify: the first verification of this run, whose services the revert or restart since then acted on.
    "previous": {"type": "dict"},
    # Over the settings: the state a playbook of the collection asks (a revert, a restart), and the only units to plan
    # (an empty list: none).
    "state": {"type": "str", "choices": ["present", "absent", "restarted"]},
    "units": {"type": "list", "elements": "str"},
    "drafters": {"type": "list", "elements": "dict"},
    "results": {"type": "list", "elements": "dict"},
    "plan": {"type": "dict"},
    "intent": {"type": "dict"},
    "failure": {"type": "dict"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True  # the facts module only reads; in check mode the steps that change plan nothing
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        task_vars = task_vars or {}
        host = task_vars.get("inventory_hostname")
        raw, problem = given_or_task_settings(args["settings"], task_vars, self._templar.template)
        if problem:
            result.update(failed=True, changed=False, msg=problem)
            return result
        settings = role_settings(raw, gateway_host=task_vars.get("ansible_host") or host)
        if args["state"]:
            settings["state"] = args["state"]
        if args["units"] is not None:
            settings.update(units=args["units"], units_only=True)
        mode = args["mode"]
        result["changed"] = False
        try:
            settings = _host_plan.with_arm(settings)
        except _host_plan.HostPlanError as exc:
            raise AnsibleActionFail("host %s: %s" % (host, exc)) from None
        if mode == "drafters":
            result.update(self._drafters(settings, host, args["results"]))
            return result
        if mode == "rollback":
            if not args["plan"]:
                raise AnsibleActionFail("mode=rollback needs the failed service's plan")
            result["steps"] = _steps.rollback_steps(args["plan"], args["plan"].get("facts"), args["intent"],
                                                    args["failure"], bool(self._task.check_mode), _hooks(settings))
            result["failure"] = args["failure"] or {}
            return result
        try:
            settings = _host_plan.resolve_drafters(settings, host, args["drafters"])
        except _host_plan.HostPlanError as exc:
            result.update(_refused(host, str(exc), mode))
            return result
        facts = self._facts(settings, task_vars)
        if mode == "verify":
            if facts.get("failed"):
                # A check that could not read the host is not a host with nothing to check.
                raise AnsibleActionFail("host %s: cannot verify, the host's services could not be read: %s"
                                        % (host, facts.get("msg") or "no message"))
            window = args["verify_window"] if args["verify_window"] is not None else settings.get("verify_window")
            verified = _host_plan.verification(host, self._speculation(host, facts, settings, window, task_vars),
                                               settings, args["previous"], bool(self._task.check_mode))
            result.update(verified, ansible_facts={"sglang_dflash_verify": verified})
            return result
        if mode == "report":
            result["fleet_rows"] = _host_plan.report_rows(host, facts, settings)
            if args["verify_window"] is not None:
                _host_plan.with_speculation(result["fleet_rows"], self._speculation(
                    host, facts, settings, args["verify_window"], task_vars))
            rows = {"host": host, "fleet_rows": result["fleet_rows"]}
            result["ansible_facts"] = {"sglang_dflash_result": stamped(rows)}
            return result
        decided = _host_plan.plan_host(facts, settings, host, bool(self._task.check_mode), _hooks(settings),
                                       run_name(), self._prompts(settings))
        result.update(decided)
        if mode == "survey":
            # What the rollout play needs of every host before its first batch (playbooks/deploy_dflash.yml).
            result["ansible_facts"] = {"sglang_dflash_result": stamped(_host_plan.survey(
                host, decided, settings, bool(self._task.check_mode)))}
            del result["services"]
        return result

    def _prompts(self, settings):
        """The lines of the operator's prompts file on the controller (sglang_dflash_speed_probe_prompts_file), found
        as the file lookup finds a file (the role's and the playbook's files directories, or an absolute path)."""
        path = settings.get("speed_probe_prompts_file")
        if not path or settings.get("speed_probe_prompts"):
            return []
        try:
            found = self._find_needle("files", path)
            with open(found) as handle:
                return [line.strip() for line in handle if line.strip()]
        except (AnsibleError, OSError) as exc:
            raise AnsibleActionFail("sglang_dflash_speed_probe_prompts_file %s cannot be read on the controller: %s"
                                    % (path, exc)) from None

    def _facts(self, settings, task_vars):
        facts = self._execute_module(module_name=FACTS_MODULE, module_args=_host_plan.facts_options(settings),
                                     task_vars=task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        if facts.get("unreachable"):
            raise AnsibleActionFail(facts.get("msg") or "the host could not be reached")
        return facts

    def _speculation(self, host, facts, settings, window, task_vars):
        """Each switched service's day-two verdict (plugin_utils/_speculation.py) from the evidence read on the host
        (gpufleet.sglang.sglang_speculation_info, one module run for all of them over one window)."""
        try:
            thresholds = _speculation.configure(settings.get("verify_thresholds"))
            _speculation.check_settings(settings)
        except _speculation.SpeculationSettingsError as exc:
            raise AnsibleActionFail("host %s: %s" % (host, exc)) from None
        servers, records, verdicts = _host_plan.verify_targets(facts, settings, time.time())
        if not servers:
            return verdicts
        observed = self._execute_module(module_name=SPECULATION_MODULE, task_vars=task_vars, module_args={
            "servers": servers, "window": window or 0, "probe": settings.get("verify_probe") or "no_traffic",
            "min_requests": thresholds["min_requests"]})
        self._remove_tmp_path(self._connection._shell.tmpdir)
        for evidence in observed.get("servers") or [dict(unit=s["unit"], metrics_problem=observed.get("msg"))
                                                    for s in servers]:
            verdicts.append(_speculation.judge(evidence, records.get(evidence["unit"]), thresholds))
        return verdicts

    @staticmethod
    def _drafters(settings, host, results):
        """Without results: each drafter source of the host once (from a mirror, from the controller). With the fetch
        and push results: what each gave, kept as the host's sglang_dflash_drafters."""
        try:
            if results is None:
                sources = _drafter_delivery.drafter_sources(settings.get("drafter"), settings.get("services"), host,
                                                            settings.get("draft_model_path"))
                return {"hub": [s for s in sources if s["source"].get("repo")],
                        "controller": [s for s in sources if s["source"].get("src")]}
            drafters = _drafter_delivery.drafter_report(results)
        except _drafter_delivery.DrafterSourceError as exc:
            raise AnsibleActionFail(str(exc)) from None
        # The store's old revisions are removed only beside a verified copy, and only when a number is kept.
        keep = settings.get("drafter_keep_revisions")
        collect = [d for d in drafters if d.get("verified")] if keep is not None else []
        return {"drafters": drafters, "collect": collect, "ansible_facts": {"sglang_dflash_drafters": drafters}}


def _hooks(settings):
    return {"out": bool(settings.get("out_of_rotation_tasks")), "back": bool(settings.get("back_in_rotation_tasks"))}


def _refused(host, reason, mode):
    """A host whose settings cannot be read at all: refused with the reason (a row of the report says it)."""
    if mode == "report":
        return {"msg": reason, "failed": True}
    return {"services": [], "refusals": [reason + " Nothing was changed on this host."], "lines": [],
            "gateway_checks": [], "restart_units": [], "nothing_to_do": False, "msg": reason}
