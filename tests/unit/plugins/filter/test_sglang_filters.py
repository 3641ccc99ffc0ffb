"""The filters are tools for a user's own tasks, thin over the code the actions use (tested there). Here: every filter
is registered and documented with an example, there are few of them, and each does what its example says."""

from pathlib import Path

import yaml
from ansible_collections.gpufleet.sglang.plugins.filter.sglang import FilterModule

FILTER_DIR = Path(__file__).resolve().parents[4] / "plugins" / "filter"
FILTERS = FilterModule().filters()


def test_every_filter_is_documented_with_an_example_and_there_are_few():
    assert sorted(FILTERS) == sorted(p.stem for p in FILTER_DIR.glob("sglang_*.yml"))
    assert len(FILTERS) <= 6
    for name in FILTERS:
        doc = yaml.safe_load((FILTER_DIR / (name + ".yml")).read_text())
        assert doc["DOCUMENTATION"]["name"] == name
        assert "gpufleet.sglang.%s" % name in doc["EXAMPLES"], name


def test_gpu_holders_allows_the_units_as_systemd_spells_them():
    holders = FILTERS["sglang_gpu_holders"]
    gpus = {"processes": [
        {"gpu_index": 0, "pid": 10, "process_name": "python", "unit": "sglang-qwen.service", "used_memory_mib": 9},
        {"gpu_index": 1, "pid": 11, "process_name": "python", "unit": None, "used_memory_mib": 5},
        {"gpu_index": 1, "pid": 12, "process_name": "torchrun", "unit": None, "unit_source": "process gone",
         "used_memory_mib": 4}]}
    assert holders(gpus, ["sglang-qwen"]) == ["GPU 1 pid 11 (python, no unit, 5 MiB)",
                                              "GPU 1 pid 12 (torchrun, exited meanwhile, 4 MiB)"]
    assert holders(gpus, ["sglang-qwen"], [0]) == []
    assert holders({"skipped": True}, ["sglang-qwen"]) == []


def test_redact_and_server_info_diff_do_what_their_examples_say():
    assert FILTERS["sglang_redact"](["--api-key sk-0123456789 --port 30000"], ["sk-0123456789"]) == [
        "--api-key ******** --port 30000"]
    assert FILTERS["sglang_server_info_diff"]({"speculative_num_draft_tokens": 8},
                                              {"speculative_num_draft_tokens": 16}) == [
        ["speculative_num_draft_tokens", 16, 8]]
    assert FILTERS["sglang_server_info_diff"]({"speculative_dflash_block_size": "16"},
                                              {"speculative_dflash_block_size": 16}) == []


def test_the_fleet_filters_read_the_reports_rows():
    rows = [{"host": "gpu-1", "status": "ready", "reasons": [], "facts": {}, "unit": "sglang.service"}]
    assert FILTERS["sglang_fleet_markdown"](rows).startswith("# ")
    assert "1 of 1 hosts" in FILTERS["sglang_fleet_view"](rows)["verdict"]
