# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A drafter fetched from the fleet's Hugging Face compatible mirror (HF_ENDPOINT) into the host's store
(drafter_store.py): the few hub calls a fetch needs, each file resumed with Range and verified against the hub's
metadata for the commit, the revision renamed into place once all are. Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import socket
import time
from urllib.error import HTTPError, URLError
from urllib.parse import quote

from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_store import (
    CHUNK,
    DrafterError,
    Lock,
    check_file,
    disk_preflight,
    file_digests,
    safe_relpath,
)

_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


class Hub(object):
    """The few calls of the Hugging Face API a fetch needs, through a mirror (HF_ENDPOINT)."""

    def __init__(self, endpoint, token=None, timeout=60):
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, url, headers=None, data=None):
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = "Bearer %s" % self.token
        if data is not None:
            headers["Content-Type"] = "application/json"
        # No proxy from the environment: the mirror is the fleet's own (HF_ENDPOINT).
        return open_url(url, headers=headers, data=data, timeout=self.timeout, http_agent="gpufleet.sglang-drafter",
                        use_proxy=False)

    def _json(self, url, what, data=None):
        try:
            response = self._request(url, data=data)
            try:
                return json.loads(response.read().decode("utf-8"))
            finally:
                response.close()
        except HTTPError as exc:
            raise _HubHTTPError(exc.code, "%s: HTTP %s from %s" % (what, exc.code, url)) from None
        except (URLError, socket.timeout, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DrafterError("%s: cannot reach the mirror at %s (%s); check HF_ENDPOINT (sglang_dflash_drafter "
                               "endpoint) and that the host can reach it" % (what, url, reason)) from None
        except ValueError:
            raise DrafterError("%s: %s did not answer JSON" % (what, url)) from None

    def revision_info(self, repo, revision):
        url = "%s/api/models/%s/revision/%s" % (self.endpoint, repo, quote(revision, safe=""))
        try:
            info = self._json(url, "revision %s of %s" % (revision, repo))
        except _HubHTTPError as exc:
            if exc.code in (401, 403, 404):
                raise DrafterError("the mirror %s has no revision %s of the repo %s (HTTP %s): check the repo id and "
                                   "pin an existing commit (sglang_dflash_drafter revision)"
                                   % (self.endpoint, revision, repo, exc.code)) from None
            # olah answers 500 for a well-formed commit sha its repo does not have.
            raise DrafterError("the mirror %s could not resolve revision %s of the repo %s (HTTP %s): check that the "
                               "mirror has that commit (sglang_dflash_drafter revision)"
                               % (self.endpoint, revision, repo, exc.code)) from None
        if not isinstance(info, dict):
            raise DrafterError("revision %s of %s: unexpected answer from %s" % (revision, repo, url))
        return info

    def files(self, repo, sha):
        """{path: {size, sha256 (LFS) or git_sha1}} of every file of the commit, from the tree API."""
        url = "%s/api/models/%s/tree/%s?recursive=true" % (self.endpoint, repo, sha)
        try:
            entries = self._json(url, "file list of %s at %s" % (repo, sha))
        except _HubHTTPError as exc:
            raise DrafterError(str(exc)) from None
        files = {}
        for entry in entries if isinstance(entries, list) else []:
            if entry.get("type") != "file":
                continue
            path = safe_relpath(entry["path"])
            lfs = entry.get("lfs") or {}
            if lfs.get("oid"):
                files[path] = {"size": int(lfs.get("size", entry.get("size"))), "sha256": lfs["oid"]}
            else:
                files[path] = {"size": int(entry["size"]), "git_sha1": entry.get("oid")}
        if not files:
            raise DrafterError("the mirror %s lists no file for %s at %s (%s)" % (self.endpoint, repo, sha, url))
        return files

    def file_url(self, repo, sha, path):
        return "%s/%s/resolve/%s/%s" % (self.endpoint, repo, sha, quote(path))

    def open_file(self, url, offset):
        headers = {"Range": "bytes=%d-" % offset} if offset else {}
        try:
            return self._request(url, headers=headers)
        except HTTPError as exc:
            raise DrafterError("download of %s: HTTP %s" % (url, exc.code)) from None
        except (URLError, socket.timeout, OSError) as exc:
            raise DrafterError("download of %s: %s" % (url, getattr(exc, "reason", exc))) from None


class _HubHTTPError(DrafterError):
    def __init__(self, code, message):
        DrafterError.__init__(self, message)
        self.code = code


class Throttle(object):
    """At most rate bytes per second (0: no limit), averaged over the transfer."""

    def __init__(self, rate):
        self.rate = float(rate or 0)
        self.start = time.time()
        self.sent = 0

    def account(self, count):
        self.sent += count
        if self.rate > 0:
            ahead = self.sent / self.rate - (time.time() - self.start)
            if ahead > 0:
                time.sleep(ahead)


def download(hub, repo, sha, path, expected, target, throttle, stall_timeout):
    """Fetch one file into target, resuming a shorter partial file with Range, verifying size and digest.
    Returns the bytes transferred."""
    url = hub.file_url(repo, sha, path)
    offset = os.path.getsize(target) if os.path.isfile(target) else 0
    if offset > expected["size"]:
        # Larger than the real file (a retry appended to a complete copy): never trusted.
        os.unlink(target)
        offset = 0
    if offset == expected["size"] and check_file(target, expected) is None:
        return 0
    if offset == expected["size"]:
        os.unlink(target)
        offset = 0
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o755)
    hub_timeout = hub.timeout
    hub.timeout = stall_timeout
    try:
        response = hub.open_file(url, offset)
    finally:
        hub.timeout = hub_timeout
    transferred = 0
    try:
        if offset and getattr(response, "status", getattr(response, "code", 200)) != 206:
            offset = 0  # the mirror ignored Range: start again
        # read1: what has arrived, so that a stall keeps the bytes before it for the next run.
        read = getattr(response, "read1", response.read)
        with open(target, "ab" if offset else "wb") as handle:
            while True:
                try:
                    chunk = read(CHUNK)
                except socket.timeout:
                    raise DrafterError("the transfer of %s from %s stalled: no byte for %ss after %d of %d bytes; the "
                                       "partial file is kept and the next run resumes it (sglang_dflash_drafter_"
                                       "stall_timeout)" % (path, url, stall_timeout, offset + transferred,
                                                           expected["size"])) from None
                if not chunk:
                    break
                handle.write(chunk)
                transferred += len(chunk)
                if offset + transferred > expected["size"]:
                    break
                throttle.account(len(chunk))
    finally:
        response.close()
    reason = check_file(target, expected)
    if reason is not None:
        got = file_digests(target) if os.path.isfile(target) else {}
        os.unlink(target)
        if got.get("size") == expected["size"]:
            kind = "sha256" if expected.get("sha256") else "git blob sha1"
            raise DrafterError("%s of %s at %s from %s does not match the hub's metadata: %s %s, expected %s; the file "
                               "was removed and nothing was installed" % (
                                   path, repo, sha, hub.endpoint, kind,
                                   got["sha256"] if expected.get("sha256") else got["git_sha1"],
                                   expected.get("sha256") or expected.get("git_sha1")))
        raise DrafterError("%s of %s at %s from %s: %s; the file was removed and nothing was installed"
                           % (path, repo, sha, hub.endpoint, reason))
    return transferred


def fetch_from_hub(store, hub, repo, revision, opts, check_mode=False):
    """The whole fetch of one revision; returns the result dict of the module."""
    if not _REPO.match(repo or ""):
        raise DrafterError("%r is not a Hugging Face repo id (org/name)" % repo)
    if not _REVISION.match(revision or "") or ".." in revision:
        raise DrafterError("%r is not a revision (a commit sha, a tag or a branch) of %s" % (revision, repo))
    info = hub.revision_info(repo, revision)
    sha = info.get("sha") or revision
    files = hub.files(repo, sha)
    result = {"source": "hub", "repo": repo, "revision": revision, "commit": sha, "endpoint": hub.endpoint,
              "path": store.final_dir(repo, sha), "total_bytes": sum(f["size"] for f in files.values()),
              "files": len(files), "bytes_transferred": 0, "resumed": False, "verified": False, "changed": False}
    if "config.json" not in files:
        raise DrafterError("%s at %s has no config.json: not a drafter checkpoint" % (repo, sha))
    if store.verified(repo, sha, files, rehash=opts.get("rehash")):
        result["verified"] = True
        return result
    result["changed"] = True
    needed = result["total_bytes"] - store.bytes_present(repo, sha, files)
    result["disk"] = disk_preflight(store.final_dir(repo, sha), needed, opts.get("min_free_percent"),
                                    opts.get("min_free_bytes"), store.host)
    if check_mode:
        return result
    partial = store.partial_dir(repo, sha)
    os.makedirs(os.path.dirname(partial), 0o755) if not os.path.isdir(os.path.dirname(partial)) else None
    lock = Lock(store.lock_path(repo, sha), timeout=opts.get("lock_timeout", 300),
                stale_after=opts.get("lock_stale_after", 3600))
    with lock:
        if lock.took_over:
            result["stale_lock"] = lock.took_over
        # Another run may have finished it while this one waited.
        if store.verified(repo, sha, files):
            result.update(verified=True, changed=False)
            return result
        result["resumed"] = store.bytes_present(repo, sha, files) > 0
        throttle = Throttle(opts.get("bandwidth_limit"))
        if not os.path.isdir(partial):
            os.makedirs(partial, 0o755)
        for path in sorted(files):
            result["bytes_transferred"] += download(hub, repo, sha, path, files[path], os.path.join(partial, path),
                                                    throttle, opts.get("stall_timeout", 60))
        store.finalize(repo, sha, files, {"source": "hub", "repo": repo, "revision": revision, "commit": sha,
                                          "endpoint": hub.endpoint})
    result["verified"] = True
    return result
