# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_drafter_push (documented in plugins/modules/sglang_drafter_push.py): one drafter directory of
the controller onto a host, verified, as one task.

The store and the disk are checked on the host first (gpufleet.sglang.sglang_drafter state=staged), before a byte
is written; the files go over the task's own connection into the revision's temporary directory
(ansible.builtin.copy's action, which sends only the files that differ, so a rerun resumes); then every file is
checked against the manifest and the directory renamed into place (sglang_drafter with the manifest). A copy that is
there and verified already transfers nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import hashlib
import json
import os
import posixpath

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_store import manifest_of_dir

DRAFTER_MODULE = "gpufleet.sglang.sglang_drafter"
ARGUMENT_SPEC = {
    "src": {"type": "path", "required": True},
    "name": {"type": "str"},
    "services": {"type": "list", "elements": "str", "default": []},
    "store_dir": {"type": "path", "default": "/var/lib/gpufleet-sglang/drafters"},
    "min_free_percent": {"type": "float", "default": 10},
    "min_free_bytes": {"type": "int", "default": 0},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # the copy action it hands the files to makes its own temporary directory
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        manifest = controller_manifest(args["src"])
        store = {"store_dir": args["store_dir"], "manifest": manifest}
        staged = self._module(dict(store, state="staged", repo=args["name"] or posixpath.basename(
            args["src"].rstrip("/")), min_free_percent=args["min_free_percent"],
            min_free_bytes=args["min_free_bytes"]), task_vars)
        got = staged
        if not staged.get("verified") and not self._task.check_mode:
            self._copy(args["src"], staged["partial"], task_vars)
            got = self._module(dict(store, repo=staged["repo"], revision=staged["revision"]), task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(got)
        result.update(services=args["services"], manifest=manifest, changed=not staged.get("verified"),
                      bytes_transferred=0 if staged.get("verified") else staged.get("total_bytes"))
        return result

    def _module(self, module_args, task_vars):
        answer = self._execute_module(module_name=DRAFTER_MODULE, module_args=module_args, task_vars=task_vars)
        if answer.get("failed"):
            raise AnsibleActionFail(answer.get("msg") or "%s failed" % DRAFTER_MODULE, result=answer)
        return answer

    def _copy(self, src, partial, task_vars):
        """The directory's files into the partial directory, by ansible.builtin.copy's own action (as the template
        action hands its file to it)."""
        task = self._task.copy()
        task.args = {"src": src.rstrip("/") + "/", "dest": partial + "/", "mode": "preserve"}
        copy = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.copy", task=task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        copied = copy.run(task_vars=task_vars)
        if copied.get("failed"):
            raise AnsibleActionFail("copying %s to %s failed: %s" % (src, partial, copied.get("msg")), result=copied)
        return copied


def _stat_key(directory):
    """What tells that a directory's files are as they were: each file's path, size and modification time."""
    key = []
    for base, dirs, names in os.walk(directory):
        dirs.sort()
        for name in sorted(names):
            st = os.stat(os.path.join(base, name))
            key.append([os.path.relpath(os.path.join(base, name), directory), st.st_size, st.st_mtime_ns])
    return key


def controller_manifest(src):
    """The manifest (sizes and sha256) of a drafter directory on the controller, hashed once however many hosts ask:
    kept beside Ansible's own temporary files, under a lock, for as long as no file's size or time changes."""
    src = os.path.realpath(os.path.expanduser(src))
    if not os.path.isdir(src):
        raise AnsibleActionFail("the drafter directory %s does not exist on the controller (sglang_dflash_drafter.src)"
                                % src)
    cache_dir = os.path.join(os.path.expanduser("~"), ".ansible", "tmp", "gpufleet-sglang-manifests")
    os.makedirs(cache_dir, exist_ok=True)
    cache = os.path.join(cache_dir, hashlib.sha256(src.encode("utf-8")).hexdigest()[:32] + ".json")
    with open(cache + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        key = _stat_key(src)
        try:
            with open(cache) as handle:
                kept = json.load(handle)
            if kept.get("key") == key:
                return kept["manifest"]
        except (OSError, ValueError):
            pass
        manifest = manifest_of_dir(src)
        with open(cache + ".tmp", "w") as handle:
            json.dump({"key": key, "manifest": manifest}, handle)
        os.rename(cache + ".tmp", cache)
        return manifest
