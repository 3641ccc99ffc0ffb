"""systemd_unit: `systemctl show`, unit files read with systemd's rules, and the service read on the host
(driven here by a fake systemctl and unit files in a temporary directory)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import UnitError, resolve_command
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import (
    MANAGED_MARKER,
    command_to_dict,
    effective_settings,
    environment_files,
    logical_lines,
    parse_show,
    read_service,
    service_assignments,
    split_environment,
    words_from_pairs,
)

LAUNCHERS = ["sglang.launch_server"]
DROPIN = "90-gpufleet-sglang.conf"


# ---- systemctl show ----------------------------------------------------------------------------------

def test_parse_show_splits_on_the_first_equals_sign():
    assert parse_show("Id=a.service\nEnvironment=A=1 B=2\nno equals sign\nEmpty=\n") == {
        "Id": "a.service", "Environment": "A=1 B=2", "Empty": ""}


def test_environment_files_of_systemctl_show():
    assert environment_files("/etc/a.env (ignore_errors=no) /etc/b.env (ignore_errors=yes)") == [
        {"path": "/etc/a.env", "optional": False}, {"path": "/etc/b.env", "optional": True}]
    assert environment_files(None) == []


# ---- unit files ---------------------------------------------------------------------------------

def test_dropins_reset_and_accumulate_as_systemd_does():
    fragment = ("[Unit]\nDescription=x\n[Service]\nEnvironment=A=1\nExecStart=/usr/bin/python3 -m a \\\n"
                "  --port 1\n# a comment\nUser=sglang\n")
    dropin1 = "[Service]\nEnvironment=B=2\nUser=svc\n"
    dropin2 = "[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m b --port 2\n"
    settings = effective_settings(service_assignments([("/u", fragment), ("/d1", dropin1), ("/d2", dropin2)]))
    assert settings["ExecStart"] == [("/d2", "/usr/bin/python3 -m b --port 2")]
    assert settings["Environment"] == [("/u", "A=1"), ("/d1", "B=2")]
    assert settings["User"] == "svc"
    continued = effective_settings(service_assignments([("/u", fragment)]))["ExecStart"]
    assert continued == [("/u", "/usr/bin/python3 -m a  --port 1")]


def test_logical_lines_skip_comments_even_inside_a_continued_line():
    text = "; a comment\n\n[Service]\nExecStart=/bin/a \\\n# skipped\n  --b \\\n; skipped too\n  --c\nLast=\\"
    assert logical_lines(text) == ["[Service]", "ExecStart=/bin/a  --b  --c", "Last= "]


def test_only_the_service_section_counts():
    text = "[Unit]\nUser=unit\n[Install]\nUser=install\n[Service]\n User = svc \n"
    assert service_assignments([("/u", text)]) == [("/u", "User", "svc")]


def test_environment_values_with_quotes_and_spaces():
    assert split_environment('"A=x y" B=2 "C=\\$HOME"') == [("A", "x y"), ("B", "2"), ("C", "$HOME")]


def test_command_as_plain_data_and_back():
    words = words_from_pairs([["/opt/venv/bin/python3", "/opt/venv/bin/python3"], ["-m", "-m"],
                              ["sglang.launch_server", "sglang.launch_server"], ["a b", '"a b"']])
    command = command_to_dict(resolve_command(words, LAUNCHERS))
    assert command["args"] == [["a b", '"a b"']] and command["python"] == "/opt/venv/bin/python3"
    assert [(w.value, w.raw) for w in words_from_pairs(command["args"])] == [("a b", '"a b"')]


# ---- the service, read on the host ----------------------------------------------------------------

class Systemctl(object):
    """A fake run_systemctl answering `systemctl show` with the given properties."""

    def __init__(self, properties, rc=0, stderr=""):
        self.properties = properties
        self.rc = rc
        self.stderr = stderr
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        return self.rc, "".join("%s=%s\n" % kv for kv in self.properties.items()), self.stderr


def show(fragment, dropins=(), **extra):
    properties = {"Id": "sglang-qwen.service", "LoadState": "loaded", "ActiveState": "active", "SubState": "running",
                  "UnitFileState": "enabled", "FragmentPath": str(fragment), "DropInPaths": " ".join(map(str, dropins)),
                  "MainPID": "4242", "NRestarts": "0", "KillMode": "control-group", "TimeoutStopUSec": "1min 30s"}
    properties.update(extra)
    return properties


def unit_file(path, text):
    path.write_text(text)
    return path


def test_read_service_resolves_the_command_in_effect(tmp_path):
    python = tmp_path / "python3"
    python.write_text("")
    python.chmod(0o755)
    fragment = unit_file(tmp_path / "sglang-qwen.service", "[Service]\nExecStart=/bin/false\nKillMode=mixed\n")
    override = unit_file(tmp_path / "50-override.conf",
                         "[Service]\nExecStart=\nExecStart=-python3 -m sglang.launch_server --port 30001\n")
    ours = "/etc/systemd/system/sglang-qwen.service.d/" + DROPIN  # not there: systemd would list it, we skip it
    systemctl = Systemctl(show(fragment, [override, ours], Environment="PATH=%s HF_HOME=/hf" % tmp_path,
                               EnvironmentFiles="/etc/sglang.env (ignore_errors=yes)"))
    unit = read_service("sglang-qwen", LAUNCHERS, systemctl, DROPIN)
    argv = systemctl.calls[0]
    assert argv[:3] == ["systemctl", "show", "--no-pager"] and argv[-1] == "sglang-qwen.service"
    assert unit["error"] is None and unit["exists"] and unit["managed_by_us"] is False
    assert (unit["main_pid"], unit["n_restarts"], unit["active_state"]) == (4242, 0, "active")
    assert unit["environment"] == [["PATH", str(tmp_path)], ["HF_HOME", "/hf"]]
    assert unit["environment_files"] == [{"path": "/etc/sglang.env", "optional": True}]
    assert unit["managed_dropin"] == {"path": ours, "exists": False, "content": None}
    assert unit["exec_start"] == {"file": str(override), "value": "-python3 -m sglang.launch_server --port 30001",
                                  "prefix": "-", "words": [["python3", "python3"], ["-m", "-m"],
                                                           ["sglang.launch_server", "sglang.launch_server"],
                                                           ["--port", "--port"], ["30001", "30001"]]}
    assert unit["command"]["python"] == str(python)  # found on the service's PATH
    assert unit["command"]["args"] == [["--port", "--port"], ["30001", "30001"]]
    assert unit["stop"] == {"kill_mode": "control-group", "timeout_stop": "1min 30s",
                            "operator_set": {"KillMode": "mixed"}}
    assert unit["later_exec_start_dropins"] == []


def test_read_service_marks_our_unit_and_later_dropins_setting_exec_start(tmp_path):
    fragment = unit_file(tmp_path / "sglang.service",
                         "# %s\n[Service]\nExecStart=/opt/venv/bin/python3 -m sglang.launch_server\n" % MANAGED_MARKER)
    later = unit_file(tmp_path / "99-local.conf", "[Service]\nExecStart=\nExecStart=/opt/venv/bin/python3 -m "
                                                  "sglang.launch_server --port 1\n")
    harmless = unit_file(tmp_path / "95-env.conf", "[Service]\nEnvironment=A=1\n")
    unit = read_service("sglang", LAUNCHERS, Systemctl(show(fragment, [harmless, later])), DROPIN)
    assert unit["managed_by_us"] is True and unit["later_exec_start_dropins"] == [str(later)]


@pytest.mark.parametrize("fragment_text, error", [
    ("[Service]\nExecStart=/usr/bin/python3 -m a\nExecStart=/usr/bin/python3 -m b\n",
     "sglang-qwen.service has 2 ExecStart= commands in effect (%(fragment)s); expected one"),
    ("[Service]\nType=simple\n", "sglang-qwen.service has 0 ExecStart= commands in effect (none); expected one"),
    ("[Service]\nExecStart=/usr/local/bin/run.sh\n",
     "sglang-qwen.service (ExecStart in %(fragment)s): ExecStart (/usr/local/bin/run.sh ...) is not 'python -m"),
])
def test_read_service_says_why_the_command_cannot_be_used(tmp_path, fragment_text, error):
    fragment = unit_file(tmp_path / "sglang-qwen.service", fragment_text)
    unit = read_service("sglang-qwen", LAUNCHERS, Systemctl(show(fragment)))
    assert unit["error"].startswith(error % {"fragment": fragment}) and unit["command"] is None
    assert unit["managed_dropin"] == {"path": None, "exists": False, "content": None}


def test_read_service_names_an_unreadable_file(tmp_path):
    fragment = unit_file(tmp_path / "sglang-qwen.service", "[Service]\nExecStart=/usr/bin/python3 -m a\n")
    missing = tmp_path / "10-gone.conf"
    unit = read_service("sglang-qwen", LAUNCHERS, Systemctl(show(fragment, [missing])))
    assert unit["error"].startswith("cannot read %s: " % missing) and unit["exec_start"] is None


def test_read_service_of_a_unit_systemd_does_not_know():
    unit = read_service("absent", LAUNCHERS, Systemctl({"Id": "absent.service", "LoadState": "not-found"}))
    assert unit["exists"] is False and unit["managed_dropin"] is None and unit["error"] is None


def test_read_service_raises_when_systemctl_fails():
    with pytest.raises(UnitError, match=r"systemctl show x.service failed \(rc=1\): Failed to connect to bus"):
        read_service("x", LAUNCHERS, Systemctl({}, rc=1, stderr="Failed to connect to bus\n"))
