# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One exact previous-state copy of a few files: save it before a change, restore it or drop it after."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import stat
import tempfile
import time

MANIFEST = "manifest.json"


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
        os.makedirs(self.dir, 0o700)
        os.chmod(self.dir, 0o700)
        for entry in files:
            if entry["existed"]:
                target = os.path.join(self.dir, entry["copy"])
                shutil.copyfile(entry["path"], target)
                os.chmod(target, 0o600)
        with open(self.manifest + ".tmp", "w") as handle:
            json.dump({"taken": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": files}, handle)
        os.rename(self.manifest + ".tmp", self.manifest)
        return files

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
