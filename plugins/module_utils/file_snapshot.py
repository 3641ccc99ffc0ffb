# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One exact previous-state copy of a few files: save it before a change, restore it or drop it after."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import stat
import tempfile
import time

MANIFEST = "manifest.json"
# What save() itself writes before the manifest: a run interrupted before the manifest existed left at
# most these, and had not changed any file yet (the change starts after save() returns).
_PARTIAL_COPY = re.compile(r"^(\d+\.data|%s\.tmp)$" % re.escape(MANIFEST))


class SnapshotError(Exception):
    pass


def _write_atomically(path, data, mode, uid, gid):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpufleet-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.chown(tmp, uid, gid)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Snapshot(object):
    def __init__(self, directory):
        self.dir = directory
        self.manifest = os.path.join(directory, MANIFEST)

    def exists(self):
        return os.path.exists(self.manifest)

    def save(self, paths, dry_run=False):
        if self.exists():
            with open(self.manifest) as handle:
                taken = json.load(handle).get("taken", "?")
            raise SnapshotError(
                "a previous-state copy from an interrupted run is at %s (taken %s); it holds the state before that "
                "run: put it back with gpufleet.sglang.file_snapshot state=restored, or remove the directory if the "
                "host is as it should be" % (self.dir, taken))
        files = []
        for index, path in enumerate(paths):
            entry = {"path": path, "existed": os.path.lexists(path),
                     "parent_existed": os.path.isdir(os.path.dirname(path))}
            if entry["existed"]:
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode):
                    raise SnapshotError("%s is not a regular file; it cannot be kept as a previous-state copy" % path)
                entry.update(copy="%d.data" % index, mode=stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)
            files.append(entry)
        if dry_run:
            return files
        self._make_dir()
        for entry in files:
            if entry["existed"]:
                target = os.path.join(self.dir, entry["copy"])
                shutil.copyfile(entry["path"], target)
                os.chmod(target, 0o600)
        with open(self.manifest + ".tmp", "w") as handle:
            json.dump({"taken": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": files}, handle)
        os.rename(self.manifest + ".tmp", self.manifest)
        return files

    def _make_dir(self):
        """Create the directory, or adopt one that an interrupted save() left without its manifest."""
        if os.path.lexists(self.dir) and not os.path.isdir(self.dir):
            raise SnapshotError("%s is in the way of the previous-state copy: it exists and is not a directory; "
                                "nothing was changed: move it away and run again" % self.dir)
        if os.path.isdir(self.dir):
            others = sorted(name for name in os.listdir(self.dir) if not _PARTIAL_COPY.match(name))
            if others:
                raise SnapshotError(
                    "%s exists without %s but holds %s, which this collection did not write; nothing was changed: "
                    "check what put them there, then remove the directory and run again"
                    % (self.dir, MANIFEST, ", ".join(others[:10])))
            # Left by a save() that stopped before its manifest: no file had been changed yet.
            shutil.rmtree(self.dir)
        os.makedirs(self.dir, 0o700)
        os.chmod(self.dir, 0o700)

    def restore(self, dry_run=False):
        if not self.exists():
            return [], []
        with open(self.manifest) as handle:
            files = json.load(handle)["files"]
        restored = []
        for entry in files:
            path = entry["path"]
            if entry["existed"]:
                with open(os.path.join(self.dir, entry["copy"]), "rb") as handle:
                    data = handle.read()
                if not dry_run:
                    _write_atomically(path, data, entry["mode"], entry["uid"], entry["gid"])
                restored.append(path)
            elif os.path.lexists(path):
                if not dry_run:
                    os.unlink(path)
                    parent = os.path.dirname(path)
                    # A directory the change created (a unit's .d) goes too, when nothing else is in it.
                    if not entry.get("parent_existed", True) and not os.listdir(parent):
                        os.rmdir(parent)
                restored.append(path)
        if not dry_run:
            shutil.rmtree(self.dir)
        return files, restored

    def remove(self, dry_run=False):
        if not os.path.exists(self.dir):
            return False
        if not dry_run:
            shutil.rmtree(self.dir)
        return True
