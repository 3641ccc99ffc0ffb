"""sglang_services: every SGLang unit of a host found through systemctl (faked here) and the unit reader, with the
port and GPUs systemd gives it; which units a list of names and patterns selects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils import service_environment, sglang_services
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_services import (
    command_port,
    discover,
    expand,
    managed_paths,
    select,
    visible_gpus,
)

GPUS = [{"index": i, "uuid": "GPU-%d1111111-2222" % i} for i in range(8)]


def test_expand_as_systemd_does_for_an_instance():
    env = {"SGLANG_PORT": "30002"}
    assert expand("--port=${SGLANG_PORT}", "sglang@qwen-b.service", env) == "--port=30002"
    assert expand("$SGLANG_PORT", "sglang@qwen-b.service", env) == "30002"
    assert expand("/etc/%p/%i.conf %n %N %%", "sglang@qwen-b.service", env) == \
        "/etc/sglang/qwen-b.conf sglang@qwen-b.service sglang@qwen-b %"


def test_port_of_the_command():
    def unit(*args):
        return {"id": "sglang@30005.service", "command": {"args": [[a, a] for a in args]}}
    assert command_port(unit("--port", "${P}"), {"P": "30002"}) == 30002
    assert command_port(unit("--port=%i"), {}) == 30005
    assert command_port(unit("--model-path", "/m"), {}) == 30000
    assert command_port(unit("--port", "${UNSET}"), {}) is None


def test_visible_gpus_by_index_and_uuid():
    assert visible_gpus("4,5, 6,7", GPUS) == ([4, 5, 6, 7], None)
    assert visible_gpus("GPU-31111111,1", GPUS) == ([1, 3], None)
    assert visible_gpus("0,,3", GPUS) == ([0], None)  # CUDA stops at the first empty entry
    indexes, problem = visible_gpus("GPU-9", GPUS)
    assert indexes is None and "GPU-9 names no GPU of this host" in problem


def test_select_exact_names_win_over_patterns():
    found = [{"unit": u} for u in ("sglang-qwen-a.service", "sglang@qwen-b.service", "sglang@qwen-c.service")]
    entries = [{"name": "sglang@*"}, {"name": "sglang@qwen-c"}, {"name": "sglang-new"}]
    chosen, problems = select(entries, found)
    assert chosen == [(0, "sglang@qwen-b.service"), (1, "sglang@qwen-c.service"), (2, "sglang-new.service")]
    assert problems == []
    chosen, problems = select([{"name": "vllm-*"}], found)
    assert chosen == [] and problems == [
        "services entry 1 (vllm-*) matches none of this host's SGLang units (sglang-qwen-a.service, "
        "sglang@qwen-b.service, sglang@qwen-c.service)"]


def test_managed_paths():
    assert managed_paths("sglang@qwen-b.service", "/etc/sglang", "/etc/systemd/system", "/var/lib/g") == {
        "env_file": "/etc/sglang/sglang@qwen-b.env", "unit_file": "/etc/systemd/system/sglang@qwen-b.service",
        "rollout_record": "/var/lib/g/sglang@qwen-b.service.last-rollout.json"}


def test_discover_reads_only_the_units_that_run_sglang(tmp_path, monkeypatch):
    template = tmp_path / "sglang@.service"
    template.write_text("[Service]\nEnvironmentFile=%s/%%i.conf\nExecStart=/opt/venv/bin/python3 -m "
                        "sglang.launch_server --port ${SGLANG_PORT} --tp-size 4\n" % tmp_path)
    (tmp_path / "qwen-b.conf").write_text("CUDA_VISIBLE_DEVICES=4,5,6,7\nSGLANG_PORT=30002\n")
    other = tmp_path / "cron.service"
    other.write_text("[Service]\nExecStart=/usr/sbin/cron -f\n")
    show = {"sglang@qwen-b.service": {"Id": "sglang@qwen-b.service", "LoadState": "loaded", "ActiveState": "active",
                                      "FragmentPath": str(template),
                                      "EnvironmentFiles": "%s/qwen-b.conf (ignore_errors=no)" % tmp_path,
                                      "ExecStart": "{ path=/opt/venv/bin/python3 ; argv[]=/opt/venv/bin/python3 -m "
                                                   "sglang.launch_server --port ${SGLANG_PORT} }"},
            "cron.service": {"Id": "cron.service", "LoadState": "loaded", "FragmentPath": str(other),
                             "ExecStart": "{ path=/usr/sbin/cron ; argv[]=/usr/sbin/cron -f }"}}
    calls = []

    def systemctl(argv):
        calls.append(argv)
        if argv[1] == "list-units":
            return 0, "cron.service loaded active running cron\n\u25cf sglang@qwen-b.service loaded active x\n", ""
        names = [a for a in argv[2:] if a.endswith(".service")]
        return 0, "\n\n".join("".join("%s=%s\n" % kv for kv in show[n].items()) for n in names), ""

    found = discover(["sglang.launch_server"], systemctl, None, {"gpus": GPUS, "processes": []})
    assert [entry for entry, _unit in found] == [{
        "unit": "sglang@qwen-b.service", "template": "sglang@.service", "active_state": "active",
        "unit_file_state": None, "main_pid": 0, "python": "/opt/venv/bin/python3", "port": 30002,
        "gpus": {"indexes": [4, 5, 6, 7], "source": "CUDA_VISIBLE_DEVICES", "problem": None},
        "environment_from": "unit files", "environment_drift": [], "environment_note": None, "after_restart": None}]
    # cron was looked at once (its ExecStart), never read as a unit.
    assert not any(argv[-1] == "cron.service" and "-p" in argv and len(argv) == 6 for argv in calls[2:])
    assert sglang_services.SGLANG_DEFAULT_PORT == 30000


def test_which_services_may_run_sglang_is_kept_until_a_unit_file_a_script_or_a_service_changes(
        tmp_path, monkeypatch):
    units = tmp_path / "system"
    (units / "api.service.d").mkdir(parents=True)
    (units / "api.service").write_text("[Service]\nExecStart=/srv/serve.sh\n")
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/sh\nexec /usr/bin/python3 -m http.server\n")
    monkeypatch.setattr(sglang_services, "SYSTEMD_UNIT_DIRS", (str(units), str(tmp_path / "missing")))
    shows, lines = [], {"api.service": "api.service loaded active running api",
                        "cron.service": "cron.service loaded active running cron"}

    def systemctl(argv):
        if argv[1] == "list-units":
            return 0, "\n".join(lines.values()) + "\n", ""
        if argv[4] != "Id,ExecStart":
            return 0, "Id=%s\nLoadState=loaded\n" % argv[-1], ""  # a candidate read as a unit
        shows.append(argv)
        return 0, ("Id=api.service\nExecStart={ path=%s ; argv[]=%s }\n\nId=cron.service\n"
                   "ExecStart={ path=/usr/sbin/cron ; argv[]=/usr/sbin/cron -f }\n" % (script, script)), ""

    def scans():
        discover(["sglang.launch_server"], systemctl, None, {"gpus": GPUS, "processes": []},
                 cache_dir=str(tmp_path / "cache"))
        return len(shows)

    assert scans() == 1 and scans() == 1  # the second run reads no service
    # The script now starts SGLang (no unit changed): read again, and found.
    script.write_text("#!/bin/sh\nexec /opt/venv/bin/python3 -m sglang.launch_server\n")
    candidates = sglang_services._sglang_candidates(list(sglang_services._loaded_services(systemctl)), systemctl,
                                                    str(tmp_path / "cache"))
    assert candidates == ["api.service"] and len(shows) == 2
    assert scans() == 2
    (units / "api.service.d" / "override.conf").write_text("[Service]\nExecStart=\nExecStart=/srv/other\n")
    assert scans() == 3  # a drop-in
    lines["cron.service"] = "cron.service loaded inactive dead cron"
    assert scans() == 4  # a service's state
    # In check mode nothing is kept; a cache that cannot be written is only a miss.
    lines["new.service"] = "new.service loaded active running new"
    discover([], systemctl, None, {"gpus": GPUS, "processes": []}, cache_dir=str(tmp_path / "cache"), check_mode=True)
    assert scans() == 6
    (tmp_path / "file").write_text("")
    discover([], systemctl, None, {"gpus": GPUS, "processes": []}, cache_dir=str(tmp_path / "file"))
    assert len(shows) == 7


def test_a_running_service_is_mapped_by_what_its_process_got(tmp_path, monkeypatch):
    # The files were edited since the start: the map shows what runs, and what a restart gives.
    conf = tmp_path / "gamma.env"
    conf.write_text("# moved off the GPUs; was CUDA_VISIBLE_DEVICES=0,1\nCUDA_VISIBLE_DEVICES=\n; LLM_PORT=1\n"
                    "LLM_PORT=30014\n")
    processes = {77: {"CUDA_VISIBLE_DEVICES": "0,1", "LLM_PORT": "30013", "PATH": "/usr/bin"}}
    monkeypatch.setattr(service_environment, "process_environment",
                        lambda pid, names: dict((k, v) for k, v in processes[pid].items() if k in names))
    unit = {"id": "llm@gamma.service", "active_state": "active", "main_pid": 77,
            "environment_files": [{"path": str(conf)}],
            "command": {"python": "/opt/venv/bin/python3",
                        "args": [["--port", "--port"], ["${LLM_PORT}", "${LLM_PORT}"]]}}
    entry = sglang_services.describe(unit, {"gpus": GPUS, "processes": []}, {"PATH": "/usr/bin"})
    assert (entry["port"], entry["gpus"]["indexes"], entry["environment_from"]) == (30013, [0, 1], "process 77")
    assert entry["environment_drift"] == ["CUDA_VISIBLE_DEVICES", "LLM_PORT"]
    assert entry["environment_note"] == "edited since start, restart pending: CUDA_VISIBLE_DEVICES, LLM_PORT"
    assert entry["after_restart"] == {"port": 30014, "gpus": {"indexes": [], "source": "CUDA_VISIBLE_DEVICES",
                                                              "problem": None}}
