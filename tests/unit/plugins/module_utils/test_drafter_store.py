"""The drafter store (module_utils/drafter_store.py; drafter_hub.py fetches into it) against a small in-process
server that answers the three calls of the Hugging Face API a fetch makes (revision, tree, resolve with Range),
over real HTTP and urllib. The lab's real mirror (olah) is exercised by the Molecule scenario `multi`."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils import drafter_hub as dh
from ansible_collections.gpufleet.sglang.plugins.module_utils import drafter_store as ds

REPO = "lab/tiny-dflash"
COMMIT = "a" * 40
CONFIG = json.dumps({"architectures": ["DFlashDraftModel"], "dflash_config": {"block_size": 16}}).encode()
WEIGHTS = os.urandom(300 * 1024)


def _blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub(object):
    def __init__(self):
        self.files = {"config.json": CONFIG, "model.safetensors": WEIGHTS}
        self.lfs = {"model.safetensors"}
        self.listed = {}  # path -> bytes the metadata describes (default: the served bytes)
        self.honour_range = True
        self.stall_after = None  # bytes of a download after which the server stops sending
        self.served = 0
        self.ranges = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                path = self.path.split("?")[0]
                if path in ("/api/models/%s/revision/%s" % (REPO, COMMIT), "/api/models/%s/revision/main" % REPO):
                    return self._json(200, {"id": REPO, "sha": COMMIT,
                                            "siblings": [{"rfilename": p} for p in hub.files]})
                if path.startswith("/api/models/%s/revision/" % REPO):
                    return self._json(404, {"error": "Revision not found"})
                if path == "/api/models/%s/tree/%s" % (REPO, COMMIT):
                    return self._json(200, hub.tree())
                prefix = "/%s/resolve/%s/" % (REPO, COMMIT)
                if path.startswith(prefix):
                    return self._file(path[len(prefix):])
                self._json(404, {"error": "not found"})

            def _file(self, name):
                data = hub.files[name]
                start = 0
                header = self.headers.get("Range")
                hub.ranges.append(header)
                if header and hub.honour_range:
                    start = int(header.split("=")[1].rstrip("-"))
                    self.send_response(206)
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                if hub.stall_after is not None:
                    self.wfile.write(body[:hub.stall_after])
                    self.wfile.flush()
                    hub.served += hub.stall_after
                    time.sleep(3)
                    return
                self.wfile.write(body)
                hub.served += len(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = "http://127.0.0.1:%d" % self.server.server_address[1]
        # Polled every 20 ms (serve_forever's default, 0.5 s, is what each test's shutdown waited).
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def tree(self):
        out = []
        for path, data in self.files.items():
            described = self.listed.get(path, data)
            if path in self.lfs:
                out.append({"type": "file", "path": path, "size": 134, "oid": "f" * 40,
                            "lfs": {"oid": hashlib.sha256(described).hexdigest(), "size": len(described)}})
            else:
                out.append({"type": "file", "path": path, "size": len(described), "oid": _blob_sha1(described)})
        return out

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub():
    fake = FakeHub()
    yield fake
    fake.close()


OPTS = {"min_free_percent": 0, "min_free_bytes": 0, "stall_timeout": 5, "lock_timeout": 2}


def _fetch(tmp_path, hub, revision=COMMIT, **opts):
    store = ds.Store(str(tmp_path / "store"), host="gpu-07")
    return dh.fetch_from_hub(store, dh.Hub(hub.endpoint, timeout=5), REPO, revision, dict(OPTS, **opts))


def test_first_fetch_then_nothing_to_do(tmp_path, hub):
    first = _fetch(tmp_path, hub)
    assert first["changed"] and first["verified"]
    assert first["bytes_transferred"] == len(CONFIG) + len(WEIGHTS)
    final = tmp_path / "store" / "lab--tiny-dflash" / COMMIT
    assert first["path"] == str(final)
    assert (final / "model.safetensors").read_bytes() == WEIGHTS
    manifest = json.loads((final / ds.MANIFEST).read_text())
    assert manifest["files"]["model.safetensors"]["sha256"] == hashlib.sha256(WEIGHTS).hexdigest()
    assert not (tmp_path / "store" / "lab--tiny-dflash" / (ds.PARTIAL_PREFIX + COMMIT)).exists()
    served = hub.served
    second = _fetch(tmp_path, hub)
    assert not second["changed"] and second["verified"] and second["bytes_transferred"] == 0
    assert hub.served == served


def test_a_branch_is_stored_under_its_commit(tmp_path, hub):
    assert _fetch(tmp_path, hub, revision="main")["path"].endswith("/" + COMMIT)


def test_corrupt_file_on_the_mirror_is_refused_with_both_digests(tmp_path, hub):
    hub.listed["model.safetensors"] = WEIGHTS
    hub.files["model.safetensors"] = b"\0" + WEIGHTS[1:]
    with pytest.raises(ds.DrafterError) as err:
        _fetch(tmp_path, hub)
    message = str(err.value)
    assert "model.safetensors" in message
    assert hashlib.sha256(WEIGHTS).hexdigest() in message
    assert hashlib.sha256(hub.files["model.safetensors"]).hexdigest() in message
    assert not (tmp_path / "store" / "lab--tiny-dflash" / COMMIT).exists()


def test_corrupt_small_file_is_checked_against_its_git_blob(tmp_path, hub):
    hub.listed["config.json"] = CONFIG
    hub.files["config.json"] = CONFIG.replace(b"16", b"61")
    with pytest.raises(ds.DrafterError, match="config.json .*git blob sha1 .*expected %s" % _blob_sha1(CONFIG)):
        _fetch(tmp_path, hub)


def test_missing_revision_names_repo_and_revision(tmp_path, hub):
    with pytest.raises(ds.DrafterError) as err:
        _fetch(tmp_path, hub, revision="b" * 40)
    assert "revision %s of the repo %s" % ("b" * 40, REPO) in str(err.value)
    assert not (tmp_path / "store").exists()


def test_partial_copy_is_resumed_with_range_and_verified(tmp_path, hub):
    partial = tmp_path / "store" / "lab--tiny-dflash" / (ds.PARTIAL_PREFIX + COMMIT)
    partial.mkdir(parents=True)
    (partial / "model.safetensors").write_bytes(WEIGHTS[:100000])
    result = _fetch(tmp_path, hub)
    assert result["resumed"] and result["verified"]
    assert "bytes=100000-" in hub.ranges
    assert result["bytes_transferred"] == len(CONFIG) + len(WEIGHTS) - 100000


def test_partial_copy_is_never_trusted(tmp_path, hub):
    """Same size, wrong bytes (a crash before the data reached the disk): fetched again."""
    partial = tmp_path / "store" / "lab--tiny-dflash" / (ds.PARTIAL_PREFIX + COMMIT)
    partial.mkdir(parents=True)
    (partial / "model.safetensors").write_bytes(b"\0" * len(WEIGHTS))
    result = _fetch(tmp_path, hub)
    assert result["verified"]
    assert (tmp_path / "store" / "lab--tiny-dflash" / COMMIT / "model.safetensors").read_bytes() == WEIGHTS


def test_partial_file_larger_than_the_real_one_is_removed(tmp_path, hub):
    partial = tmp_path / "store" / "lab--tiny-dflash" / (ds.PARTIAL_PREFIX + COMMIT)
    partial.mkdir(parents=True)
    (partial / "model.safetensors").write_bytes(WEIGHTS + WEIGHTS[:10])
    assert _fetch(tmp_path, hub)["verified"]


def test_mirror_that_ignores_range_starts_the_file_again(tmp_path, hub):
    hub.honour_range = False
    partial = tmp_path / "store" / "lab--tiny-dflash" / (ds.PARTIAL_PREFIX + COMMIT)
    partial.mkdir(parents=True)
    (partial / "model.safetensors").write_bytes(WEIGHTS[:100000])
    assert _fetch(tmp_path, hub)["verified"]


def test_stalled_transfer_times_out_and_keeps_the_partial_file(tmp_path, hub):
    hub.stall_after = 50000
    with pytest.raises(ds.DrafterError, match="stalled: no byte for 1s after"):
        _fetch(tmp_path, hub, stall_timeout=1)
    partial = tmp_path / "store" / "lab--tiny-dflash" / (ds.PARTIAL_PREFIX + COMMIT)
    assert (partial / "model.safetensors").stat().st_size == 50000
    assert not (tmp_path / "store" / "lab--tiny-dflash" / COMMIT).exists()
    hub.stall_after = None
    assert _fetch(tmp_path, hub)["resumed"]


def test_full_disk_is_refused_before_anything_is_written(tmp_path, hub):
    with pytest.raises(ds.DrafterError) as err:
        _fetch(tmp_path, hub, min_free_bytes=1 << 62)
    message = str(err.value)
    assert "gpu-07" in message and "bytes free" in message
    assert "%d bytes needed" % (len(CONFIG) + len(WEIGHTS)) in message
    assert not (tmp_path / "store").exists()


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path, hub):
    base = tmp_path / "store" / "lab--tiny-dflash"
    base.mkdir(parents=True)
    (base / ("." + COMMIT + ds.LOCK_SUFFIX)).write_text(json.dumps(
        {"pid": 2 ** 22 + 7, "host": socket.gethostname(), "time": "2026-01-01T00:00:00Z"}))
    result = _fetch(tmp_path, hub)
    assert result["verified"] and result["stale_lock"]["pid"] == 2 ** 22 + 7
    assert not (base / ("." + COMMIT + ds.LOCK_SUFFIX)).exists()


def test_live_lock_of_another_run_is_waited_for_then_named(tmp_path, hub):
    base = tmp_path / "store" / "lab--tiny-dflash"
    base.mkdir(parents=True)
    (base / ("." + COMMIT + ds.LOCK_SUFFIX)).write_text(json.dumps(
        {"pid": os.getpid(), "host": socket.gethostname(), "time": "now"}))
    with pytest.raises(ds.DrafterError, match="locked by pid %d" % os.getpid()):
        _fetch(tmp_path, hub, lock_timeout=1)


def test_bandwidth_limit_slows_the_transfer(tmp_path, hub):
    start = time.time()
    _fetch(tmp_path, hub, bandwidth_limit=300 * 1024)
    assert time.time() - start >= 0.8


def test_gc_keeps_the_newest_and_those_in_use(tmp_path):
    store = ds.Store(str(tmp_path))
    base = tmp_path / "lab--tiny-dflash"
    for i, name in enumerate(["r1", "r2", "r3", "r4"]):
        (base / name).mkdir(parents=True)
        (base / name / ds.MANIFEST).write_text(json.dumps({"verified_at": "2026-12-0%dT00:00:00Z" % (i + 1)}))
    removed = store.gc(REPO, 2, [str(base / "r1")])
    assert removed == [str(base / "r2")]
    assert sorted(os.listdir(base)) == ["r1", "r3", "r4"]


def test_paths_in_use_found_in_a_unit_file(tmp_path):
    units = tmp_path / "units"
    units.mkdir()
    store = tmp_path / "store"
    (units / "sglang.service.d").mkdir()
    (units / "sglang.service.d" / "90.conf").write_text(
        "ExecStart=python -m sglang.launch_server --speculative-draft-model-path %s/lab--x/abc --port 1\n" % store)
    assert str(store / "lab--x" / "abc") in ds.paths_in_use(str(store), [str(units)])


def test_controller_manifest_staged_then_verified(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_bytes(CONFIG)
    (src / "model.safetensors").write_bytes(WEIGHTS)
    manifest = ds.manifest_of_dir(str(src))
    revision = ds.manifest_revision(manifest)
    store = ds.Store(str(tmp_path / "store"), host="gpu-07")
    staged = ds.staged_from_manifest(store, "my-drafter", revision, manifest, stage=True, opts=OPTS)
    assert staged["changed"] and os.path.isdir(staged["partial"])
    (tmp_path / "store" / "my-drafter" / (ds.PARTIAL_PREFIX + revision) / "config.json").write_bytes(CONFIG)
    (tmp_path / "store" / "my-drafter" / (ds.PARTIAL_PREFIX + revision) / "model.safetensors").write_bytes(
        WEIGHTS[:-1] + b"\0")
    with pytest.raises(ds.DrafterError, match="model.safetensors .*sha256 .*expected %s"
                       % hashlib.sha256(WEIGHTS).hexdigest()):
        ds.staged_from_manifest(store, "my-drafter", revision, manifest, stage=False, opts=OPTS)
    (tmp_path / "store" / "my-drafter" / (ds.PARTIAL_PREFIX + revision) / "model.safetensors").write_bytes(WEIGHTS)
    done = ds.staged_from_manifest(store, "my-drafter", revision, manifest, stage=False, opts=OPTS)
    assert done["verified"] and os.path.isfile(os.path.join(done["path"], "model.safetensors"))
    again = ds.staged_from_manifest(store, "my-drafter", revision, manifest, stage=True, opts=OPTS)
    assert not again["changed"] and again["verified"]


def test_store_copy_reads_the_manifest_of_a_copy_and_whether_every_file_is_there(tmp_path, hub):
    result = _fetch(tmp_path, hub)
    copy = ds.store_copy(result["path"])
    assert copy["source"] == "hub" and copy["repo"] == result["repo"] and copy["commit"] == result["commit"]
    assert copy["total_bytes"] == result["total_bytes"] and copy["files"] == result["files"] and copy["complete"]
    with open(os.path.join(result["path"], "config.json"), "ab") as handle:
        handle.write(b" ")
    assert ds.store_copy(result["path"])["complete"] is False
    os.unlink(os.path.join(result["path"], "config.json"))
    assert ds.store_copy(result["path"])["complete"] is False
    # A drafter directory someone copied by hand is not a copy of the store.
    assert ds.store_copy(str(tmp_path)) is None


def test_refuses_paths_that_leave_the_copy(tmp_path, hub):
    hub.files["../escape"] = b"x"
    with pytest.raises(ds.DrafterError, match="not a plain relative path"):
        _fetch(tmp_path, hub)
