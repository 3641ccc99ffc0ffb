"""cli_flags.discover on real commands and real SGLang installs: methods, cache, limits, bad params."""

import json
import sys
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.cli_flags import (
    DEFAULT_MAX_OUTPUT_BYTES,
    FlagsError,
    discover,
)

TINY_HELP = "usage: tiny [-h] [--a A]\n\noptions:\n  -h, --help  show this help\n  --a A       the a\n"


def params(command, **over):
    base = dict(argv=[str(a) for a in command], method="auto", source_dir=None, timeout=60, environment={},
                cache=None, max_output_bytes=None)
    base.update(over)
    return base


def launch_help(venv):
    return [venv / "bin" / "python", "-m", "sglang.launch_server", "--help"]


@pytest.fixture
def printer(tmp_path):
    """A command that prints the text in file `out` (its 'help')."""
    out = tmp_path / "out"
    out.write_text(TINY_HELP)
    script = tmp_path / "printer"
    script.write_text("#!/bin/sh\ncat %s\n" % out)
    script.chmod(0o755)
    return script, out


def test_help_method(printer):
    script, _out = printer
    r = discover(params([script], method="help"), check_mode=False)
    assert (r["method"], r["prog"], r["flag_count"], r["cached"]) == ("help", "tiny", 2, False)
    assert [f["name"] for f in r["flags"]] == ["--help", "--a"] and r["package"] == {}


def test_output_limit(printer):
    script, out = printer
    with pytest.raises(FlagsError, match="printed more than max_output_bytes=20 bytes"):
        discover(params([script], method="help", max_output_bytes=20), check_mode=False)
    assert discover(params([script], method="help", max_output_bytes=0), False)["flag_count"] == 2
    out.write_text(TINY_HELP + "  --b B  b\n" * (DEFAULT_MAX_OUTPUT_BYTES // 10))
    with pytest.raises(FlagsError, match="max_output_bytes=%d " % DEFAULT_MAX_OUTPUT_BYTES):
        discover(params([script], method="help"), check_mode=False)


def test_source_method_cache_and_a_bad_entry(venvs, tmp_path):
    p = params(launch_help(venvs["0.5.6"]), method="source", cache=str(tmp_path / "cache"))
    cold = discover(p, check_mode=False)
    assert cold["method"] == "source" and cold["cached"] is False and cold["package"]["version"] == "0.5.6"
    warm = discover(p, check_mode=False)
    assert warm["cached"] is True and warm["flags"] == cold["flags"] and warm["package"]["version"] == "0.5.6"
    entry_file = Path(cold["cache_file"])
    entry = json.loads(entry_file.read_text())
    entry_file.write_text(json.dumps(dict(entry, flags=[{"name": "--x"}])))  # flags without their fields
    rebuilt = discover(p, check_mode=False)
    assert rebuilt["cached"] is False and rebuilt["flags"] == cold["flags"]
    assert json.loads(entry_file.read_text()) == entry
    fresh = tmp_path / "fresh"
    assert discover(dict(p, cache=str(fresh)), check_mode=True)["cached"] is False and not fresh.exists()


@pytest.mark.parametrize("over, needle", [
    (dict(argv=[]), "argv is empty"),
    (dict(argv=["/nonexistent/python3", "--help"]), "command /nonexistent/python3 not found or not executable"),
    (dict(timeout=0), "timeout must be more than 0 (seconds), not 0"),
    (dict(timeout=-5), "timeout must be more than 0 (seconds), not -5"),
    (dict(max_output_bytes=-1), "max_output_bytes must be 0 (no limit) or more, not -1"),
    (dict(source_dir="/nonexistent"), "source_dir /nonexistent is not a directory"),
    (dict(method="source"), "method=source needs"),
])
def test_bad_params(over, needle):
    with pytest.raises(FlagsError) as info:
        discover(params([sys.executable, "--help"], **over), check_mode=False)
    assert needle in str(info.value)
