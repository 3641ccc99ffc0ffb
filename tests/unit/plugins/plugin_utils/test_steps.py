"""A failed switch's rollback decided from how far the host's intent says it got (plugin_utils/_steps.py); the switch's
own steps are tested with the whole host's plan (test_host_plan.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._steps import STEP_KEYS, rollback_steps

PLAN = {"unit": "sglang-qwen.service", "mode": "switch", "starts_server": True, "old_active": True, "old_port": 30001,
        "own_stop_units": ["train-qwen.service"], "stop_units_now": ["train-qwen.service"]}
FACTS = {"related_units": {"train-qwen.service": {"active_state": "active", "unit_file_state": "enabled"}}}
GATEWAY = {"urls": ["http://gw:30180"], "worker_url": "http://10.0.0.5:30001"}


def test_every_step_key_is_unique():
    assert len(STEP_KEYS) == len(set(STEP_KEYS))


def test_a_failure_before_the_first_change_puts_the_host_back_in_rotation_and_nothing_else():
    intent = {"phase": "leaving_rotation", "gateway": GATEWAY, "leaving_rotation_at": 100.0}
    steps = rollback_steps(PLAN, FACTS, intent, {"msg": "drain timed out"}, hooks={"back": True})
    assert (steps["restore"], steps["stop_new"], steps["record"], steps["start_units"]) == (False, False, False, [])
    assert steps["rejoin"] and steps["rejoin_gateway"] and steps["rejoin_hook"]
    assert steps["rejoin_gateways"] == ["http://gw:30180"] and steps["left_rotation_at"] == 100.0


def test_a_failure_after_the_files_before_the_restart_restores_them_and_starts_the_units_it_stopped():
    intent = {"phase": "switching", "switching_at": 1.0, "stop_units": ["train-qwen.service"],
              "speed_before": {"measured": True}}
    steps = rollback_steps(PLAN, FACTS, intent, {"msg": "GPUs still in use"})
    assert steps["restore"] and not steps["stop_new"] and not steps["journal"] and not steps["record"]
    assert steps["start_units"] == [{"name": "train-qwen.service", "start": True, "enable": True}]
    assert steps["speed_before"] == {"measured": True} and steps["rejoin"] is False


def test_a_failure_after_the_restart_stops_the_new_server_reads_its_journal_and_records_the_rollback():
    intent = {"phase": "restarting", "switching_at": 1.0, "restarting_at": 2.0, "restarting_us": 123456}
    steps = rollback_steps(PLAN, FACTS, intent, {"msg": "crashed"})
    assert steps["stop_new"] and steps["restore"] and steps["record"] and steps["journal"]
    assert steps["journal_mark_us"] == 123456 and steps["restarted"] is True
    # The failure brought the journal already (sglang_wait_ready's): not read again.
    assert rollback_steps(PLAN, FACTS, intent, {"msg": "crashed", "journal": ["x"]})["journal"] is False


def test_check_mode_changes_nothing_and_a_revert_starts_no_unit():
    intent = {"phase": "restarting", "switching_at": 1.0, "restarting_at": 2.0}
    quiet = rollback_steps(PLAN, FACTS, intent, {}, check_mode=True)
    assert not any(quiet[k] for k in ("stop_new", "start_old", "start_units", "wait_old", "rejoin", "record"))
    assert rollback_steps(dict(PLAN, mode="revert"), FACTS, intent, {})["start_units"] == []
