"""sglang_run_state's main(): the intent written phase by phase (merged, the phases' times kept, mode 0600), cleared,
the record written or updated, the previous-state copy dropped, check mode writing nothing, the options that exclude
each other, and the refusals naming the host and the unit. The state directory is the test's own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_run_state

from .module_runner import always_returned, run_module

UNIT = "sglang-qwen.service"
GATEWAY = {"urls": ["http://gateway-1:30000"], "worker_url": "http://10.0.0.7:30000"}


@pytest.fixture
def state(tmp_path):
    return tmp_path / "state"


def run(state, check_mode=False, **args):
    return run_module(sglang_run_state, dict({"dir": str(state), "unit": UNIT}, **args), check_mode=check_mode)


def intent_file(state):
    return state / (UNIT + ".intent.json")


def record_file(state):
    return state / (UNIT + ".last-rollout.json")


def test_the_intent_phase_by_phase_then_the_record(state):
    done = run(state, intent={"phase": "leaving_rotation", "gateway": GATEWAY})
    assert not done.failed and done.result["changed"] is True and done.result["previous"] is None
    assert sorted(done.result) == sorted(always_returned(sglang_run_state) + ["changed"])
    first = json.loads(intent_file(state).read_text())
    assert first == done.result["intent"]
    assert (first["phase"], first["gateway"], first["unit"]) == ("leaving_rotation", GATEWAY, UNIT)
    assert intent_file(state).stat().st_mode & 0o777 == 0o600

    # A later phase merges; a skipped step's result keeps what the earlier phase wrote.
    done = run(state, intent={"phase": "restarting", "gateway": {"skipped": True}, "speed_before": None})
    after = json.loads(intent_file(state).read_text())
    assert done.result["previous"] == first
    assert (after["phase"], after["gateway"], after["started"]) == ("restarting", GATEWAY, first["started"])
    assert {"leaving_rotation_at", "leaving_rotation_us", "restarting_at", "restarting_us"} <= set(after)

    record = {"outcome": "switched", "algorithm": "DFLASH"}
    done = run(state, record=record, clear_intent=True)
    assert done.result["changed"] is True and done.result["intent"] is None and done.result["previous"] == after
    assert not intent_file(state).exists() and json.loads(record_file(state).read_text()) == record
    done = run(state, record_update={"canary": {"passed": True}})
    assert json.loads(record_file(state).read_text()) == dict(record, canary={"passed": True})


def test_check_mode_writes_nothing(state):
    done = run(state, check_mode=True, intent={"phase": "switching"})
    assert done.result["changed"] is True and done.result["intent"]["phase"] == "switching"
    assert not state.exists()
    done = run(state, check_mode=True, record={"outcome": "switched"})
    assert done.result["changed"] is True and not state.exists()


def test_nothing_to_do_is_no_change(state):
    done = run(state, clear_intent=True, record_update={"canary": {}})
    assert done.result["changed"] is False and done.result["previous"] is None


def test_the_previous_state_copy_is_dropped_with_the_record(state):
    (state / UNIT).mkdir(parents=True)
    (state / UNIT / "manifest.json").write_text("{}")
    done = run(state, check_mode=True, drop_snapshot=True)
    assert done.result["changed"] is True and (state / UNIT).is_dir()
    done = run(state, drop_snapshot=True)
    assert done.result["changed"] is True and not (state / UNIT).exists()


@pytest.mark.parametrize("intent, message", [
    ({"phase": "finishing"}, "an intent's phase must be one of leaving_rotation, switching, restarting, canary, "
                             "rolling_back, not 'finishing'"),
    ({"gateway": GATEWAY}, "an intent's phase must be one of leaving_rotation, switching, restarting, canary, "
                           "rolling_back, not None"),
])
def test_an_intent_without_a_known_phase_is_refused(state, intent, message):
    done = run(state, intent=intent)
    assert done.failed and done.msg == "host %s, unit %s: %s" % (socket.gethostname(), UNIT, message)
    assert not state.exists()


def test_an_intent_that_is_no_json_object_is_named(state):
    state.mkdir()
    intent_file(state).write_text("[]")
    done = run(state, intent={"phase": "canary"})
    assert done.failed and done.msg == "host %s, unit %s: %s is not a JSON object" % (
        socket.gethostname(), UNIT, intent_file(state))


def test_a_state_directory_that_cannot_be_made(tmp_path):
    (tmp_path / "file").write_text("")
    done = run(tmp_path / "file" / "state", intent={"phase": "switching"})
    assert done.failed and done.msg.startswith("host %s, unit %s: [Errno 20] Not a directory"
                                               % (socket.gethostname(), UNIT))


@pytest.mark.parametrize("args, message", [
    ({"intent": {"phase": "switching"}, "clear_intent": True},
     "parameters are mutually exclusive: intent|clear_intent"),
    ({"record": {}, "record_update": {}}, "parameters are mutually exclusive: record|record_update"),
    ({"clear_intent": "soon"}, "clear_intent"),
])
def test_bad_options(state, args, message):
    done = run(state, **args)
    assert done.failed and message in done.msg, done.msg
    assert not state.exists()


def test_dir_and_unit_are_required():
    done = run_module(sglang_run_state, {"intent": {"phase": "switching"}})
    assert done.failed and "missing required arguments: dir, unit" in done.msg
