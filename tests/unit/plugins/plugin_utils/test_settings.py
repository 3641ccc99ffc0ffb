"""The role's variables converted to their types or refused by name (plugin_utils/_settings.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import normalize_settings

VALID = {"draft_model_path": "/models/drafter", "algorithm": "DFLASH", "block_size": "16", "port": 30000,
         "min_speedup": "1.2", "speed_probe": "yes", "gateway_worker_url": ""}


def test_extra_vars_strings_are_converted():
    settings, problems = normalize_settings(VALID)
    assert problems == []
    assert settings["block_size"] == 16 and settings["min_speedup"] == 1.2 and settings["speed_probe"] is True
    assert settings["gateway_worker_url"] is None and settings["stop_drain"] is True  # a default when absent
    assert settings["tp_size"] is None  # unset integers are None


def test_a_drafter_source_stands_for_the_drafter_path():
    source = {"repo": "lab/qwen-dflash", "revision": "a" * 40}
    _settings, problems = normalize_settings(dict(VALID, draft_model_path=None, drafter=source))
    assert problems == []
    _settings, problems = normalize_settings(dict(VALID, draft_model_path=None))
    assert problems == ["sglang_dflash_draft_model_path is required (the drafter directory on the host), or "
                        "sglang_dflash_drafter (where it comes from)"]


@pytest.mark.parametrize("change, problem", [
    ({"block_size": "sixteen"}, "sglang_dflash_block_size must be an integer, not 'sixteen'"),
    ({"port": 70000}, "sglang_dflash_port must be between 1 and 65535, not 70000"),
    ({"min_speedup": "0"}, "sglang_dflash_min_speedup must be more than 0.0, not 0"),
    ({"min_accept_length": "nan"}, "sglang_dflash_min_accept_length must be at least 1.0, not nan"),
    ({"stop_drain": "maybe"}, "sglang_dflash_stop_drain must be true or false, not 'maybe'"),
    ({"draft_model_path": "None"}, "sglang_dflash_draft_model_path is required"),
    ({"algorithm": "EAGLE"}, "sglang_dflash_algorithm must be DFLASH or DDTREE, not 'EAGLE'"),
    ({"speed_probe": False}, "sglang_dflash_min_speedup need(s) the speed probe"),
    ({"gateway_urls": ["gw:30180"]}, "sglang_dflash_gateway_urls must be a list of http:// or https:// URLs"),
    ({"gateways": [{"kind": "haproxy", "url": "lb:9999", "backend": "b"}]},
     "sglang_dflash_gateways entry 1: a haproxy gateway's url must be its stats socket"),
    ({"gateways": [{"url": "http://gw:30180", "backend": "b"}]},
     "sglang_dflash_gateways entry 1: a smg gateway takes no backend"),
    ({"gateways": {"url": "http://gw:30180"}}, "sglang_dflash_gateways must be a list"),
    ({"block_size": 16, "draft_window_size": 8}, "sglang_dflash_draft_window_size (8) must be at least"),
])
def test_each_bad_value_is_refused_by_name(change, problem):
    _settings, problems = normalize_settings(dict(VALID, **change))
    assert any(p.startswith(problem) for p in problems), problems
