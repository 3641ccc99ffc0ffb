"""sglang_drafter's main(): which path each state and source take (the mirror, a controller directory, the
manifest), the store's options passed on, check mode, the revisions kept, and the refusals. The mirror's fetch, the
store's verification and its garbage collection are mocked; the manifest of a directory is read for real."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_store import DrafterError
from ansible_collections.gpufleet.sglang.plugins.modules import sglang_drafter

from .module_runner import Calls, argument_spec, host_msg, run_module

REPO = "z-lab/Qwen3.6-27B-DFlash"
COMMIT = "4f1c2d0e9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"
ENDPOINT = "http://hf-mirror.internal:8090"
STORE_OPTIONS = {"min_free_percent": 10.0, "min_free_bytes": 0, "stall_timeout": 60, "bandwidth_limit": 0,
                 "lock_timeout": 300, "lock_stale_after": 3600, "rehash": False}


@pytest.fixture
def store(monkeypatch, tmp_path):
    """The store's calls mocked; returns the list of calls made, each (name, arguments...), with the store's
    directory (store_dir) and the copy's path (copy)."""
    calls = Calls()
    copy = str(tmp_path / "store" / "z-lab--Qwen3.6-27B-DFlash" / COMMIT)

    def fetched(source, changed=True, verified=True):
        return {"changed": changed, "path": copy, "source": source, "repo": REPO, "revision": COMMIT,
                "commit": COMMIT, "verified": verified, "total_bytes": 10, "files": {}}

    class Hub(object):
        def __init__(self, endpoint, token=None, timeout=60):
            calls.append(("hub", endpoint, token, timeout))

    def fetch_from_hub(store_, hub, repo, revision, opts, check_mode=False):
        calls.append(("fetch", store_.root, repo, revision, opts, check_mode))
        return fetched("mirror")

    def staged_from_manifest(store_, name, revision, manifest, stage, check_mode=False, opts=None):
        calls.append(("staged", name, revision, manifest, stage, check_mode, opts))
        return fetched("controller", changed=not stage, verified=not stage)

    def paths_in_use(store_root, config_dirs, configured=()):
        calls.append(("in_use", store_root, config_dirs, configured))
        return set(configured)

    def gc(self, repo, keep, in_use, dry_run=False):
        calls.append(("gc", repo, keep, in_use, dry_run))
        return [str(tmp_path / "store" / "old")] if keep == 1 else []

    monkeypatch.setattr(sglang_drafter, "Hub", Hub)
    monkeypatch.setattr(sglang_drafter, "fetch_from_hub", fetch_from_hub)
    monkeypatch.setattr(sglang_drafter, "staged_from_manifest", staged_from_manifest)
    monkeypatch.setattr(sglang_drafter, "paths_in_use", paths_in_use)
    monkeypatch.setattr(sglang_drafter.Store, "gc", gc)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    calls.store_dir = str(tmp_path / "store")
    calls.copy = copy
    return calls


def args(store, **over):
    base = {"repo": REPO, "revision": COMMIT, "endpoint": ENDPOINT, "store_dir": store.store_dir}
    base.update(over)
    return base


@pytest.mark.parametrize("check_mode", [False, True])
def test_from_the_mirror_with_the_store_options(store, check_mode):
    done = run_module(sglang_drafter, args(store, token="hf_secret", stall_timeout=30), check_mode=check_mode)
    assert not done.failed and done.result["changed"] is True and done.result["removed"] == []
    assert store == [("hub", ENDPOINT, "hf_secret", 30),
                     ("fetch", store.store_dir, REPO, COMMIT, dict(STORE_OPTIONS, stall_timeout=30), check_mode)]


def test_the_endpoint_from_the_environment(store, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://olah.lab:8090")
    assert not run_module(sglang_drafter, args(store, endpoint=None)).failed
    assert store[0] == ("hub", "http://olah.lab:8090", None, 60)


@pytest.mark.parametrize("over, message", [
    ({"endpoint": None}, "a drafter from a mirror needs endpoint (or HF_ENDPOINT) and a pinned revision; got "
                         "endpoint=None revision=%s for %s" % (COMMIT, REPO)),
    ({"revision": None}, "a drafter from a mirror needs endpoint (or HF_ENDPOINT) and a pinned revision; got "
                         "endpoint=%s revision=None for %s" % (ENDPOINT, REPO)),
    ({"repo": None}, "repo is required (the Hugging Face repo id, or the controller directory's name)"),
    ({"state": "staged"}, "state=staged needs a manifest (a controller directory)"),
])
def test_what_a_fetch_needs_is_asked_for_before_anything_runs(store, over, message):
    done = run_module(sglang_drafter, args(store, **over))
    assert done.failed and done.msg == host_msg(message)
    assert store == []


def test_a_controller_directory_is_staged_then_installed(store):
    manifest = {"model.safetensors": {"size": 10, "sha256": "a" * 64}}
    done = run_module(sglang_drafter, args(store, state="staged", manifest=manifest, revision=None))
    assert not done.failed and done.result["changed"] is False
    ((_step, name, revision, given, stage, check_mode, opts),) = store
    assert (name, given, stage, check_mode, opts) == (REPO, manifest, True, False, STORE_OPTIONS)
    # Without a revision, the manifest's digest names the content.
    assert revision == sglang_drafter.manifest_revision(manifest) and revision.startswith("local-")
    done = run_module(sglang_drafter, args(store, manifest=manifest, revision="v1"), check_mode=True)
    assert done.result["changed"] is True and store[-1][2:6] == ("v1", manifest, False, True)


def test_revisions_beyond_keep_revisions_are_removed_but_not_those_in_use(store):
    done = run_module(sglang_drafter, args(store, keep_revisions=1, in_use=["/etc/other"]), check_mode=True)
    assert done.result["removed"] == [store.store_dir + "/old"] and done.result["changed"] is True
    assert store[-2] == ("in_use", store.store_dir, ["/etc/systemd/system", "/etc/sglang"], ["/etc/other", store.copy])
    assert store[-1] == ("gc", REPO, 1, {"/etc/other", store.copy}, True)
    # A staged directory is not there yet: nothing is collected.
    del store[:]
    run_module(sglang_drafter, args(store, keep_revisions=1, state="staged", manifest={}))
    assert [c[0] for c in store] == ["staged"]


def test_the_manifest_of_a_directory(tmp_path, store):
    src = tmp_path / "drafter"
    (src / "sub").mkdir(parents=True)
    (src / "config.json").write_text("{}")
    (src / "sub" / "w.bin").write_bytes(b"\0" * 5)
    (src / ".hidden").write_text("x")
    done = run_module(sglang_drafter, {"state": "manifest", "src": str(src)})
    assert not done.failed and store == []
    files = {"config.json": {"size": 2, "sha256": hashlib.sha256(b"{}").hexdigest()},
             "sub/w.bin": {"size": 5, "sha256": hashlib.sha256(b"\0" * 5).hexdigest()}}
    assert done.result == {"changed": False, "files": files, "revision": sglang_drafter.manifest_revision(files),
                           "total_bytes": 7}
    done = run_module(sglang_drafter, {"state": "manifest", "src": str(tmp_path / "gone")})
    assert done.failed and done.msg == host_msg("the drafter directory %s does not exist on the controller "
                                                "(sglang_dflash_drafter src)" % (tmp_path / "gone"))


def test_errors_of_the_store_name_the_host_and_the_store(store, monkeypatch):
    def refuse(*a, **kw):
        raise DrafterError("%s: 12 bytes free, 10 GB needed" % store.store_dir)
    monkeypatch.setattr(sglang_drafter, "fetch_from_hub", refuse)
    done = run_module(sglang_drafter, args(store))
    assert done.failed and done.result == {"msg": host_msg("%s: 12 bytes free, 10 GB needed" % store.store_dir)}

    def denied(*a, **kw):
        raise PermissionError(13, "Permission denied", store.store_dir)
    monkeypatch.setattr(sglang_drafter, "fetch_from_hub", denied)
    done = run_module(sglang_drafter, args(store))
    assert done.failed and done.msg == host_msg("drafter store %s: [Errno 13] Permission denied: '%s'"
                                                % (store.store_dir, store.store_dir))


@pytest.mark.parametrize("over, message", [
    ({"state": "manifest"}, "state is manifest but all of the following are missing: src"),
    # An explicit null passes Ansible's required_if (the key is there); the module's own check names it.
    ({"state": "manifest", "src": None}, "the drafter directory None does not exist on the controller"),
    ({"state": "absent"}, "value of state must be one of: present, staged, manifest"),
    ({"keep_revisions": "two"}, "keep_revisions"),
    ({"manifest": ["config.json"]}, "manifest"),
])
def test_bad_options(store, over, message):
    done = run_module(sglang_drafter, args(store, **over))
    assert done.failed and message in done.msg, done.msg
    assert store == []


def test_the_token_is_kept_out_of_logs():
    assert argument_spec(sglang_drafter)["token"]["no_log"] is True
