"""launch_command: systemd's words of an ExecStart, the shell and env wrappers, the interpreter and launcher
behind them (plugin_utils/_unit_text.py writes the command back with new server arguments)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import (
    UnitError,
    quote_word,
    resolve_command,
    resolve_launch,
    shebang_python,
    shell_segments,
    shell_tokens,
    split_exec_start,
    split_words,
    which,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import command_to_dict

LAUNCHERS = ["sglang.launch_server"]


def executable(path, text="#!/bin/sh\n"):
    path.write_text(text)
    path.chmod(0o755)
    return path


# ---- words ---------------------------------------------------------------------------------------

def test_words_keep_their_raw_text():
    prefix, words = split_exec_start('-/opt/py -m x --name "a b" ${TOKEN} %i \'q w\'')
    assert prefix == "-"
    assert [w.value for w in words] == ["/opt/py", "-m", "x", "--name", "a b", "${TOKEN}", "%i", "q w"]
    assert [w.raw for w in words][4:] == ['"a b"', "${TOKEN}", "%i", "'q w'"]
    with pytest.raises(UnitError, match="unbalanced"):
        split_words('/opt/py "unclosed')


def test_c_escapes_are_decoded_inside_and_outside_quotes():
    words = split_words(r'a\ b "tab\there" \$HOME "\x"')
    assert [w.value for w in words] == ["a b", "tab\there", "$HOME", "\\x"]
    assert [w.raw for w in words] == [r"a\ b", r'"tab\there"', r"\$HOME", r'"\x"']
    assert repr(words[0]) == "Word('a b')"


@pytest.mark.parametrize("value, quoted", [
    ("--port", "--port"),
    ("${TOKEN}", "${TOKEN}"),
    ("a b", '"a b"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("C:\\dir", '"C:\\\\dir"'),
    ("a;b", '"a;b"'),
    ("", '""'),
])
def test_quote_word_is_the_inverse_of_split_words(value, quoted):
    assert quote_word(value) == quoted
    assert [w.value for w in split_words(quote_word(value))] == [value]


def test_quote_word_refuses_control_characters():
    with pytest.raises(UnitError, match="control character"):
        quote_word("a\nb")


def test_exec_start_prefixes_and_one_command_only():
    prefix, words = split_exec_start("  +-/usr/bin/python3 -m x")
    assert prefix == "+-" and [w.value for w in words] == ["/usr/bin/python3", "-m", "x"]
    with pytest.raises(UnitError, match="several commands"):
        split_exec_start("/bin/true ; /bin/false")


# ---- shell scripts ---------------------------------------------------------------------------------

def test_shell_tokens_keep_positions_and_read_quotes():
    script = "cd /srv && exec python3 -m m --name 'a b' --x \"q\\\"t\" $(id -u) # a comment\nnext"
    tokens = shell_tokens(script)
    assert [(t["kind"], t["value"]) for t in tokens] == [
        ("word", "cd"), ("word", "/srv"), ("op", "&&"), ("word", "exec"), ("word", "python3"), ("word", "-m"),
        ("word", "m"), ("word", "--name"), ("word", "a b"), ("word", "--x"), ("word", 'q"t'),
        ("word", "$(id -u)"), ("op", "\n"), ("word", "next")]
    assert script[tokens[8]["start"]:tokens[8]["end"]] == "'a b'"
    assert [[t["value"] for t in s] for s in shell_segments(tokens)] == [
        ["cd", "/srv"], ["exec", "python3", "-m", "m", "--name", "a b", "--x", 'q"t', "$(id -u)"], ["next"]]


@pytest.mark.parametrize("script, quote", [("echo 'open", "'"), ('echo "open', '"')])
def test_shell_tokens_refuse_unbalanced_quotes(script, quote):
    with pytest.raises(UnitError, match="unbalanced %s quote" % quote):
        shell_tokens(script)


# ---- the interpreter --------------------------------------------------------------------------------

def test_which_searches_the_given_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "python3").write_text("not executable")
    found = executable(tmp_path / "b" / "python3")
    assert which("python3", "%s:%s" % (tmp_path / "a", tmp_path / "b")) == str(found)
    assert which("python3", str(tmp_path / "a")) is None
    assert which("/any/where/python3", str(tmp_path / "a")) == "/any/where/python3"


def test_shebang_python_reads_the_interpreter(tmp_path):
    direct = executable(tmp_path / "direct", "#!/opt/venv/bin/python3 -E\nimport sys\n")
    assert shebang_python(str(direct)) == "/opt/venv/bin/python3"
    through_env = executable(tmp_path / "env", "#!/usr/bin/env sh\n")
    assert which("sh", None) is not None
    assert shebang_python(str(through_env)) == which("sh", None)
    unknown = executable(tmp_path / "unknown", "#!/usr/bin/env no-such-interpreter-here\n")
    assert shebang_python(str(unknown)) is None
    for text in ("#!\n", "import sys\n"):
        assert shebang_python(str(executable(tmp_path / "other", text))) is None
    assert shebang_python(str(tmp_path / "missing")) is None


def test_resolve_launch_follows_exec_and_path_assignments(tmp_path):
    python = executable(tmp_path / "python3.12")
    values = ["PATH=%s" % tmp_path, "exec", "python3.12", "-u", "-m", "sglang.launch_server", "--port", "1"]
    assert resolve_launch(values, LAUNCHERS) == {
        "index_python": 2, "index_args": 6, "python": str(python), "launcher": "sglang.launch_server",
        "form": "python -m", "path_value": str(tmp_path)}
    assert resolve_launch(["python3", "-m", "other.module"], LAUNCHERS) is None
    assert resolve_launch(["python3", "-c", "pass"], LAUNCHERS) is None
    assert resolve_launch(["/venv/bin/sglang", "version"], LAUNCHERS) is None


# ---- the command behind ExecStart ---------------------------------------------------------------

def test_python_behind_env_with_assignments_and_options():
    _p, words = split_exec_start("/usr/bin/env -u DEBUG PATH=/opt/x/bin:/usr/bin PYTHONPATH=/src "
                                 "/root/ml-env/bin/python3 -u -X faulthandler -m sglang.launch_server --port 1")
    command = resolve_command(words, LAUNCHERS)
    assert (command["python"], command["wrapper"], command["form"]) == ("/root/ml-env/bin/python3", "env", "python -m")
    assert [w.value for w in command["args"]] == ["--port", "1"]


def test_console_script_resolves_to_its_interpreter(tmp_path):
    script = tmp_path / "sglang"
    script.write_text("#!/root/ml-env/bin/python3\nimport sys\n")
    script.chmod(0o755)
    _p, words = split_exec_start("%s serve --model-path /m --port 30000" % script)
    command = resolve_command(words, LAUNCHERS)
    assert (command["form"], command["python"], command["launcher"]) == (
        "console script", "/root/ml-env/bin/python3", "sglang serve")
    assert command_to_dict(command)["args"] == [["--model-path", "--model-path"], ["/m", "/m"],
                                                ["--port", "--port"], ["30000", "30000"]]


@pytest.mark.parametrize("line, message", [
    ("/usr/local/bin/run-sglang.sh --port 1", "set sglang_dflash_python"),
    ("/bin/bash -c 'cd /srv && ./start.sh'", "found no SGLang server command"),
    ("/usr/bin/env -S 'python3 -m sglang.launch_server'", "env -S"),
])
def test_unresolvable_commands_say_what_to_set(line, message):
    _p, words = split_exec_start(line)
    with pytest.raises(UnitError, match=message):
        resolve_command(words, LAUNCHERS)


def test_shell_wrapper_leaves_trailing_redirections_out_of_the_arguments():
    _p, words = split_exec_start("/bin/sh -c 'exec /opt/venv/bin/python3 -m sglang.launch_server --name \"a b\" "
                                 ">>/log 2>&1'")
    command = resolve_command(words, LAUNCHERS)
    assert (command["wrapper"], command["python"]) == ("shell", "/opt/venv/bin/python3")
    assert [(w.value, w.raw) for w in command["args"]] == [("--name", "--name"), ("a b", '"a b"')]
    _p, words = split_exec_start("/bin/sh -c 'exec /opt/venv/bin/python3 -m sglang.launch_server --a 1 2>/err --b 2'")
    with pytest.raises(UnitError, match="redirections between its arguments"):
        resolve_command(words, LAUNCHERS)


def test_empty_exec_start_is_refused():
    with pytest.raises(UnitError, match="ExecStart is empty"):
        resolve_command([], LAUNCHERS)
