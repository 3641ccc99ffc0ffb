"""cli_flags_info's main(): the options, the filter, --help's warnings as the task's warnings, check mode and the
cache, the failures. discover is mocked with SGLang 0.5.23's real flags (tests/fixtures/sglang), or runs for real on
a script that prints that release's real --help."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from pathlib import Path
from unittest import mock

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags, sglang_capabilities
from ansible_collections.gpufleet.sglang.plugins.modules import cli_flags_info

from .module_runner import Calls, always_returned, host_msg, run_module

HELP = Path(__file__).resolve().parents[3] / "fixtures" / "sglang" / "0.5.23" / "help.txt"
ARGV = ["/opt/ml-env/bin/python3", "-m", "sglang.launch_server", "--help"]
WARNING = ("UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended "
           "entrypoint.")


def discovered(warnings=()):
    """What discover returns for 0.5.23 read through --help, before the module's filter."""
    flags, info = cli_flags.help_flags(HELP.read_text())
    return {"flags": flags, "flag_count": len(flags), "method": "help", "prog": info["prog"], "cached": False,
            "raw_help_sha256": "0" * 64, "command": {"form": "python -m", "python": ARGV[0],
                                                     "module": "sglang.launch_server"},
            "package": {"version": "0.5.23"}, "capabilities": sglang_capabilities.capabilities(flags),
            "fallback_reason": "the source was not read: test", "warnings": list(warnings), "elapsed_s": 0.1}


@pytest.fixture
def discover(monkeypatch):
    """discover mocked: the calls are (params, check_mode); it returns reply(), a Mock (its return_value, or its
    side_effect raised)."""
    calls = Calls()
    calls.reply = mock.Mock(return_value=discovered())

    def mocked(params, check_mode):
        calls.append((dict(params), check_mode))
        return calls.reply()

    monkeypatch.setattr(cli_flags_info, "discover", mocked)
    return calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_discover_gets_every_option_with_its_default_and_check_mode(discover, check_mode):
    done = run_module(cli_flags_info, {"argv": ARGV}, check_mode=check_mode)
    assert not done.failed and done.result["changed"] is False
    ((params, mode),) = discover
    assert mode is check_mode
    assert params == {"argv": ARGV, "method": "auto", "source_dir": None, "timeout": 120, "environment": {},
                      "filter": None, "filter_type": "prefix", "cache": None, "max_output_bytes": 4194304}


def test_the_result_is_discovers_with_the_help_warnings_as_the_tasks_own(discover):
    discover.reply.return_value = discovered(warnings=[WARNING])
    done = run_module(cli_flags_info, {"argv": ARGV})
    assert done.warnings == [WARNING]
    # Ansible's own `warnings` of the task carry them: the module returns no key of that name itself.
    expected = discovered()
    del expected["warnings"]
    assert done.result == dict(expected, changed=False)
    assert set(always_returned(cli_flags_info)) - {"warnings"} <= set(done.result)
    assert done.result["flag_count"] == 530 and done.result["capabilities"]["supports_dflash"] is True


@pytest.mark.parametrize("pattern, filter_type", [("--speculative-", "prefix"), (r"^--speculative-\w", "regex")])
def test_the_filter_keeps_the_matching_flags_and_counts_them(discover, pattern, filter_type):
    done = run_module(cli_flags_info, {"argv": ARGV, "filter": pattern, "filter_type": filter_type})
    names = [f["name"] for f in done.result["flags"]]
    assert "--speculative-dflash-block-size" in names and "--model-path" not in names
    assert all(n.startswith("--speculative-") for n in names)
    assert done.result["flag_count"] == len(names) < 530
    # The capabilities are the release's, not the filtered list's.
    assert done.result["capabilities"] == discovered()["capabilities"]


def test_a_bad_regex_fails_before_anything_runs(discover):
    done = run_module(cli_flags_info, {"argv": ARGV, "filter": "--spec[", "filter_type": "regex"})
    assert done.failed and done.msg.startswith(host_msg("filter '--spec[' is not a valid regex: "))
    assert discover == []
    # As a prefix the same text is only text.
    done = run_module(cli_flags_info, {"argv": ARGV, "filter": "--spec["})
    assert not done.failed and done.result["flags"] == [] and done.result["flag_count"] == 0


def test_a_flags_error_fails_with_the_host_the_method_and_the_warnings(discover):
    discover.reply.side_effect = cli_flags.FlagsError(
        "python -m sglang.launch_server --help exited with rc=1: boom", warnings=[WARNING])
    done = run_module(cli_flags_info, {"argv": ARGV, "method": "help"})
    assert done.failed
    assert done.result == {"msg": host_msg("python -m sglang.launch_server --help exited with rc=1: boom"),
                           "method": "help"}
    assert done.warnings == [WARNING]


@pytest.mark.parametrize("args, message", [
    ({}, "missing required arguments: argv"),
    ({"argv": ARGV, "method": "guess"}, "value of method must be one of: auto, cross_check, help, source"),
    ({"argv": ARGV, "filter_type": "glob"}, "value of filter_type must be one of: prefix, regex"),
    ({"argv": ARGV, "timeout": "long"}, "timeout"),
    ({"argv": ARGV, "environment": ["PYTHONPATH=/x"]}, "environment"),
])
def test_bad_options_fail_before_discover(discover, args, message):
    done = run_module(cli_flags_info, args)
    assert done.failed and message in done.msg, done.msg
    assert discover == []


@pytest.fixture
def help_script(tmp_path):
    """A command that prints 0.5.23's real --help on stdout and the release's warning on stderr (no Python: the
    module reads the help, there is no source to read)."""
    script = tmp_path / "sglang-help"
    script.write_text("#!/bin/sh\ncat '%s'\necho \"/venv/lib/sglang/launch_server.py:9: %s\" >&2\n" % (HELP, WARNING))
    script.chmod(0o755)
    return script


def test_for_real_the_cache_is_written_outside_check_mode_only(help_script, tmp_path):
    cache = tmp_path / "cache"
    args = {"argv": [str(help_script), "--help"], "cache": str(cache), "filter": "--speculative-dflash-"}
    checked = run_module(cli_flags_info, args, check_mode=True)
    assert not checked.failed and checked.result["cached"] is False and not cache.exists()
    assert checked.result["method"] == "help" and checked.result["command"]["form"] is None
    assert "argv is neither 'PYTHON -m MODULE ...' nor a Python console script" in checked.result["fallback_reason"]
    assert checked.warnings == [WARNING]
    assert [f["name"] for f in checked.result["flags"]] == ["--speculative-dflash-block-size"]

    cold = run_module(cli_flags_info, args)
    assert cold.result["cached"] is False
    assert [p.name for p in cache.iterdir()] == [Path(cold.result["cache_file"]).name]
    warm = run_module(cli_flags_info, args)
    assert warm.result["cached"] is True and warm.result["cache_file"] == cold.result["cache_file"]
    # A hit shows the warnings again and filters the same.
    assert warm.warnings == [WARNING] and warm.result["flags"] == cold.result["flags"] == checked.result["flags"]
    assert warm.result["capabilities"]["flags"]["block_size"] == "--speculative-dflash-block-size"


def test_for_real_a_command_that_is_not_there(tmp_path):
    done = run_module(cli_flags_info, {"argv": [str(tmp_path / "nope"), "--help"]})
    assert done.failed and done.msg == host_msg("command %s not found or not executable; give the full path of the "
                                                "interpreter the service runs" % (tmp_path / "nope"))
    assert done.result["method"] == "auto"
