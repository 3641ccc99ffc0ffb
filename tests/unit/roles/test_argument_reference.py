"""docs/variables.md is what scripts/argument-reference.py makes of roles/sglang_dflash/meta/argument_specs.yml."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def reference_script():
    spec = importlib.util.spec_from_file_location("argument_reference", REPO / "scripts" / "argument-reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_variable_reference_matches_the_argument_spec():
    script = reference_script()
    assert (REPO / "docs" / "variables.md").read_text() == script.render(), (
        "docs/variables.md is stale: run .venv/bin/python scripts/argument-reference.py and commit it")


def test_the_reference_names_every_variable_of_every_entry_point_with_its_default():
    import yaml
    specs = yaml.safe_load((REPO / "roles" / "sglang_dflash" / "meta" / "argument_specs.yml").read_text())
    page = reference_script().render()
    for name, entry in specs["argument_specs"].items():
        assert "## Entry point `%s`" % name in page
        for option in entry.get("options") or {}:
            assert "`%s`" % option in page, option
    main = specs["argument_specs"]["main"]["options"]
    assert "### `sglang_dflash_block_size`\n\nint, default `16`." in page
    assert all("### `%s`" % option in page for option in main)


def test_markup_becomes_markdown():
    script = reference_script()
    assert script.markdown("the unit C(sglang@*) of M(gpufleet.sglang.sglang_facts), U(https://x)") == (
        "the unit `sglang@*` of `gpufleet.sglang.sglang_facts`, https://x")


def test_every_variable_the_playbooks_read_is_documented():
    """A variable of the playbooks is the role's (the argument spec) or documented in docs/playbook-variables.yml;
    private ones (a double underscore) and the collection's plugin names are not variables."""
    import re

    import yaml
    spec = yaml.safe_load((REPO / "roles" / "sglang_dflash" / "meta" / "argument_specs.yml").read_text())
    role = set(spec["argument_specs"]["main"]["options"])
    documented = yaml.safe_load((REPO / "docs" / "playbook-variables.yml").read_text())
    known = role | set(documented["variables"]) | set(documented["facts"])
    plugins = set(p.stem for kind in ("modules", "filter") for p in (REPO / "plugins" / kind).glob("sglang_*"))
    read = set()
    for playbook in (REPO / "playbooks").glob("*.yml"):
        read.update(re.findall(r"\b(sglang_(?:dflash|fleet)_[a-z][a-z_]*)", playbook.read_text()))
    assert sorted(read - known - plugins) == []
    # And each documented one is read by the playbooks it names.
    for name, variable in documented["variables"].items():
        for playbook in variable["playbooks"]:
            text = (REPO / "playbooks" / (playbook + ".yml")).read_text()
            assert name in text or "import_playbook: deploy_dflash.yml" in text, (name, playbook)
