# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a Python package really comes from, without importing it.

``package_probe`` runs inside the *target* interpreter (any Python >= 3.8, stdlib only) and
reports raw facts as JSON; ``classify`` turns them into the module's answer. Keeping the judgement
on this side keeps it unit-testable. ``resolve_package`` does both.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import inspect
import json
import os
import re
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils import package_probe
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    CACHE_FORMAT,
    cache_keep,
    cache_read,
    entry_key,
    fingerprint_files,
    matches_shape,
)

PROBE_MARKER = package_probe.MARKER


class PackageInfoError(Exception):
    """resolve_package cannot answer: the message says why and what to do (without the host name)."""

    def __init__(self, message, stderr=None):
        super(PackageInfoError, self).__init__(message)
        # The interpreter's last stderr lines, when they explain the failure.
        self.stderr = stderr


class ProbeError(Exception):
    """The interpreter did not answer the probe the way a Python would."""


class BrokenInstall(Exception):
    """A package that is half there: the message says what is wrong and what to do."""


def probe_source():
    """The probe's text, to run with ``python -c``.

    inspect reads it through the module's loader, so this works from the AnsiballZ zip (zipimport)
    as well as from files; a path on disk would not exist inside the zip.
    """
    return inspect.getsource(package_probe)


def parse_probe_output(stdout):
    """Extract the probe's JSON from stdout; site hooks may print before it."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PROBE_MARKER):
            try:
                return json.loads(line[len(PROBE_MARKER):])
            except ValueError as exc:
                raise ProbeError("probe output is not valid JSON: %s" % exc) from None
    raise ProbeError("no probe answer in the output")


def _check_arguments(python, name, timeout):
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise PackageInfoError("timeout must be more than 0 (seconds), not %r" % (timeout,))
    if not os.path.exists(python):
        raise PackageInfoError("interpreter %s does not exist; set 'python' to the interpreter the service runs "
                               "(see ExecStart in its unit)" % python)
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        raise PackageInfoError("interpreter %s is not an executable file; point 'python' at bin/python3 of the "
                               "environment" % python)
    if not name or "." in name or not name.replace("_", "a").isalnum():
        raise PackageInfoError("name %r is not a top-level import name such as 'sglang'" % (name,))


def resolve_package(python, name="sglang", environment=None, timeout=30, cache_dir=None, check_mode=False):
    """Where interpreter python imports the top-level package name from, and how it was installed.

    environment: extra variables for the interpreter (such as the service's PYTHONPATH).
    cache_dir: the on-host cache; the probe's answer is kept there and served while every file and directory it
    came from is unchanged (_probe_watched), so that a warm run starts no interpreter. Nothing is written in
    check mode, and a cache that cannot be written is only a miss.
    Returns classify's result plus elapsed_s; raises PackageInfoError.
    """
    _check_arguments(python, name, timeout)
    started = time.monotonic()
    key = _probe_cache_key(python, name, environment) if cache_dir else None
    raw = _cached_probe(cache_dir, key) if key else None
    if raw is None:
        raw = _run_probe(python, name, environment, timeout)
        if key and not check_mode and not raw.get("errors"):
            paths = _probe_watched(python, raw)
            cache_keep(cache_dir, key, {"raw": raw, "cwd": os.getcwd(), "paths": paths,
                                        "fingerprint": fingerprint_files(paths)})
    try:
        result = classify(raw, name)
    except BrokenInstall as exc:
        raise PackageInfoError("interpreter %s: broken install of %s: %s" % (python, name, exc)) from None
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    return result


def _run_probe(python, name, environment, timeout):
    """The probe's raw answer from the interpreter itself."""
    env = dict(os.environ)
    env.update((str(k), str(v)) for k, v in (environment or {}).items())
    run = run_argv([python, "-c", probe_source(), name], timeout=timeout, env=env)
    if run.error:
        raise PackageInfoError("cannot run %s: %s" % (python, run.error))
    if run.timed_out:
        raise PackageInfoError("%s did not answer within %ss (killed); check for a hung import or raise 'timeout'"
                               % (python, timeout))
    try:
        raw = parse_probe_output(run.stdout)
    except ProbeError as exc:
        raise PackageInfoError("%s did not run the probe as a Python >= 3.8 would (%s, rc=%s); is it a Python "
                               "interpreter?" % (python, exc, run.rc), stderr=run.stderr_tail()) from None
    if "probe" in (raw.get("errors") or {}):
        raise PackageInfoError("the probe failed in %s: %s" % (python, raw["errors"]["probe"]))
    if _version_tuple(raw.get("python")) < (3, 8):
        raise PackageInfoError("%s is Python %s; the interpreter must be Python 3.8 or newer"
                               % (python, raw.get("python")))
    return raw


# Variables of the module's own environment that change what a `python -c` imports: its search path, its site and
# user site directories (HOME), its hooks.
_PROBE_ENVIRONMENT = re.compile(r"^(PYTHON\w*|HOME|VIRTUAL_ENV)$")


def _probe_cache_key(python, name, environment):
    inherited = sorted((k, v) for k, v in os.environ.items() if _PROBE_ENVIRONMENT.match(k))
    return entry_key({"format": CACHE_FORMAT, "kind": "package_probe", "python": python, "name": name,
                      "environment": sorted((str(k), str(v)) for k, v in (environment or {}).items()),
                      "inherited": inherited,
                      "probe": hashlib.sha256(probe_source().encode("utf-8")).hexdigest()})


_CACHED_PROBE_FIELDS = {"raw": dict, "cwd": str, "paths": list, "fingerprint": list}


def _cached_probe(cache_dir, key):
    """The probe's kept answer, or None: kept for this working directory (`python -c` imports from it first), with
    the same fingerprints of everything it came from (a path that appeared since counts: it was not there before)."""
    def valid(entry):
        return matches_shape(entry, _CACHED_PROBE_FIELDS) and entry["cwd"] == os.getcwd() \
            and fingerprint_files(entry["paths"]) == entry["fingerprint"]
    entry, _path = cache_read(cache_dir, key, valid)
    return entry["raw"] if entry else None


# Files in a search path directory that change what its other entries mean: path configuration (.pth, read at start)
# and the site hooks.
_PATH_HOOK = re.compile(r"(\.pth|^sitecustomize\.py|^usercustomize\.py)$")


def _probe_watched(python, raw):
    """Every path the probe's answer depends on: the interpreter and its venv's pyvenv.cfg, each directory on its
    search path (pip adding or removing a package changes it) with the .pth files and site hooks in it, where the
    package was found, its version.py, its dist-info's files, the editable-install markers."""
    cwd = os.getcwd()
    dirs = [p or cwd for p in (raw.get("sys_path") or [])] + list(raw.get("site_dirs") or [])
    paths = [python, os.path.realpath(python), os.path.join(raw.get("prefix") or "", "pyvenv.cfg")] + dirs
    for directory in dirs:
        try:
            paths.extend(os.path.join(directory, n) for n in sorted(os.listdir(directory)) if _PATH_HOOK.search(n))
        except OSError:
            continue  # not a directory (a zip), or gone: its own fingerprint says so
    spec = raw.get("spec") or {}
    locations = list(spec.get("locations") or [])
    paths += [spec.get("origin") or ""] + locations + [os.path.join(loc, "version.py") for loc in locations[:1]]
    dist_path = (raw.get("dist") or {}).get("path")
    if dist_path:
        paths += [dist_path] + [os.path.join(dist_path, n)
                                for n in ("METADATA", "PKG-INFO", "RECORD", "direct_url.json", "INSTALLER")]
    markers = raw.get("markers") or {}
    paths += list((markers.get("egg_links") or {}).keys()) + list(markers.get("editable_pth") or []) \
        + list(markers.get("editable_finders") or [])
    return sorted(set(p for p in paths if p))


def _version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text or "")[:2])


def _under(path, roots):
    """True when path lies in one of roots (paths as the probe resolved them)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _file_url_path(url):
    if url and url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(url).path)
    return None


def _dist_dir_name(path):
    """('sglang', '0.5.23') from .../sglang-0.5.23.dist-info; the version is None for sglang.egg-info."""
    base = os.path.basename(path or "")
    base = re.sub(r"\.(dist|egg)-info$", "", base)
    name, _sep, rest = base.partition("-")
    return name or None, rest.split("-")[0] or None


def _metadata_message(dist, name):
    dir_name, dir_version = _dist_dir_name(dist.get("path"))
    requirement = dir_name or dist.get("name") or name
    version = dist.get("version") or dir_version
    pin = "%s==%s" % (requirement, version) if version else requirement
    return "%s %s; reinstall it with 'pip install --force-reinstall %s'" % (
        dist.get("metadata_file"), dist["metadata_problem"], pin)


def _base_result(raw, name):
    dist = raw.get("dist") or {}
    return {
        "name": name,
        "python": raw.get("executable"),
        "python_version": raw.get("python"),
        "sys_prefix": raw.get("prefix"),
        "in_venv": raw.get("prefix") != raw.get("base_prefix") or bool(raw.get("real_prefix")),
        "file": None,
        "location": None,
        "version": None,
        "install": "missing",
        "installed_by": None,
        "editable_source": None,
        "editable_method": None,
        "dist_info": dist.get("path"),
        "distribution": dist.get("name"),
        "search_roots": [],
        "method": "importlib.util.find_spec+importlib.metadata",
        "version_source": None,
        "probe_errors": dict(raw.get("errors") or {}),
    }


def _not_found(raw, dist, name, result):
    """The result when find_spec found nothing: missing, or broken when pip still records it."""
    if dist:
        raise BrokenInstall(
            "distribution %s %s is recorded at %s but the package %r cannot be found on sys.path "
            "(its files are gone); reinstall it with 'pip install --force-reinstall %s==%s'"
            % (dist.get("name"), dist.get("version"), dist.get("path"), name, dist.get("name"), dist.get("version"))
        )
    if result["probe_errors"].get("find_spec"):
        result["error"] = result["probe_errors"]["find_spec"]
    return result


def _locate(spec, result):
    """file and location as the import system sees them."""
    origin = spec.get("origin")
    if origin in (None, "namespace", "built-in", "frozen"):
        origin = None
    result["file"] = origin
    locations = spec.get("locations") or []
    if locations:
        result["location"] = locations[0]
    elif origin:
        result["location"] = os.path.dirname(origin)


def _direct_url(dist):
    try:
        return json.loads((dist or {}).get("direct_url.json") or "{}")
    except ValueError:
        return {}


def _install_kind(raw, spec, dist, result):
    """Set install, editable_method, editable_source and installed_by.

    A package outside the site directories is either pip's copy in a directory of its own
    (--target, --prefix, another interpreter's --user: a dist-info beside it whose RECORD lists its
    files), which is `path`, or a checkout, which is `editable` whatever pip thinks.
    """
    markers = raw.get("markers") or {}
    real_location = (spec.get("real_locations") or [result["location"]])[0]
    outside_site = bool(real_location) and not _under(real_location, raw.get("site_dirs") or [])
    owned = bool(dist and dist.get("record_lists_origin"))
    direct_url = _direct_url(dist)
    egg_links = markers.get("egg_links") or {}
    editable_source = None
    if (direct_url.get("dir_info") or {}).get("editable"):
        result.update(install="editable", editable_method="direct_url.json")
        editable_source = _file_url_path(direct_url.get("url"))
    elif egg_links:
        result.update(install="editable", editable_method="egg-link")
        editable_source = sorted(v for v in egg_links.values() if v)[0] if any(egg_links.values()) else None
    elif (markers.get("editable_finders") or markers.get("editable_pth")) and outside_site:
        result.update(install="editable", editable_method="__editable__ finder")
    elif bool(spec.get("locations")) and result["file"] is None:
        result["install"] = "namespace"
    elif outside_site and not owned:
        result.update(install="editable", editable_method="path entry")
    else:
        result["install"] = "path" if outside_site else "regular"
        result["installed_by"] = dist.get("installer") if owned else None
    if result["install"] == "editable":
        result["editable_source"] = editable_source or (os.path.dirname(real_location) if result["location"] else None)


def _version(raw, dist, result):
    if dist:
        result["version"] = dist.get("version")
        result["version_source"] = "metadata"
    elif raw.get("source_version"):
        result["version"] = raw["source_version"]
        result["version_source"] = "version.py"


def classify(raw, name):
    """Turn the probe's raw facts into the module result (without host wording).

    Raises BrokenInstall for an install that pip would have to repair.
    """
    spec = raw.get("spec")
    dist = raw.get("dist")
    if dist and dist.get("metadata_problem"):
        raise BrokenInstall(_metadata_message(dist, name))
    result = _base_result(raw, name)
    if spec is None:
        return _not_found(raw, dist, name, result)
    _locate(spec, result)
    _install_kind(raw, spec, dist, result)
    _version(raw, dist, result)
    if not dist and result["install"] == "regular":
        lookup = result["probe_errors"].get("distribution")
        raise BrokenInstall(
            "package directory %s has no dist-info (pip does not know it, so its version and files "
            "cannot be trusted)%s; reinstall it with 'pip install --force-reinstall %s'"
            % (result["location"], " and looking for one failed: %s" % lookup if lookup else "", name)
        )
    roots = []
    for real in spec.get("real_locations") or []:
        if real not in roots:
            roots.append(real)
    result["search_roots"] = roots
    return result
