"""The argparse help parser on synthetic help texts that exercise each layout rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.argparse_help import (
    HelpParseError,
    filter_flags,
    option_strings,
    parse_help,
)

PY39_HELP = """usage: tool [-h] [-v] [--mode {fast,slow}] --name NAME
            [--items ITEMS [ITEMS ...]]

A description that is not a flag.

positional arguments:
  target                what to act on

optional arguments:
  -h, --help            show this help message and exit
  -v, --verbose         be chatty
  --mode {fast,slow}, -m {fast,slow}
                        how to run, a long help text that argparse wrapped onto
                        two lines (default: fast)
  --name NAME, --alias NAME
                        the name

Network:
  Options for the network.

  --port PORT           port to listen on (default: 30000)
  --enable-x, --no-enable-x
                        switch x on or off, with auto-
                        infer of the rest
  --items ITEMS [ITEMS ...]
"""


def by_name(flags):
    return {f["name"]: f for f in flags}


def test_python39_layout_groups_aliases_and_defaults():
    flags, info = parse_help(PY39_HELP)
    f = by_name(flags)
    assert info["prog"] == "tool"
    assert info["groups"] == ["positional arguments", "optional arguments", "Network"]
    assert f["--help"]["aliases"] == ["-h"] and f["--help"]["takes_value"] is False
    assert f["--verbose"]["aliases"] == ["-v"]
    assert f["--mode"]["aliases"] == ["-m"]
    assert set(f["--mode"]["choices"]) == {"slow", "fast"}
    assert f["--mode"]["default"] == "fast"
    assert f["--mode"]["help"].startswith("how to run, a long help text that argparse wrapped onto two lines")
    assert f["--name"]["aliases"] == ["--alias"] and f["--name"]["metavar"] == "NAME"
    assert f["--port"]["group"] == "Network" and f["--port"]["default"] == "30000"
    assert f["--enable-x"]["negated_by"] == "--no-enable-x" and f["--enable-x"]["takes_value"] is False
    assert f["--enable-x"]["help"] == "switch x on or off, with auto-infer of the rest"
    assert f["--items"]["metavar"] == "ITEMS [ITEMS ...]" and f["--items"]["help"] == ""
    # Positional arguments are not flags.
    assert "target" not in f
    assert option_strings(flags) == {"-h", "--help", "-v", "--verbose", "--mode", "-m", "--name", "--alias",
                                     "--port", "--enable-x", "--no-enable-x", "--items"}


def test_python310_options_title_and_choices_with_commas_inside_braces():
    text = "usage: x [-h]\n\noptions:\n  -h, --help  show help\n  --sampling {a,b,c}, --s {a,b,c}  pick\n"
    f = by_name(parse_help(text)[0])
    assert f["--sampling"]["aliases"] == ["--s"]
    assert f["--sampling"]["choices"] == ["a", "b", "c"]


def test_filter():
    flags = parse_help(PY39_HELP)[0]
    assert [f["name"] for f in filter_flags(flags, prefix="--n")] == ["--name"]
    assert [f["name"] for f in filter_flags(flags, regex=r"^-m$")] == ["--mode"]


@pytest.mark.parametrize("text", ["", "hello world\n", "usage: x\n\nno options here\n",
                                  "Traceback (most recent call last):\n  File x\n"])
def test_not_argparse_help(text):
    with pytest.raises(HelpParseError):
        parse_help(text)
