"""cli_flags_info through real ansible-playbook runs against real SGLang installs."""

import json
import sys
import time

import pytest
from helpers import help_venv

MODULE = "gpufleet.sglang.cli_flags_info"
SERVE_WARNING = ("UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the "
                 "recommended entrypoint.")


@pytest.fixture(scope="module")
def runnable_sglang():
    """A venv where `python -m sglang.launch_server --help` really runs (0.5.23, CPU torch)."""
    return help_venv("0.5.23")


def launch_help(venv):
    return [str(venv / "bin" / "python"), "-m", "sglang.launch_server", "--help"]


def test_real_help_cross_checked_with_source_and_cached(playbook, runnable_sglang, tmp_path):
    args = {"argv": launch_help(runnable_sglang), "method": "cross_check", "cache": str(tmp_path / "cache")}
    cold = playbook.module(MODULE, args)
    assert not cold.get("failed"), cold.get("msg")
    assert cold["method"] == "help" and cold["cached"] is False
    # --help's stderr warning is the task's own warning (shown with it, registered as `warnings`).
    assert cold["warnings"] == [SERVE_WARNING]
    assert cold["prog"] == "sglang"
    assert cold["source_check"] == {"agrees": True, "help_only": [], "source_only": []}
    assert cold["flag_count"] == 530 + 2  # --help shows 530; the source adds 2 hidden flags
    assert cold["package"]["version"] == "0.5.23"
    caps = cold["capabilities"]
    assert caps["supports_dflash"] is True and caps["supports_ddtree"] is False
    assert caps["flags"]["draft_window_size"] == "--speculative-draft-window-size"
    assert len(cold["raw_help_sha256"]) == 64

    warm = playbook.module(MODULE, args)
    assert warm["cached"] is True and warm["cache_file"] == cold["cache_file"]
    assert warm["flags"] == cold["flags"] and warm["capabilities"] == caps
    assert warm["warnings"] == [SERVE_WARNING]
    assert warm["elapsed_s"] < cold["elapsed_s"]

    # Check mode reads the cache but never writes one.
    fresh = tmp_path / "cache-check"
    checked = playbook.module(MODULE, dict(args, cache=str(fresh)), check=True)
    assert checked["cached"] is False and not fresh.exists()


def test_auto_reads_the_source_without_running_help(playbook, runnable_sglang):
    # The default: where --help would run (about 20 s on a GPU host), the source is read instead.
    for argv in (launch_help(runnable_sglang), [str(runnable_sglang / "bin" / "sglang"), "serve", "--help"]):
        r = playbook.module(MODULE, {"argv": argv})
        assert not r.get("failed"), r.get("msg")
        assert r["method"] == "source" and r["raw_help_sha256"] is None and "prog" not in r
        assert "fallback_reason" not in r and "source_check" not in r and "warnings" not in r
        assert r["flag_count"] == 530 + 2 and r["package"]["version"] == "0.5.23"
        assert r["command"]["python"] == str(runnable_sglang / "bin" / "python")
        assert r["capabilities"]["flags"]["draft_window_size"] == "--speculative-draft-window-size"


def test_auto_runs_help_where_the_source_cannot_be_read(playbook, tmp_path):
    tiny = tmp_path / "tiny-help"
    tiny.write_text("#!/bin/sh\nprintf 'usage: tiny [-h] [--a A]\\n\\noptions:\\n"
                    "  -h, --help  show\\n  --a A  the a\\n'\n")
    tiny.chmod(0o755)
    r = playbook.module(MODULE, {"argv": [str(tiny)]})
    assert not r.get("failed"), r.get("msg")
    assert r["method"] == "help" and [f["name"] for f in r["flags"]] == ["--help", "--a"]
    assert r["fallback_reason"].startswith("the source was not read: argv is neither")


def test_cross_check_falls_back_to_source_when_help_cannot_import(playbook, venvs):
    # --no-deps install: `--help` dies on the missing numpy, the source still tells the truth.
    r = playbook.module(MODULE, {"argv": launch_help(venvs["0.5.16"]), "method": "cross_check"})
    assert not r.get("failed"), r.get("msg")
    assert r["method"] == "source"
    assert "No module named" in r["fallback_reason"]
    caps = r["capabilities"]
    assert caps["flags"]["draft_window_size"] == "--speculative-draft-window-size"
    assert caps["deprecated_aliases"] == {"--speculative-dflash-draft-window-size": "--speculative-draft-window-size"}
    hidden = [f["name"] for f in r["flags"] if f["hidden"]]
    assert "--speculative-dflash-draft-window-size" in hidden


def test_source_method_and_filter(playbook, venvs):
    r = playbook.module(MODULE, {"argv": launch_help(venvs["0.5.6"]), "method": "source",
                                 "filter": "--speculative-a"})
    assert r["method"] == "source" and r["raw_help_sha256"] is None
    assert [f["name"] for f in r["flags"]] == ["--speculative-algorithm", "--speculative-accept-threshold-single",
                                               "--speculative-accept-threshold-acc", "--speculative-attention-mode"]
    # The filter narrows the flags returned, not the ones capabilities are read from: 0.5.6 is SGLang
    # (it has --speculative-algorithm), without DFlash.
    caps = r["capabilities"]
    assert caps["supports_dflash"] is False and "DFLASH" not in caps["speculative_algorithms"]
    assert caps["flags"]["algorithm"] == "--speculative-algorithm" and caps["flags"]["block_size"] is None


def test_release_without_dflash(playbook, venvs):
    r = playbook.module(MODULE, {"argv": launch_help(venvs["0.5.6"]), "method": "source"})
    caps = r["capabilities"]
    assert caps["supports_dflash"] is False
    assert caps["flags"]["block_size"] is None and caps["flags"]["draft_window_size"] is None
    assert "DFLASH" not in caps["speculative_algorithms"]


# --- bad input ----------------------------------------------------------------------------------

def assert_clear_failure(r, *needles):
    assert r.get("failed"), r
    assert "Traceback (most recent call last)" not in r["msg"].split(":", 1)[0]
    assert "MODULE FAILURE" not in r["msg"] and r["msg"].startswith("host ")
    for needle in needles:
        assert needle in r["msg"], r["msg"]


def test_missing_command(playbook, tmp_path):
    r = playbook.module(MODULE, {"argv": [str(tmp_path / "python3"), "--help"]})
    assert_clear_failure(r, "not found or not executable", str(tmp_path / "python3"))


def test_non_zero_exit(playbook):
    assert_clear_failure(playbook.module(MODULE, {"argv": ["false"], "method": "help"}), "exited with rc=1")


def test_not_argparse_output(playbook):
    r = playbook.module(MODULE, {"argv": ["echo", "hello", "world"], "method": "help"})
    assert_clear_failure(r, "is not argparse help", "hello world")


def test_hang_is_killed_with_its_children(playbook, tmp_path):
    script = tmp_path / "hang"
    marker = tmp_path / "child-alive"
    script.write_text("#!/bin/sh\n(sleep 3; touch %s) &\nsleep 300\n" % marker)
    script.chmod(0o755)
    r = playbook.module(MODULE, {"argv": [str(script)], "method": "help", "timeout": 1})
    assert_clear_failure(r, "did not finish within 1s")
    time.sleep(3.5)
    assert not marker.exists(), "a child of the hung command survived the timeout"


def test_source_without_sources(playbook, tmp_path):
    r = playbook.module(MODULE, {"argv": ["echo"], "method": "source"})
    assert_clear_failure(r, "method=source needs")
    (tmp_path / "pkg").mkdir()
    r = playbook.module(MODULE, {"argv": ["echo"], "method": "source", "source_dir": str(tmp_path / "pkg")})
    assert_clear_failure(r, "cannot read the parser sources", "server_args.py")


def test_bad_regex_filter(playbook):
    r = playbook.module(MODULE, {"argv": ["echo"], "filter": "[", "filter_type": "regex"})
    assert_clear_failure(r, "not a valid regex")


def test_cache_entries_of_the_wrong_shape_are_rebuilt(playbook, venvs, tmp_path):
    cache = tmp_path / "cache"
    args = {"argv": launch_help(venvs["0.5.6"]), "method": "source", "cache": str(cache)}
    cold = playbook.module(MODULE, args)
    (cache_file,) = cache.glob("*.json")
    good = json.loads(cache_file.read_text())
    for bad in ([], dict(good, flags="notalist"), {k: v for k, v in good.items() if k != "flags"}):
        cache_file.write_text(json.dumps(bad))
        r = playbook.module(MODULE, args)
        assert not r.get("failed"), (bad, r.get("msg"))
        assert r["cached"] is False and r["flag_count"] == cold["flag_count"] > 100 and r["flags"] == cold["flags"]
        assert json.loads(cache_file.read_text()) == good  # overwritten with a good entry
    assert playbook.module(MODULE, args)["cached"] is True


@pytest.fixture
def endless_help(tmp_path):
    """A program whose 'help' is 50 MB of argparse-like flag lines."""
    script = tmp_path / "endless-help"
    script.write_text("#!%s\nimport sys\nsys.stdout.write('usage: endless [-h]\\n\\noptions:\\n')\n"
                      "for i in range(1700000):\n    sys.stdout.write('  --flag%%d FLAG%%d  help text\\n' %% (i, i))\n"
                      % sys.executable)
    script.chmod(0o755)
    return script


def test_runaway_output_fails_fast_with_a_clear_message(playbook, endless_help):
    started = time.monotonic()
    r = playbook.module(MODULE, {"argv": [str(endless_help)], "method": "help"})
    assert_clear_failure(r, "printed more than max_output_bytes=4194304 bytes", "raise max_output_bytes")
    assert time.monotonic() - started < 60


def test_output_limit_is_an_option(playbook, tmp_path):
    tiny = tmp_path / "tiny-help"
    tiny.write_text("#!/bin/sh\nprintf 'usage: tiny [-h] [--a A]\\n\\noptions:\\n"
                    "  -h, --help  show\\n  --a A  the a\\n'\n")
    tiny.chmod(0o755)
    r = playbook.module(MODULE, {"argv": [str(tiny)], "method": "help", "max_output_bytes": 20})
    assert_clear_failure(r, "more than max_output_bytes=20 bytes")
    r = playbook.module(MODULE, {"argv": [str(tiny)], "method": "help", "max_output_bytes": 0})
    assert not r.get("failed") and [f["name"] for f in r["flags"]] == ["--help", "--a"]


@pytest.mark.parametrize("option, value, needle", [
    ("timeout", -5, "timeout must be more than 0 (seconds), not -5"),
    ("timeout", 0, "timeout must be more than 0 (seconds), not 0"),
    ("max_output_bytes", -1, "max_output_bytes must be 0 (no limit) or more, not -1"),
])
def test_impossible_values_are_refused(playbook, option, value, needle):
    assert_clear_failure(playbook.module(MODULE, {"argv": ["echo"], option: value}), needle)
