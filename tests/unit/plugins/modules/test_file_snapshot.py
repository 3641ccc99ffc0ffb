"""file_snapshot's main(): each state through the module, check mode changing nothing, what it returns, and the
refusals as failures naming the host. The files live in the test's own directory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.file_snapshot import SnapshotError
from ansible_collections.gpufleet.sglang.plugins.modules import file_snapshot

from .module_runner import always_returned, host_msg, run_module


@pytest.fixture
def host(tmp_path):
    """An operator's drop-in that exists, an environment file that does not yet, and the snapshot's directory."""
    dropin = tmp_path / "etc" / "sglang-qwen.service.d" / "90-gpufleet-sglang.conf"
    dropin.parent.mkdir(parents=True)
    dropin.write_text("[Service]\nEnvironment=A=1\n")
    dropin.chmod(0o640)
    env = tmp_path / "etc" / "sglang" / "sglang-qwen.service.env"
    return {"dropin": dropin, "env": env, "dir": tmp_path / "snapshot"}


def save(host, check_mode=False):
    return run_module(file_snapshot, {"dir": str(host["dir"]), "paths": [str(host["dropin"]), str(host["env"])]},
                      check_mode=check_mode)


def test_saved_then_restored_puts_the_files_back(host):
    done = save(host)
    assert not done.failed and done.result["changed"] is True and done.result["restored"] == []
    assert sorted(done.result) == sorted(always_returned(file_snapshot) + ["changed"])
    assert [(f["path"], f["existed"]) for f in done.result["files"]] == [
        (str(host["dropin"]), True), (str(host["env"]), False)]
    # The change the snapshot guards.
    host["dropin"].write_text("[Service]\nEnvironment=A=2\n")
    host["env"].parent.mkdir()
    host["env"].write_text("TOKEN=x\n")

    done = run_module(file_snapshot, {"dir": str(host["dir"]), "state": "restored"})
    assert not done.failed and done.result["changed"] is True
    assert sorted(done.result["restored"]) == sorted([str(host["dropin"]), str(host["env"])])
    assert host["dropin"].read_text() == "[Service]\nEnvironment=A=1\n"
    assert host["dropin"].stat().st_mode & 0o777 == 0o640
    assert not host["env"].exists() and not host["env"].parent.exists()
    assert not host["dir"].exists()
    # Nothing left to restore: no change.
    done = run_module(file_snapshot, {"dir": str(host["dir"]), "state": "restored"})
    assert done.result == {"changed": False, "files": [], "restored": []}


def test_check_mode_reports_and_changes_nothing(host):
    done = save(host, check_mode=True)
    assert not done.failed and done.result["changed"] is True and len(done.result["files"]) == 2
    assert not host["dir"].exists()

    save(host)
    host["dropin"].write_text("edited\n")
    done = run_module(file_snapshot, {"dir": str(host["dir"]), "state": "restored"}, check_mode=True)
    assert done.result["changed"] is True and done.result["restored"] == [str(host["dropin"])]
    assert host["dropin"].read_text() == "edited\n" and host["dir"].is_dir()
    done = run_module(file_snapshot, {"dir": str(host["dir"]), "state": "absent"}, check_mode=True)
    assert done.result == {"changed": True, "files": [], "restored": []} and host["dir"].is_dir()

    done = run_module(file_snapshot, {"dir": str(host["dir"]), "state": "absent"})
    assert done.result == {"changed": True, "files": [], "restored": []} and not host["dir"].exists()
    assert run_module(file_snapshot, {"dir": str(host["dir"]), "state": "absent"}).result["changed"] is False


def test_a_snapshot_left_by_an_interrupted_run_is_refused(host):
    save(host)
    done = save(host)
    assert done.failed and done.msg.startswith(host_msg("a previous-state copy from an interrupted run is at %s"
                                                        % host["dir"]))
    assert set(done.result) == {"msg"}


def test_a_path_that_is_not_a_regular_file_is_refused(host):
    done = run_module(file_snapshot, {"dir": str(host["dir"]), "paths": [str(host["dropin"].parent)]})
    assert done.failed and done.msg == host_msg("%s is not a regular file; it cannot be kept as a previous-state copy"
                                                % host["dropin"].parent)
    assert not host["dir"].exists()


def test_each_state_calls_the_snapshot_with_dry_run_in_check_mode(monkeypatch, tmp_path):
    calls = []

    class Recorder(object):
        def __init__(self, directory):
            calls.append(("init", directory))

        def save(self, paths, dry_run=False):
            calls.append(("save", paths, dry_run))
            return [{"path": p, "existed": True} for p in paths]

        def restore(self, dry_run=False):
            calls.append(("restore", dry_run))
            raise SnapshotError("the copy of /etc/x is unreadable")

        def remove(self, dry_run=False):
            calls.append(("remove", dry_run))
            return False

    monkeypatch.setattr(file_snapshot, "Snapshot", Recorder)
    d = str(tmp_path / "s")
    assert run_module(file_snapshot, {"dir": d, "paths": ["/etc/x"]}, check_mode=True).result["changed"] is True
    done = run_module(file_snapshot, {"dir": d, "state": "restored"})
    assert done.failed and done.msg == host_msg("the copy of /etc/x is unreadable")
    assert run_module(file_snapshot, {"dir": d, "state": "absent"}, check_mode=True).result["changed"] is False
    assert calls == [("init", d), ("save", ["/etc/x"], True), ("init", d), ("restore", False), ("init", d),
                     ("remove", True)]


@pytest.mark.parametrize("args, message", [
    ({}, "missing required arguments: dir"),
    ({"dir": "/var/lib/x", "state": "present"}, "value of state must be one of: saved, restored, absent"),
    ({"dir": "/var/lib/x", "paths": "/etc/a"}, None),  # a string is a list of one path
])
def test_options(args, message, monkeypatch):
    monkeypatch.setattr(file_snapshot.Snapshot, "save", lambda self, paths, dry_run=False: [{"path": p} for p in paths])
    done = run_module(file_snapshot, args)
    if message:
        assert done.failed and message in done.msg, done.msg
    else:
        assert not done.failed and done.result["files"] == [{"path": "/etc/a"}]
