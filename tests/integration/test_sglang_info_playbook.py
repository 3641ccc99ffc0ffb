"""sglang_info through real ansible-playbook runs on real releases: one module run per host."""

import json

import pytest
from helpers import help_venv, sglang_venv

MODULE = "gpufleet.sglang.sglang_info"


def test_a_release_in_one_run(playbook, venvs, tmp_path):
    python = str(venvs["0.5.23"] / "bin" / "python")
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps({"dflash_config": {"block_size": 16}}))
    r = playbook.module(MODULE, {"service": "sglang-qwen", "python": python, "draft_model_path": str(drafter),
                                 "flags_method": "source", "related_units": ["train-qwen.service"]})
    assert not r.get("failed"), r.get("msg")
    assert r["python"] == python and r["python_from"] == "sglang_dflash_python"
    assert r["package"]["version"] == "0.5.23" and r["package"]["install"] == "regular"
    assert r["flags"]["method"] == "source" and r["flags"]["count"] > 500
    assert r["capabilities"]["supports_dflash"] and "DFLASH" in r["algorithms"]
    assert any(d["name"] == "DFlashWorkerV2" for d in r["implementation"]["definitions"])
    # The release's own limits, read from the installed wheel's source on the host.
    limits = dict((limit["source"], limit) for limit in r["limits"]["limits"])
    assert limits["sglang/srt/arg_groups/speculative_hook.py:320"]["id"] == "pipeline_parallel"
    assert limits["sglang/srt/arg_groups/attention_hook.py:203"]["id"] == "attention_backend_arch"
    assert r["limits"]["problems"] == []
    assert r["draft_model"]["config"] == {"dflash_config": {"block_size": 16}}
    assert r["gpus"]["nvidia_smi"] in ("missing", "present", "error")
    # The release's own launch_server.py recommends `sglang serve`, and the venv has the script.
    assert r["entry_point"]["recommended"] == "sglang serve"
    assert r["entry_point"]["console_script"] == str(venvs["0.5.23"] / "bin" / "sglang")


# The module's name before it followed the collection conventions (meta/runtime.yml plugin_routing) runs it too,
# as a plain redirect: no deprecation.
@pytest.mark.parametrize("name", [MODULE, "gpufleet.sglang.sglang_facts"])
def test_what_cannot_be_read_is_a_problem_not_a_failure(playbook, tmp_path, name):
    bad = tmp_path / "drafter"
    bad.mkdir()
    (bad / "config.json").write_text('{"block_size": 16,}')
    r = playbook.module(name, {"service": "sglang-nope", "python": "/nonexistent/python3",
                               "draft_model_path": str(bad)})
    assert not r.get("failed"), r.get("msg")
    assert not r.get("deprecations") and "DEPRECATION" not in r["_stdout"], r["_stdout"]
    assert "ansible_facts" not in r
    assert any("interpreter /nonexistent/python3" in p for p in r["problems"]), r["problems"]
    assert r["draft_model"]["error"].startswith("%s/config.json is not valid JSON" % bad)
    assert r["package"] is None and r["flags"] is None


def test_bad_options_fail_clearly(playbook):
    r = playbook.module(MODULE, {"timeout": -5})
    assert r.get("failed") and "timeout must be greater than 0, not -5" in r["msg"]


def test_release_without_a_recommended_entry_point(playbook):
    venv = sglang_venv("0.5.6")
    r = playbook.module(MODULE, {"python": str(venv / "bin" / "python"), "flags_method": "source"})
    assert r["package"]["version"] == "0.5.6"
    assert r["entry_point"]["recommended"] == "python -m sglang.launch_server"
    assert "does not recommend another entry point" in r["entry_point"]["why"]
    assert r["capabilities"]["supports_dflash"] is False


def test_flags_are_read_from_the_source_by_default_and_cross_checked_on_request(playbook):
    venv = help_venv("0.5.23")  # --help really runs here
    python = str(venv / "bin" / "python")
    r = playbook.module(MODULE, {"python": python})
    assert not r.get("failed"), r.get("msg")
    flags = r["flags"]
    assert flags["method"] == "source" and flags["fallback_reason"] is None and flags["source_check"] is None
    assert flags["warnings"] == [] and flags["count"] == 530 + 2

    r = playbook.module(MODULE, {"python": python, "flags_method": "cross_check"})
    flags = r["flags"]
    assert flags["method"] == "help" and flags["source_check"]["agrees"] is True and flags["count"] == 530 + 2
    # --help's stderr warning reaches the facts (and the fleet report), not the parser.
    assert flags["warnings"] == ["UserWarning: 'python -m sglang.launch_server' is still supported, but "
                                 "'sglang serve' is the recommended entrypoint."]
