"""sglang_info's main(): gather gets every option (defaults included) and check mode, its facts are the result as
they are (no ansible_facts), and bad options fail before anything is read. host_facts.gather, which reads systemd,
the interpreter and the GPUs, is mocked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_info

from .module_runner import host_msg, run_module

DEFAULTS = {"service": "sglang", "services": None, "managed_env_dir": None, "managed_unit_dir": None,
            "rollout_record_dir": None, "python": None, "launcher_modules": ["sglang.launch_server"],
            "managed_dropin": None, "managed_env_file": None, "rollout_record": None, "managed_unit_file": None,
            "model_path": None, "draft_model_path": None, "user": None, "related_units": [],
            "search_terms": ["DFLASH", "DDTREE"], "flags_method": "auto", "flags_detail": "full", "cache": None,
            "timeout": 30, "help_timeout": 120, "max_output_bytes": 4194304, "nvidia_smi": None}
FACTS = {"sglang_units": [], "service": None, "unit": {"exists": False, "id": "sglang-qwen.service"},
         "python": None, "python_from": None, "package": None, "entry_point": None, "implementation": None,
         "flags": None, "capabilities": None, "algorithms": [], "limits": None, "gpus": {"nvidia_smi": "missing"},
         "related_units": {}, "problems": ["the unit sglang-qwen.service does not exist"], "elapsed_s": 0.2}


@pytest.fixture
def gather(monkeypatch):
    calls = []

    def gathered(params, check_mode):
        calls.append((dict(params), check_mode))
        return dict(FACTS)

    monkeypatch.setattr(sglang_info, "gather", gathered)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_gather_gets_every_option_and_its_facts_are_the_result(gather, check_mode):
    done = run_module(sglang_info, {"service": "sglang-qwen"}, check_mode=check_mode)
    assert not done.failed
    assert gather == [(dict(DEFAULTS, service="sglang-qwen"), check_mode)]
    # One return shape: the facts, registered by the task; nothing as ansible_facts.
    assert done.result == dict(FACTS, changed=False)
    assert "ansible_facts" not in done.result


def test_several_services_and_the_options_as_given(gather):
    services = [{"name": "sglang-qwen-a"}, {"name": "sglang@*", "draft_model_path": "/models/drafter"}]
    args = {"services": services, "managed_env_dir": "/etc/sglang", "rollout_record_dir": "/var/lib/gpufleet-sglang",
            "flags_method": "cross_check", "flags_detail": "plan", "related_units": ["train.service"], "timeout": 5,
            "help_timeout": 60,
            "max_output_bytes": 1024, "cache": "/var/cache/gpufleet-sglang"}
    assert not run_module(sglang_info, args).failed
    ((params, _check_mode),) = gather
    assert params == dict(DEFAULTS, **args)


@pytest.mark.parametrize("option", ["timeout", "help_timeout", "max_output_bytes"])
@pytest.mark.parametrize("value", [0, -5])
def test_numbers_that_must_be_more_than_0(gather, option, value):
    done = run_module(sglang_info, {option: value})
    assert done.failed and done.msg == host_msg("%s must be greater than 0, not %s" % (option, value))
    assert gather == []


@pytest.mark.parametrize("args, name", [
    ({"service": "system/sglang"}, "system/sglang"),
    ({"service": ""}, ""),
    ({"services": [{"name": "sglang-a"}, {"python": "/opt/env/bin/python3"}]}, None),
    ({"services": [{"name": ["sglang-a"]}]}, ["sglang-a"]),
])
def test_a_service_that_is_no_unit_name_or_pattern(gather, args, name):
    done = run_module(sglang_info, args)
    assert done.failed and done.msg == host_msg(
        "service %r is not a unit name such as sglang-qwen or a pattern such as sglang@* (each entry of services "
        "needs a name)" % (name,))
    assert gather == []


def test_an_empty_services_list_is_the_service(gather):
    assert not run_module(sglang_info, {"services": [], "service": "sglang-b"}).failed
    assert gather[0][0]["service"] == "sglang-b"


@pytest.mark.parametrize("args, message", [
    ({"flags_method": "fast"}, "value of flags_method must be one of: auto, cross_check, help, source"),
    ({"services": "sglang-a"}, "services"),
    ({"timeout": "soon"}, "timeout"),
    ({"plan_settings": {}}, "Unsupported parameters"),
])
def test_bad_options(gather, args, message):
    done = run_module(sglang_info, args)
    assert done.failed and message in done.msg, done.msg
    assert gather == []
