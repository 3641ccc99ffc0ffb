# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A drafter's files on a host: one verified copy per revision in a store, fetched from a Hugging Face
compatible mirror (drafter_hub.py) or staged from the controller with a manifest, written into a temporary
directory on the same filesystem and renamed into place. What is in the final directory is complete and
verified, or nothing is there. Standard library only (the hosts rarely have more)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import time

MANIFEST = ".gpufleet-drafter.json"
PARTIAL_PREFIX = ".partial-"
LOCK_SUFFIX = ".lock"
CHUNK = 1 << 20


class DrafterError(Exception):
    pass


def repo_dir_name(repo):
    """The store's directory of a repo: org/name -> org--name (one level, no slash)."""
    return repo.replace("/", "--")


def git_blob_sha1(data_len, chunks):
    digest = hashlib.sha1(("blob %d\0" % data_len).encode("ascii"))
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def _read_chunks(path, limit=None):
    with open(path, "rb") as handle:
        left = limit
        while left is None or left > 0:
            chunk = handle.read(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            yield chunk


def file_digests(path):
    """sha256 and git blob sha1 of a file, in one read."""
    size = os.path.getsize(path)
    sha256 = hashlib.sha256()
    sha1 = hashlib.sha1(("blob %d\0" % size).encode("ascii"))
    for chunk in _read_chunks(path):
        sha256.update(chunk)
        sha1.update(chunk)
    return {"size": size, "sha256": sha256.hexdigest(), "git_sha1": sha1.hexdigest()}


def check_file(path, expected):
    """None when the file at path matches expected (size and sha256, or git blob sha1), else the reason."""
    if not os.path.isfile(path):
        return "missing"
    got = file_digests(path)
    if got["size"] != expected["size"]:
        return "size %d, expected %d" % (got["size"], expected["size"])
    if expected.get("sha256"):
        if got["sha256"] != expected["sha256"]:
            return "sha256 %s, expected %s" % (got["sha256"], expected["sha256"])
    elif expected.get("git_sha1"):
        if got["git_sha1"] != expected["git_sha1"]:
            return "git blob sha1 %s, expected %s" % (got["git_sha1"], expected["git_sha1"])
    else:
        return "no digest to check against"
    return None


def safe_relpath(path):
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise DrafterError("refusing the file name %r: not a plain relative path" % path)
    return path


# ---------------------------------------------------------------------------------------------- the store


class Lock(object):
    """An exclusive lock file next to the revision's directory: {pid, host, time}. A lock of a dead process on
    this host, or one older than stale_after seconds, is stale and taken over."""

    def __init__(self, path, timeout=300, stale_after=3600, poll=0.5):
        self.path = path
        self.timeout = timeout
        self.stale_after = stale_after
        self.poll = poll
        self.took_over = None

    def _holder(self):
        try:
            with open(self.path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    def _stale(self, holder):
        try:
            age = time.time() - os.path.getmtime(self.path)
        except OSError:
            return False
        if age > self.stale_after:
            return True
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            try:
                os.kill(holder["pid"], 0)
            except OSError as exc:
                return exc.errno == errno.ESRCH
        # A lock being written this instant has no content yet; it is only stale by age.
        return False

    def __enter__(self):
        deadline = time.time() + self.timeout
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise
                holder = self._holder()
                if self._stale(holder):
                    self.took_over = holder
                    try:
                        os.unlink(self.path)
                    except OSError:
                        pass
                    continue
                if time.time() > deadline:
                    raise DrafterError("%s is locked by pid %s on %s since %s for more than %ss: wait for that run, or "
                                       "remove the lock file if no run is fetching this drafter"
                                       % (self.path, holder.get("pid", "?"), holder.get("host", "?"),
                                          holder.get("time", "?"), self.timeout)) from None
                time.sleep(self.poll)
                continue
            with os.fdopen(fd, "w") as handle:
                json.dump({"pid": os.getpid(), "host": socket.gethostname(),
                           "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, handle)
            return self

    def __exit__(self, *exc_info):
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _existing_ancestor(path):
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def disk_preflight(path, needed, min_free_percent, min_free_bytes, host):
    """Refuse before any byte is written when the filesystem of path would keep less than the watermark."""
    probe = _existing_ancestor(path)
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    total = st.f_blocks * st.f_frsize
    keep = max(int(min_free_bytes or 0), int(total * float(min_free_percent or 0) / 100.0))
    if needed + keep > free:
        raise DrafterError(
            "not enough disk space on %s for the drafter at %s: %d bytes free (filesystem of %s), %d bytes needed "
            "plus %d bytes to keep free (sglang_dflash_drafter_min_free_percent=%s, min_free_bytes=%s); nothing was "
            "written: free space there, or set sglang_dflash_drafter_store_dir to a larger filesystem"
            % (host, path, free, probe, needed, keep, min_free_percent, min_free_bytes))
    return {"free": free, "needed": needed, "keep_free": keep}


class Store(object):
    def __init__(self, root, host=None):
        self.root = root
        self.host = host or socket.gethostname()

    def final_dir(self, repo, revision):
        return os.path.join(self.root, repo_dir_name(repo), revision)

    def partial_dir(self, repo, revision):
        return os.path.join(self.root, repo_dir_name(repo), PARTIAL_PREFIX + revision)

    def lock_path(self, repo, revision):
        return os.path.join(self.root, repo_dir_name(repo), "." + revision + LOCK_SUFFIX)

    @staticmethod
    def read_manifest(directory):
        try:
            with open(os.path.join(directory, MANIFEST)) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def verified(self, repo, revision, files, rehash=False):
        """The final directory's manifest when it holds exactly these files (sizes; digests when rehash)."""
        final = self.final_dir(repo, revision)
        manifest = self.read_manifest(final)
        if not manifest or manifest.get("files") != files:
            return None
        for path, expected in files.items():
            full = os.path.join(final, path)
            if rehash:
                if check_file(full, expected) is not None:
                    return None
            elif not os.path.isfile(full) or os.path.getsize(full) != expected["size"]:
                return None
        return manifest

    def bytes_present(self, repo, revision, files):
        """Bytes a partial copy already holds towards these files (counted for the disk preflight)."""
        partial = self.partial_dir(repo, revision)
        have = 0
        for path, expected in files.items():
            full = os.path.join(partial, path)
            if os.path.isfile(full):
                size = os.path.getsize(full)
                if size <= expected["size"]:
                    have += size
        return have

    def finalize(self, repo, revision, files, record):
        """Verify every file of the partial copy (never trusted), write the manifest, rename it into place."""
        partial = self.partial_dir(repo, revision)
        bad = []
        for path in sorted(files):
            reason = check_file(os.path.join(partial, path), files[path])
            if reason is not None:
                bad.append("%s (%s)" % (path, reason))
        if bad:
            raise DrafterError("the copy of %s at %s on %s failed verification: %s" % (repo, revision, self.host,
                                                                                       "; ".join(bad)))
        # Files nobody listed (a leftover of another revision's layout) are not part of the verified copy.
        listed = set(files)
        for base, _dirs, names in os.walk(partial):
            for name in names:
                rel = os.path.relpath(os.path.join(base, name), partial)
                if rel not in listed:
                    os.unlink(os.path.join(base, name))
        record = dict(record, files=files, verified_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with open(os.path.join(partial, MANIFEST), "w") as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        for base, dirs, names in os.walk(partial):
            for name in dirs:
                os.chmod(os.path.join(base, name), 0o755)
            for name in names:
                os.chmod(os.path.join(base, name), 0o644)
        os.chmod(partial, 0o755)
        final = self.final_dir(repo, revision)
        if os.path.exists(final):
            # A final directory that failed verify() (damaged by hand): moved aside, then removed.
            aside = final + ".replaced-%d" % os.getpid()
            os.rename(final, aside)
            shutil.rmtree(aside, ignore_errors=True)
        os.rename(partial, final)
        _fsync_dir(os.path.dirname(final))
        return final

    def revisions(self, repo):
        base = os.path.join(self.root, repo_dir_name(repo))
        found = []
        if not os.path.isdir(base):
            return found
        for name in os.listdir(base):
            full = os.path.join(base, name)
            if name.startswith(".") or not os.path.isdir(full):
                continue
            manifest = self.read_manifest(full) or {}
            found.append((manifest.get("verified_at") or "", name, full))
        return sorted(found)

    def gc(self, repo, keep, in_use, dry_run=False):
        """Remove the revisions of repo older than the newest `keep`, never one whose path is in in_use."""
        in_use = set(os.path.realpath(p) for p in in_use if p)
        revisions = self.revisions(repo)
        older = revisions[:max(len(revisions) - int(keep), 0)]
        removed = []
        for _when, _name, full in older:
            if os.path.realpath(full) in in_use:
                continue
            removed.append(full)
            if not dry_run:
                aside = os.path.join(os.path.dirname(full), PARTIAL_PREFIX + "gc-" + os.path.basename(full))
                os.rename(full, aside)
                shutil.rmtree(aside)
        return removed


def store_copy(directory):
    """What the store's manifest in a drafter directory says of it, read-only (the facts, the fleet report): None
    where the directory is not a copy of the store; else its source, repo, revision, commit, when it was verified,
    its files and bytes, and complete: every file it lists is there with its size (the digests were checked when it
    was installed; sglang_drafter rehash=true reads them again)."""
    manifest = Store.read_manifest(directory)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return None
    files = manifest["files"]
    complete = all(os.path.isfile(os.path.join(directory, path))
                   and os.path.getsize(os.path.join(directory, path)) == (spec or {}).get("size")
                   for path, spec in files.items())
    return {"source": manifest.get("source"), "repo": manifest.get("repo"), "revision": manifest.get("revision"),
            "commit": manifest.get("commit") or manifest.get("revision"), "verified_at": manifest.get("verified_at"),
            "files": len(files), "total_bytes": sum(int((spec or {}).get("size") or 0) for spec in files.values()),
            "complete": complete}


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def staged_from_manifest(store, name, revision, manifest, stage, check_mode=False, opts=None):
    """A controller directory: `stage` checks the store and the disk and returns where to copy the files
    (the partial directory); the second call (stage=False) verifies them against the manifest and renames."""
    opts = opts or {}
    files = dict((safe_relpath(p), {"size": int(v["size"]), "sha256": v["sha256"]}) for p, v in manifest.items())
    result = {"source": "controller", "repo": name, "revision": revision, "commit": revision,
              "path": store.final_dir(name, revision), "partial": store.partial_dir(name, revision),
              "total_bytes": sum(f["size"] for f in files.values()), "files": len(files), "verified": False,
              "changed": False}
    if "config.json" not in files:
        raise DrafterError("the controller directory for %s has no config.json: not a drafter checkpoint" % name)
    if store.verified(name, revision, files, rehash=opts.get("rehash")):
        result["verified"] = True
        return result
    result["changed"] = True
    if stage:
        needed = result["total_bytes"] - store.bytes_present(name, revision, files)
        result["disk"] = disk_preflight(store.final_dir(name, revision), needed, opts.get("min_free_percent"),
                                        opts.get("min_free_bytes"), store.host)
        if not check_mode and not os.path.isdir(result["partial"]):
            os.makedirs(result["partial"], 0o755)
        return result
    if check_mode:
        return result
    with Lock(store.lock_path(name, revision), timeout=opts.get("lock_timeout", 300),
              stale_after=opts.get("lock_stale_after", 3600)):
        store.finalize(name, revision, files, {"source": "controller", "repo": name, "revision": revision})
    result["verified"] = True
    return result


def manifest_of_dir(directory):
    """{relative path: {size, sha256}} of every file under directory (the controller's side)."""
    files = {}
    for base, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith(".") or name == MANIFEST:
                continue
            full = os.path.join(base, name)
            digests = file_digests(full)
            files[os.path.relpath(full, directory)] = {"size": digests["size"], "sha256": digests["sha256"]}
    return files


def manifest_revision(files):
    """A revision name for a controller directory: the digest of its manifest (same files, same revision)."""
    text = json.dumps(files, sort_keys=True).encode("utf-8")
    return "local-" + hashlib.sha256(text).hexdigest()[:16]


def paths_in_use(store_root, config_dirs, configured=()):
    """Store paths a running process or a unit/environment file names (and those configured in this run):
    revisions GC must not remove."""
    root = os.path.realpath(store_root).rstrip("/") + "/"
    pattern = re.compile(re.escape(root) + r"[^/\s\"'=]+/[^/\s\"'=]+")
    found = set(os.path.realpath(p) for p in configured if p)
    texts = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    texts.append(handle.read().replace(b"\0", b" ").decode("utf-8", "replace"))
            except OSError:
                pass
    for directory in config_dirs:
        for base, _dirs, names in os.walk(directory) if os.path.isdir(directory) else []:
            for name in names:
                try:
                    with open(os.path.join(base, name), "rb") as handle:
                        texts.append(handle.read(1 << 20).decode("utf-8", "replace"))
                except OSError:
                    pass
    for text in texts:
        found.update(pattern.findall(text.replace(store_root.rstrip("/") + "/", root)))
    return sorted(found)
