"""The filter plugin is thin: each filter hands plain values to plugin_utils (tested there). Here: every filter
is registered and documented, and the filters with a rule of their own."""

from pathlib import Path

from ansible_collections.gpufleet.sglang.plugins.filter.sglang import FilterModule
from ansible_collections.gpufleet.sglang.plugins.filter.sglang_canary import FilterModule as CanaryFilters

FILTER_DIR = Path(__file__).resolve().parents[4] / "plugins" / "filter"


def test_every_filter_is_documented():
    filters = dict(FilterModule().filters(), **CanaryFilters().filters())
    assert sorted(filters) == sorted(p.stem for p in FILTER_DIR.glob("sglang_*.yml"))


def test_gpu_holders_allows_the_units_as_systemd_spells_them():
    holders = FilterModule().filters()["sglang_gpu_holders"]
    gpus = {"processes": [
        {"gpu_index": 0, "pid": 10, "process_name": "python", "unit": "sglang-qwen.service", "used_memory_mib": 9},
        {"gpu_index": 1, "pid": 11, "process_name": "python", "unit": None, "used_memory_mib": 5},
        {"gpu_index": 1, "pid": 12, "process_name": "torchrun", "unit": None, "unit_source": "process gone",
         "used_memory_mib": 4}]}
    assert holders(gpus, ["sglang-qwen"]) == ["GPU 1 pid 11 (python, no unit, 5 MiB)",
                                              "GPU 1 pid 12 (torchrun, exited meanwhile, 4 MiB)"]
    assert holders({"skipped": True}, ["sglang-qwen"]) == []


def test_unit_name():
    unit_name = FilterModule().filters()["sglang_unit_name"]
    assert unit_name("sglang-qwen") == "sglang-qwen.service" and unit_name("sglang@a.service") == "sglang@a.service"


def test_the_message_filters_take_ansibles_values():
    filters = FilterModule().filters()
    assert filters["sglang_gpus_busy_message"](("GPU 0 pid 1 (p, no unit, 1 MiB)",), 60, ("a.service",)) == (
        "GPUs still in use 60s after stopping a.service: GPU 0 pid 1 (p, no unit, 1 MiB)")
    assert filters["sglang_server_info_message"]([("k", 1, 2)], "/get_server_info") == (
        "the server is healthy but runs other speculative settings than asked (/get_server_info): k=2 (asked 1)")
    assert filters["sglang_speed_gates_message"]({"problems": ["p"], "summary": "s"}) == (
        "the new server is healthy but does not pass the speed gates: p (s)")


def test_the_canary_record_adds_the_verdict_to_the_hosts_record():
    add = dict(CanaryFilters().filters())["sglang_canary_record"]
    record = {"outcome": "switched", "unit": "sglang.service"}
    result = {"verdict": "pass", "action": "continue", "source": "scrape", "window_s": 20, "canary_hosts": ["a"],
              "baseline_hosts": ["b"], "figures": {"itl_p99": {"canary": 0.004, "baseline": 0.015}}, "failed": [],
              "message": "the canary passed, ..."}
    merged = add(record, result)
    assert merged["outcome"] == "switched" and record == {"outcome": "switched", "unit": "sglang.service"}
    assert merged["canary"]["verdict"] == "pass" and merged["canary"]["figures"] == result["figures"]
    assert add(record, {})["canary"] is None
