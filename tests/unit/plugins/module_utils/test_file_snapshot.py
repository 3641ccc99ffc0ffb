"""The previous-state copy: save, restore byte for byte, and what an interrupted run left behind."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.file_snapshot import Snapshot, SnapshotError


@pytest.fixture
def files(tmp_path):
    dropin = tmp_path / "etc" / "sglang.service.d" / "90-gpufleet-sglang.conf"
    dropin.parent.mkdir(parents=True)
    dropin.write_bytes(b"[Service]\nExecStart=\nExecStart=/old\n")
    os.chmod(dropin, 0o640)
    return dropin, tmp_path / "etc" / "sglang.env"


def test_save_then_restore_is_byte_for_byte_and_removes_what_did_not_exist(tmp_path, files):
    dropin, env = files
    snapshot = Snapshot(str(tmp_path / "state" / "sglang.service"))
    snapshot.save([str(dropin), str(env)])
    assert oct(os.stat(snapshot.dir).st_mode & 0o777) == "0o700"
    dropin.write_bytes(b"changed")
    env.write_text("NEW=1\n")
    _files, restored = snapshot.restore()
    assert restored == [str(dropin), str(env)]
    assert dropin.read_bytes() == b"[Service]\nExecStart=\nExecStart=/old\n"
    assert oct(os.stat(dropin).st_mode & 0o777) == "0o640"
    assert not env.exists() and not os.path.exists(snapshot.dir)


def test_an_empty_directory_left_by_an_interrupted_run_is_adopted(tmp_path, files):
    dropin, env = files
    state = tmp_path / "state" / "sglang.service"
    state.mkdir(parents=True)
    os.chmod(state, 0o755)
    Snapshot(str(state)).save([str(dropin), str(env)])
    assert (state / "manifest.json").exists()
    assert oct(os.stat(state).st_mode & 0o777) == "0o700"


def test_partial_copies_without_a_manifest_are_adopted(tmp_path, files):
    """save() stopped between the copies and the manifest: no file had been changed, so start over."""
    dropin, env = files
    state = tmp_path / "state" / "sglang.service"
    state.mkdir(parents=True)
    (state / "0.data").write_bytes(b"half")
    (state / "manifest.json.tmp").write_text("{")
    Snapshot(str(state)).save([str(dropin), str(env)])
    assert (state / "0.data").read_bytes() == dropin.read_bytes()
    assert sorted(os.listdir(state)) == ["0.data", "manifest.json"]


def test_a_directory_with_foreign_files_is_refused_naming_them(tmp_path, files):
    dropin, env = files
    state = tmp_path / "state" / "sglang.service"
    state.mkdir(parents=True)
    (state / "notes.txt").write_text("mine")
    with pytest.raises(SnapshotError) as exc:
        Snapshot(str(state)).save([str(dropin), str(env)])
    message = str(exc.value)
    assert str(state) in message and "notes.txt" in message and "nothing was changed" in message
    assert (state / "notes.txt").read_text() == "mine"


def test_a_file_in_the_way_is_refused(tmp_path, files):
    dropin, env = files
    state = tmp_path / "sglang.service"
    state.write_text("x")
    with pytest.raises(SnapshotError, match="not a directory"):
        Snapshot(str(state)).save([str(dropin), str(env)])


def test_a_copy_from_an_interrupted_run_with_its_manifest_is_never_overwritten(tmp_path, files):
    dropin, env = files
    snapshot = Snapshot(str(tmp_path / "state"))
    snapshot.save([str(dropin), str(env)])
    with pytest.raises(SnapshotError, match="interrupted run"):
        snapshot.save([str(dropin), str(env)])


def test_snapshot_restores_bytes_modes_and_absence(tmp_path):
    kept = tmp_path / "etc" / "env"
    kept.parent.mkdir()
    kept.write_bytes(b"TOKEN=old\n")
    kept.chmod(0o600)
    created = tmp_path / "unit.d" / "90.conf"
    snapshot = Snapshot(str(tmp_path / "state"))
    files = snapshot.save([str(kept), str(created)])
    assert [f["existed"] for f in files] == [True, False]
    assert oct(os.stat(tmp_path / "state").st_mode & 0o777) == "0o700"
    with pytest.raises(SnapshotError, match="interrupted run"):
        snapshot.save([str(kept)])
    kept.write_bytes(b"TOKEN=new\n")
    kept.chmod(0o644)
    created.parent.mkdir()
    created.write_text("[Service]\n")
    _files, restored = snapshot.restore()
    assert kept.read_bytes() == b"TOKEN=old\n" and oct(kept.stat().st_mode & 0o777) == "0o600"
    assert not created.exists() and not created.parent.exists()
    assert sorted(restored) == sorted([str(kept), str(created)]) and not (tmp_path / "state").exists()
