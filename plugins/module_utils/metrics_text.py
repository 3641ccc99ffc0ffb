# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a server's Prometheus text exposition (GET /metrics) into one snapshot of numbers.

Part of the metrics seam: metrics_text.py reads one scrape, metrics_window.py turns two snapshots into rates
and quantiles over a window, prometheus_api.py asks a Prometheus for the same figures. Standard library only.

A snapshot sums each metric over its series (SGLang labels each series by model, engine type and ranks;
the histograms also by ``is_streaming``): {"gauges": {name: value}, "counters": {name: value},
"histograms": {name: {"buckets": [(le, cumulative count)], "sum": s, "count": n}}}. A name without a
``# TYPE`` line is read as a gauge, except ``*_total`` (a counter).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.gpufleet.sglang.plugins.module_utils.server_probe import http_get

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _float(text):
    try:
        return float(text)
    except ValueError:
        return None


def parse_samples(text):
    """[(name, {label: value}, value)] of every sample line; comments and unreadable lines are skipped."""
    samples = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        value = _float(match.group(4)) if match else None
        if value is None:
            continue
        labels = dict((k, v.replace('\\"', '"').replace("\\\\", "\\")) for k, v in _LABEL.findall(match.group(3) or ""))
        samples.append((match.group(1), labels, value))
    return samples


def parse_types(text):
    """{metric name: type} from the ``# TYPE`` lines."""
    types = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "#" and parts[1] == "TYPE":
            types[parts[2]] = parts[3]
    return types


def _histogram_family(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[:-len(suffix)]) == "histogram":
            return name[:-len(suffix)], suffix
    return None, None


def snapshot(text, at=None):
    """One scrape, summed over the series of each metric (see the module docstring); `at` is its time."""
    types = parse_types(text)
    result = {"at": at, "gauges": {}, "counters": {}, "histograms": {}}
    buckets = {}
    for name, labels, value in parse_samples(text):
        family, suffix = _histogram_family(name, types)
        if family:
            entry = result["histograms"].setdefault(family, {"buckets": [], "sum": 0.0, "count": 0.0})
            if suffix == "_bucket":
                le = _float(labels.get("le", ""))
                if le is not None:
                    buckets.setdefault(family, {})
                    buckets[family][le] = buckets[family].get(le, 0.0) + value
            else:
                entry[suffix[1:]] += value
        elif types.get(name) == "counter" or (name not in types and name.endswith("_total")):
            result["counters"][name] = result["counters"].get(name, 0.0) + value
        elif name.endswith("_created"):
            continue  # prometheus_client's creation timestamps of counters
        else:
            result["gauges"][name] = result["gauges"].get(name, 0.0) + value
    for family, by_le in buckets.items():
        result["histograms"][family]["buckets"] = sorted(by_le.items())
    return result


def scrape(url, timeout=5.0, get=http_get, clock=time.time):
    """(snapshot, problem): GET url + /metrics; a server without --enable-metrics answers 404."""
    status, body = get(url.rstrip("/") + "/metrics", timeout)
    if status != 200:
        reason = body if status == 0 else "HTTP %s" % status
        return None, "GET %s/metrics: %s (metrics need --enable-metrics)" % (url.rstrip("/"), reason)
    return snapshot(body, at=clock()), None
