# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a Python package really comes from, without importing it.

The probe runs inside the *target* interpreter (any Python >= 3.8, stdlib
only) and reports raw facts as JSON; ``classify`` turns them into the
module's answer. Keeping the judgement on this side keeps it unit-testable.
"""

from __future__ import absolute_import, division, print_function

import json
import os

PROBE_MARKER = "GPUFLEET_PROBE_JSON:"

# Run as ``python -c PROBE_SOURCE NAME`` with the interpreter's normal start-up (not -I):
# the service also sees PYTHONPATH, .pth files and site customisations.
PROBE_SOURCE = r'''
import json, os, re, sys
name = sys.argv[1]
out = {"python": sys.version.split()[0], "executable": sys.executable,
       "prefix": sys.prefix, "base_prefix": getattr(sys, "base_prefix", sys.prefix),
       "real_prefix": getattr(sys, "real_prefix", None), "sys_path": list(sys.path)}
try:
    import site
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        dirs.append(user)
except Exception:
    dirs = []
dirs += [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
out["site_dirs"] = sorted(set(dirs) | set(os.path.realpath(d) for d in dirs))
spec = None
try:
    import importlib.util
    spec = importlib.util.find_spec(name)
except Exception as exc:
    out["spec_error"] = "%s: %s" % (type(exc).__name__, exc)
if spec is not None:
    out["spec"] = {"origin": spec.origin,
                   "locations": list(spec.submodule_search_locations or []),
                   "real_locations": [os.path.realpath(p) for p in (spec.submodule_search_locations or [])
                                      if os.path.isdir(p)],
                   "loader": type(spec.loader).__name__ if spec.loader is not None else None}
dist = None
try:
    import importlib.metadata as md
except ImportError:
    md = None
if md is not None:
    def first_dist(candidates):
        for cand in candidates:
            try:
                return md.distribution(cand)
            except Exception:
                continue
        return None
    # Same-named distribution first: packages_distributions() reads every RECORD (slow with torch).
    dist = first_dist([name, name.replace("_", "-")])
    if dist is None:
        try:
            dist = first_dist(md.packages_distributions().get(name, []))
        except Exception:
            dist = None
if dist is not None:
    info = {"name": dist.metadata["Name"], "version": dist.version,
            "path": str(getattr(dist, "_path", "")) or None}
    for extra in ("direct_url.json", "RECORD"):
        try:
            text = dist.read_text(extra)
        except Exception:
            text = None
        info[extra] = text if extra != "RECORD" else (text is not None)
    out["dist"] = info
markers = {"egg_links": {}, "editable_pth": [], "editable_finders": []}
norm = re.sub(r"[-_.]+", "_", name).lower()
for d in out["site_dirs"]:
    try:
        entries = os.listdir(d)
    except OSError:
        continue
    for entry in entries:
        low = re.sub(r"[-_.]+", "_", entry).lower()
        full = os.path.join(d, entry)
        if entry.endswith(".egg-link") and low[:-len("_egg_link")] == norm:
            try:
                with open(full) as fh:
                    markers["egg_links"][full] = fh.readline().strip()
            except OSError:
                markers["egg_links"][full] = None
        elif entry.startswith("__editable__") and norm in low:
            (markers["editable_finders"] if entry.endswith(".py") else markers["editable_pth"]).append(full)
out["markers"] = markers
locs = out.get("spec", {}).get("locations") or []
if locs:
    vfile = os.path.join(locs[0], "version.py")
    try:
        with open(vfile) as fh:
            m = re.search(r"""__version__\s*=\s*['"]([^'"]+)['"]""", fh.read())
        out["source_version"] = m.group(1) if m else None
    except OSError:
        out["source_version"] = None
sys.stdout.write("''' + PROBE_MARKER + r'''" + json.dumps(out) + "\n")
'''


class ProbeError(Exception):
    """The interpreter did not answer the probe the way a Python would."""


def parse_probe_output(stdout):
    """Extract the probe's JSON from stdout; site hooks may print before it."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PROBE_MARKER):
            try:
                return json.loads(line[len(PROBE_MARKER):])
            except ValueError as exc:
                raise ProbeError("probe output is not valid JSON: %s" % exc) from None
    raise ProbeError("no probe answer in the output")


def _under(path, roots):
    """True when path lies in one of roots (paths as the probe resolved them)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _file_url_path(url):
    if url and url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(url).path)
    return None


class BrokenInstall(Exception):
    """A package that is half there: the message says what is wrong and what to do."""


def classify(raw, name):
    """Turn the probe's raw facts into the module result (without host wording).

    Raises BrokenInstall for an install that pip would have to repair.
    """
    spec = raw.get("spec")
    dist = raw.get("dist")
    site_dirs = raw.get("site_dirs") or []
    markers = raw.get("markers") or {}
    in_venv = raw.get("prefix") != raw.get("base_prefix") or bool(raw.get("real_prefix"))
    result = {
        "name": name,
        "python": raw.get("executable"),
        "python_version": raw.get("python"),
        "sys_prefix": raw.get("prefix"),
        "in_venv": in_venv,
        "file": None,
        "location": None,
        "version": None,
        "install": "missing",
        "editable_source": None,
        "editable_method": None,
        "dist_info": None,
        "distribution": None,
        "search_roots": [],
        "method": "importlib.util.find_spec+importlib.metadata",
        "version_source": None,
    }
    if dist:
        result["dist_info"] = dist.get("path")
        result["distribution"] = dist.get("name")
    if spec is None:
        if dist:
            raise BrokenInstall(
                "distribution %s %s is recorded at %s but the package %r cannot be found on sys.path "
                "(its files are gone); reinstall it with 'pip install --force-reinstall %s==%s'"
                % (dist.get("name"), dist.get("version"), dist.get("path"), name, dist.get("name"), dist.get("version"))
            )
        if raw.get("spec_error"):
            result["error"] = raw["spec_error"]
        return result

    locations = spec.get("locations") or []
    origin = spec.get("origin")
    if origin in (None, "namespace", "built-in", "frozen"):
        origin = None
    result["file"] = origin
    if locations:
        result["location"] = locations[0]
    elif origin:
        result["location"] = os.path.dirname(origin)

    namespace = bool(locations) and origin is None
    direct_url = {}
    if dist and dist.get("direct_url.json"):
        try:
            direct_url = json.loads(dist["direct_url.json"])
        except ValueError:
            direct_url = {}
    editable_by_url = bool((direct_url.get("dir_info") or {}).get("editable"))
    egg_links = markers.get("egg_links") or {}
    editable_markers = markers.get("editable_finders") or markers.get("editable_pth")
    real_location = (spec.get("real_locations") or [result["location"]])[0]
    outside_site = bool(real_location) and not _under(real_location, site_dirs)

    if editable_by_url:
        result["install"] = "editable"
        result["editable_method"] = "direct_url.json"
        result["editable_source"] = _file_url_path(direct_url.get("url"))
    elif egg_links:
        result["install"] = "editable"
        result["editable_method"] = "egg-link"
        result["editable_source"] = sorted(v for v in egg_links.values() if v)[0] if any(egg_links.values()) else None
    elif editable_markers and outside_site:
        result["install"] = "editable"
        result["editable_method"] = "__editable__ finder"
    elif namespace:
        result["install"] = "namespace"
    elif outside_site:
        # Imported from a checkout through PYTHONPATH or a .pth path entry:
        # the code that runs is that checkout, whatever pip thinks.
        result["install"] = "editable"
        result["editable_method"] = "path entry"
    else:
        result["install"] = "regular"

    if result["install"] == "editable" and not result["editable_source"] and result["location"]:
        result["editable_source"] = os.path.dirname(real_location)

    if dist:
        result["version"] = dist.get("version")
        result["version_source"] = "metadata"
    elif raw.get("source_version"):
        result["version"] = raw["source_version"]
        result["version_source"] = "version.py"

    if not dist and result["install"] == "regular":
        raise BrokenInstall(
            "package directory %s has no dist-info (pip does not know it, so its version and files "
            "cannot be trusted); reinstall it with 'pip install --force-reinstall %s'"
            % (result["location"], name)
        )

    roots = []
    for real in spec.get("real_locations") or []:
        if real not in roots:
            roots.append(real)
    result["search_roots"] = roots
    return result
