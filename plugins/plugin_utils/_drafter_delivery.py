# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where each service's drafter comes from, and what the store gave for it (the role's tasks/drafter.yml,
the deploy summary). Controller side; the host side is module_utils/drafter_store.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

ALL_SERVICES = "*"


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


def drafter_sources(role_drafter, services):
    """Unique sources, each with the services that use it (ALL_SERVICES: the role's own, for every service
    that has no drafter or draft_model_path of its own)."""
    uses = []
    if role_drafter:
        _check_source(role_drafter, "sglang_dflash_drafter")
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


def apply_to_services(services, drafters):
    """sglang_dflash_services with each entry's drafter replaced by the path of its verified copy."""
    by_service = {}
    for d in drafters or []:
        for name in d.get("services") or []:
            by_service[name] = d["path"]
    out = []
    for entry in services or []:
        entry = dict(entry)
        if entry.get("drafter") and entry.get("name") in by_service:
            entry.pop("drafter")
            entry["draft_model_path"] = by_service[entry["name"]]
        out.append(entry)
    return out


def summary_lines(host, drafters):
    """Deploy summary lines: one per drafter source of the host."""
    lines = []
    for d in drafters or []:
        services = ", ".join("every other service" if s == ALL_SERVICES else s for s in d.get("services") or [])
        what = ("%s@%s" % (d.get("repo"), d.get("commit"))) if d.get("source") == "hub" else (
            "%s (%s)" % (d.get("repo"), d.get("commit")))
        lines.append("%s: drafter for %s: %s %s, %s bytes, %s, %s" % (
            host, services, d.get("source"), what, d.get("size"), "verified" if d.get("verified") else "NOT verified",
            ("fetched %s bytes" % d.get("bytes_transferred")) if d.get("changed") else "already there"))
    return lines
