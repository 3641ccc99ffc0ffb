"""What a stop does (KillMode, TimeoutStopSec: ours only where the operator set none) and where the gateways know
a host, as the deployment plan decides them."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._messages import rollback_message
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import (
    deployment_plan,
    gateway_plan,
    stop_plan,
    time_span_seconds,
)
from test_switch_plan import NEXTN, SETTINGS, facts_for


@pytest.mark.parametrize("text, seconds", [
    ("45", 45), ("45s", 45), ("1min 30s", 90), ("5min 30s", 330), ("2h", 7200), ("500ms", 0.5),
    ("infinity", None), ("soon", None), ("5 parsecs", None),
])
def test_systemd_time_spans(text, seconds):
    assert time_span_seconds(text) == seconds


def test_our_stop_settings_when_the_operator_set_none():
    stop = stop_plan({"stop": {"operator_set": {}}}, {"drain_timeout": 300}, install=False)
    assert stop["lines"] == ["KillMode=mixed", "TimeoutStopSec=330"] and stop["drains"] and stop["notes"] == []
    assert stop["summary"].startswith("SIGTERM to the main process only (KillMode=mixed, ours)")


def test_the_operators_stop_settings_are_kept_and_what_they_do_is_said():
    stop = stop_plan({"stop": {"operator_set": {"KillMode": "control-group", "TimeoutStopSec": "45"}}},
                     {"drain_timeout": 300}, install=False)
    assert stop["lines"] == [] and stop["drains"] is False
    assert "requests in flight are cut" in stop["summary"] and "sglang#35202" in stop["notes"][0]
    short = stop_plan({"stop": {"operator_set": {"TimeoutSec": "45s"}}}, {"drain_timeout": 300}, install=False)
    assert short["lines"] == ["KillMode=mixed"]
    assert "TimeoutStopSec=45s (yours) is shorter than sglang_dflash_drain_timeout + 30 s (330 s)" in short["notes"][0]


def test_no_stop_settings_of_ours_when_switched_off():
    stop = stop_plan({"stop": {"operator_set": {}}}, {"stop_drain": False}, install=False)
    assert stop["lines"] == [] and "sglang_dflash_stop_drain=false" in stop["summary"]


def test_the_dropin_carries_the_stop_settings():
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, drain_timeout="120"))
    assert plan["files"]["config"]["content"].endswith("KillMode=mixed\nTimeoutStopSec=150\n")
    assert plan["gateway"] is None


def test_where_the_gateways_know_the_host():
    settings = {"gateway_urls": ["http://gw:30080/"], "gateway_host": "10.0.0.12"}
    assert gateway_plan(settings, 30001, 30002) == {
        "urls": ["http://gw:30080"], "worker_url": "http://10.0.0.12:30001", "new_worker_url": "http://10.0.0.12:30002"}
    assert gateway_plan(dict(settings, gateway_host="fd00::1"), 30001, 30001)["worker_url"] == "http://[fd00::1]:30001"
    explicit = gateway_plan(dict(settings, gateway_worker_url="http://127.0.0.1:31121/"), 30001, 30001)
    assert explicit["worker_url"] == explicit["new_worker_url"] == "http://127.0.0.1:31121"
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, **settings))
    assert plan["errors"] == [] and plan["gateway"]["worker_url"] == "http://10.0.0.12:30001"


@pytest.mark.parametrize("settings, message", [
    ({"gateway_urls": "http://gw:30080"}, "sglang_dflash_gateway_urls must be a list of http:// or https:// URLs"),
    ({"gateway_urls": ["gw:30080"]}, "sglang_dflash_gateway_urls must be a list of http:// or https:// URLs"),
    ({"gateway_worker_url": "10.0.0.12:30000"}, "sglang_dflash_gateway_worker_url must be an http:// or https://"),
    ({"drain_timeout": "0"}, "sglang_dflash_drain_timeout must be at least 1, not 0"),
    ({"stop_drain": "perhaps"}, "sglang_dflash_stop_drain must be true or false"),
])
def test_traffic_settings_are_checked_before_any_change(settings, message):
    plan = deployment_plan(facts_for(NEXTN), dict(SETTINGS, **settings))
    assert any(message in e for e in plan["errors"]), plan["errors"]


def test_the_rollback_message_says_where_the_host_is_in_rotation():
    plan = deployment_plan(facts_for(NEXTN), SETTINGS)
    outcome = {"failure": {"msg": "boom"}, "restarted": True, "old_ready": {"ready": True}, "rollback_s": 3,
               "journal": [], "rotation": "back in rotation"}
    assert "This host is back in rotation." in rollback_message(plan, facts_for(NEXTN), "h1", "DFLASH", outcome)
    outcome["rotation"] = None
    assert "rotation" not in rollback_message(plan, facts_for(NEXTN), "h1", "DFLASH", outcome)
