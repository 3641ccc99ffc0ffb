"""Planning the server command line on real releases' flags; quoting; drafter checks."""

import shlex
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_deploy import (
    UnsafeValue,
    confirm_server_info,
    drafter_problems,
    environment_line,
    exec_start,
    launch_plan,
    parse_exec_start,
    systemd_quote,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sglang"
SETTINGS = {
    "python": "/opt/ml-env/bin/python3", "launcher_module": "sglang.launch_server",
    "model_path": "/models/Qwen3.6-27B", "draft_model_path": "/models/Qwen3.6-27B-DFlash",
    "algorithm": "DFLASH", "block_size": 16, "draft_window_size": 4096, "host": "0.0.0.0", "port": 30000,
    "tp_size": 2, "extra_args": ["--mem-fraction-static", "0.85"],
}


def flags(version):
    return cli_flags.help_flags((FIXTURES / version / "help.txt").read_text())[0]


def pairs(argv):
    return dict(zip(argv[3::2], argv[4::2]))


@pytest.mark.parametrize("version, window_flag", [
    ("0.5.11", "--speculative-dflash-draft-window-size"),
    ("0.5.16", "--speculative-draft-window-size"),
    ("0.5.23", "--speculative-draft-window-size"),
])
def test_plan_uses_each_releases_own_flag_names(version, window_flag):
    plan = launch_plan(flags(version), SETTINGS)
    assert plan["errors"] == []
    argv = plan["argv"]
    assert argv[:3] == ["/opt/ml-env/bin/python3", "-m", "sglang.launch_server"]
    p = pairs(argv)
    assert p[window_flag] == "4096"
    assert p["--speculative-algorithm"] == "DFLASH"
    assert p["--speculative-dflash-block-size"] == "16"
    assert p["--tp-size"] == "2"
    assert argv[-2:] == ["--mem-fraction-static", "0.85"]
    written = {a for a in argv if a.startswith("--")}
    release = cli_flags.argparse_help.option_strings(flags(version))
    assert written <= release
    assert plan["expected_server_info"] == {
        "speculative_algorithm": "DFLASH", "speculative_draft_model_path": "/models/Qwen3.6-27B-DFlash",
        "speculative_dflash_block_size": 16, window_flag[2:].replace("-", "_"): 4096}


def test_release_without_dflash_is_refused_with_what_it_knows():
    plan = launch_plan(flags("0.5.6"), SETTINGS)
    assert plan["argv"] is None
    assert plan["errors"][0] == ("speculative algorithm DFLASH is not supported by this release "
                                 "(it knows EAGLE, EAGLE3, NEXTN, NGRAM, STANDALONE)")
    assert "no flag for block size in this release" in plan["errors"]
    assert "no flag for draft window size in this release" in plan["errors"]


def test_ddtree_needs_a_build_that_has_it():
    plan = launch_plan(flags("0.5.23"), dict(SETTINGS, algorithm="DDTREE"))
    assert plan["argv"] is None and "DDTREE is not supported" in plan["errors"][0]
    # A fork whose source defines DDTree, on a release that takes any registered name:
    plan = launch_plan(flags("0.5.23"), dict(SETTINGS, algorithm="DDTREE"), extra_algorithms=["DDTREE"])
    assert plan["errors"] == [] and pairs(plan["argv"])["--speculative-algorithm"] == "DDTREE"


def test_optional_settings_are_left_out():
    plan = launch_plan(flags("0.5.23"), dict(SETTINGS, draft_window_size=None, tp_size=1, extra_args=[]))
    written = [a for a in plan["argv"] if a.startswith("--")]
    assert "--speculative-draft-window-size" not in written and "--tp-size" not in written


@pytest.mark.parametrize("extra, message", [
    (["--mem_fraction_static", "0.8"], "--mem_fraction_static is not a flag of this release "
                                       "(did you mean --mem-fraction-static?)"),
    (["--speculative-algorithm", "EAGLE"], "--speculative-algorithm is set by the role"),
    (["--port=31000"], "--port is set by the role"),
    (["--no-such-flag-at-all"], "--no-such-flag-at-all is not a flag of this release"),
])
def test_extra_args_are_checked(extra, message):
    plan = launch_plan(flags("0.5.23"), dict(SETTINGS, extra_args=extra))
    assert plan["argv"] is None
    assert any(e.startswith(message) for e in plan["errors"]), plan["errors"]


def test_hidden_deprecated_alias_in_extra_args_names_the_replacement(tmp_path):
    import tarfile

    with tarfile.open(FIXTURES / "0.5.16" / "parser-sources.tar.xz") as tar:
        tar.extractall(tmp_path)
    help_list = flags("0.5.16")
    src = cli_flags.source_flags(str(tmp_path / "sglang"))[0]
    merged = cli_flags.merge_hidden(help_list, src)
    plan = launch_plan(merged, dict(SETTINGS, draft_window_size=None,
                                    extra_args=["--speculative-dflash-draft-window-size", "9"]))
    assert any("hidden, deprecated alias" in e and "use --speculative-draft-window-size" in e
               for e in plan["errors"]), plan["errors"]


@pytest.mark.parametrize("value", [
    "/models/x\nExecStartPre=/bin/rm -rf /",
    "/models/x\rUser=root",
    "tab\there",
])
def test_control_characters_are_refused(value):
    plan = launch_plan(flags("0.5.23"), dict(SETTINGS, draft_model_path=value))
    assert plan["argv"] is None and any("control character" in e for e in plan["errors"])
    with pytest.raises(UnsafeValue):
        systemd_quote(value)


@pytest.mark.parametrize("value", [
    "/models/with space/Qwen",
    "/models/$HOME/${PATH}",
    "/models/%n%i%%",
    'quote"and\\backslash',
    "semi;colon && rm -rf / | cat `id` $(id)",
    "",
])
def test_quoting_round_trips_without_expansion(value):
    quoted = systemd_quote(value)
    # systemd's own rules: $ and % are doubled, so nothing is expanded; quotes group words.
    assert parse_exec_start("/usr/bin/x " + quoted) == ["/usr/bin/x", value]
    assert "$" not in quoted.replace("$$", "") and "%" not in quoted.replace("%%", "")


def test_exec_start_of_a_plan_parses_back_to_the_argv():
    argv = launch_plan(flags("0.5.23"), dict(SETTINGS, model_path="/models/a b"))["argv"]
    assert parse_exec_start(exec_start(argv)) == argv
    assert shlex.split(exec_start(argv))[4] == "/models/a b"


def test_environment_lines():
    assert environment_line("HF_TOKEN", 'a"b\\c') == 'HF_TOKEN="a\\"b\\\\c"'
    with pytest.raises(UnsafeValue):
        environment_line("BAD-NAME", "x")
    with pytest.raises(UnsafeValue):
        environment_line("TOKEN", "x\nExecStart=/bin/sh")


DRAFTER = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5,
           "dflash_config": {"block_size": 16, "target_layer_ids": [1, 16, 31], "mask_token_id": 151669}}


def test_drafter_checks():
    assert drafter_problems(DRAFTER, 16) == ([], 16)
    assert drafter_problems(DRAFTER, None) == ([], 16)
    problems, block = drafter_problems(DRAFTER, 8)
    assert problems == ["the drafter was trained with block_size 16 but 8 was requested"] and block == 16
    top_level = {"num_hidden_layers": 0, "block_size": 16, "target_layer_ids": [], "conv_kernel_size": 3}
    problems = drafter_problems(top_level, 16)[0]
    assert "num_hidden_layers 0 is not an integer >= 1" in problems
    assert "target_layer_ids [] is not a non-empty list of integers >= 0" in problems
    assert "conv_kernel_size and conv_group_size must be set together" in problems
    assert drafter_problems({"text_config": {"num_hidden_layers": 2}}, 16)[0] == [
        "config.json has no block_size (in dflash_config or at the top level)"]
    assert drafter_problems([], 16)[0] == ["config.json is not a JSON object"]


def test_server_info_confirmation():
    expected = {"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16}
    assert confirm_server_info({"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16}, expected) == []
    assert confirm_server_info({"speculative_algorithm": None, "speculative_dflash_block_size": "16"}, expected) == [
        ["speculative_algorithm", "DFLASH", None]]
