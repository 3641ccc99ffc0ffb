"""ansible-doc renders every module, every filter and the role of the installed collection, without warnings."""

import ast
import json
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
# Modules with an action plugin of the same name; those whose action needs no connection run on the controller
# alone (their module file holds only documentation).
ACTIONS = sorted(p.stem for p in (REPO / "plugins" / "action").glob("*.py") if p.stem != "__init__")
CONTROLLER_ONLY = sorted(n for n in ACTIONS
                         if "_requires_connection = False" in (REPO / "plugins" / "action" / (n + ".py")).read_text())


def filter_names():
    """The names FilterModule.filters() returns in plugins/filter/sglang.py, read without importing it."""
    tree = ast.parse((REPO / "plugins" / "filter" / "sglang.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "filters":
            returned = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)]
            return sorted(key.value for key in returned[0].keys)
    raise AssertionError("no FilterModule.filters() in plugins/filter/sglang.py")


FILTERS = filter_names()


def ansible_doc(env, kind, names, as_json=False):
    argv = ["ansible-doc", "-t", kind] + (["--json"] if as_json else []) + ["gpufleet.sglang." + n for n in names]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, "%s: rc=%s\n%s" % (" ".join(argv), proc.returncode, proc.stderr)
    # Any warning (an undocumented plugin, a fragment that does not merge, a bad markup) fails.
    assert proc.stderr.strip() == "", "%s printed on stderr:\n%s" % (" ".join(argv), proc.stderr)
    return json.loads(proc.stdout) if as_json else proc.stdout


def test_the_lists_are_complete():
    assert len(MODULES) >= 7 and "gpu_info" in MODULES
    assert 1 <= len(FILTERS) <= 6 and "sglang_redact" in FILTERS
    # ansible-doc finds a filter's documentation in plugins/filter/NAME.yml.
    assert [n for n in FILTERS if not (REPO / "plugins" / "filter" / (n + ".yml")).is_file()] == []


def test_every_module_renders(ansible_env):
    text = ansible_doc(ansible_env, "module", MODULES)
    for name in MODULES:
        assert "gpufleet.sglang.%s" % name in text
    docs = ansible_doc(ansible_env, "module", MODULES, as_json=True)
    assert sorted(docs) == ["gpufleet.sglang." + n for n in MODULES]
    assert "sglang_fleet_rows" in ACTIONS and CONTROLLER_ONLY == ["sglang_fleet_report"]
    assert [n for n in CONTROLLER_ONLY if "def main(" in (REPO / "plugins" / "modules" / (n + ".py")).read_text()] == []
    for name, doc in docs.items():
        short = name.split(".")[-1]
        doc = doc["doc"]
        # The attributes come from the doc fragment, merged with the module's own details.
        attributes = doc["attributes"]
        expected = ["check_mode", "diff_mode", "platform"] + (["action"] if short in ACTIONS else [])
        assert sorted(attributes) == sorted(expected), name
        assert all(a.get("description") and a.get("support") for a in attributes.values()), name
        if short in CONTROLLER_ONLY:
            assert attributes["platform"]["platforms"] == "posix" and "controller" in " ".join(
                attributes["platform"]["details"]), name
            continue
        assert attributes["platform"]["platforms"] == "linux", name
        assert any("Python 3.8" in r for r in doc["requirements"]), name


def test_the_old_names_are_the_renamed_modules(ansible_env):
    # meta/runtime.yml plugin_routing: each old name is a plain redirect (no deprecation warning) to a module.
    routes = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["plugin_routing"]["modules"]
    assert sorted(routes) == ["cli_flags", "sglang_facts", "source_search", "unit_journal"]
    docs = ansible_doc(ansible_env, "module", sorted(routes), as_json=True)
    for old, route in routes.items():
        assert sorted(route) == ["redirect"], old
        new = route["redirect"].split(".")[-1]
        assert new in MODULES and old not in MODULES and new.endswith("_info"), old
        assert docs["gpufleet.sglang." + old]["doc"]["module"] == new, old


@pytest.mark.parametrize("module, check_mode, diff_mode", [
    ("gpu_info", "The module only reads the host", "N/A"),
    ("cli_flags_info", "does not write the O(cache)", "N/A"),
    ("file_snapshot", "Reports what would change", "none"),
])
def test_module_details_win_over_the_fragment(ansible_env, module, check_mode, diff_mode):
    doc = ansible_doc(ansible_env, "module", [module], as_json=True)["gpufleet.sglang." + module]["doc"]
    assert check_mode in " ".join(doc["attributes"]["check_mode"]["details"])
    assert doc["attributes"]["diff_mode"]["support"] == diff_mode


def test_every_filter_renders(ansible_env):
    text = ansible_doc(ansible_env, "filter", FILTERS)
    docs = ansible_doc(ansible_env, "filter", FILTERS, as_json=True)
    assert sorted(docs) == ["gpufleet.sglang." + n for n in FILTERS]
    for name, doc in docs.items():
        assert name in text
        assert doc["doc"]["short_description"] and doc["doc"]["options"]["_input"]["required"], name
        assert doc["examples"] and doc["return"]["_value"]["type"], name


def test_the_role_renders(ansible_env):
    text = ansible_doc(ansible_env, "role", ["sglang_dflash"])
    assert "ENTRY POINT" in text and "sglang_dflash_algorithm" in text


def test_the_architecture_page_names_every_piece_the_code_has():
    """docs/architecture.md names each module, action, filter, controller module and task file the code has."""
    page = (REPO / "docs" / "architecture.md").read_text()
    pieces = MODULES + ACTIONS + FILTERS
    pieces += [p.stem for p in (REPO / "plugins" / "plugin_utils").glob("_*.py")]
    pieces += [p.name for p in (REPO / "roles" / "sglang_dflash" / "tasks").glob("*.yml")]
    pieces += [p.name for p in (REPO / "playbooks").glob("*.yml")]
    assert [name for name in pieces if "`%s`" % name not in page] == []


def test_the_docs_name_only_plugins_that_exist():
    """Every gpufleet.sglang.NAME in the README and docs/ is a module, a filter, the role, a playbook, an action group,
    or an old name meta/runtime.yml routes to a new one."""
    import re

    import yaml
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    routing = runtime.get("plugin_routing") or {}
    known = set(MODULES + FILTERS + ["sglang_dflash"] + [p.stem for p in (REPO / "playbooks").glob("*.yml")])
    known.update(name for kind in routing.values() for name in kind)
    # The action groups (module_defaults: group/gpufleet.sglang.NAME).
    known.update(runtime.get("action_groups") or {})
    named = set()
    for page in [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md")):
        named.update((page.name, n) for n in re.findall(r"gpufleet\.sglang\.([a-z_]+)", page.read_text()))
    assert sorted((page, n) for page, n in named if n not in known) == []
