# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Query nvidia-smi's CSV, parse it and tie GPU processes to their systemd units."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import shutil

from ansible_collections.gpufleet.sglang.plugins.module_utils.gpu_arch import describe
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import c_locale_env, run_argv
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    CACHE_FORMAT,
    cache_keep,
    cache_read,
    entry_key,
    fingerprint_files,
    matches_shape,
)

# --query-gpu fields, in the order asked, with the key and the kind of value each gets in a GPU dict.
# A real H200 (driver 580.159.04) answered exactly this query (tests/fixtures/nvidia-smi/h200-gpu-info).
GPU_QUERY = (
    ("index", "index", "int"),
    ("name", "name", "text"),
    ("uuid", "uuid", "text"),
    ("memory.total", "memory_total_mib", "number"),
    ("memory.used", "memory_used_mib", "number"),
    ("utilization.gpu", "utilization_gpu_pct", "number"),
    ("driver_version", "driver_version", "text"),
    ("compute_cap", "compute_capability", "text"),    # "9.0" (Hopper), "8.0" (A100), "8.9" (L40S)
    ("mig.mode.current", "mig_mode", "text"),         # Enabled / Disabled; null where the GPU has no MIG
    ("persistence_mode", "persistence_mode", "text"),  # Enabled / Disabled
)
GPU_FIELDS = tuple(field for field, _key, _kind in GPU_QUERY)
APP_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")
QUERY_GPUS = ["--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"]
QUERY_APPS = ["--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"]
# The CUDA version is no --query-gpu field (`cuda_version` gives rc 2): plain `nvidia-smi` prints it in
# its banner ("| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |"), as `-q` does
# ("CUDA Version : 13.0"). The banner is read: on the H200 plain nvidia-smi took 105 ms, `-q -x` 111 ms
# with a record of every sensor that grows with each GPU; `--version` prints it too, but was not
# checked on older drivers than 580.
QUERY_BANNER = []
_CUDA_VERSION = re.compile(r"CUDA Version\s*:\s*(\S+)")
# What nvidia-smi says (on stdout, exit code 2) for a field its driver does not know.
_BAD_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')


class NvidiaSmiParseError(Exception):
    """A line that is not the CSV we asked for (often a driver error message)."""


def _number(value):
    """'81559' -> 81559; '[N/A]', '[Not Supported]', '' -> None."""
    value = value.strip()
    if not value or value.startswith("["):
        return None
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return None


def _text(value):
    """'Enabled' -> 'Enabled'; '[N/A]', '[Not Supported]', '' -> None."""
    value = value.strip()
    return None if not value or value.startswith("[") else value


def _lines(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


_CONVERT = {"int": lambda v: int(v.strip()), "number": _number, "text": _text}
_KNOWN = dict((field, (key, kind)) for field, key, kind in GPU_QUERY)


def parse_gpus(text, fields=GPU_FIELDS):
    """--query-gpu output of `fields` (noheader, nounits) -> list of GPU dicts. Names never hold ', '
    so a plain split works. Fields of GPU_QUERY get its keys; any other field keeps its name with
    '_' for '.' and its text. The first field must be the index."""
    gpus = []
    for line in _lines(text):
        parts = line.split(", ")
        if len(parts) != len(fields) or fields[0] != "index" or not parts[0].strip().isdigit():
            raise NvidiaSmiParseError("unexpected nvidia-smi line: %r" % line[:200])
        gpu = {}
        for field, value in zip(fields, parts):
            key, kind = _KNOWN.get(field, (field.replace(".", "_"), "text"))
            gpu[key] = _CONVERT[kind](value)
        gpus.append(gpu)
    return gpus


def parse_cuda_version(text):
    """The CUDA version the driver supports, from nvidia-smi's banner (or -q); None when it says N/A
    or does not say."""
    match = _CUDA_VERSION.search(text)
    version = match.group(1) if match else None
    return version if version and version[0].isdigit() else None


def parse_apps(text):
    """--query-compute-apps output -> list of process dicts.

    The process name is whatever the workload set (commas and spaces included), so the line is
    read outside-in: pid from the left, uuid and memory from the right, the name is the rest.
    """
    apps = []
    for line in _lines(text):
        head, sep, rest = line.partition(", ")
        parts = rest.rsplit(", ", 2)
        if not sep or len(parts) != 3 or _number(head) is None or not parts[2].startswith(("GPU-", "MIG-")):
            raise NvidiaSmiParseError("unexpected nvidia-smi line: %r" % line[:200])
        apps.append({
            "pid": int(head),
            "process_name": parts[0],
            "used_memory_mib": _number(parts[1]),
            "gpu_uuid": parts[2],
        })
    return apps


def unit_from_cgroup(text):
    """The systemd unit owning a process, from /proc/PID/cgroup (v1 or v2); None if none.

    The innermost .service wins ("/system.slice/sglang.service/payload" -> sglang.service);
    a .scope (login sessions, transient runs) is the fallback.
    """
    service = scope = None
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        hierarchy, controllers, path = fields
        # v2 is "0::PATH"; on v1, the name=systemd hierarchy is the one systemd manages.
        if not (hierarchy == "0" and controllers == "") and controllers != "name=systemd":
            continue
        for part in path.split("/"):
            if part.endswith(".service"):
                service = part
            elif part.endswith(".scope"):
                scope = part
        if service:
            break
    return service or scope


def read_cgroup(pid):
    """Text of /proc/PID/cgroup; raises OSError (ENOENT when the process is gone), nothing else."""
    with open("/proc/%d/cgroup" % pid, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def unit_of(pid, cgroup_reader=read_cgroup):
    """(unit, unit_source): where the unit came from, or why there is none.

    unit_source is "cgroup" (unit found), "no unit" (cgroup read, the process is in no unit),
    "process gone" (no /proc entry: it exited after nvidia-smi listed it; a PID of another PID
    namespace looks the same, /proc cannot tell them apart) or "unreadable" (any other error, such
    as permission).
    """
    try:
        text = cgroup_reader(pid)
    except OSError as exc:
        return None, "process gone" if exc.errno in (errno.ENOENT, errno.ESRCH) else "unreadable"
    unit = unit_from_cgroup(text)
    return unit, "cgroup" if unit else "no unit"


def attach(gpus, apps, cgroup_reader=read_cgroup):
    """Give each process its GPU index, unit and unit_source; give each GPU its processes."""
    by_uuid = {g["uuid"]: g for g in gpus}
    for gpu in gpus:
        gpu["processes"] = []
    for app in apps:
        gpu = by_uuid.get(app["gpu_uuid"])
        app["gpu_index"] = gpu["index"] if gpu else None
        app["unit"], app["unit_source"] = unit_of(app["pid"], cgroup_reader)
        if gpu:
            gpu["processes"].append(app["pid"])
    return gpus, apps


def _empty(state, **extra):
    result = {"nvidia_smi": state, "gpus": [], "processes": [], "gpu_count": 0, "units": [], "driver_version": None,
              "cuda_version": None}
    result.update(extra)
    return result


def query_gpus(nvidia_smi=None, timeout=30, cache_dir=None, check_mode=False):
    """gpu_info's result: GPUs, their compute processes and units, from nvidia-smi (PATH by default).

    nvidia_smi is "present", or "missing" / "error" with the reason in error; nothing raises for
    the host's state. Raises ValueError for a timeout that is not more than 0. With cache_dir (the
    on-host cache), the CUDA version is kept by driver version (_cuda_version_key).
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError("timeout must be more than 0 (seconds), not %r" % (timeout,))
    smi = nvidia_smi or shutil.which("nvidia-smi")
    if not smi or not os.access(smi, os.X_OK):
        return _empty("missing", error="nvidia-smi not found%s; install the NVIDIA driver utilities or set nvidia_smi"
                      % (" at %s" % smi if smi else " on PATH"))
    env = c_locale_env()
    outputs = []
    for query in (QUERY_GPUS, QUERY_APPS):
        output, failed = _run_query(smi, query, timeout, env)
        if failed:
            return failed
        outputs.append(output)
    try:
        gpus = parse_gpus(outputs[0])
        apps = parse_apps(outputs[1])
    except NvidiaSmiParseError as exc:
        return _empty("error", error="%s printed something else than the CSV asked for: %s" % (smi, exc),
                      nvidia_smi_path=smi)
    driver = gpus[0]["driver_version"] if gpus else None
    key = _cuda_version_key(smi, driver) if cache_dir and driver else None
    cached = cache_read(cache_dir, key, _valid_cuda_version)[0] if key else None
    if cached:
        cuda_version = cached["cuda_version"]
    else:
        banner, failed = _run_query(smi, QUERY_BANNER, timeout, env)
        if failed:
            return failed
        cuda_version = parse_cuda_version(banner)
        if key and not check_mode:
            cache_keep(cache_dir, key, {"cuda_version": cuda_version})
    gpus, apps = attach(gpus, apps)
    for gpu in gpus:
        # The architecture's name and sm_XY beside the capability: what the plan's GPU limits and the report name.
        arch = describe(gpu.get("compute_capability"))
        gpu.update(architecture=arch["architecture"], sm=arch["sm"])
    return {
        "nvidia_smi": "present",
        "nvidia_smi_path": smi,
        "driver_version": driver,
        "cuda_version": cuda_version,
        "gpus": gpus,
        "processes": apps,
        "gpu_count": len(gpus),
        "units": sorted(set(a["unit"] for a in apps if a["unit"])),
    }


def _run_query(smi, query, timeout, env):
    """(stdout, None), or (None, the error result) when nvidia-smi fails."""
    run = run_argv([smi] + query, timeout=timeout, env=env)
    if run.ok:
        return run.stdout, None
    said = (run.stdout.strip() or run.stderr.strip() or run.error or "").splitlines()
    reason = "timed out after %ss" % timeout if run.timed_out else (
        "rc=%s: %s" % (run.rc, said[0] if said else "no output"))
    if _BAD_FIELD.search(run.stdout):
        reason += " (this NVIDIA driver is older than gpu_info needs: it asks for %s)" % ",".join(GPU_FIELDS)
    what = query[0].split("=", 1)[0] if query else "(no options, for the CUDA version)"
    return None, _empty("error", error="%s %s failed (%s)" % (smi, what, reason), nvidia_smi_path=smi)


def _cuda_version_key(smi, driver):
    """The CUDA version a driver supports is the driver's (its libcuda): plain nvidia-smi, which prints it, took
    105 ms on an H200 host, as long as both queries together. Kept by driver version and nvidia-smi's own file."""
    return entry_key({"format": CACHE_FORMAT, "kind": "cuda_version", "nvidia_smi": smi, "driver_version": driver,
                      "binary": fingerprint_files([os.path.realpath(smi)])})


def _valid_cuda_version(entry):
    return matches_shape(entry, {"cuda_version": (str, type(None))})
