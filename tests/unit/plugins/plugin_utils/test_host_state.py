"""Where a switched host stands later (plugin_utils/_host_state.py): current, drifted, broken by a package change,
with real releases' flags (0.5.11 calls the draft window flag otherwise than 0.5.23)."""

import hashlib

from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import capabilities
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._host_state import (
    BROKEN,
    CURRENT,
    DRIFTED,
    NOT_SWITCHED,
    written_options,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._records import rollout_record
from plan_facts import NEXTN, SETTINGS, facts_for, flags

OPERATOR_FILES = {"/etc/systemd/system/sglang-qwen.service": "a" * 64}


def switched(line=NEXTN, version="0.5.23"):
    """(facts of the host after the switch, the record the switch kept)."""
    before = facts_for(line, version, package={"version": version, "record_sha256": "r" + version})
    before["unit"]["operator_files"] = dict(OPERATOR_FILES)
    plan = deployment_plan(before, SETTINGS)
    record = rollout_record(plan, before, {}, "switched", None, "2026-12-05T09:00:00Z")
    after = facts_for(line, version, package={"version": version, "record_sha256": "r" + version},
                      rollout_record=record)
    after["unit"]["operator_files"] = dict(OPERATOR_FILES)
    after["unit"]["managed_dropin"].update(exists=True, content=plan["files"]["config"]["content"])
    after["managed_env_file"] = {"exists": True, "sha256": hashlib.sha256(plan["env_content"].encode()).hexdigest()}
    return after, record


def state_of(facts):
    return deployment_plan(facts, SETTINGS)["switch_state"]


def test_a_host_never_switched():
    state = state_of(facts_for(NEXTN))
    assert state["state"] == NOT_SWITCHED and "playbooks/deploy_dflash.yml" in state["todo"]


def test_right_after_the_switch_the_host_is_current():
    facts, record = switched()
    assert "--speculative-draft-window-size" in record["written_options"]
    assert record["package"] == {"version": "0.5.23", "record_sha256": "r0.5.23"}
    assert record["operator_files"] == OPERATOR_FILES and record["stopped_units"] == ["train-qwen.service"]
    state = state_of(facts)
    assert state["state"] == CURRENT and state["notes"] == [], state


def test_an_edit_of_the_operators_unit_is_drift_naming_the_file():
    facts, _record = switched()
    edited = NEXTN.replace("--context-length 32768", "--context-length 65536")
    drifted = facts_for(edited, package=facts["package"], rollout_record=facts["rollout_record"])
    drifted["unit"].update(managed_dropin=facts["unit"]["managed_dropin"],
                           operator_files={"/etc/systemd/system/sglang-qwen.service": "b" * 64})
    drifted["managed_env_file"] = facts["managed_env_file"]
    state = state_of(drifted)
    assert state["state"] == DRIFTED
    assert "the operator's files changed since the switch (/etc/systemd/system/sglang-qwen.service)" in state["reason"]
    assert "re-run playbooks/deploy_dflash.yml" in state["todo"]


def test_other_role_variables_are_drift_too():
    facts, _record = switched()
    state = deployment_plan(facts, dict(SETTINGS, draft_window_size=8192))["switch_state"]
    assert state["state"] == DRIFTED and "the role's variables ask for something else" in state["reason"]


def test_an_environment_file_change_that_leaves_the_command_is_a_note():
    facts, _record = switched()
    facts["unit"]["operator_files"]["/etc/sglang/token.env"] = "c" * 64
    state = state_of(facts)
    assert state["state"] == CURRENT and "/etc/sglang/token.env" in state["notes"][0]


def test_a_downgrade_that_renames_a_written_flag_is_broken_with_the_new_name():
    facts, _record = switched()
    facts.update(flags={"list": flags("0.5.11")}, package={"version": "0.5.11", "record_sha256": "r0.5.11"})
    facts["capabilities"] = capabilities(flags("0.5.11"))
    state = state_of(facts)
    assert state["state"] == BROKEN, state
    assert state["reason"] == ("sglang 0.5.23 -> 0.5.11: the command in our drop-in passes "
                               "--speculative-draft-window-size, not a flag of sglang 0.5.11 (it is "
                               "--speculative-dflash-draft-window-size there), so sglang-qwen.service would fail at "
                               "its next restart")
    assert state["flag_problems"] == [{"flag": "--speculative-draft-window-size",
                                       "now": "--speculative-dflash-draft-window-size"}]


def test_a_reinstall_that_keeps_every_flag_is_a_note():
    facts, _record = switched()
    facts["package"] = {"version": "0.5.23", "record_sha256": "other"}
    state = state_of(facts)
    assert state["state"] == CURRENT
    assert state["notes"] == ["sglang 0.5.23 reinstalled (its RECORD changed) since the switch; every flag of the "
                              "command still exists"]


def test_written_options_through_a_shell_wrapper():
    content = ("[Service]\nExecStart=\nExecStart=/bin/bash -c 'source /root/ml-env/bin/activate && exec python -m "
               "sglang.launch_server --model-path /m --port 30001 --speculative-algorithm=DFLASH'\n")
    assert written_options(content) == ["--model-path", "--port", "--speculative-algorithm"]
    assert written_options(None) == [] and written_options("[Service]\nExecStart=\n") == []
