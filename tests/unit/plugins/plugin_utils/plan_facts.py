"""What the plan tests share: real releases' flags (tests/fixtures/sglang/<release>/help.txt), the NEXTN command
of a hand-written unit, the facts of the host that runs it and the role's settings."""

from pathlib import Path

from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import resolve_command, split_exec_start
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import command_to_dict
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import plan_arguments
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._unit_text import render_exec_start

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "sglang"


LAUNCHERS = ["sglang.launch_server"]


INTENT = {"algorithm": "DFLASH", "draft_model_path": "/models/Qwen3.6-27B-DFlash", "block_size": 16,
          "draft_window_size": 4096}


NEXTN = ("/usr/bin/env /root/ml-env/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.6-27B "
         "--served-model-name qwen --port 30001 --mem-fraction-static 0.82 --context-length 32768 "
         "--trust-remote-code --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
         "--speculative-num-draft-tokens 4")


def flags(version):
    return cli_flags.help_flags((FIXTURES / version / "help.txt").read_text())[0]


def switch(line, version="0.5.23", **settings):
    prefix, words = split_exec_start(line)
    command = resolve_command(words, LAUNCHERS)
    context = "shell" if command["wrapper"] == "shell" else "systemd"
    plan = plan_arguments(flags(version), dict(INTENT, **settings), {"args": command["args"], "context": context})
    rendered = render_exec_start(prefix, words, command, plan["args_raw"]) if plan["args_raw"] is not None else None
    return plan, rendered


def facts_for(line, version="0.5.23", **extra):
    prefix, words = split_exec_start(line)
    command = resolve_command(words, LAUNCHERS)
    facts = {
        "problems": [], "python": command["python"], "algorithms": [],
        "unit": {"exists": True, "id": "sglang-qwen.service", "active_state": "active", "managed_by_us": False,
                 "exec_start": {"value": line, "prefix": prefix, "words": [[w.value, w.raw] for w in words]},
                 "command": command_to_dict(command), "later_exec_start_dropins": [],
                 "managed_dropin": {"path": "/etc/systemd/system/sglang-qwen.service.d/90-gpufleet-sglang.conf",
                                    "exists": False, "content": None}},
        "flags": {"list": flags(version)},
        "draft_model": {"path": "/d/config.json", "dir_exists": True,
                        "config": {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5,
                                   "dflash_config": {"block_size": 16}}},
        "gpus": {"nvidia_smi": "present", "processes": [
            {"pid": 7, "gpu_index": 0, "process_name": "python3", "unit": "train-qwen.service",
             "used_memory_mib": 30000}]},
        "related_units": {"train-qwen.service": {"exists": True, "active_state": "active",
                                                 "unit_file_state": "enabled"}},
        "managed_env_file": {"exists": False, "sha256": None},
    }
    facts.update(extra)
    return facts


SETTINGS = dict(INTENT, service_name="sglang-qwen", dropin_name="90-gpufleet-sglang.conf",
                env_file="/etc/sglang/sglang-qwen.env", stop_units=["train-qwen.service"], require_free_gpus=True,
                disable_stopped_units=True, environment={"HF_TOKEN": "hf_secret_value"}, health_timeout="60")


def ddtree_build_flags():
    """0.5.23's flags plus the budget flag of sgl-project/sglang PR #29907, as a patched build has it."""
    budget = {"name": "--speculative-ddtree-budget", "aliases": [], "takes_value": True, "metavar": None,
              "choices": None, "default": None, "hidden": False,
              "help": "DDTREE only. Tree expansion budget. Defaults to speculative_num_draft_tokens - 1."}
    return flags("0.5.23") + [budget]


def nextn_args():
    _prefix, words = split_exec_start(NEXTN)
    return {"args": resolve_command(words, LAUNCHERS)["args"], "context": "systemd"}
