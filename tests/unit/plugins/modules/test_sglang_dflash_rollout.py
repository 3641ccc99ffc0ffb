"""sglang_dflash_rollout is an action plugin (plugins/action/sglang_dflash_rollout.py) that takes the fleet's rollout
steps on the controller: its module file holds only the documentation, which must say what the action takes (its
ARGUMENT_SPEC) and the module it runs must exist."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.action import sglang_dflash_rollout as action
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_dflash_rollout

from .module_runner import REPO, documented, modules_named, spec_differences


def test_the_module_file_is_documentation_only():
    assert not hasattr(sglang_dflash_rollout, "main")


def test_the_documented_options_are_the_actions_argument_spec():
    assert spec_differences(sglang_dflash_rollout, action.ARGUMENT_SPEC) == []


def test_the_examples_use_documented_options_only():
    options = set(documented(sglang_dflash_rollout, "DOCUMENTATION")["options"])
    for task in documented(sglang_dflash_rollout, "EXAMPLES"):
        if "gpufleet.sglang.sglang_dflash_rollout" in task:
            assert set(task["gpufleet.sglang.sglang_dflash_rollout"]) <= options, task["name"]


def test_it_is_an_action_and_says_so():
    doc = documented(sglang_dflash_rollout, "DOCUMENTATION")
    assert doc["attributes"]["action"]["support"] == "full"


def test_the_modules_it_runs_exist():
    # By their names or by the names meta/runtime.yml redirects.
    ran = modules_named(action)
    assert {"sglang_run_state"} <= set(ran)
    assert [f for f in ran.values() if not (REPO / "plugins" / "modules" / f).is_file()] == []
