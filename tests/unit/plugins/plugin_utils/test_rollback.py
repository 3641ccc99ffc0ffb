"""What the rollback of a failed switch did, from what its tasks registered (plugin_utils/_rollback.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._rollback import rollback_outcome, units_stopped_by_switch

# What tasks/rollback.yml registered after a switch whose new server crashed: the restart ran, the journal was read,
# the host was out of rotation 20 s and put back.
RAN = {"failure": {"msg": "crashed"}, "restart": {"changed": True}, "old_ready": {"ready": True},
       "journal": {"lines": ["a", "b"], "changed": False}, "rollback_started": "100.0", "now": 103.5,
       "out_of_rotation_at": "80.0", "out_of_rotation_s": 20.0, "back_failed": None}


@pytest.mark.parametrize("observed, rotation", [
    ({}, None),
    ({"taken_out_of_rotation": True, "back_in_rotation": True}, "back in rotation"),
    ({"taken_out_of_rotation": True, "back_in_rotation": True, "back_failed": "HTTP 503"},
     "left OUT of rotation: HTTP 503"),
    ({"taken_out_of_rotation": True}, "left OUT of rotation: the previous service is not healthy"),
])
def test_rollback_outcome_says_where_the_host_is_in_the_traffic(observed, rotation):
    assert rollback_outcome(observed)["rotation"] == rotation


def test_rollback_outcome_journal_and_readiness():
    crashed = rollback_outcome({"failure": {"msg": "crashed", "journal": ["a"]}, "journal_lines": ["b"],
                                "old_ready": {"skipped": True}, "rollback_s": "3.5", "restarted": True})
    assert crashed["journal"] == ["a"] and crashed["old_ready"] is None and crashed["rollback_s"] == 3.5
    gated = rollback_outcome({"failure": {"msg": "too slow"}, "journal_lines": ["b"], "old_ready": {"ready": True}})
    assert gated["journal"] == ["b"] and gated["old_ready"] == {"ready": True} and gated["restarted"] is False


def test_rollback_outcome_from_the_tasks_registered_results():
    outcome = rollback_outcome(RAN)
    assert outcome == {"failure": {"msg": "crashed"}, "restarted": True, "old_ready": {"ready": True},
                       "rollback_s": 3.5, "rotation": "back in rotation", "journal": ["a", "b"]}


@pytest.mark.parametrize("changes, restarted, rotation, journal", [
    ({"restart": {"skipped": True}, "journal": {"skipped": True}}, False, "back in rotation", []),
    ({"restart": {"changed": False}}, False, "back in rotation", ["a", "b"]),
    ({"out_of_rotation_s": None}, True, "left OUT of rotation: the previous service is not healthy", ["a", "b"]),
    ({"out_of_rotation_s": None, "back_failed": "HTTP 503"}, True, "left OUT of rotation: HTTP 503", ["a", "b"]),
    ({"out_of_rotation_at": None, "out_of_rotation_s": None}, True, None, ["a", "b"]),
    ({"failure": {"msg": "crashed", "journal": ["own"]}}, True, "back in rotation", ["own"]),
])
def test_rollback_outcome_of_skipped_tasks_and_each_place_in_the_traffic(changes, restarted, rotation, journal):
    outcome = rollback_outcome(dict(RAN, **changes))
    assert (outcome["restarted"], outcome["rotation"], outcome["journal"]) == (restarted, rotation, journal)


def test_rollback_time_without_a_start_is_zero():
    assert rollback_outcome(dict(RAN, rollback_started=None))["rollback_s"] == 0.0


def test_the_rollback_starts_only_the_units_this_switch_stopped_as_they_were():
    related = {"train.service": {"active_state": "active", "unit_file_state": "enabled"},
               "idle.service": {"active_state": "inactive", "unit_file_state": "disabled"},
               "eval.service": {"active_state": "active", "unit_file_state": "static"}}
    # The stop task's loop: train was stopped now; idle was already stopped (unchanged); eval was skipped.
    stopped = {"changed": True, "results": [{"item": "train.service", "changed": True},
                                            {"item": "idle.service", "changed": False},
                                            {"item": "eval.service", "skipped": True}]}
    assert units_stopped_by_switch(related, stopped) == [{"key": "train.service", "value": related["train.service"]}]
    # The stop task never ran (the switch failed before it): nothing to start.
    assert units_stopped_by_switch(related, {}) == []
    assert units_stopped_by_switch(related, {"skipped": True}) == []
    # In the order the units were gathered, not the stop order.
    both = dict(stopped, results=[{"item": "eval.service", "changed": True},
                                  {"item": "train.service", "changed": True}])
    assert [u["key"] for u in units_stopped_by_switch(related, both)] == ["train.service", "eval.service"]
