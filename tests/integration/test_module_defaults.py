"""module_defaults for the action group gpufleet.sglang.sglang (meta/runtime.yml), through ansible-playbook."""

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

TESTS = Path(__file__).resolve().parents[1]
FAKE = TESTS / "containers" / "fake-nvidia-smi"
GPUS = TESTS / "fixtures" / "nvidia-smi" / "h200x1.gpus.csv"
REPO = TESTS.parent


def slow(tmp_path, name, seconds, then, first_arg="*"):
    """A program that answers like `then`, after `seconds` when its first argument matches first_arg."""
    path = tmp_path / name
    path.write_text('#!/bin/sh\ncase "$1" in %s) sleep %s;; esac\nexec %s "$@"\n' % (first_arg, seconds, then))
    path.chmod(0o755)
    return path


def run_play(ansible_env, tmp_path, play):
    book = tmp_path / "play.yml"
    book.write_text(yaml.safe_dump([play], sort_keys=False))
    env = dict(ansible_env, GPUFLEET_FAKE_GPUS=str(GPUS), GPUFLEET_FAKE_SMI_MODE="")
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(book)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    out = tmp_path / "results.json"
    assert out.exists(), "the play did not save its results:\n%s\n%s" % (proc.stdout, proc.stderr)
    return json.loads(out.read_text())


def test_the_group_sets_timeout_for_each_module_of_it(ansible_env, tmp_path):
    smi = slow(tmp_path, "slow-nvidia-smi", 2, FAKE, first_arg="--query-gpu=*")
    python = slow(tmp_path, "slow-python", 2, sys.executable)
    play = {
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "module_defaults": {"group/gpufleet.sglang.sglang": {"timeout": 1}},
        "tasks": [
            {"name": "gpu_info gets the group's timeout", "gpufleet.sglang.gpu_info": {"nvidia_smi": str(smi)},
             "register": "by_group"},
            {"name": "python_package_info gets it too", "gpufleet.sglang.python_package_info": {"python": str(python)},
             "register": "probe", "ignore_errors": True},
            {"name": "a task's own value wins", "gpufleet.sglang.gpu_info": {"nvidia_smi": str(smi), "timeout": 30},
             "register": "own"},
            # A module's old name (meta/runtime.yml plugin_routing) resolves to the module, which is in the group.
            {"name": "cli_flags (the old name of cli_flags_info) gets it too",
             "gpufleet.sglang.cli_flags": {"argv": [str(python), "--help"]}, "register": "by_old_name",
             "ignore_errors": True},
            # Not in the group (no timeout option): the group's defaults do not reach it.
            {"name": "source_search_info is not in the group",
             "gpufleet.sglang.source_search_info": {"paths": [str(REPO / "plugins" / "filter")],
                                                    "terms": ["FilterModule"]},
             "register": "search"},
            {"name": "save", "ansible.builtin.copy": {
                "content": "{{ {'by_group': by_group, 'probe': probe, 'own': own, 'by_old_name': by_old_name, "
                           "'search': search} | to_json }}",
                "dest": str(tmp_path / "results.json"), "mode": "0600"}},
        ],
    }
    r = run_play(ansible_env, tmp_path, play)
    # 1 second, not gpu_info's default of 30: the slow nvidia-smi was killed.
    assert r["by_group"]["nvidia_smi"] == "error"
    assert r["by_group"]["error"].endswith("--query-gpu failed (timed out after 1s)"), r["by_group"]["error"]
    assert r["probe"]["failed"] and "did not answer within 1s (killed)" in r["probe"]["msg"], r["probe"]
    assert (r["own"]["nvidia_smi"], r["own"]["cuda_version"], r["own"]["gpu_count"]) == ("present", "13.0", 1)
    assert r["by_old_name"]["failed"] and "did not finish within 1s" in r["by_old_name"]["msg"], r["by_old_name"]
    assert not r["search"].get("failed") and r["search"]["missing_terms"] == [], r["search"]


def test_the_group_lists_the_modules_that_share_timeout():
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    group = runtime["action_groups"]["sglang"]
    # A module's old name, as the action may still run it: {old: new}.
    renamed = dict((old, route["redirect"].split(".")[-1])
                   for old, route in runtime.get("plugin_routing", {}).get("modules", {}).items())
    for module in group:
        source = (REPO / "plugins" / "modules" / (module + ".py")).read_text()
        # The options documented in the module or in the doc fragments of this collection it extends.
        fragments = [REPO / "plugins" / "doc_fragments" / (f + ".py")
                     for f in re.findall(r"^  - gpufleet\.sglang\.([a-z_]+)$", source, re.M)]
        documented = source + "".join(f.read_text() for f in fragments if f.is_file())
        # An action that only documents a module (sglang_fleet_rows) passes its options to the module it runs.
        runs = source
        if "def main(" not in source:
            action = (REPO / "plugins" / "action" / (module + ".py")).read_text()
            (ran,) = re.findall(r'module_name="gpufleet\.sglang\.([a-z_]+)"', action)
            runs = (REPO / "plugins" / "modules" / (renamed.get(ran, ran) + ".py")).read_text()
        assert "\n  timeout:\n" in documented and "timeout=dict(type=\"int\"" in runs, module
