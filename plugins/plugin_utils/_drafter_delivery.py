# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where each service's drafter comes from, and what the store gave for it (the role's tasks/drafter.yml,
the deploy summary). Controller side; the host side is module_utils/drafter_store.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.drafter_store import repo_dir_name

ALL_SERVICES = "*"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class DrafterSourceError(Exception):
    pass


def _check_source(source, where):
    if not isinstance(source, dict):
        raise DrafterSourceError("%s must be a mapping with repo and revision (a mirror) or src (a directory on the "
                                 "controller), not %r" % (where, source))
    has_repo, has_src = bool(source.get("repo")), bool(source.get("src"))
    if has_repo == has_src:
        raise DrafterSourceError("%s must set either repo (with revision) or src, not %s" % (
            where, "both" if has_repo else "neither"))
    if has_repo and not source.get("revision"):
        raise DrafterSourceError("%s: repo %s needs a pinned revision (a commit sha); set %s.revision"
                                 % (where, source["repo"], where))
    unknown = sorted(set(source) - {"repo", "revision", "endpoint", "src", "name"})
    if unknown:
        raise DrafterSourceError("%s: unknown keys %s (repo, revision, endpoint, src, name)"
                                 % (where, ", ".join(unknown)))


def source_key(source):
    if source.get("repo"):
        return ("hub", source["repo"], source.get("revision"), source.get("endpoint"))
    return ("controller", source["src"].rstrip("/"))


def drafter_sources(role_drafter, services, host=None, draft_model_path=None):
    """Unique sources, each with the services that use it (ALL_SERVICES: the role's own, for every service
    that has no drafter or draft_model_path of its own). A source set wrong, or beside a drafter path, is refused
    naming the host and where it was set."""
    try:
        return _sources(role_drafter, services, draft_model_path)
    except DrafterSourceError as exc:
        raise DrafterSourceError("host %s: %s" % (host, exc) if host else str(exc)) from None


def _sources(role_drafter, services, draft_model_path):
    uses = []
    if role_drafter:
        _check_source(role_drafter, "sglang_dflash_drafter")
        if draft_model_path:
            raise DrafterSourceError("sglang_dflash_drafter and sglang_dflash_draft_model_path (%s) are both set; "
                                     "set one of them" % draft_model_path)
        uses.append((dict(role_drafter), ALL_SERVICES))
    for index, entry in enumerate(services or []):
        if isinstance(entry, dict) and entry.get("drafter"):
            where = "sglang_dflash_services entry %d (%s) drafter" % (index + 1, entry.get("name"))
            _check_source(entry["drafter"], where)
            if entry.get("draft_model_path"):
                raise DrafterSourceError("%s: set drafter or draft_model_path, not both" % where)
            uses.append((dict(entry["drafter"]), entry.get("name")))
    merged = {}
    order = []
    for source, service in uses:
        key = source_key(source)
        if key not in merged:
            merged[key] = {"source": source, "services": []}
            order.append(key)
        merged[key]["services"].append(service)
    return [merged[k] for k in order]


def drafter_report(results):
    """One record per source from the module's results (loop results of the fetch, or pushed records)."""
    out = []
    for r in results or []:
        item = r.get("item") or {}
        services = r.get("services") or item.get("services") or []
        if r.get("failed"):
            raise DrafterSourceError(r.get("msg") or "the drafter could not be fetched")
        out.append({
            "services": services, "source": r.get("source"), "repo": r.get("repo"), "revision": r.get("revision"),
            "commit": r.get("commit"), "endpoint": r.get("endpoint"), "path": r.get("path"),
            "verified": bool(r.get("verified")), "size": r.get("total_bytes"), "files": r.get("files"),
            "bytes_transferred": r.get("bytes_transferred", r.get("total_bytes") if r.get("changed") else 0),
            "changed": bool(r.get("changed")), "manifest": r.get("manifest"),
        })
    return out


def store_path(source, store_dir):
    """Where the verified copy of a source is in the store, where that is known without the mirror or the
    controller: a repo at a pinned commit. A tag or branch is resolved by the mirror, and a controller directory
    is named by its manifest's digest, both at the fetch."""
    if source.get("repo") and _COMMIT.match(str(source.get("revision") or "")):
        return posixpath.join(store_dir, repo_dir_name(source["repo"]), source["revision"])
    return None


def expected_drafters(sources, store_dir):
    """The drafters of a run that fetches nothing (the fleet report): each source (drafter_sources') with the path
    its verified copy has in the store, or None where only the fetch can tell."""
    return [{"services": list(s["services"]), "source": "hub" if s["source"].get("repo") else "controller",
             "repo": s["source"].get("repo") or s["source"].get("name") or posixpath.basename(
                 str(s["source"].get("src") or "").rstrip("/")),
             "revision": s["source"].get("revision"), "path": store_path(s["source"], store_dir), "verified": None}
            for s in sources or []]


def apply_to_services(services, drafters):
    """sglang_dflash_services with the draft_model_path of each entry that has a drafter of its own: the path of its
    verified copy (drafters: drafter_report's, or expected_drafters'). The entry keeps its drafter: the plan's
    settings say where the drafter came from."""
    by_service = {}
    for d in drafters or []:
        for name in d.get("services") or []:
            by_service[name] = d.get("path")
    out = []
    for entry in services or []:
        entry = dict(entry)
        if entry.get("drafter") and by_service.get(entry.get("name")):
            entry["draft_model_path"] = by_service[entry["name"]]
        out.append(entry)
    return out


def role_path(drafters, draft_model_path=None):
    """The drafter path of every service without one of its own: the copy of sglang_dflash_drafter (None where
    only the fetch can tell), or sglang_dflash_draft_model_path."""
    for d in drafters or []:
        if ALL_SERVICES in (d.get("services") or []):
            return d.get("path")
    return draft_model_path or None


def drafter_state(settings, draft_model):
    """The fleet report's drafter of one service: where it comes from and whether its verified copy is on the host.

    settings: the service's plan settings (drafter: its source, draft_model_path: the path used); draft_model: what
    the facts read there (dir_exists, store_copy: the store's manifest, module_utils/drafter_store.store_copy)."""
    source = settings.get("drafter") or {}
    draft_model = draft_model or {}
    path = settings.get("draft_model_path")
    copy = draft_model.get("store_copy") if path else None
    present = bool(path) and bool(draft_model.get("dir_exists"))
    if not source:
        summary = "%s (on the host%s)" % (path, "" if present else ": missing") if path else \
            "none set (sglang_dflash_draft_model_path or sglang_dflash_drafter)"
        return {"source": "path", "path": path, "present": present, "verified": None, "summary": summary}
    if source.get("repo"):
        state = {"source": "hub", "repo": source["repo"], "revision": source.get("revision"), "path": path}
        what = "hub %s@%s" % (source["repo"], source.get("revision"))
    else:
        state = {"source": "controller", "src": source.get("src"), "path": path}
        what = "controller %s" % source.get("src")
    verified = bool(copy and copy.get("complete") and (not source.get("repo") or source.get("revision") in (
        copy.get("commit"), copy.get("revision"))))
    state.update(present=present, verified=verified, size=(copy or {}).get("total_bytes"),
                 verified_at=(copy or {}).get("verified_at"))
    if not path:
        state["summary"] = "%s: resolved when a deployment fetches it" % what
    elif verified:
        state["summary"] = "%s: verified copy present (%s bytes, verified %s)" % (
            what, state["size"], state["verified_at"])
    elif present:
        state["summary"] = "%s: %s is not a complete verified copy (a deployment fetches it again)" % (what, path)
    else:
        state["summary"] = "%s: not on the host yet (a deployment, or playbooks/fetch_drafter.yml, fetches it)" % what
    return state
