"""Real SGLang releases (fixtures captured from PyPI wheels): flags, source mode, capabilities."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags, result_cache
from ansible_collections.gpufleet.sglang.plugins.module_utils.argparse_help import option_strings
from ansible_collections.gpufleet.sglang.plugins.module_utils.argparse_source import (
    SourceReadError,
    flags_from_source,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import capabilities

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "sglang"
RELEASES = ["0.5.6", "0.5.11", "0.5.16", "0.5.23"]


@pytest.fixture(scope="module")
def sources(release_sources):
    return release_sources


def help_flags(version):
    return cli_flags.help_flags((FIXTURES / version / "help.txt").read_text())[0]


@pytest.mark.parametrize("version", RELEASES)
def test_source_and_help_give_the_same_option_strings(version, sources):
    src, files = cli_flags.source_flags(str(sources[version]))
    check = cli_flags.compare(help_flags(version), src)
    assert check == {"agrees": True, "help_only": [], "source_only": []}
    assert any(f.endswith("server_args.py") for f in files)


@pytest.mark.parametrize("version", RELEASES)
def test_source_and_help_agree_on_which_flags_take_values(version, sources):
    src = {f["name"]: f for f in cli_flags.source_flags(str(sources[version]))[0]}
    disagree = [f["name"] for f in help_flags(version)
                if f["name"] in src and src[f["name"]]["takes_value"] != f["takes_value"]]
    assert disagree == []


EXPECTED = {
    "0.5.6": {
        "count": 289, "dflash": False, "algorithms": ["EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE"],
        "block_size": None, "draft_window_size": None, "deprecated": {},
    },
    "0.5.11": {
        "count": 375, "dflash": True, "algorithms": ["DFLASH", "EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE"],
        "block_size": "--speculative-dflash-block-size",
        "draft_window_size": "--speculative-dflash-draft-window-size", "deprecated": {},
    },
    "0.5.16": {
        "count": 458, "dflash": True,
        "algorithms": ["DFLASH", "DSPARK", "EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE"],
        "block_size": "--speculative-dflash-block-size", "draft_window_size": "--speculative-draft-window-size",
        "deprecated": {"--speculative-dflash-draft-window-size": "--speculative-draft-window-size"},
    },
    "0.5.23": {
        "count": 530, "dflash": True,
        "algorithms": ["DFLASH", "DSPARK", "EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE", "UNO"],
        "block_size": "--speculative-dflash-block-size", "draft_window_size": "--speculative-draft-window-size",
        "deprecated": {},
    },
}


@pytest.mark.parametrize("version", RELEASES)
def test_capabilities_per_release(version, sources):
    want = EXPECTED[version]
    flags = help_flags(version)
    assert len(flags) == want["count"]
    src = cli_flags.source_flags(str(sources[version]))[0]
    for merged in (cli_flags.merge_hidden(flags, src), src):
        caps = capabilities(merged)
        assert caps["speculative_algorithms"] == want["algorithms"]
        assert caps["supports_dflash"] is want["dflash"]
        assert caps["supports_ddtree"] is False
        assert caps["flags"]["algorithm"] == "--speculative-algorithm"
        assert caps["flags"]["draft_model_path"] == "--speculative-draft-model-path"
        assert caps["flags"]["block_size"] == want["block_size"]
        assert caps["flags"]["draft_window_size"] == want["draft_window_size"]
        assert caps["flags"]["num_draft_tokens"] == "--speculative-num-draft-tokens"
        assert caps["deprecated_aliases"] == want["deprecated"]
        # Never point an intent at a hidden (deprecated) name.
        assert not set(caps["flags"].values()) & set(caps["deprecated_aliases"])


def test_only_the_source_sees_the_hidden_deprecated_alias(sources):
    src = cli_flags.source_flags(str(sources["0.5.16"]))[0]
    hidden = {f["name"] for f in src if f["hidden"]}
    assert "--speculative-dflash-draft-window-size" in hidden
    assert "--speculative-dflash-draft-window-size" not in option_strings(help_flags("0.5.16"))
    assert "--speculative-dflash-draft-window-size" not in {f["name"] for f in
                                                            cli_flags.source_flags(str(sources["0.5.23"]))[0]}


def test_ddtree_in_a_patched_build_is_detected():
    builtins = "Builtins: EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH,"
    text = (FIXTURES / "0.5.23" / "help.txt").read_text().replace(builtins, builtins + " DDTREE,")
    caps = capabilities(cli_flags.help_flags(text)[0])
    assert caps["supports_ddtree"] is True and caps["supports_dflash"] is True


def test_source_reader_rules():
    src = '''
import argparse
from typing import Annotated as A, Literal, Optional
class Fields:
    model_path: A[str, "Path."]
    tp_size: A[int, Arg(help="TP.", cli_name="--tensor-parallel-size", aliases=["--tp-size"])] = 1
    internal: A[int, Arg(no_cli=True)] = 0
    plain: int = 3
    flag: A[bool, "Switch."] = False
    mode: A[Optional[Literal["a", "b"]], "Mode."] = None
    toggle: A[bool, Arg(help="T.", action=argparse.BooleanOptionalAction)] = True
def add(parser):
    parser.add_argument("--old-name", dest="new", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--verbose", "-v", action="store_true", help="v")
'''
    flags = {f["name"]: f for f in flags_from_source(src, "x.py")}
    assert set(flags) == {"--model-path", "--tensor-parallel-size", "--flag", "--mode", "--toggle", "--old-name",
                          "--verbose"}
    assert flags["--tensor-parallel-size"]["aliases"] == ["--tp-size"]
    assert flags["--flag"]["takes_value"] is False and flags["--model-path"]["takes_value"] is True
    assert flags["--mode"]["choices"] == ["a", "b"]
    assert flags["--toggle"]["negated_by"] == "--no-toggle"
    assert flags["--old-name"]["hidden"] is True and flags["--old-name"]["help"] is None
    assert flags["--verbose"]["aliases"] == ["-v"] and flags["--verbose"]["takes_value"] is False
    with pytest.raises(SourceReadError):
        flags_from_source("def broken(:\n", "bad.py")
    with pytest.raises(SourceReadError):
        cli_flags.source_flags("/nonexistent/sglang")


def test_cache_key_follows_the_files_that_define_the_flags(tmp_path):
    record = tmp_path / "RECORD"
    record.write_text("a")
    argv = ["/usr/bin/python3", "-m", "sglang.launch_server", "--help"]
    package = {"version": "0.5.23", "dist_info": str(tmp_path)}
    key = cli_flags.cache_key(argv, {}, package, [str(record)])
    assert key == cli_flags.cache_key(argv, {}, package, [str(record)])
    assert key != cli_flags.cache_key(argv, {}, dict(package, version="0.5.22"), [str(record)])
    assert key != cli_flags.cache_key(argv, {"PYTHONPATH": "/x"}, package, [str(record)])
    record.write_text("ab")
    assert key != cli_flags.cache_key(argv, {}, package, [str(record)])
    path = result_cache.cache_write(str(tmp_path / "cache"), key, {"flags": [1]})
    assert json.loads(Path(path).read_text())["flags"] == [1]
    assert result_cache.cache_read(str(tmp_path / "cache"), key, lambda entry: True)[0]["flags"] == [1]
    # cli_flags serves only entries shaped like its results: [1] is no list of flags.
    assert result_cache.cache_read(str(tmp_path / "cache"), key, cli_flags.valid_cached_result)[0] is None


def test_supported_algorithms_adds_implementations_only_for_open_registries():
    from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import supported_algorithms

    fork = [{"name": "DDTreeWorker", "kind": "class"}, {"name": "DFlashWorkerV2", "kind": "class"}]
    open_caps = capabilities(help_flags("0.5.23"))
    assert "DDTREE" in supported_algorithms(open_caps, fork)
    assert "DDTREE" not in supported_algorithms(open_caps, fork[1:])
    # 0.5.11 has a fixed choices list: argparse would refuse DDTREE whatever the code holds.
    closed_caps = capabilities(help_flags("0.5.11"))
    assert supported_algorithms(closed_caps, fork) == ["DFLASH", "EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE"]
    assert supported_algorithms(None, fork) == []
