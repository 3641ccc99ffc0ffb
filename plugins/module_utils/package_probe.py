# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe that python_package runs inside the *target* interpreter: ``python -c SOURCE NAME``.

It is a real module so that it is linted and tested like the rest; python_package sends its text,
read with inspect.getsource (which also works inside the AnsiballZ zip: zipimport serves sources).
Rules for this file: stdlib only, Python >= 3.8, nothing runs at import, and it never raises: a
step that fails is reported in ``errors`` (step -> "Type: message"), and the answer is always one
JSON line after MARKER.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import json
import os
import re
import sys

MARKER = "GPUFLEET_PROBE_JSON:"


def _step(out, name, function, *args):
    """function(*args), or None with the failure recorded under errors[name]."""
    try:
        return function(*args)
    except Exception as exc:
        out["errors"][name] = "%s: %s" % (type(exc).__name__, exc)
        return None


def _norm(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def site_dirs():
    """The interpreter's own site directories (not every site-packages that PYTHONPATH names)."""
    import site

    if hasattr(site, "getsitepackages"):
        dirs = list(site.getsitepackages())
    else:  # the site.py of virtualenv < 20 has no getsitepackages
        dirs = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        dirs.append(user)
    return sorted(set(dirs) | set(os.path.realpath(d) for d in dirs))


def find_spec(name):
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    return {"origin": spec.origin,
            "locations": locations,
            "real_locations": [os.path.realpath(p) for p in locations if os.path.isdir(p)],
            "loader": type(spec.loader).__name__ if spec.loader is not None else None}


def find_distribution(name):
    """The distribution that provides the package, found by directory names (no METADATA read)."""
    import importlib.metadata as md

    def first(candidates):
        for cand in candidates:
            try:
                return md.distribution(cand)
            except Exception:
                continue
        return None

    # Same-named distribution first: packages_distributions() reads every RECORD (slow with torch).
    dist = first([name, name.replace("_", "-")])
    if dist is None and hasattr(md, "packages_distributions"):  # Python >= 3.10
        dist = first(md.packages_distributions().get(name, []))  # novermin (guarded by hasattr above)
    return dist


def read_metadata(path):
    """Name and Version from a dist-info's METADATA (PKG-INFO of an egg-info); problems as text."""
    if not path.endswith(".egg-info"):
        meta = os.path.join(path, "METADATA")
    elif os.path.isdir(path):
        meta = os.path.join(path, "PKG-INFO")
    else:
        meta = path  # an egg-info file is the metadata itself
    info = {"metadata_file": meta, "metadata_problem": None, "name": None, "version": None}
    try:
        with open(meta, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        info["metadata_problem"] = "is missing" if not os.path.exists(meta) else "cannot be read (%s)" % (
            exc.strerror or exc)
        return info
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        info["metadata_problem"] = "is not valid UTF-8 (%s)" % exc
        return info
    import email.parser

    headers = email.parser.HeaderParser().parsestr(text)
    info["name"] = headers.get("Name")
    info["version"] = headers.get("Version")
    absent = [field for field in ("Name", "Version") if not info[field.lower()]]
    if absent:
        info["metadata_problem"] = "has no %s field" % " and no ".join(absent)
    return info


def read_text(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except FileNotFoundError:
        return None


def record_lists(dist_path, origin):
    """Whether the dist-info's RECORD lists the file at origin, both taken at their real paths.

    True for a package pip copied there (site-packages, --target, --prefix, --user); False for a
    checkout, an editable install or a package directory symlinked elsewhere. None without RECORD.
    """
    record = os.path.join(dist_path, "RECORD")
    if not os.path.isfile(record):
        return None
    base = os.path.realpath(os.path.dirname(dist_path))
    wanted = os.path.relpath(os.path.realpath(origin), base)
    with open(record, encoding="utf-8", newline="") as handle:
        return any(row and os.path.normpath(row[0]) == wanted for row in csv.reader(handle))


def describe_distribution(out, dist, origin):
    path = str(getattr(dist, "_path", "")) or None
    info = {"path": path}
    if path is None:
        # A distribution from another kind of finder: only what importlib.metadata says.
        info.update(name=_step(out, "metadata", lambda: dist.metadata["Name"]),
                    version=_step(out, "metadata", lambda: dist.version))
        return info
    info.update(read_metadata(path))
    info["direct_url.json"] = _step(out, "direct_url.json", read_text, os.path.join(path, "direct_url.json"))
    info["RECORD"] = os.path.isfile(os.path.join(path, "RECORD"))
    installer = _step(out, "INSTALLER", read_text, os.path.join(path, "INSTALLER"))
    info["installer"] = (installer or "").strip() or None
    info["record_lists_origin"] = _step(out, "RECORD", record_lists, path, origin) if origin else None
    return info


def install_markers(dirs, name):
    """.egg-link files and PEP 660 __editable__ files for the package in the site directories."""
    markers = {"egg_links": {}, "editable_pth": [], "editable_finders": []}
    norm = _norm(name)
    for directory in dirs:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            low = _norm(entry)
            full = os.path.join(directory, entry)
            if entry.endswith(".egg-link") and low[:-len("_egg_link")] == norm:
                try:
                    with open(full) as handle:
                        markers["egg_links"][full] = handle.readline().strip()
                except (OSError, ValueError):
                    markers["egg_links"][full] = None
            elif entry.startswith("__editable__") and norm in low:
                kind = "editable_finders" if entry.endswith(".py") else "editable_pth"
                markers[kind].append(full)
    return markers


def source_version(location):
    text = read_text(os.path.join(location, "version.py"))
    m = re.search(r"""__version__\s*=\s*['"]([^'"]+)['"]""", text or "")
    return m.group(1) if m else None


def probe(name):
    out = {"python": sys.version.split()[0], "executable": sys.executable,
           "prefix": sys.prefix, "base_prefix": getattr(sys, "base_prefix", sys.prefix),
           "real_prefix": getattr(sys, "real_prefix", None), "sys_path": list(sys.path), "errors": {}}
    out["site_dirs"] = _step(out, "site_dirs", site_dirs) or []
    out["spec"] = _step(out, "find_spec", find_spec, name)
    origin = (out["spec"] or {}).get("origin")
    if origin in ("namespace", "built-in", "frozen"):
        origin = None
    dist = _step(out, "distribution", find_distribution, name)
    out["dist"] = _step(out, "distribution", describe_distribution, out, dist, origin) if dist is not None else None
    out["markers"] = _step(out, "markers", install_markers, out["site_dirs"], name) or {}
    locations = (out["spec"] or {}).get("locations") or []
    out["source_version"] = _step(out, "version.py", source_version, locations[0]) if locations else None
    return out


def main():
    try:
        out = probe(sys.argv[1])
    except Exception as exc:  # a bug here must still answer as data, never as a traceback
        out = {"errors": {"probe": "%s: %s" % (type(exc).__name__, exc)}}
    sys.stdout.write(MARKER + json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
