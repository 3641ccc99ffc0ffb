"""service_environment: the EnvironmentFile reader against what a real systemd 252 handed a process for each case
(tests/fixtures/envfile: cases.json, recorded by record.py into systemd.json), and the environment of a running
service against its unit's files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import time

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import service_environment
from ansible_collections.gpufleet.sglang.plugins.module_utils.service_environment import (
    parse_environment_file,
    unit_file_environment,
)
from ansible_collections.gpufleet.sglang.plugins.module_utils.service_environment import (
    service_environment as environment_of,
)
from helpers import FIXTURES

CASES = json.loads((FIXTURES / "envfile" / "cases.json").read_text())["cases"]
RECORDED = json.loads((FIXTURES / "envfile" / "systemd.json").read_text())


def test_the_recording_is_of_debian_12s_systemd_and_covers_every_case():
    assert RECORDED["systemd"].startswith("systemd 252 ")
    assert sorted(RECORDED["cases"]) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_reader_gives_what_systemd_gave_the_process(name, tmp_path):
    case = CASES[name]
    files = []
    for file_name, text in case["files"].items():
        path = tmp_path / file_name
        path.write_bytes(text.encode("utf-8"))
        files.append({"path": str(path), "optional": False})
    unit = {"environment": [a.split("=", 1) for a in case.get("environment") or []], "environment_files": files}
    assert unit_file_environment(unit) == RECORDED["cases"][name]


def test_a_commented_out_assignment_is_no_assignment():
    # The report: these made a refused switch and a wrong port.
    assert parse_environment_file("# was CUDA_VISIBLE_DEVICES=0,1\nCUDA_VISIBLE_DEVICES=\n; LLM_PORT=1\n") == [
        ("CUDA_VISIBLE_DEVICES", "")]


def test_text_that_is_not_utf8_drops_only_its_assignment(tmp_path):
    path = tmp_path / "a.env"
    path.write_bytes(b"T_A=\xff\xfe\nT_B=2\n")
    assert unit_file_environment({"environment_files": [{"path": str(path)}]}) == {"T_B": "2"}


def test_a_glob_reads_its_matches_in_order_and_a_missing_file_is_left_out(tmp_path):
    (tmp_path / "10-a.env").write_text("T_A=1\nT_B=1\n")
    (tmp_path / "20-b.env").write_text("T_B=2\n")
    unit = {"environment_files": [{"path": str(tmp_path / "*.env")}, {"path": str(tmp_path / "missing.env")}]}
    assert unit_file_environment(unit, ("T_B",)) == {"T_B": "2"}


@pytest.fixture
def process_env(monkeypatch):
    """A running process's environment as /proc would give it (pid -> {name: value})."""
    environs = {}

    def fake(pid, names=None):
        env = environs.get(pid)
        return None if env is None else dict((k, v) for k, v in env.items() if names is None or k in names)
    monkeypatch.setattr(service_environment, "process_environment", fake)
    return environs


def running_unit(tmp_path, text, pid=4242, state="active"):
    path = tmp_path / "llm.env"
    path.write_text(text)
    return {"main_pid": pid, "active_state": state, "environment": [["PATH", "/opt/llm/bin"]],
            "environment_files": [{"path": str(path)}]}


def test_a_running_service_is_what_its_process_got_and_the_edit_is_drift(tmp_path, process_env):
    process_env[4242] = {"CUDA_VISIBLE_DEVICES": "0,1", "PATH": "/opt/llm/bin", "HOME": "/root"}
    unit = running_unit(tmp_path, "# moved off the GPUs\nCUDA_VISIBLE_DEVICES=\n")
    env = environment_of(unit, ("CUDA_VISIBLE_DEVICES", "PATH"), {"PATH": "/usr/bin"})
    assert env["values"] == {"CUDA_VISIBLE_DEVICES": "0,1", "PATH": "/opt/llm/bin"}
    assert env["source"] == "process 4242"
    assert env["after_restart"] == {"CUDA_VISIBLE_DEVICES": "", "PATH": "/opt/llm/bin"}
    assert env["drift"] == ["CUDA_VISIBLE_DEVICES"]


def test_a_variable_the_manager_gives_is_no_drift_but_one_removed_from_the_files_is(tmp_path, process_env):
    process_env[4242] = {"PATH": "/usr/bin", "PYTHONPATH": "/old"}
    unit = dict(running_unit(tmp_path, "T=1\n"), environment=[])
    env = environment_of(unit, ("PATH", "PYTHONPATH"), {"PATH": "/usr/bin"})
    assert env["drift"] == ["PYTHONPATH"] and env["values"] == {"PATH": "/usr/bin", "PYTHONPATH": "/old"}


def test_a_stopped_or_unreadable_service_is_its_files(tmp_path, process_env):
    process_env[4242] = {"CUDA_VISIBLE_DEVICES": "0,1"}
    for unit in (running_unit(tmp_path, "CUDA_VISIBLE_DEVICES=2\n", state="inactive"),
                 running_unit(tmp_path, "CUDA_VISIBLE_DEVICES=2\n", pid=7)):
        env = environment_of(unit, ("CUDA_VISIBLE_DEVICES",))
        assert env == {"values": {"CUDA_VISIBLE_DEVICES": "2"}, "source": "unit files",
                       "after_restart": {"CUDA_VISIBLE_DEVICES": "2"}, "drift": []}


def test_the_environ_of_a_real_process_is_what_it_was_started_with():
    child = subprocess.Popen(["sleep", "30"], env={"T_A": "a b", "T_EMPTY": "", "PATH": os.environ["PATH"]})
    try:
        for _attempt in range(500):  # Popen may return before the child's exec shows in /proc
            env = service_environment.process_environment(child.pid, ("T_A", "T_EMPTY"))
            if env:
                break
            time.sleep(0.01)
        assert env == {"T_A": "a b", "T_EMPTY": ""}
    finally:
        child.kill()
        child.wait()
    assert service_environment.process_environment(child.pid) is None
