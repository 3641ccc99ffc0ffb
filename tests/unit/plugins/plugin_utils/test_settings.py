"""The role's variables converted to their types or refused by name (plugin_utils/_settings.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._settings import (
    PLAN_VARIABLES,
    normalize_settings,
    role_defaults,
    role_settings,
    settings_from_vars,
)

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


def _trusted(value):
    """A template as ansible-core reads it from an inventory or vars file: trusted (2.19 renders no other)."""
    try:
        from ansible.template import trust_as_template
    except ImportError:  # ansible-core < 2.19 renders every string
        return value
    return trust_as_template(value)


def _templar_of(variables):
    """A real Templar over these variables (the action's self._templar.template)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    return Templar(loader=DataLoader(), variables=variables).template


def test_the_settings_are_the_spec_variables_a_task_sees_each_templated():
    task_vars = {"sglang_dflash_block_size": _trusted("{{ size }}"), "size": 8, "sglang_dflash_algorithm": "DDTREE",
                 "sglang_dflash_environment": {"HF_HOME": _trusted("{{ home }}")}, "home": "/srv/hf",
                 "sglang_dflash_gateway_token": "secret", "unrelated": 1}
    settings = settings_from_vars(task_vars, _templar_of(task_vars))
    assert settings == {"block_size": 8, "algorithm": "DDTREE", "environment": {"HF_HOME": "/srv/hf"}}
    # Never the secrets (the tasks pass those to the one module that needs them); one not set takes its default.
    assert "gateway_token" not in settings and "draft_model_path" not in settings
    assert role_settings(settings)["draft_window_size"] == role_defaults()["draft_window_size"]


def test_the_plan_reads_every_variable_of_the_spec_but_the_secrets():
    assert "sglang_dflash_draft_model_path" in PLAN_VARIABLES and "sglang_dflash_block_size" in PLAN_VARIABLES
    assert not {"sglang_dflash_gateway_token", "sglang_dflash_drafter_token"} & set(PLAN_VARIABLES)


def test_a_value_that_cannot_be_templated_is_refused_by_its_name():
    task_vars = {"sglang_dflash_drafter": _trusted("{{ no_such_variable }}")}
    with pytest.raises(ValueError) as caught:
        settings_from_vars(task_vars, _templar_of(task_vars))
    assert str(caught.value).startswith("sglang_dflash_drafter cannot be templated (")
    assert "no_such_variable" in str(caught.value) and str(caught.value).endswith("this host has")
