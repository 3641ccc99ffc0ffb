"""cli_flags.discover on real commands and real SGLang installs: methods, cache, limits, bad params."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import cli_flags
from ansible_collections.gpufleet.sglang.plugins.module_utils.cli_flags import (
    DEFAULT_MAX_OUTPUT_BYTES,
    MAX_WARNINGS,
    FlagsError,
    discover,
    split_warnings,
)
from helpers import help_venv

SERVE_WARNING = ("UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the "
                 "recommended entrypoint.")

TINY_HELP = "usage: tiny [-h] [--a A]\n\noptions:\n  -h, --help  show this help\n  --a A       the a\n"


def params(command, **over):
    base = dict(argv=[str(a) for a in command], method="auto", source_dir=None, timeout=60, environment={},
                cache=None, max_output_bytes=None)
    base.update(over)
    return base


def launch_help(venv):
    return [venv / "bin" / "python", "-m", "sglang.launch_server", "--help"]


def serve_help(venv):
    """The console script form: bin/sglang's '#!' line names the venv's python."""
    return [venv / "bin" / "sglang", "serve", "--help"]


FORMS = {"python -m": launch_help, "console script": serve_help}


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


# --- methods: auto reads the source first, cross_check runs both -------------------------------------

def test_auto_reads_the_source_and_never_runs_help(venvs, monkeypatch):
    def no_help(*_args, **_kwargs):
        raise AssertionError("auto ran --help although the source was readable")

    monkeypatch.setattr(cli_flags, "run_help", no_help)
    for form, argv in FORMS.items():
        r = discover(params(argv(venvs["0.5.23"])), check_mode=False)
        assert (r["method"], r["command"]["form"], r["raw_help_sha256"], r["warnings"]) == ("source", form, None, [])
        assert "fallback_reason" not in r and "source_check" not in r and r["flag_count"] == 530 + 2


def test_a_package_the_caller_already_probed_is_not_probed_again(venvs, monkeypatch):
    # sglang_info resolves the interpreter's sglang just before: discover takes that answer instead of
    # starting the interpreter a second time, and reads the same flags from it.
    python = venvs["0.5.23"] / "bin" / "python"
    probed = discover(params(launch_help(venvs["0.5.23"])), check_mode=False)

    def no_probe(*_args, **_kwargs):
        raise AssertionError("discover probed the interpreter although the package was given")

    monkeypatch.setattr(cli_flags, "resolve_package", no_probe)
    given = discover(params(launch_help(venvs["0.5.23"]), package=probed["package"]), check_mode=False)
    assert given["flags"] == probed["flags"] and given["method"] == "source" and given["package"] is probed["package"]
    with pytest.raises(AssertionError, match="probed the interpreter"):
        discover(params([python, "-m", "sglang.launch_server", "--help"]), check_mode=False)


def test_auto_runs_help_only_where_the_source_cannot_be_read(printer, tmp_path):
    script, _out = printer
    r = discover(params([script]), check_mode=False)  # a shell script: no Python to ask for a package
    assert (r["method"], r["command"]["form"], r["package"], r["flag_count"]) == ("help", None, {}, 2)
    assert r["fallback_reason"].startswith("the source was not read: argv is neither 'PYTHON -m MODULE ...' nor "
                                           "a Python console script")
    empty = tmp_path / "pkg"
    empty.mkdir()
    r = discover(params([script], source_dir=str(empty)), check_mode=False)
    assert r["method"] == "help" and "cannot read the parser sources" in r["fallback_reason"]


def test_auto_says_why_neither_way_works(venvs):
    with pytest.raises(FlagsError) as info:
        discover(params(launch_help(venvs["empty"])), check_mode=False)
    message = str(info.value)
    assert "exited with rc=1" in message and "No module named" in message
    assert "and the source cannot be read: " in message and "does not import the package sglang" in message


def test_cross_check_runs_help_and_falls_back_to_the_source(venvs):
    # --no-deps install: --help dies on a missing dependency, the source still answers.
    r = discover(params(launch_help(venvs["0.5.23"]), method="cross_check"), check_mode=False)
    assert r["method"] == "source" and "No module named" in r["fallback_reason"]
    assert "source_check" not in r and r["capabilities"]["supports_dflash"] is True


# --- the console script form (`sglang serve --help`) and the python -m form ----------------------

@pytest.mark.parametrize("form", FORMS)
def test_both_forms_read_the_source_and_cache(venvs, form, tmp_path):
    venv = venvs["0.5.23"]
    p = params(FORMS[form](venv), method="source", cache=str(tmp_path / "cache"))
    r = discover(p, check_mode=False)
    assert r["command"]["form"] == form and r["command"]["python"] == str(venv / "bin" / "python")
    assert r["command"]["module"] == ("sglang.launch_server" if form == "python -m" else "sglang.cli.main")
    assert (r["method"], r["package"]["version"], r["cached"]) == ("source", "0.5.23", False)
    assert r["capabilities"]["flags"]["draft_window_size"] == "--speculative-draft-window-size"
    warm = discover(p, check_mode=False)
    assert warm["cached"] is True and warm["flags"] == r["flags"] and warm["command"] == r["command"]
    other = next(f for f in FORMS if f != form)
    twin = discover(dict(p, argv=[str(a) for a in FORMS[other](venv)]), check_mode=False)
    assert twin["flags"] == r["flags"] and twin["cache_file"] != r["cache_file"]


def test_a_console_script_whose_interpreter_is_not_python_is_not_probed(tmp_path):
    script = tmp_path / "sglang"
    script.write_text("#!/bin/sh\necho 'usage: sglang [-h]'\n")
    script.chmod(0o755)
    assert cli_flags.command_form([str(script), "serve", "--help"]) == {"form": None, "python": None, "module": None}
    env_script = tmp_path / "tool"
    env_script.write_text("#!/usr/bin/env python3\nimport sys\nfrom tool.main import main\nsys.exit(main())\n")
    env_script.chmod(0o755)
    form = cli_flags.command_form([str(env_script)])
    assert form["form"] == "console script" and form["module"] == "tool.main"
    assert os.path.basename(form["python"]) == "python3" and os.path.isabs(form["python"])


@pytest.fixture(scope="module")
def runnable():
    """A venv where `--help` really runs (0.5.23, CPU torch); its bin/sglang exists."""
    return help_venv("0.5.23")


@pytest.mark.parametrize("form", FORMS)
def test_both_forms_run_help_and_keep_its_warnings(runnable, form, tmp_path):
    p = params(FORMS[form](runnable), method="help", cache=str(tmp_path / "cache"))
    r = discover(p, check_mode=False)
    assert (r["method"], r["prog"], r["flag_count"], r["command"]["form"]) == ("help", "sglang", 530, form)
    assert r["package"]["version"] == "0.5.23"
    # 0.5.23 tells the python -m form that `sglang serve` is the recommended entry point; stdout is still help.
    assert r["warnings"] == ([SERVE_WARNING] if form == "python -m" else [])
    warm = discover(p, check_mode=False)
    assert warm["cached"] is True and warm["warnings"] == r["warnings"] and warm["flags"] == r["flags"]


# --- warnings on stderr ------------------------------------------------------------------------------

def test_python_warnings_are_split_from_stderr():
    stderr = ("/v/lib/python3.12/site-packages/sglang/launch_server.py:71: %s\n"
              "  Example: sglang serve --model-path <model> [options]\n  warnings.warn(\n"
              "/v/x.py:3: DeprecationWarning: old thing\n  import old\n"
              "FutureWarning: the default will change\n"
              "/w/launch_server.py:71: %s\n  warnings.warn(\n"
              "Traceback (most recent call last):\n  File \"x\", line 1\nImportError: no numpy\n"
              % (SERVE_WARNING, SERVE_WARNING))
    warnings, rest = split_warnings(stderr)
    assert warnings == [SERVE_WARNING, "DeprecationWarning: old thing", "FutureWarning: the default will change"]
    assert rest.splitlines() == ["Traceback (most recent call last):", '  File "x", line 1', "ImportError: no numpy"]
    many = "".join("/v/m.py:%d: UserWarning: number %d\n" % (i, i) for i in range(100))
    assert split_warnings(many)[0] == ["UserWarning: number %d" % i for i in range(MAX_WARNINGS)]
    assert len(split_warnings("UserWarning: " + "x" * 5000)[0][0]) == cli_flags.MAX_WARNING_CHARS
    not_python = "usage: x\nWARNING: not a Python warning"
    assert split_warnings(not_python + "\n") == ([], not_python)


@pytest.fixture
def warner(tmp_path):
    """A command that warns on stderr, then prints its help, or fails when FAIL is set."""
    out = tmp_path / "out"
    out.write_text(TINY_HELP)
    script = tmp_path / "warner"
    script.write_text("#!/bin/sh\necho '/x/mod.py:5: DeprecationWarning: --old is deprecated' >&2\n"
                      "echo '  warnings.warn(' >&2\n"
                      "if [ -n \"$FAIL\" ]; then echo 'RuntimeError: no GPU' >&2; exit 1; fi\ncat %s\n" % out)
    script.chmod(0o755)
    return script


def test_warnings_are_cached_and_checked(warner, tmp_path):
    p = params([warner], method="help", cache=str(tmp_path / "cache"))
    cold = discover(p, check_mode=False)
    assert cold["warnings"] == ["DeprecationWarning: --old is deprecated"] and cold["flag_count"] == 2
    entry_file = Path(cold["cache_file"])
    entry = json.loads(entry_file.read_text())
    assert entry["warnings"] == cold["warnings"]
    warm = discover(p, check_mode=False)
    assert warm["cached"] is True and warm["warnings"] == cold["warnings"]
    for bad in (dict(entry, warnings="not a list"), dict(entry, warnings=[1]),
                {k: v for k, v in entry.items() if k != "warnings"}):
        entry_file.write_text(json.dumps(bad))
        rebuilt = discover(p, check_mode=False)
        assert rebuilt["cached"] is False and rebuilt["warnings"] == cold["warnings"]
        assert json.loads(entry_file.read_text()) == entry


def test_a_failing_help_quotes_its_error_not_its_warnings(warner):
    with pytest.raises(FlagsError) as info:
        discover(params([warner], method="help", environment={"FAIL": "1"}), check_mode=False)
    assert str(info.value).endswith("exited with rc=1: RuntimeError: no GPU")
    assert info.value.warnings == ["DeprecationWarning: --old is deprecated"]


# --- the cache key across a reinstall ---------------------------------------------------------------

def test_a_reinstall_of_the_same_version_is_not_served_from_the_cache(venvs, scratch_copy, tmp_path):
    """`pip install --force-reinstall --no-deps` of the same release into a copy of a real venv.

    Same version, same paths, same dist-info: but pip writes every file anew (it keeps no timestamp
    from the wheel), so dist-info/RECORD and the parser sources get new mtimes, and the key, which
    holds the mtime_ns and size of each, changes. The old entry stays on disk and is never served for
    the reinstalled release; the new one is, from then on.
    """
    venv = scratch_copy(venvs["0.5.6"])
    p = params(launch_help(venv), method="source", cache=str(tmp_path / "cache"))
    cold = discover(p, check_mode=False)
    assert cold["cached"] is False and discover(p, check_mode=False)["cached"] is True
    record = Path(cold["package"]["dist_info"]) / "RECORD"
    server_args = Path(cold["package"]["search_roots"][0]) / "srt" / "server_args.py"
    before = {f: os.stat(f).st_mtime_ns for f in (record, server_args)}
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--force-reinstall", "--no-deps", "sglang==0.5.6"], check=True, capture_output=True)
    assert all(os.stat(f).st_mtime_ns != before[f] for f in before), "pip kept the files' mtimes"
    after = discover(p, check_mode=False)
    assert after["package"]["version"] == "0.5.6" and after["package"]["dist_info"] == cold["package"]["dist_info"]
    assert after["cached"] is False and after["cache_file"] != cold["cache_file"]
    assert Path(cold["cache_file"]).exists() and after["flags"] == cold["flags"]
    assert discover(p, check_mode=False)["cached"] is True


# --- the module's filter ------------------------------------------------------------------------------

def test_the_filter_keeps_matching_flags_and_recounts_them():
    def result():
        flags, _info = cli_flags.help_flags(TINY_HELP)
        return {"flags": flags, "flag_count": len(flags), "method": "help"}

    by_prefix = cli_flags.filter_result(result(), "--a", "prefix")
    assert [f["name"] for f in by_prefix["flags"]] == ["--a"] and by_prefix["flag_count"] == 1
    assert by_prefix["method"] == "help"
    by_alias = cli_flags.filter_result(result(), "^-h$", "regex")
    assert [f["name"] for f in by_alias["flags"]] == ["--help"] and by_alias["flag_count"] == 1
    assert cli_flags.filter_result(result(), "--zzz", "prefix")["flag_count"] == 0
