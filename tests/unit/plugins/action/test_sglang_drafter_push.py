"""gpufleet.sglang.sglang_drafter_push: a controller directory onto the host, verified, as one task
(plugins/action/sglang_drafter_push.py)."""

from unittest import mock

from ansible_collections.gpufleet.sglang.plugins.action import sglang_drafter_push
from conftest import Host

DRAFTER = "gpufleet.sglang.sglang_drafter"


def test_the_manifest_is_made_once_while_no_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    src = tmp_path / "drafter"
    src.mkdir()
    (src / "config.json").write_text("{}")
    first = sglang_drafter_push.controller_manifest(str(src))
    with mock.patch.object(sglang_drafter_push, "manifest_of_dir", side_effect=AssertionError("hashed again")):
        assert sglang_drafter_push.controller_manifest(str(src)) == first
    (src / "model.safetensors").write_bytes(b"x" * 10)
    assert set(sglang_drafter_push.controller_manifest(str(src))) == {"config.json", "model.safetensors"}


def test_a_verified_copy_transfers_nothing_and_a_missing_one_is_copied_then_verified(run_action, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    src = tmp_path / "drafter"
    src.mkdir()
    (src / "config.json").write_text("{}")
    there = Host({DRAFTER: {"verified": True, "path": "/store/drafter/local-1", "repo": "drafter",
                            "revision": "local-1", "total_bytes": 2}})
    result = run_action(sglang_drafter_push.ActionModule, {"src": str(src), "services": ["*"]}, there)
    assert [args["state"] for _name, args in there.runs] == ["staged"]
    assert result["changed"] is False and result["bytes_transferred"] == 0 and result["services"] == ["*"]

    def drafter(args):
        if args.get("state") == "staged":
            return {"verified": False, "partial": "/store/drafter/.partial-local-1", "repo": "drafter",
                    "revision": "local-1", "total_bytes": 2}
        return {"verified": True, "path": "/store/drafter/local-1", "changed": True}
    missing = Host({DRAFTER: drafter})
    with mock.patch.object(sglang_drafter_push.ActionModule, "_copy") as copy:
        result = run_action(sglang_drafter_push.ActionModule, {"src": str(src)}, missing)
    copy.assert_called_once()
    assert copy.call_args[0][:2] == (str(src), "/store/drafter/.partial-local-1")
    assert [args.get("state") for _name, args in missing.runs] == ["staged", None]
    assert result["changed"] is True and result["bytes_transferred"] == 2 and result["verified"] is True
