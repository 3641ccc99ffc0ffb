# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rates and quantiles over a window, from the snapshots of metrics_text.py (scraped every interval).

Computed as Prometheus computes rate(), increase() and histogram_quantile(): a counter that went down was
reset (the server restarted) and counts from zero; a quantile interpolates linearly inside the bucket that
holds it, over the buckets' increase in the window. Pure functions; part of the metrics seam.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# SGLang's own figures a window yields (names as 0.5.23's metrics_collector.py defines them).
GENERATION_TOKENS = "sglang:generation_tokens_total"
ABORTED = "sglang:num_aborted_requests_total"
RUNNING = "sglang:num_running_reqs"
ACCEPT_LENGTH = "sglang:spec_accept_length"
ITL = "sglang:inter_token_latency_seconds"
TTFT = "sglang:time_to_first_token_seconds"
E2E = "sglang:e2e_request_latency_seconds"


def increase(values):
    """Increase of a counter over its successive readings; a drop is a reset (counts again from 0)."""
    total = 0.0
    for previous, current in zip(values, values[1:]):
        total += current - previous if current >= previous else current
    return total


def _bucket_increase(snapshots, name):
    """[(le, cumulative increase)] of a histogram over the snapshots, and the count's increase."""
    series = [s["histograms"].get(name) for s in snapshots]
    if any(h is None for h in series) or not series:
        return None, None
    bounds = sorted(set(le for h in series for le, _c in h["buckets"]))
    result = []
    for le in bounds:
        result.append((le, increase([dict(h["buckets"]).get(le, 0.0) for h in series])))
    return result, increase([h["count"] for h in series])


def quantile(q, buckets):
    """histogram_quantile(q) of cumulative [(le, count)] buckets; None when they hold no observation."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return lower_bound  # as Prometheus: the highest finite bound
            if count == lower_count:
                return le
            return lower_bound + (le - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = le, count
    return buckets[-1][0]


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def window_figures(snapshots):
    """The figures the canary compares, over the snapshots of one server (oldest first).

    {seconds, requests, tokens_per_s, running_mean, tokens_per_s_per_request, itl_p50_s, itl_p99_s,
    ttft_p99_s, accept_length, aborted, abort_ratio}; a figure the server does not report is None.
    """
    snapshots = [s for s in snapshots if s]
    figures = dict((k, None) for k in ("seconds", "requests", "tokens_per_s", "running_mean",
                                       "tokens_per_s_per_request", "itl_p50_s", "itl_p99_s", "ttft_p99_s",
                                       "accept_length", "aborted", "abort_ratio"))
    figures["samples"] = len(snapshots)
    if len(snapshots) < 2:
        return figures
    seconds = snapshots[-1]["at"] - snapshots[0]["at"]
    figures["seconds"] = round(seconds, 1)
    if seconds <= 0:
        return figures
    counters = [s["counters"] for s in snapshots]
    if all(GENERATION_TOKENS in c for c in counters):
        figures["tokens_per_s"] = round(increase([c[GENERATION_TOKENS] for c in counters]) / seconds, 2)
    _e2e, requests = _bucket_increase(snapshots, E2E)
    figures["requests"] = int(round(requests)) if requests is not None else None
    if all(ABORTED in c for c in counters):
        figures["aborted"] = int(round(increase([c[ABORTED] for c in counters])))
        done = (figures["requests"] or 0) + figures["aborted"]
        figures["abort_ratio"] = round(figures["aborted"] / float(done), 4) if done else None
    running = _mean([s["gauges"].get(RUNNING) for s in snapshots])
    figures["running_mean"] = round(running, 2) if running is not None else None
    figures["tokens_per_s_per_request"] = decode_per_request(
        _sum_increase(snapshots, ITL), figures["tokens_per_s"], running)
    itl, _n = _bucket_increase(snapshots, ITL)
    if itl:
        figures["itl_p50_s"] = _round(quantile(0.5, itl))
        figures["itl_p99_s"] = _round(quantile(0.99, itl))
    ttft, _n = _bucket_increase(snapshots, TTFT)
    if ttft:
        figures["ttft_p99_s"] = _round(quantile(0.99, ttft))
    # A gauge of the last logging interval: averaged over the readings taken while the server had work.
    busy = [s["gauges"].get(ACCEPT_LENGTH) for s in snapshots if s["gauges"].get(RUNNING, 1) > 0]
    length = _mean([v for v in busy if v])
    figures["accept_length"] = round(length, 3) if length is not None else None
    return figures


def _sum_increase(snapshots, name):
    """(increase of a histogram's sum, of its count) over the snapshots; (None, None) without it."""
    series = [s["histograms"].get(name) for s in snapshots]
    if not series or any(h is None for h in series):
        return None, None
    return increase([h["sum"] for h in series]), increase([h["count"] for h in series])


def decode_per_request(itl_sum_and_count, tokens_per_s, running):
    """Decode tokens/s of a request while it runs, over a window: the inverse of the mean inter-token latency (SGLang
    adds each step's time to the histogram's sum and counts its tokens, so sum / count is the seconds per token);
    else, without the histogram, the tokens generated per second over the requests running. The latency is observed
    at every step, the tokens counter only when a request ends: over a short interval that counter comes in lumps
    of whole requests (a 2-s interval read 10 or 900 tokens/s per request at random in the lab). With the histogram
    but no step in the window (an idle interval), None: not the counter's lump of a request that ended in it."""
    seconds, tokens = itl_sum_and_count
    if tokens is not None:
        return round(tokens / seconds, 2) if tokens and seconds else None
    if tokens_per_s is not None and running:
        return round(tokens_per_s / running, 2)
    return None


def _round(value):
    return round(value, 4) if value is not None else None


# A window's figure -> its name in an interval sample (the judge's, plugin_utils/_judge.py).
SAMPLE_FIGURES = (("tokens_per_s_per_request", "decode_per_request"), ("itl_p50_s", "itl_p50"),
                  ("itl_p99_s", "itl_p99"), ("ttft_p99_s", "ttft_p99"), ("accept_length", "accept_length"),
                  ("abort_ratio", "abort_ratio"), ("requests", "requests"), ("running_mean", "running"),
                  ("tokens_per_s", "tokens_per_s"))


def as_sample(figures, host, at):
    """One interval's sample of one host, as the judge takes it, from the figures of that interval."""
    sample = {"host": host, "at": at}
    sample.update((name, (figures or {}).get(figure)) for figure, name in SAMPLE_FIGURES)
    return sample


def interval_samples(snapshots, host):
    """One sample per interval (each pair of consecutive snapshots, oldest first) of one server: the figures of
    window_figures over that interval alone, at its end."""
    snapshots = [s for s in snapshots if s]
    return [as_sample(window_figures([first, last]), host, last["at"])
            for first, last in zip(snapshots, snapshots[1:])]
