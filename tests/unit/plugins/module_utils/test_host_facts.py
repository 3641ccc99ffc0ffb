"""host_facts: what the role reads of one host, driven here by a fake systemctl, unit files and a release's
parser sources (tests/fixtures/sglang/0.5.23) in a temporary directory, and this test's own interpreter."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import host_facts
from ansible_collections.gpufleet.sglang.plugins.module_utils.host_facts import (
    command_model_path,
    entry_point,
    file_digest,
    gather,
    read_json_file,
    service_python_environment,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "sglang"
RECOMMENDS = 'print("\'python -m sglang.launch_server\' works, but \'sglang serve\' is the recommended entrypoint")\n'


def test_service_python_environment_from_files_and_the_unit(tmp_path):
    env_file = tmp_path / "sglang.env"
    env_file.write_text('# PYTHONHOME=/commented\nPYTHONPATH=/from/file\nHF_TOKEN=secret\n'
                        'VIRTUAL_ENV="/v env"\nPATH=/a\n'
                        # systemd 252 ignores both (tests/fixtures/envfile: export_prefix, invalid_names).
                        'export PYTHONUSERBASE=/exported\n"PYTHONSAFEPATH=1"\n')
    unit = {"environment_files": [{"path": str(env_file), "optional": False},
                                  {"path": str(tmp_path / "missing.env"), "optional": True}],
            "environment": [["PATH", "/from/unit"], ["CUDA_VISIBLE_DEVICES", "0"]]}
    # systemd.exec(5): settings from EnvironmentFile= override those of Environment=.
    assert service_python_environment(unit) == {"PYTHONPATH": "/from/file", "VIRTUAL_ENV": "/v env",
                                                "PATH": "/a"}
    assert service_python_environment({}) == {}


def test_read_json_file_names_the_file_in_every_error(tmp_path, monkeypatch):
    good = tmp_path / "good.json"
    good.write_text('{"num_hidden_layers": 5}')
    assert read_json_file(str(good)) == {"path": str(good), "config": {"num_hidden_layers": 5}}
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert read_json_file(str(bad))["error"].startswith("%s is not valid JSON: " % bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xe9"}')
    assert read_json_file(str(latin))["error"].startswith("%s is not UTF-8 text: " % latin)
    missing = tmp_path / "missing.json"
    assert read_json_file(str(missing)) == {"path": str(missing),
                                            "error": "cannot read %s: No such file or directory" % missing}
    monkeypatch.setattr(host_facts, "MAX_CONFIG_BYTES", 10)
    assert read_json_file(str(good))["error"] == "%s is 24 bytes, more than a config.json should be" % good


@pytest.fixture
def release(tmp_path):
    """A venv-like bin/ and an SGLang 0.5.23 source tree (its parser sources) whose launcher recommends
    `sglang serve`; returns (python, package location)."""
    with tarfile.open(FIXTURES / "0.5.23" / "parser-sources.tar.xz") as tar:
        tar.extractall(tmp_path / "src")
    location = tmp_path / "src" / "sglang"
    (location / "__init__.py").write_text("")
    (location / "launch_server.py").write_text(RECOMMENDS)
    (tmp_path / "bin").mkdir()
    return str(tmp_path / "bin" / "python3"), str(location)


def test_entry_point_follows_what_the_release_recommends(release):
    python, location = release
    package = {"location": location}
    assert entry_point(package, python) == {
        "recommended": "python -m sglang.launch_server", "console_script": None,
        "why": "%s/launch_server.py recommends 'sglang serve' but %s has no sglang script"
               % (location, os.path.dirname(python))}
    script = os.path.join(os.path.dirname(python), "sglang")
    Path(script).write_text("#!%s\n" % python)
    os.chmod(script, 0o755)
    assert entry_point(package, python) == {"recommended": "sglang serve", "console_script": script,
                                            "why": "%s/launch_server.py recommends 'sglang serve'" % location}
    Path(location, "launch_server.py").write_text("print('serving')\n")
    assert entry_point(package, python)["why"] == (
        "%s/launch_server.py does not recommend another entry point" % location)
    assert entry_point({}, None) == {"recommended": "python -m sglang.launch_server", "console_script": None,
                                     "why": "cannot read launch_server.py"}


@pytest.mark.parametrize("args, path", [
    (["--model-path", "/models/Q", "--port", "1"], "/models/Q"),
    (["--model=/models/M"], "/models/M"),
    (["--model-path", "/models/A", "--model-path", "/models/B"], "/models/B"),
    (["--model-path", "Qwen/Qwen3-8B"], None),
    (["--model-path"], None),
    ([], None),
])
def test_command_model_path(args, path):
    assert command_model_path({"args": [[a, a] for a in args]}) == path


def test_file_digest(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    assert file_digest(str(path)) == hashlib.sha256(b"x").hexdigest()
    assert file_digest(str(tmp_path / "missing")) is None


class Systemd(object):
    """A fake run_systemctl: `systemctl show` of the service (show) and of other units (units)."""

    def __init__(self, show, units=None, rc=0):
        self.show = show
        self.units = units or {}
        self.rc = rc

    def __call__(self, argv):
        properties = self.show if argv[-1] == self.show.get("Id") else self.units.get(argv[-1])
        if properties is None:
            return 0, "LoadState=not-found\nActiveState=inactive\n", ""
        stderr = "Failed to connect to bus" if self.rc else ""
        return self.rc, "".join("%s=%s\n" % kv for kv in properties.items()), stderr


def params(**over):
    """sglang_info's options with their defaults."""
    base = dict(service="sglang", python=None, launcher_modules=["sglang.launch_server"], managed_dropin=None,
                managed_env_file=None, rollout_record=None, managed_unit_file=None, model_path=None,
                draft_model_path=None, user=None, related_units=[], search_terms=["DFLASH", "DDTREE"],
                flags_method="auto", flags_detail="full", cache=None, timeout=30, help_timeout=120,
                max_output_bytes=4 * 1024 * 1024, nvidia_smi="/nonexistent/nvidia-smi")
    base.update(over)
    return base


def test_gather_reads_the_whole_host(release, tmp_path, monkeypatch):
    _python, location = release
    source = os.path.dirname(location)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"num_hidden_layers": 64}')
    fragment = tmp_path / "sglang.service"
    fragment.write_text("[Service]\nEnvironment=PYTHONPATH=%s\nExecStart=%s -m sglang.launch_server --model-path %s\n"
                        % (source, sys.executable, model))
    env_file = tmp_path / "sglang.env"
    env_file.write_text("HF_TOKEN=x\n")
    record = tmp_path / "last-rollout.json"
    record.write_text(json.dumps({"outcome": "switched"}))
    monkeypatch.setattr(host_facts, "run_systemctl", Systemd(
        {"Id": "sglang.service", "LoadState": "loaded", "ActiveState": "active", "FragmentPath": str(fragment),
         "Environment": "PYTHONPATH=%s" % source},
        {"train.service": {"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled"}}))
    facts = gather(params(related_units=["train", "gone"], user="root", managed_env_file=str(env_file),
                          rollout_record=str(record), managed_unit_file=str(tmp_path / "absent.service")), False)
    assert facts["problems"] == []
    assert (facts["python"], facts["python_from"]) == (sys.executable, "ExecStart")
    assert facts["service_python_environment"] == ["PYTHONPATH"]
    assert facts["package"]["location"] == location and facts["package"]["search_roots"] == [location]
    assert facts["entry_point"]["recommended"] == "python -m sglang.launch_server"
    assert facts["implementation"]["missing_terms"] == ["DDTREE"]
    assert any(d["name"] == "_handle_dflash" for d in facts["implementation"]["definitions"])
    assert facts["flags"]["method"] == "source" and facts["flags"]["count"] == len(facts["flags"]["list"]) > 100
    assert any(flag.get("help") for flag in facts["flags"]["list"])
    # What a plan reads of each flag (the role's actions ask so): the same flags, a fraction of the size.
    bare = gather(params(related_units=["train", "gone"], user="root", flags_detail="plan"), False)["flags"]["list"]
    assert [f["name"] for f in bare] == [f["name"] for f in facts["flags"]["list"]]
    assert set().union(*bare) == {"name", "aliases", "takes_value", "choices", "hidden", "negated_by"}
    assert len(json.dumps(bare)) < len(json.dumps(facts["flags"]["list"])) / 2.5
    assert facts["capabilities"]["supports_dflash"] is True and "DFLASH" in facts["algorithms"]
    assert facts["gpus"]["nvidia_smi"] == "missing"
    assert facts["model"] == {"path": str(model / "config.json"), "config": {"num_hidden_layers": 64},
                              "dir_exists": True}
    assert "draft_model" not in facts and facts["user_exists"] is True
    assert facts["related_units"] == {
        "train.service": {"exists": True, "active_state": "active", "unit_file_state": "enabled"},
        "gone.service": {"exists": False, "active_state": "inactive", "unit_file_state": None}}
    assert facts["managed_env_file"] == {"path": str(env_file), "exists": True,
                                         "sha256": hashlib.sha256(b"HF_TOKEN=x\n").hexdigest()}
    assert facts["rollout_record"] == {"outcome": "switched"}
    assert facts["managed_unit_file"] == {"path": str(tmp_path / "absent.service"), "exists": False, "content": None}


def test_gather_turns_what_cannot_be_read_into_problems(tmp_path, monkeypatch):
    monkeypatch.setattr(host_facts, "run_systemctl", Systemd({"Id": "sglang.service", "LoadState": "not-found"}))
    facts = gather(params(user="no-such-user-here"), False)
    assert facts["problems"] == ["no interpreter: sglang.service has no unit to read ExecStart from; "
                                 "set sglang_dflash_python"]
    assert facts["python"] is None and facts["package"] is None and facts["flags"] is None
    assert facts["user_exists"] is False and facts["algorithms"] == []

    fragment = tmp_path / "sglang.service"
    fragment.write_text("[Service]\nExecStart=/usr/local/bin/run.sh\n")
    monkeypatch.setattr(host_facts, "run_systemctl", Systemd(
        {"Id": "sglang.service", "LoadState": "loaded", "FragmentPath": str(fragment)}))
    facts = gather(params(), False)
    assert facts["problems"] == [facts["unit"]["error"] + "; or set sglang_dflash_python"]
    assert "ExecStart (/usr/local/bin/run.sh ...) is not 'python -m" in facts["unit"]["error"]

    monkeypatch.setattr(host_facts, "run_systemctl", Systemd({"Id": "sglang.service"}, rc=1))
    facts = gather(params(), False)
    assert facts["unit"] == {"name": "sglang", "exists": False, "error": facts["problems"][0]}
    assert facts["problems"][0].startswith("systemctl show sglang.service failed (rc=1): Failed to connect to bus")


def test_gather_says_when_the_interpreter_has_no_sglang(tmp_path, monkeypatch):
    monkeypatch.setattr(host_facts, "run_systemctl", Systemd({"Id": "sglang.service", "LoadState": "not-found"}))
    facts = gather(params(python=sys.executable), False)
    assert facts["python_from"] == "sglang_dflash_python"
    assert facts["problems"] == ["sglang is not installed for %s; set sglang_dflash_python to the interpreter "
                                 "that has it" % sys.executable]
    assert facts["entry_point"]["why"] == "cannot read launch_server.py" and facts["flags"] is None
