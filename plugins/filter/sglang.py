# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the sglang_dflash role and the fleet report use to decide, confirm, record and report a deployment.

Thin wrappers: the logic lives in plugins/plugin_utils (controller-only, unit-tested there); each filter
only turns Ansible's values into plain dicts and lists. Every filter is documented in plugins/filter/<name>.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemctl import unit_name
from ansible_collections.gpufleet.sglang.plugins.module_utils.unit_journal import redact
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import (
    _drafter,
    _drafter_delivery,
    _fleet_report,
    _gpus,
    _messages,
    _plan,
    _records,
    _revert_plan,
    _rollback,
    _rollout,
    _speed_gates,
)


def sglang_deployment_plan(facts, settings):
    """The change for one host from its sglang_facts and the role's settings (see _plan.deployment_plan)."""
    return _plan.deployment_plan(dict(facts or {}), dict(settings or {}))


def sglang_revert_plan(facts, settings):
    """The way back for one host: remove our drop-in and environment file (see _revert_plan.revert_plan)."""
    return _revert_plan.revert_plan(dict(facts or {}), dict(settings or {}))


def sglang_refusal_message(plan, facts, host, algorithm):
    """Why a host cannot take the deployment, naming the host, the unit and every reason."""
    return _messages.refusal_message(dict(plan or {}), dict(facts or {}), host, algorithm)


def sglang_gateway_refusal_message(plan, host, problem):
    """Why a host is refused when a gateway cannot take its service out of rotation (see _messages)."""
    return _messages.gateway_refusal_message(dict(plan or {}), host, problem)


def sglang_plan_lines(plan):
    """What a run changes on the host, line by line (the role shows it before the change)."""
    return _messages.plan_lines(dict(plan or {}))


def sglang_rollback_outcome(observed):
    """What the rollback of a failed switch did, from what the rollback tasks registered (see _rollback)."""
    return _rollback.rollback_outcome(dict(observed or {}))


def sglang_rollback_message(plan, facts, host, algorithm, outcome):
    """What failed in the switch and what the rollback put back (outcome: sglang_rollback_outcome's)."""
    return _messages.rollback_message(dict(plan or {}), dict(facts or {}), host, algorithm, dict(outcome or {}))


def sglang_gpus_busy_message(holders, timeout, stopped_units):
    """Why the new server is not started: what still holds its GPUs after the units were stopped."""
    return _messages.gpus_busy_message(list(holders or []), timeout, list(stopped_units or []))


def sglang_server_info_message(mismatch, endpoint):
    """Why a healthy new server is rolled back: the settings it runs other than asked (sglang_server_info_diff's)."""
    return _messages.server_info_message([list(m) for m in mismatch or []], endpoint)


def sglang_speed_gates_message(verdict):
    """Why a healthy new server is rolled back: the speed gates it does not pass (sglang_speed_verdict's)."""
    return _messages.speed_gates_message(dict(verdict or {}))


def sglang_host_result(plan, facts, host, observed):
    """What this run did on the host: the plan's change and what the run observed (see _records.host_result)."""
    return _records.host_result(dict(plan or {}), dict(facts or {}), host, dict(observed or {}))


def sglang_rollout_record(plan, facts, measurements, outcome, reason=None, when=None):
    """What a switch did and measured, as the host keeps it (see _records.rollout_record)."""
    return _records.rollout_record(dict(plan or {}), dict(facts or {}), dict(measurements or {}),
                                   outcome, reason, when)


def sglang_server_info_diff(info, expected):
    """[[key, wanted, reported]] where the running server differs from what was asked."""
    return _drafter.confirm_server_info(info or {}, expected or {})


def sglang_gpu_holders(gpus, allowed_units, gpu_indexes=None):
    """The GPU processes of units other than allowed_units (on gpu_indexes only, when given), for a message."""
    return _gpus.gpu_holders(dict(gpus or {}), set(unit_name(u) for u in allowed_units or []),
                             None if gpu_indexes is None else [int(i) for i in gpu_indexes])


def sglang_speed_verdict(after, before=None, min_accept_length=None, min_speedup=None):
    """Do the new server's speed figures pass the gates? The verdict plus a one-line summary."""
    after = dict(after or {})
    before = dict(before or {}) if before else None
    result = _speed_gates.verdict(after, before, min_accept_length, min_speedup)
    result["summary"] = _speed_gates.summary_line(after, before, result["speedup"], result.get("speedups"))
    return result


def sglang_redact(lines, secrets):
    """Lines with every secret value replaced by ********."""
    return redact(list(lines or []), list(secrets or []))


def sglang_unit_name(name):
    """The unit's name as systemd spells it: a bare name is a service."""
    return unit_name(name)


def sglang_fleet_row(facts, plan, host, algorithm):
    """One host of the fleet report from its facts and its plan (see _records.fleet_row)."""
    return _records.fleet_row(host, dict(facts or {}), dict(plan or {}), algorithm)


def sglang_fleet_rows(hostvars, hosts, gateway_reads=None, from_cache=False, now=None):
    """One report row per host, and each host's place in its gateways; or the rows kept in Ansible's fact cache
    (see _records.fleet_rows)."""
    return _records.fleet_rows(hostvars, hosts, gateway_reads, from_cache, now)


def sglang_rollout_stopped(hostvars, hosts, max_fail_percentage=0):
    """Why the rollout must not start another batch ('' to go on)."""
    return _rollout.rollout_stopped(hostvars, hosts, max_fail_percentage)


def sglang_rollout_summary(hostvars, hosts):
    """Lines per host after a rollout (see _messages.rollout_summary)."""
    return _messages.rollout_summary(hostvars, hosts)


def sglang_drafter_sources(role_drafter, services, host=None, draft_model_path=None):
    """The unique drafter sources of a host, each with the services that use it (see _drafter_delivery)."""
    try:
        return _drafter_delivery.drafter_sources(role_drafter, list(services or []), host, draft_model_path)
    except _drafter_delivery.DrafterSourceError as exc:
        raise AnsibleFilterError(str(exc)) from None


def sglang_drafter_report(results):
    """One record per drafter source: services, source, repo, revision, commit, path, verified, size."""
    try:
        return _drafter_delivery.drafter_report([dict(r) for r in results or []])
    except _drafter_delivery.DrafterSourceError as exc:
        raise AnsibleFilterError(str(exc)) from None


def sglang_drafter_expected(sources, store_dir):
    """The drafters of a run that fetches nothing: each source with the path of its copy in the store, if known."""
    return _drafter_delivery.expected_drafters([dict(s) for s in sources or []], store_dir)


def sglang_drafter_services(services, drafters):
    """sglang_dflash_services with the drafter path of each entry that names a drafter source."""
    return _drafter_delivery.apply_to_services(list(services or []), list(drafters or []))


def sglang_drafter_path(drafters, draft_model_path=None):
    """The drafter path of every service without one of its own (sglang_dflash_drafter's copy, or the path)."""
    return _drafter_delivery.role_path(list(drafters or []), draft_model_path)


def sglang_drafter_lines(drafters, host):
    """The deploy summary's lines of a host's drafters."""
    return _messages.drafter_lines(host, list(drafters or []))


def sglang_units_stopped_by_switch(related_units, stopped):
    """The related units this service's switch stopped, as dict2items gives them (see _rollback)."""
    return _rollback.units_stopped_by_switch(dict(related_units or {}), dict(stopped or {}))


def sglang_fleet_summary(rows, from_cache, report_dir):
    """The fleet picture's last line: how many can take the deployment, and where the report is."""
    return _fleet_report.fleet_report_line(list(rows or []), bool(from_cache), str(report_dir))


def sglang_fleet_markdown(rows):
    """The fleet report in Markdown (see _fleet_report.markdown)."""
    return _fleet_report.markdown(list(rows or []))


def sglang_fleet_view(rows):
    """What the fleet report's HTML page shows, computed (see _fleet_report.html_view)."""
    return _fleet_report.html_view(list(rows or []))


class FilterModule(object):
    def filters(self):
        return {
            "sglang_deployment_plan": sglang_deployment_plan,
            "sglang_revert_plan": sglang_revert_plan,
            "sglang_refusal_message": sglang_refusal_message,
            "sglang_gateway_refusal_message": sglang_gateway_refusal_message,
            "sglang_plan_lines": sglang_plan_lines,
            "sglang_rollback_outcome": sglang_rollback_outcome,
            "sglang_rollback_message": sglang_rollback_message,
            "sglang_gpus_busy_message": sglang_gpus_busy_message,
            "sglang_server_info_message": sglang_server_info_message,
            "sglang_speed_gates_message": sglang_speed_gates_message,
            "sglang_host_result": sglang_host_result,
            "sglang_server_info_diff": sglang_server_info_diff,
            "sglang_gpu_holders": sglang_gpu_holders,
            "sglang_rollout_record": sglang_rollout_record,
            "sglang_redact": sglang_redact,
            "sglang_speed_verdict": sglang_speed_verdict,
            "sglang_unit_name": sglang_unit_name,
            "sglang_fleet_row": sglang_fleet_row,
            "sglang_fleet_rows": sglang_fleet_rows,
            "sglang_rollout_stopped": sglang_rollout_stopped,
            "sglang_rollout_summary": sglang_rollout_summary,
            "sglang_drafter_sources": sglang_drafter_sources,
            "sglang_drafter_report": sglang_drafter_report,
            "sglang_drafter_expected": sglang_drafter_expected,
            "sglang_drafter_services": sglang_drafter_services,
            "sglang_drafter_path": sglang_drafter_path,
            "sglang_drafter_lines": sglang_drafter_lines,
            "sglang_units_stopped_by_switch": sglang_units_stopped_by_switch,
            "sglang_fleet_summary": sglang_fleet_summary,
            "sglang_fleet_markdown": sglang_fleet_markdown,
            "sglang_fleet_view": sglang_fleet_view,
        }
