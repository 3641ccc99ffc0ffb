"""sglang_fleet_report is an action plugin (plugins/action/sglang_fleet_report.py) that the controller runs itself:
its module file holds only the documentation, which must say what the action takes (its ARGUMENT_SPEC)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.action import sglang_fleet_report as action
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_fleet_report

from .module_runner import documented, spec_differences


def test_the_module_file_is_documentation_only():
    assert not hasattr(sglang_fleet_report, "main")
    names = set(n for n in vars(sglang_fleet_report) if not n.startswith("__"))
    assert names == {"DOCUMENTATION", "EXAMPLES", "RETURN", "absolute_import", "division", "print_function"}


def test_the_documented_options_are_the_actions_argument_spec():
    assert spec_differences(sglang_fleet_report, action.ARGUMENT_SPEC) == []


def test_it_runs_on_the_controller_alone():
    doc = documented(sglang_fleet_report, "DOCUMENTATION")
    assert doc["attributes"]["action"]["support"] == "full"
    assert doc["attributes"]["platform"]["platforms"] == "posix"
    assert action.ActionModule._requires_connection is False


def test_the_examples_use_documented_options_only():
    options = set(documented(sglang_fleet_report, "DOCUMENTATION")["options"])
    for task in documented(sglang_fleet_report, "EXAMPLES"):
        assert set(task["gpufleet.sglang.sglang_fleet_report"]) <= options, task["name"]
    assert documented(sglang_fleet_report, "RETURN")["written"]["returned"] == "with O(dest)"
