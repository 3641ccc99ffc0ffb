"""A host's memory of a switch: intents merged and cleared, the record written, each file replaced in one step
(module_utils/run_state.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import run_state


def test_an_intent_is_merged_phase_by_phase_and_cleared_with_the_record(tmp_path):
    state = str(tmp_path)
    first = run_state.update(state, "sglang.service", intent={"phase": "leaving_rotation", "gateway": {"urls": ["u"]}})
    assert first["previous"] is None and first["intent"]["gateway"] == {"urls": ["u"]}
    assert first["intent"]["leaving_rotation_at"] == first["now"] and first["intent"]["leaving_rotation_us"] > 0
    assert oct(os.stat(run_state.intent_path(state, "sglang.service")).st_mode & 0o777) == "0o600"
    # A skipped step's result (or null) keeps what an earlier phase wrote.
    second = run_state.update(state, "sglang.service", intent={"phase": "switching", "speed_before": {"measured": 1}})
    third = run_state.update(state, "sglang.service", intent={"phase": "switching", "speed_before": {"skipped": True},
                                                              "stop_units": None})
    assert third["previous"] == second["intent"]
    assert third["intent"]["speed_before"] == {"measured": 1} and "stop_units" not in third["intent"]
    assert third["intent"]["gateway"] == {"urls": ["u"]} and third["intent"]["phase"] == "switching"
    done = run_state.update(state, "sglang.service", record={"outcome": "switched"}, clear_intent=True)
    assert done["changed"] and done["intent"] is None and done["previous"]["phase"] == "switching"
    assert not os.path.exists(run_state.intent_path(state, "sglang.service"))
    with open(run_state.record_path(state, "sglang.service")) as handle:
        assert json.load(handle) == {"outcome": "switched"}


def test_a_dry_run_writes_nothing_and_the_snapshot_goes_with_the_record(tmp_path):
    state = str(tmp_path)
    run_state.update(state, "a.service", intent={"phase": "canary"}, dry_run=True)
    assert os.listdir(state) == []
    os.makedirs(os.path.join(state, "a.service"))
    (tmp_path / "a.service" / "manifest.json").write_text("{}")
    result = run_state.update(state, "a.service", record={"x": 1}, clear_intent=True, drop_snapshot=True)
    assert result["changed"] and not os.path.exists(os.path.join(state, "a.service"))
    assert run_state.update(state, "a.service", clear_intent=True)["changed"] is False


def test_a_bad_phase_or_a_damaged_intent_is_named(tmp_path):
    with pytest.raises(run_state.RunStateError, match="phase must be one of"):
        run_state.update(str(tmp_path), "a.service", intent={"phase": "halfway"})
    (tmp_path / "a.service.intent.json").write_text("[1, 2")
    with pytest.raises(run_state.RunStateError, match="a.service.intent.json cannot be read as JSON"):
        run_state.read_json(str(tmp_path / "a.service.intent.json"))


def test_a_record_update_merges_into_the_record_there_and_needs_one(tmp_path):
    state = str(tmp_path)
    assert run_state.update(state, "a.service", record_update={"canary": {"verdict": "pass"}})["changed"] is False
    run_state.update(state, "a.service", record={"outcome": "switched", "canary": None})
    run_state.update(state, "a.service", record_update={"canary": {"verdict": "pass"}})
    assert run_state.read_json(run_state.record_path(state, "a.service")) == {"outcome": "switched",
                                                                              "canary": {"verdict": "pass"}}
