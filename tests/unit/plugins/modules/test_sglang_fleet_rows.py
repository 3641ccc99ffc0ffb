"""sglang_fleet_rows is an action plugin (plugins/action/sglang_fleet_rows.py) that runs sglang_info on the host with
the task's options, plan_settings taken out: its module file holds only the documentation, whose options must be
sglang_info's, as sglang_info takes them, plus plan_settings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml
from ansible_collections.gpufleet.sglang.plugins.action import sglang_fleet_rows as action
from ansible_collections.gpufleet.sglang.plugins.doc_fragments.sglang_info import ModuleDocFragment
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_fleet_rows, sglang_info

from .module_runner import argument_spec, documented, modules_named


def options():
    """The documented options: the module's own and those of the sglang_info fragment it extends."""
    doc = documented(sglang_fleet_rows, "DOCUMENTATION")
    assert "gpufleet.sglang.sglang_info" in doc["extends_documentation_fragment"]
    merged = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"])
    merged.update(doc["options"])
    return merged


def test_the_module_file_is_documentation_only():
    assert not hasattr(sglang_fleet_rows, "main")


def test_the_options_are_sglang_infos_and_plan_settings():
    documented_options = options()
    plan_settings = documented_options.pop("plan_settings")
    # Optional: unset, the action reads the role's variables from the task's (_settings.settings_from_vars).
    assert (plan_settings["type"], plan_settings.get("required", False)) == ("dict", False)
    spec = argument_spec(sglang_info)
    assert sorted(documented_options) == sorted(spec)
    # Passed to sglang_info as they are: the same types, elements, choices and defaults.
    for name, option in spec.items():
        doc = documented_options[name]
        for key in ("type", "elements", "choices", "default"):
            assert doc.get(key) == option.get(key), (name, key)


def test_the_examples_use_documented_options_only():
    known = set(options())
    for task in documented(sglang_fleet_rows, "EXAMPLES"):
        args = task["gpufleet.sglang.sglang_fleet_rows"]
        assert set(args) <= known, task["name"]


def test_it_returns_the_rows_only():
    assert sorted(documented(sglang_fleet_rows, "RETURN")) == ["fleet_rows"]


def test_the_module_it_runs_is_sglang_info():
    # By its name or its old one, which meta/runtime.yml redirects.
    assert set(modules_named(action).values()) == {"sglang_info.py"}
