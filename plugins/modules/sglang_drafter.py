#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_drafter
short_description: Keep one verified copy of a DFlash drafter per revision on a host
version_added: "0.1.0"
description:
  - Fetches a drafter (its C(config.json) and weights) from a Hugging Face compatible mirror (C(HF_ENDPOINT))
    at a pinned revision into O(store_dir)C(/<org>--<name>/<commit>), or installs a directory the controller
    staged there, and verifies every file's size and digest - the hub's LFS sha256 for weights, the git blob
    sha1 for small files, or the sha256 of a manifest written on the controller.
  - The copy goes into a temporary directory on the same filesystem (C(.partial-<revision>)) and is renamed into
    place once every file is verified. A partial copy left by an interrupted run is resumed (HTTP Range) and
    verified again, never trusted; a file larger than the real one is removed. A lock file next to it (pid, host,
    time) keeps two runs apart; a lock of a dead process, or one older than O(lock_stale_after), is taken over.
  - Before any byte is written, the free space of the store's filesystem must hold what is missing plus the
    watermark (O(min_free_percent), O(min_free_bytes)); otherwise it refuses, naming host, path, free and
    needed bytes.
  - A transfer with no byte for O(stall_timeout) seconds fails with a clear message; the next run resumes it.
  - Nothing changes (C(changed=false)) when the revision is already there and verified.
  - With O(keep_revisions), older revisions of the same repo beyond that number are removed, never one a running
    process, a unit or environment file under O(config_dirs), or O(in_use) names.
author:
  - gpufleet.sglang contributors (@gpufleet)
options:
  state:
    description:
      - C(present) fetches from the mirror (O(repo), O(revision), O(endpoint)), or, with O(manifest), verifies
        and installs the files the controller copied into the partial directory.
      - C(staged) (with O(manifest)) checks the store and the disk for a controller directory and returns the
        partial directory to copy into (RV(partial)); nothing is copied by this module.
      - C(manifest) returns the manifest (sizes and sha256) of the directory O(src) where the module runs (the
        controller, with C(delegate_to)).
    type: str
    choices: [present, staged, manifest]
    default: present
  repo:
    description: The Hugging Face repo id (C(org/name)), or a name for a controller directory.
    type: str
  revision:
    description:
      - The pinned revision (a commit sha, or a tag or branch the mirror resolves to a commit; the copy is stored
        under the commit). For a controller directory, a name of its content (default the manifest's digest).
    type: str
  endpoint:
    description: The mirror's base URL (C(HF_ENDPOINT)); default the environment's C(HF_ENDPOINT).
    type: str
  token:
    description: A bearer token for the mirror, if it asks for one.
    type: str
  src:
    description: With C(state=manifest), the directory to describe.
    type: path
  manifest:
    description: C({path -> {size, sha256}}) of a controller directory (from C(state=manifest)).
    type: dict
  store_dir:
    description: Where the copies live, one directory per repo and revision.
    type: path
    default: /var/lib/gpufleet-sglang/drafters
  min_free_percent:
    description: Percent of the store's filesystem that must stay free after the copy.
    type: float
    default: 10
  min_free_bytes:
    description: Bytes that must stay free after the copy (the larger of the two watermarks applies).
    type: int
    default: 0
  stall_timeout:
    description: Seconds without a byte after which a transfer fails.
    type: int
    default: 60
  bandwidth_limit:
    description: Bytes per second this host takes from the mirror; C(0) is no limit.
    type: int
    default: 0
  lock_timeout:
    description: Seconds to wait for another run's lock on the same revision.
    type: int
    default: 300
  lock_stale_after:
    description: Age in seconds after which a lock is stale whatever its holder.
    type: int
    default: 3600
  rehash:
    description: Re-read every file of an existing copy and compare digests (default sizes and manifest only).
    type: bool
    default: false
  keep_revisions:
    description: Revisions of this repo to keep in the store (the newest); unset keeps every one.
    type: int
  in_use:
    description: Paths configured in this run; never removed by O(keep_revisions).
    type: list
    elements: path
    default: []
  config_dirs:
    description: Directories whose files (units, drop-ins, environment files) are searched for store paths in use.
    type: list
    elements: path
    default: [/etc/systemd/system, /etc/sglang]
requirements:
  - Python 3.8 or newer on the target, standard library only.
attributes:
  check_mode:
    support: full
    details:
      - Reads the mirror's metadata and checks the store and the disk; writes nothing.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpufleet.sglang.attributes
seealso:
  - module: gpufleet.sglang.sglang_info
"""

EXAMPLES = r"""
- name: Fetch the drafter at a pinned commit from the fleet's mirror
  gpufleet.sglang.sglang_drafter:
    repo: z-lab/Qwen3.6-27B-DFlash
    revision: 4f1c2d0e9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d
    endpoint: http://hf-mirror.internal:8090
    bandwidth_limit: 104857600
    keep_revisions: 2
  register: drafter

- name: Describe a drafter directory on the controller
  gpufleet.sglang.sglang_drafter:
    state: manifest
    src: /srv/drafters/Qwen3.6-27B-DFlash
  delegate_to: localhost
  become: false
  run_once: true
  register: local_drafter
"""

RETURN = r"""
path:
  description: The verified copy (feeds C(--speculative-draft-model-path)).
  returned: with state present or staged
  type: str
  sample: /var/lib/gpufleet-sglang/drafters/z-lab--Qwen3.6-27B-DFlash/4f1c2d0e9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d
partial:
  description: The temporary directory the controller's files are copied into (state staged).
  returned: with a manifest
  type: str
source:
  description: C(hub) or C(controller).
  returned: with state present or staged
  type: str
repo:
  description: The repo id or the controller directory's name.
  returned: with state present or staged
  type: str
revision:
  description: The revision asked for.
  returned: with state present or staged
  type: str
commit:
  description: The commit it resolved to (the store's directory name).
  returned: with state present or staged
  type: str
verified:
  description: Whether RV(path) holds the complete, verified copy.
  returned: with state present or staged
  type: bool
total_bytes:
  description: Bytes of the drafter's files (not C(size), which Ansible gives the size of RV(path) itself).
  returned: with state present or staged
  type: int
files:
  description: Number of files (state present or staged), or the manifest itself (state manifest).
  returned: always
  type: raw
bytes_transferred:
  description: Bytes taken from the mirror by this run.
  returned: from a mirror
  type: int
resumed:
  description: Whether a partial copy of an earlier run was resumed.
  returned: from a mirror
  type: bool
disk:
  description: The disk preflight (C(free), C(needed), C(keep_free) bytes), when something had to be written.
  returned: when a copy was made or would be
  type: dict
removed:
  description: Older revisions removed by O(keep_revisions).
  returned: always
  type: list
  elements: str
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_hub import Hub, fetch_from_hub
from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_store import (
    DrafterError,
    Store,
    manifest_of_dir,
    manifest_revision,
    paths_in_use,
    staged_from_manifest,
)


def run(module):
    params = module.params
    state = params["state"]
    if state == "manifest":
        if not params["src"] or not os.path.isdir(params["src"]):
            raise DrafterError("the drafter directory %s does not exist on the controller (sglang_dflash_drafter src)"
                               % params["src"])
        files = manifest_of_dir(params["src"])
        return {"changed": False, "files": files, "revision": manifest_revision(files),
                "total_bytes": sum(f["size"] for f in files.values())}
    store = Store(params["store_dir"])
    names = ("min_free_percent", "min_free_bytes", "stall_timeout", "bandwidth_limit", "lock_timeout",
             "lock_stale_after", "rehash")
    opts = dict((k, params[k]) for k in names)
    if not params["repo"]:
        raise DrafterError("repo is required (the Hugging Face repo id, or the controller directory's name)")
    if params["manifest"] is not None:
        revision = params["revision"] or manifest_revision(params["manifest"])
        result = staged_from_manifest(store, params["repo"], revision, params["manifest"], state == "staged",
                                      module.check_mode, opts)
    else:
        if state == "staged":
            raise DrafterError("state=staged needs a manifest (a controller directory)")
        endpoint = params["endpoint"] or os.environ.get("HF_ENDPOINT")
        if not endpoint or not params["revision"]:
            raise DrafterError("a drafter from a mirror needs endpoint (or HF_ENDPOINT) and a pinned revision; "
                               "got endpoint=%s revision=%s for %s" % (endpoint, params["revision"], params["repo"]))
        hub = Hub(endpoint, token=params["token"], timeout=params["stall_timeout"])
        result = fetch_from_hub(store, hub, params["repo"], params["revision"], opts, module.check_mode)
    result["removed"] = []
    if state == "present" and params["keep_revisions"] is not None and result["verified"]:
        in_use = paths_in_use(params["store_dir"], params["config_dirs"], list(params["in_use"]) + [result["path"]])
        result["removed"] = store.gc(params["repo"], params["keep_revisions"], in_use, dry_run=module.check_mode)
        result["changed"] = result["changed"] or bool(result["removed"])
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="present", choices=["present", "staged", "manifest"]),
            repo=dict(type="str"),
            revision=dict(type="str"),
            endpoint=dict(type="str"),
            token=dict(type="str", no_log=True),
            src=dict(type="path"),
            manifest=dict(type="dict"),
            store_dir=dict(type="path", default="/var/lib/gpufleet-sglang/drafters"),
            min_free_percent=dict(type="float", default=10),
            min_free_bytes=dict(type="int", default=0),
            stall_timeout=dict(type="int", default=60),
            bandwidth_limit=dict(type="int", default=0),
            lock_timeout=dict(type="int", default=300),
            lock_stale_after=dict(type="int", default=3600),
            rehash=dict(type="bool", default=False),
            keep_revisions=dict(type="int"),
            in_use=dict(type="list", elements="path", default=[]),
            config_dirs=dict(type="list", elements="path", default=["/etc/systemd/system", "/etc/sglang"]),
        ),
        required_if=[("state", "manifest", ("src",))],
        supports_check_mode=True,
    )
    try:
        module.exit_json(**run(module))
    except DrafterError as exc:
        module.fail_json(msg="host %s: %s" % (socket.gethostname(), exc))
    except OSError as exc:
        module.fail_json(msg="host %s: drafter store %s: %s" % (socket.gethostname(), module.params["store_dir"], exc))


if __name__ == "__main__":
    main()
