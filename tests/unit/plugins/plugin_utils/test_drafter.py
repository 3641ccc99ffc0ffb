"""The drafter's config.json checks (plugin_utils/_drafter.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._drafter import (
    drafter_problems,
    host_drafter_problems,
)

DRAFTER = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5,
           "dflash_config": {"block_size": 16, "target_layer_ids": [1, 16, 31], "mask_token_id": 151669}}


def test_drafter_checks():
    assert drafter_problems(DRAFTER, 16) == ([], 16)
    assert drafter_problems(DRAFTER, None) == ([], 16)
    problems, block = drafter_problems(DRAFTER, 8)
    assert problems == ["the drafter was trained with block_size 16 but 8 was requested"] and block == 16
    top_level = {"architectures": ["DFlash2DraftModel"], "num_hidden_layers": 0, "block_size": 16,
                 "target_layer_ids": [], "conv_kernel_size": 3}
    problems = drafter_problems(top_level, 16)[0]
    assert "num_hidden_layers 0 is not an integer >= 1" in problems
    assert "target_layer_ids [] is not a non-empty list of integers >= 0" in problems
    assert "conv_kernel_size and conv_group_size must be set together" in problems
    assert drafter_problems({"architectures": ["DFlashDraftModel"], "text_config": {"num_hidden_layers": 2}},
                            16)[0] == ["config.json has no block_size (in dflash_config or at the top level)"]
    assert drafter_problems([], 16)[0] == ["config.json is not a JSON object"]


def test_a_drafter_directory_that_is_not_there_is_refused_unless_a_source_fetches_it_first():
    missing = {"draft_model": {"path": "/d/config.json", "dir_exists": False}}
    assert host_drafter_problems(missing, {"draft_model_path": "/d"}) == [
        "drafter directory /d does not exist on this host (sglang_dflash_draft_model_path)"]
    # Only a run that fetches nothing sees a source's copy missing (the fleet report): a deployment fetches it
    # first, and the checks read the copy's config.json.
    source = {"repo": "lab/qwen-dflash", "revision": "a" * 40}
    assert host_drafter_problems(missing, {"draft_model_path": "/d", "drafter": source}) == []
    assert host_drafter_problems({}, {"draft_model_path": None, "drafter": {"src": "/srv/d"}}) == []
    fetched = {"draft_model": {"path": "/d/config.json", "dir_exists": True, "config": DRAFTER}}
    assert host_drafter_problems(fetched, {"draft_model_path": "/d", "drafter": source, "block_size": 8}) == [
        "/d/config.json: the drafter was trained with block_size 16 but 8 was requested"]


def test_a_refusal_names_no_config_json_it_did_not_read():
    """No drafter path: the settings name the variable, nothing here; facts without a reading say so, naming no file."""
    assert host_drafter_problems({}, {"draft_model_path": None}) == []
    assert host_drafter_problems({}, {"draft_model_path": ""}) == []
    # Facts that failed are their own reason.
    assert host_drafter_problems({"failed": True, "msg": "boom"}, {"draft_model_path": "/d"}) == []
    for facts in ({}, {"draft_model": {"path": "/d/config.json", "dir_exists": True}}):
        problems = host_drafter_problems(facts, {"draft_model_path": "/d"})
        assert problems == ["the drafter in /d was not checked: the facts of this host hold no reading of its "
                            "config.json (sglang_dflash_draft_model_path)"]
        assert "config.json:" not in problems[0] and "not a JSON object" not in problems[0]
    # A config.json read and not an object is named by the path that was read.
    read = {"draft_model": {"path": "/d/config.json", "dir_exists": True, "config": [1]}}
    assert host_drafter_problems(read, {"draft_model_path": "/d"}) == [
        "/d/config.json: config.json is not a JSON object"]
