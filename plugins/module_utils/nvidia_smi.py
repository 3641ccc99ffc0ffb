# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse nvidia-smi's CSV queries and tie GPU processes to their systemd units."""

from __future__ import absolute_import, division, print_function

GPU_FIELDS = ("index", "name", "uuid", "memory.total", "memory.used", "utilization.gpu", "driver_version")
APP_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")
QUERY_GPUS = ["--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"]
QUERY_APPS = ["--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"]


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


def _lines(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_gpus(text):
    """--query-gpu output -> list of GPU dicts. Names never hold ', ' so a plain split works."""
    gpus = []
    for line in _lines(text):
        parts = [p.strip() for p in line.split(", ")]
        if len(parts) != len(GPU_FIELDS) or _number(parts[0]) is None:
            raise NvidiaSmiParseError("unexpected nvidia-smi line: %r" % line[:200])
        gpus.append({
            "index": int(parts[0]),
            "name": parts[1],
            "uuid": parts[2],
            "memory_total_mib": _number(parts[3]),
            "memory_used_mib": _number(parts[4]),
            "utilization_gpu_pct": _number(parts[5]),
            "driver_version": parts[6],
        })
    return gpus


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


def attach(gpus, apps, cgroup_reader):
    """Give each process its GPU index and unit; give each GPU its processes."""
    by_uuid = {g["uuid"]: g for g in gpus}
    for gpu in gpus:
        gpu["processes"] = []
    for app in apps:
        gpu = by_uuid.get(app["gpu_uuid"])
        app["gpu_index"] = gpu["index"] if gpu else None
        text = cgroup_reader(app["pid"])
        app["unit"] = unit_from_cgroup(text) if text else None
        if gpu:
            gpu["processes"].append(app["pid"])
    return gpus, apps
