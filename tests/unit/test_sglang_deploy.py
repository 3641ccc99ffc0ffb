"""Quoting for units and environment files, drafter checks, the server's confirmation."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import split_words
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_deploy import (
    UnsafeValue,
    confirm_server_info,
    drafter_problems,
    environment_line,
    exec_start,
    systemd_quote,
)


@pytest.mark.parametrize("value", [
    "/models/x\nExecStartPre=/bin/rm -rf /",
    "/models/x\rUser=root",
    "tab\there",
])
def test_control_characters_are_refused(value):
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
    words = split_words("/usr/bin/x " + quoted)
    assert [w.value.replace("$$", "$").replace("%%", "%") for w in words] == ["/usr/bin/x", value]
    assert "$" not in quoted.replace("$$", "") and "%" not in quoted.replace("%%", "")


def test_exec_start_splits_back_to_the_argv():
    argv = ["/opt/ml-env/bin/python3", "-m", "sglang.launch_server", "--model-path", "/models/a b"]
    assert [w.value for w in split_words(exec_start(argv))] == argv


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
    top_level = {"architectures": ["DFlash2DraftModel"], "num_hidden_layers": 0, "block_size": 16,
                 "target_layer_ids": [], "conv_kernel_size": 3}
    problems = drafter_problems(top_level, 16)[0]
    assert "num_hidden_layers 0 is not an integer >= 1" in problems
    assert "target_layer_ids [] is not a non-empty list of integers >= 0" in problems
    assert "conv_kernel_size and conv_group_size must be set together" in problems
    assert drafter_problems({"architectures": ["DFlashDraftModel"], "text_config": {"num_hidden_layers": 2}},
                            16)[0] == ["config.json has no block_size (in dflash_config or at the top level)"]
    assert drafter_problems([], 16)[0] == ["config.json is not a JSON object"]


def test_server_info_confirmation():
    expected = {"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16}
    assert confirm_server_info({"speculative_algorithm": "DFLASH", "speculative_dflash_block_size": 16}, expected) == []
    assert confirm_server_info({"speculative_algorithm": None, "speculative_dflash_block_size": "16"}, expected) == [
        ["speculative_algorithm", "DFLASH", None]]
