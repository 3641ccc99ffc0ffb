"""Quoting for units and environment files (plugin_utils/_unit_text.py)."""

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import (
    resolve_command,
    split_exec_start,
    split_words,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._unit_text import (
    UnsafeValue,
    environment_line,
    exec_start,
    render_exec_start,
    systemd_quote,
)

LAUNCHERS = ["sglang.launch_server"]


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


# ---- the command written back -------------------------------------------------------------------

def test_render_keeps_the_head_as_written_and_replaces_the_arguments():
    head = '-/usr/bin/env "PATH=/a b" /opt/venv/bin/python3 -m sglang.launch_server'
    prefix, words = split_exec_start(head.replace(" ", "  ", 1) + " --port 1")
    command = resolve_command(words, LAUNCHERS)
    assert render_exec_start(prefix, words, command, ["--port", "2", '"x y"']) == head + ' --port 2 "x y"'
    assert render_exec_start(prefix, words, command, []) == head


def test_render_in_a_shell_wrapper_rewrites_the_script_only_between_head_and_tail():
    head = "cd /srv && exec /opt/venv/bin/python3 -m sglang.launch_server"
    prefix, words = split_exec_start("/bin/bash -lc '%s --port 1 >>/log 2>&1' extra" % head)
    command = resolve_command(words, LAUNCHERS)
    assert render_exec_start(prefix, words, command, ["--port", "2"]) == (
        '/bin/bash -lc "%s --port 2 >>/log 2>&1" extra' % head)
    assert render_exec_start(prefix, words, command, []) == '/bin/bash -lc "%s >>/log 2>&1" extra' % head
