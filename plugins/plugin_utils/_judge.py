# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The judge of an experiment: which speculative-decoding setting (arm) serves the fleet's own traffic best,
told from noise (issue #42). A canary is an experiment with one arm.

Controller-only, pure, standard library only. The figures are interval samples: one dict per host and per
interval (every 5 s, say) from the metrics seam, such as

    {"host": "n1", "at": 1712345678.0, "running": 14, "decode_per_request": 41.2, "itl_p50": 0.011,
     "itl_p99": 0.031, "ttft_p99": 0.42, "accept_length": 5.1, "abort_ratio": 0.0, "gateway_error_ratio": 0.0}

(running: the host's running requests in that interval). Each arm's hosts are compared with the control's (the
hosts serving as now) metric by metric with a rank test and a distribution-free interval of the shift
(compare), guardrails judge absolute limits sample by sample (guardrails), and decide names the winner, keeps
the control, asks for a longer window or holds; evaluate does it all from the samples.

Kept from Kayenta's NetflixACAJudge (spinnaker/spinnaker, kayenta-judge MannWhitneyClassifier, confLevel 0.98):
- the Mann-Whitney (Wilcoxon rank-sum) test and the Hodges-Lehmann shift of the experiment against the control
  with its interval at 98 %; a metric is better or worse (Kayenta's High/Low read in the metric's direction)
  only when the whole interval lies beyond a tolerance. Ranks are robust to the tails and outliers of
  per-interval figures, so Kayenta's IQR outlier removal is not needed;
- no data is its own outcome, never a pass.

Changed, and why:
- Kayenta's tolerance (0.25) is a fraction of the estimate itself (bounds at +-0.25 x |shift|): the interval must
  clear a quarter of its own centre, a significance test with no size that matters; with many samples any
  shift is High or Low, and with few its 0.25 is no statement about 10 %. Here the tolerance is a fraction of
  the control's median: worse means worse by more than the tolerance, at 98 %. Per metric kind (TOLERANCES):
  2 % for the objective (a tolerance of 10 % or more could never see a 10 % regression), 5 % for the ITL
  median, 10 % for the tail latencies (noisier, judged against getting worse), 5 % for the acceptance length.
- The interval is the order statistics of the pairwise differences (Moses) at the rank the exact U distribution
  gives (small samples without ties) or the normal approximation with the tie correction; Kayenta finds the
  roots of the normal-approximated statistic: the same interval without ties, and no root-finder.
- At least 10 samples (blocks) per side (min_samples), else too few samples: the caller observes longer, then
  holds. Kayenta judges any non-empty series.
- Pooled interval samples are not independent, which the test assumes, and the calibration shows it matters
  (tests/bench/judge_calibration.py, 200 simulated experiments a cell: per-interval CV 10 %, AR(1) 0.3 between
  5-second intervals, hosts 2 % apart, the load swinging). Pooled 5-second samples with no tolerance call a
  difference between identical settings (A/A) in 23 % of the lab's experiments (2+2 hosts, 300 s), 27 % with
  one host a side (600 s), where 2 % is what a 98 % interval promises:
  - consecutive intervals are correlated: a host's intervals are averaged in blocks of at least 15 s
    (block_s) before the test: 23 % becomes 12.5 %;
  - each host has its own speed for the whole window, which no window averages away: one host against one
    other differs by 2.8 % (hosts 2 % apart) however many samples. The interval is widened in quadrature by
    host_margin, z x spread x sqrt(1/h_arm + 1/h_control), the spread being the larger of host_spread (2 %)
    and the between-host deviation the samples show (host_spread()): 12.5 % becomes 1 %;
  - the tolerance is the margin for what that model of the noise gets wrong: with hosts 3 % apart where
    host_spread says 2 %, A/A is at most 1 in 100 (5 in 100 with no tolerance), 4.5 in 100 at 4 % apart.
  With these defaults A/A is at most 1 in 200 in every cell (goal: at most 1 in 20) and a 10 % slower arm never
  won; the regression is called worse in 89 % of a fleet's experiments (8+8 hosts, 15 s, 120 s; 80 % from
  105 s, 255 s with 4+4 hosts), 47 % of the lab's 2+2 at 120 s (80 % from 13 minutes); an arm of one host at
  5 s needs 150 s for 10 blocks at all. The price of the tolerance: without it, 98 % at 120 s on the fleet.
- Kayenta's weighted score of all metrics is replaced by the issue's rules (decide): the objective must be
  better, no other metric worse, no guardrail broken; between two winners the one better on the objective,
  else the operator's first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import bisect
import itertools
import math
import statistics

# metric: (label, better, role). Roles: the objective decides; "latency" metrics must not be worse; a
# "diagnostic" is compared between arms that both speculate, never against a control that does not; the
# "guardrail" ratios are judged sample by sample against absolute limits.
METRICS = {
    "decode_per_request": ("decode tokens/s per running request", "higher", "objective"),
    "itl_p50": ("inter-token latency p50", "lower", "latency"),
    "itl_p99": ("inter-token latency p99", "lower", "latency"),
    "ttft_p99": ("time to first token p99", "lower", "latency"),
    "accept_length": ("acceptance length", "higher", "diagnostic"),
    "abort_ratio": ("aborted requests", "lower", "guardrail"),
    "gateway_error_ratio": ("error rate through the gateway", "lower", "guardrail"),
}
# Relative to the control's median: "worse" is worse by more than this, at the confidence level. The intervals
# already carry the noise (host_margin included); the tolerance is the margin for what that model of the noise
# gets wrong (hosts 1.5x further apart than host_spread says, say) and for differences too small to matter.
# 2 % for the objective: a 10 % regression is seen in the calibration's windows (Kayenta's 25 % never could).
# The latencies are judged only against getting worse, and a p99 over one interval is the tail of few requests.
TOLERANCES = {"decode_per_request": 0.02, "itl_p50": 0.05, "itl_p99": 0.10, "ttft_p99": 0.10, "accept_length": 0.05}
# Absolute limits per interval sample; a broken one fails the arm at once (intervals: how many consecutive
# intervals of one host must break it). The acceptance floor is off by default.
GUARDRAILS = {
    "gateway_error_ratio": {"max": 0.01, "intervals": 1},
    "abort_ratio": {"max": 0.01, "intervals": 1},
    "ttft_p99": {"max": 10.0, "intervals": 1},
    "accept_length": {"min": None, "intervals": 1},
}
DEFAULTS = {
    "objective": "decode_per_request",
    "compared": ["decode_per_request", "itl_p50", "itl_p99", "ttft_p99"],
    "confidence": 0.98,               # NetflixACAJudge's
    "min_samples": 10,                # blocks per side
    "block_s": 15,                    # consecutive intervals of a host averaged over at least this long
    "host_spread": 0.02,              # hosts of one setting differ by about 2 % (1 sd); null: no host margin
    "load_band": None,                # e.g. 2.0: leave out blocks at under half or over twice the control's load
    "require": "better",              # or "not worse" (a canary that must not be slower)
    "tolerance": TOLERANCES,
    "guardrails": GUARDRAILS,
}
VERDICTS = ("better", "worse", "no difference", "too few samples")
STATUSES = ("wins", "loses", "no difference", "failed guardrail", "too few samples")
OUTCOMES = ("winner", "keep control", "extend", "hold")
# Loads further apart than this are named in the lines.
LOAD_NOTE_RATIO = 1.5
# Without ties and with at most this many samples in all, the exact distribution of U.
EXACT_MAX_SAMPLES = 50
# Up to this many pairwise differences they are all sorted; beyond, each order statistic is selected.
SORT_MAX_PAIRS = 60000


def _clean(values):
    """The finite numbers of values (None, NaN and booleans dropped), as floats."""
    kept = []
    for value in values or []:
        if value is None or isinstance(value, bool):
            continue
        value = float(value)
        if not math.isnan(value) and not math.isinf(value):
            kept.append(value)
    return kept


def _round(value):
    return None if value is None else float("%.6g" % value)


def _midranks(values):
    """The ranks of values (1-based, ties given their mean rank) and the size of each group of ties."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2.0 + 1
        if end > start:
            ties.append(end - start + 1)
        start = end + 1
    return ranks, ties


_U_COUNTS = {}


def _u_cumulative(n, m):
    """P(U <= u) for u = 0..n*m under the null hypothesis, without ties (exact).

    The counts of U are the coefficients of the Gaussian binomial [n+m choose n](q), the product over i = 1..n
    of (1 - q^(m+i)) / (1 - q^i): integers all along, so the probabilities are exact."""
    key = (min(n, m), max(n, m))
    if key not in _U_COUNTS:
        small, large = key
        top = small * large
        counts = [1] + [0] * top
        for i in range(1, small + 1):
            for u in range(top, large + i - 1, -1):
                counts[u] -= counts[u - large - i]
            for u in range(i, top + 1):
                counts[u] += counts[u - i]
        total = math.comb(small + large, small)
        cumulative, running = [], 0
        for count in counts:
            running += count
            cumulative.append(running / total)
        _U_COUNTS[key] = cumulative
    return _U_COUNTS[key]


def _u_sigma(n, m, ties):
    """The standard deviation of U under the null hypothesis, corrected for ties."""
    total = n + m
    tie_term = sum(t ** 3 - t for t in ties) / (total * (total - 1)) if total > 1 else 0.0
    return math.sqrt(max(0.0, n * m / 12.0 * (total + 1 - tie_term)))


def mann_whitney_u(a, b):
    """The Mann-Whitney U test of a against b, two-sided.

    Returns {"u": U of a (pairs a_i > b_j, ties counting half), "z": (U - n m / 2) / sigma or None,
    "p_value": two-sided p, "method": "exact" | "normal" | None}; all None when a side is empty. Exact
    distribution when there are no ties and at most EXACT_MAX_SAMPLES samples in all; else the normal
    approximation with the tie correction and the continuity correction."""
    a, b = _clean(a), _clean(b)
    n, m = len(a), len(b)
    if not n or not m:
        return {"u": None, "z": None, "p_value": None, "method": None}
    ranks, ties = _midranks(a + b)
    u = sum(ranks[:n]) - n * (n + 1) / 2.0
    sigma = _u_sigma(n, m, ties)
    centre = n * m / 2.0
    z = (u - centre) / sigma if sigma else None
    if not ties and n + m <= EXACT_MAX_SAMPLES:
        cumulative = _u_cumulative(n, m)
        p_value = min(1.0, 2 * cumulative[int(round(min(u, n * m - u)))])
        method = "exact"
    else:
        corrected = max(0.0, abs(u - centre) - 0.5) / sigma if sigma else 0.0
        p_value = min(1.0, math.erfc(corrected / math.sqrt(2)))
        method = "normal"
    return {"u": u, "z": _round(z), "p_value": _round(p_value), "method": method}


def _kth_pairwise_sum(xs, ys, k):
    """The k-th smallest (1-based) of all xs[i] + ys[j], xs and ys sorted, without making all n*m sums.

    Each round takes the weighted median of the rows' middle candidates as the pivot and keeps, row by row,
    the candidates on the side of the pivot where the k-th lies: at least a quarter go each round."""
    low = [0] * len(xs)            # row i's candidates are ys[low[i]:high[i]]
    high = [len(ys)] * len(xs)
    while True:
        remaining = sum(h - lo for lo, h in zip(low, high))
        below = sum(low)           # sums already known to lie below the k-th
        if remaining <= 4096:
            left = sorted(x + y for x, lo, h in zip(xs, low, high) for y in ys[lo:h])
            return left[k - below - 1]
        middles = sorted((x + ys[(lo + h) // 2], h - lo) for x, lo, h in zip(xs, low, high) if h > lo)
        seen, pivot = 0, middles[-1][0]
        for value, weight in middles:
            seen += weight
            if 2 * seen >= remaining:
                pivot = value
                break
        less = [_count_below(x, ys, pivot, strict=True) for x in xs]
        if k <= sum(less):
            high = less
            continue
        at_most = [_count_below(x, ys, pivot, strict=False) for x in xs]
        if k > sum(at_most):
            low = at_most
            continue
        return pivot


def _count_below(x, ys, pivot, strict):
    """How many x + ys[j] are < pivot (strict) or <= pivot, counted on the sums as floats add them."""
    j = bisect.bisect_left(ys, pivot - x) if strict else bisect.bisect_right(ys, pivot - x)
    # pivot - x is rounded: step to where the float sums themselves cross the pivot.
    while j > 0 and ((x + ys[j - 1] >= pivot) if strict else (x + ys[j - 1] > pivot)):
        j -= 1
    while j < len(ys) and ((x + ys[j] < pivot) if strict else (x + ys[j] <= pivot)):
        j += 1
    return j


def pairwise_differences_at(a, b, ranks):
    """The order statistics of the n*m differences a_i - b_j at the given 1-based ranks, in that order."""
    xs, ys = sorted(a), sorted(-value for value in b)
    if len(xs) * len(ys) <= SORT_MAX_PAIRS:
        every = sorted(x + y for x in xs for y in ys)
        return [every[rank - 1] for rank in ranks]
    return [_kth_pairwise_sum(xs, ys, rank) for rank in ranks]


def _interval_rank(n, m, ties, confidence):
    """The rank k of the lower bound of the shift's interval (the upper one is n*m + 1 - k); 0 when the samples
    are too few for this confidence (the interval is unbounded).

    P(U <= k - 1) <= (1 - confidence) / 2 under the null hypothesis: exact distribution without ties and with
    few samples, else the normal approximation with the continuity correction."""
    tail = (1 - confidence) / 2.0
    if not ties and n + m <= EXACT_MAX_SAMPLES:
        cumulative = _u_cumulative(n, m)
        return bisect.bisect_right(cumulative, tail + 1e-12)
    quantile = statistics.NormalDist().inv_cdf(1 - tail)
    return max(0, int(math.floor(n * m / 2.0 - 0.5 - quantile * _u_sigma(n, m, ties))) + 1)


def hodges_lehmann(a, b, confidence=0.98):
    """The Hodges-Lehmann shift of a against b (the median of every a_i - b_j) and its distribution-free
    confidence interval (Moses): the differences at ranks k and n*m + 1 - k, k from the U distribution.

    Returns {"shift", "low", "high", "confidence", "method": "exact" | "normal"}; low and high are None when
    the samples are too few for this confidence; everything None but confidence when a side is empty."""
    a, b = _clean(a), _clean(b)
    n, m = len(a), len(b)
    if not n or not m:
        return {"shift": None, "low": None, "high": None, "confidence": confidence, "method": None}
    _ranks, ties = _midranks(a + b)
    pairs = n * m
    k = _interval_rank(n, m, ties, confidence)
    middle = [(pairs + 1) // 2, pairs // 2 + 1]
    wanted = middle + ([k, pairs + 1 - k] if k >= 1 else [])
    found = pairwise_differences_at(a, b, wanted)
    shift = (found[0] + found[1]) / 2.0
    low, high = (found[2], found[3]) if k >= 1 else (None, None)
    method = "exact" if not ties and n + m <= EXACT_MAX_SAMPLES else "normal"
    return {"shift": _round(shift), "low": _round(low), "high": _round(high), "confidence": confidence,
            "method": method}


def _relative(value, reference):
    return _round(value / reference) if value is not None and reference else None


def _verdict(better, low, high, tolerance):
    """better, worse or no difference: the whole interval beyond the tolerance, in the metric's direction."""
    if low is None or high is None:
        return "no difference"
    if high < -tolerance:
        return "worse" if better == "higher" else "better"
    if low > tolerance:
        return "better" if better == "higher" else "worse"
    return "no difference"


def host_margin(hosts, spread, confidence=0.98):
    """The half-width (a fraction of the control's median) that hosts' own offsets add to a shift's interval:
    the shift of h_arm hosts against h_control others moves by spread * sqrt(1/h_arm + 1/h_control) whatever
    the window, and pooled samples cannot see it. 0.0 without hosts or spread."""
    if not hosts or not spread or min(hosts) < 1:
        return 0.0
    quantile = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2.0)
    return _round(quantile * spread * math.sqrt(1.0 / hosts[0] + 1.0 / hosts[1]))


def compare(arm_samples, control_samples, better, confidence=0.98, tolerance=0.02, min_samples=10, hosts=None,
            spread=0.0):
    """One metric of an arm against the control (or against another arm): the shift, its interval, the verdict.

    better: "higher" or "lower". tolerance: a fraction of the control's median (the objective's 2 % by
    default); the verdict is better or worse only when the whole interval lies beyond it in that direction.
    Fewer than min_samples on a side: too few samples. hosts: (arm hosts, control hosts), and spread: the
    hosts' own offsets as a fraction (host_spread); their host_margin widens the interval, in quadrature on
    each side of the shift. The relative figures are fractions of the control's median (-0.1 is 10 % lower);
    when that median is not above 0 they are None, nothing is widened and the interval must clear 0 itself.

    Returns {"better", "confidence", "tolerance", "min_samples", "n_arm", "n_control", "median_arm",
    "median_control", "shift", "low", "high", "shift_relative", "low_relative", "high_relative",
    "host_margin", "p_value", "verdict"}; p_value is the rank test's, without the host margin (for the
    record: the interval decides)."""
    if better not in ("higher", "lower"):
        raise ValueError("better must be 'higher' or 'lower', not %r" % (better,))
    arm, control = _clean(arm_samples), _clean(control_samples)
    result = {"better": better, "confidence": confidence, "tolerance": tolerance, "min_samples": min_samples,
              "n_arm": len(arm), "n_control": len(control),
              "median_arm": _round(statistics.median(arm)) if arm else None,
              "median_control": _round(statistics.median(control)) if control else None,
              "shift": None, "low": None, "high": None, "shift_relative": None, "low_relative": None,
              "high_relative": None, "host_margin": 0.0, "p_value": None, "verdict": "too few samples"}
    if len(arm) < max(1, min_samples) or len(control) < max(1, min_samples):
        return result
    found = hodges_lehmann(arm, control, confidence)
    result.update(shift=found["shift"], low=found["low"], high=found["high"],
                  p_value=mann_whitney_u(arm, control)["p_value"])
    reference = statistics.median(control)
    if reference <= 0:
        result["verdict"] = _verdict(better, found["low"], found["high"], 0.0)
        return result
    margin = host_margin(hosts, spread, confidence)
    if margin and found["low"] is not None:
        shift = found["shift"]
        result["low"] = _round(shift - math.hypot(shift - found["low"], margin * reference))
        result["high"] = _round(shift + math.hypot(found["high"] - shift, margin * reference))
    result.update(host_margin=margin, shift_relative=_relative(result["shift"], reference),
                  low_relative=_relative(result["low"], reference),
                  high_relative=_relative(result["high"], reference))
    result["verdict"] = _verdict(better, result["low_relative"], result["high_relative"], tolerance)
    return result


def host_blocks(samples, metric, hosts, block_intervals=1):
    """The figures of metric on hosts, each host's consecutive intervals averaged in blocks of block_intervals.

    samples: interval samples ({"host", "at", "running", metric: value, ...}); a sample without the metric (or
    None) is skipped, and a host's last, incomplete block is dropped. Returns {"values": [block means],
    "running": [the blocks' mean running requests, None where unknown], "by_host": {host: [its block means]}}.

    Consecutive intervals of one host are correlated (a load burst lasts longer than 5 s); the rank test assumes
    independent samples, and block means are much less correlated than the intervals they average."""
    wanted = set(hosts)
    series = {}
    for sample in samples or []:
        host = sample.get("host")
        if host in wanted and _clean([sample.get(metric)]):
            series.setdefault(host, []).append(sample)
    size = max(1, int(block_intervals))
    values, running, by_host = [], [], {}
    for host in sorted(series):
        ordered = sorted(series[host], key=lambda s: s.get("at") or 0)
        by_host[host] = []
        for start in range(0, len(ordered) // size * size, size):
            block = ordered[start:start + size]
            by_host[host].append(sum(float(s[metric]) for s in block) / size)
            loads = _clean([s.get("running") for s in block])
            running.append(sum(loads) / len(loads) if len(loads) == size else None)
        values.extend(by_host[host])
    return {"values": values, "running": running, "by_host": dict((h, v) for h, v in by_host.items() if v)}


def host_spread(sides):
    """How much the hosts' own levels differ, as a fraction: the between-host standard deviation of a one-way
    random-effects analysis of the block values, each side's values relative to its mean, pooled over the
    sides whose hosts serve one setting (an arm, the control). None when no side has two hosts with two
    blocks each.

    sides: [{host: [block values]}, ...]."""
    within = between = within_df = between_df = 0.0
    sizes = []
    for side in sides:
        hosts = [values for values in side.values() if len(values) >= 2]
        level = sum(sum(v) for v in hosts) / sum(len(v) for v in hosts) if len(hosts) >= 2 else 0.0
        if not level:
            continue
        for values in hosts:
            relative = [x / level for x in values]
            mean = sum(relative) / len(relative)
            within += sum((x - mean) ** 2 for x in relative)
            within_df += len(relative) - 1
            between += len(relative) * (mean - 1.0) ** 2
            sizes.append(len(relative))
        between_df += len(hosts) - 1
    if not between_df or not within_df:
        return None
    per_host = sum(sizes) / float(len(sizes))
    variance = (between / between_df - within / within_df) / per_host
    return _round(math.sqrt(max(0.0, variance)))


def reported(samples, metrics, groups, objective):
    """The metrics of `metrics` some host of every group reports in the samples: a metric no server of a side reports
    (a release without that series) is left out rather than waited for; the objective is always kept."""
    kept = []
    for metric in metrics:
        sides = [any(s.get(metric) is not None for s in samples or [] if s.get("host") in hosts) for hosts in groups]
        if metric == objective or all(sides):
            kept.append(metric)
    return kept


def configure(overrides=None):
    """DEFAULTS with the operator's settings merged in (tolerance and guardrails metric by metric), or a problem.

    Returns (settings, problem): problem is None, or a sentence naming the wrong setting."""
    merged = dict(DEFAULTS, compared=list(DEFAULTS["compared"]), tolerance=dict(TOLERANCES),
                  guardrails=dict((k, dict(v)) for k, v in GUARDRAILS.items()))
    for key, value in (overrides or {}).items():
        if key not in merged:
            return None, "unknown judge setting %r (known: %s)" % (key, ", ".join(sorted(merged)))
        problem = _setting_problem(key, value)
        if problem:
            return None, problem
        if key == "tolerance":
            merged[key].update(value)
        elif key == "guardrails":
            for metric, limits in value.items():
                merged[key].setdefault(metric, {"intervals": 1}).update(limits)
        else:
            merged[key] = list(value) if key == "compared" else value
    return merged, None


def _number(value, low=None):
    return (value is not None and not isinstance(value, bool) and isinstance(value, (int, float))
            and (low is None or value >= low))


def _setting_problem(key, value):
    """Why one setting is wrong ('' when it is right)."""
    if key in ("objective",) and value not in METRICS:
        return "objective must be one of %s, not %r" % (", ".join(METRICS), value)
    if key == "compared" and (not isinstance(value, list) or any(m not in METRICS for m in value)):
        return "compared must be a list of metrics among %s, not %r" % (", ".join(METRICS), value)
    if key == "confidence" and not (_number(value) and 0.5 <= value < 1):
        return "confidence must be a number from 0.5 to under 1, not %r" % (value,)
    if key == "min_samples" and not (isinstance(value, int) and not isinstance(value, bool) and value >= 2):
        return "min_samples must be a whole number of at least 2, not %r" % (value,)
    if key == "block_s" and not _number(value, 0):
        return "block_s must be a number of at least 0, not %r" % (value,)
    if key == "host_spread" and value is not None and not _number(value, 0):
        return "host_spread must be null (no host margin) or a number of at least 0, not %r" % (value,)
    if key == "load_band" and value is not None and not _number(value, 1):
        return "load_band must be null or a number of at least 1, not %r" % (value,)
    if key == "require" and value not in ("better", "not worse"):
        return "require must be 'better' or 'not worse', not %r" % (value,)
    if key == "tolerance" and (not isinstance(value, dict)
                               or any(m not in METRICS or not _number(t, 0) for m, t in value.items())):
        return "tolerance must map metrics (%s) to fractions of at least 0, not %r" % (", ".join(METRICS), value)
    if key == "guardrails":
        return _guardrails_problem(value)
    return ""


def _guardrails_problem(value):
    if not isinstance(value, dict):
        return "guardrails must map metrics to {max, min, intervals}, not %r" % (value,)
    for metric, limits in value.items():
        if metric not in METRICS or not isinstance(limits, dict):
            return "guardrails.%s: unknown metric, or not a mapping such as {max: 0.01}" % (metric,)
        for name, limit in limits.items():
            if name not in ("max", "min", "intervals"):
                return "guardrails.%s: unknown key %r (known: intervals, max, min)" % (metric, name)
            if name == "intervals" and not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
                return "guardrails.%s.intervals must be a whole number of at least 1" % (metric,)
            if name != "intervals" and limit is not None and not _number(limit):
                return "guardrails.%s.%s must be a number or null" % (metric, name)
    return ""


def _fmt(metric, value):
    """A figure of metric as people read it: ratios in %, seconds in ms or s."""
    if value is None:
        return "none"
    if metric.endswith("_ratio"):
        return "%.2f %%" % (100 * value)
    if metric.startswith(("itl", "ttft")):
        return "%.1f ms" % (1000 * value) if value < 1 else "%.2f s" % value
    return "%.2f" % value


def guardrails(samples, arms, limits=None):
    """The guardrails broken by each arm: absolute limits judged sample by sample, host by host.

    arms: [{"name", "hosts"}, ...]; limits: {metric: {"max", "min", "intervals"}} (GUARDRAILS by default;
    intervals: how many consecutive intervals of one host must break the limit). A broken guardrail fails the
    arm at once: the caller rolls it back, the other arms go on.

    Returns {"failed": [arm names, in the arms' order], "breaches": {arm: [{"arm", "host", "metric", "label",
    "value", "limit", "bound": "max" | "min", "at", "intervals"}]}, "reasons": {arm: sentence}}: the first
    breach of each host and metric."""
    limits = GUARDRAILS if limits is None else limits
    result = {"failed": [], "breaches": {}, "reasons": {}}
    for arm in arms:
        found = []
        for host in arm.get("hosts") or []:
            ordered = sorted((s for s in samples or [] if s.get("host") == host), key=lambda s: s.get("at") or 0)
            for metric, limit in limits.items():
                breach = _first_breach(ordered, metric, limit)
                if breach:
                    breach.update(arm=arm["name"], host=host)
                    found.append(breach)
        if found:
            result["failed"].append(arm["name"])
            result["breaches"][arm["name"]] = found
            result["reasons"][arm["name"]] = "broke a guardrail: " + "; ".join(
                "%s %s on %s%s (%s %s)" % (
                    b["label"], _fmt(b["metric"], b["value"]), b["host"],
                    " at %s" % b["at"] if b["at"] is not None else "",
                    "at most" if b["bound"] == "max" else "at least",
                    _fmt(b["metric"], b["limit"]))
                for b in found)
    return result


def _first_breach(ordered, metric, limit):
    """The sample where metric first broke limit for limit["intervals"] consecutive intervals, or None."""
    needed = max(1, int(limit.get("intervals") or 1))
    run = 0
    for sample in ordered:
        value = _clean([sample.get(metric)])
        if not value:
            continue  # no figure in this interval: neither a breach nor the end of a run
        for bound in ("max", "min"):
            edge = limit.get(bound)
            if edge is not None and (value[0] > edge if bound == "max" else value[0] < edge):
                run += 1
                if run >= needed:
                    return {"metric": metric, "label": METRICS[metric][0], "value": value[0], "limit": edge,
                            "bound": bound, "at": sample.get("at"), "intervals": run}
                break
        else:
            run = 0
    return None


def _percent(value):
    return "%+.1f %%" % (100 * value)


def describe(metric, comparison):
    """One metric's comparison in words: "decode tokens/s per running request +12.3 % [+8.1 %, +16.0 %] better"
    (the shift and its interval relative to the control's median, and the loads when they differ much), or
    why there is no verdict."""
    label = METRICS[metric][0] if metric in METRICS else metric
    if comparison.get("verdict") == "too few samples":
        return "%s: too few samples (%d and %d, at least %d each)" % (
            label, comparison.get("n_arm") or 0, comparison.get("n_control") or 0, comparison.get("min_samples") or 0)
    if comparison.get("shift_relative") is None:
        shown = "%+.4g" % comparison["shift"] if comparison.get("shift") is not None else "none"
        interval = ("[%+.4g, %+.4g]" % (comparison["low"], comparison["high"])
                    if comparison.get("low") is not None else "[no interval]")
        return "%s %s %s (absolute) %s" % (label, shown, interval, comparison["verdict"])
    interval = ("[%s, %s]" % (_percent(comparison["low_relative"]), _percent(comparison["high_relative"]))
                if comparison.get("low_relative") is not None else "[no interval]")
    return "%s %s %s %s%s" % (label, _percent(comparison["shift_relative"]), interval, comparison["verdict"],
                              _load_note(comparison))


def _load_note(comparison):
    """' (at 24 vs 12 running requests)' when the two sides ran at loads more than LOAD_NOTE_RATIO apart: a
    request decodes slower in a fuller batch, so the shift may be the load's (load_band leaves such blocks
    out)."""
    loads = (comparison.get("running_arm"), comparison.get("running_control"))
    if None in loads or min(loads) <= 0 or max(loads) / min(loads) <= LOAD_NOTE_RATIO:
        return ""
    return " (at %.0f vs %.0f running requests)" % loads


def summary_line(arm, comparisons, status=None):
    """One line for an arm: its status, then each metric's shift and interval in words (describe)."""
    shown = "; ".join(describe(metric, comparison) for metric, comparison in (comparisons or {}).items())
    return "arm %s%s: %s" % (arm, " (%s)" % status if status else "", shown or "no figures")


def _meets(comparison, require):
    """Does the objective's comparison meet the requirement: better, or (a canary's) not worse by more than the
    tolerance, the whole interval on the right side of it (absence of evidence is not enough)."""
    if require == "better":
        return comparison["verdict"] == "better"
    low, high, tolerance = comparison.get("low_relative"), comparison.get("high_relative"), comparison["tolerance"]
    if low is None or high is None:
        return False
    return low > -tolerance if comparison["better"] == "higher" else high < tolerance


def arm_status(comparisons, objective="decode_per_request", require="better", guardrail_reason=None):
    """An arm's status against the control and the reasons, from its comparisons ({metric: compare()}).

    failed guardrail; loses (a judged metric worse, the objective included); too few samples (on the objective,
    or on a metric the arm must clear before it can win); wins (the objective meets require, nothing worse);
    no difference. Diagnostics never decide. Returns (status, [reasons])."""
    if guardrail_reason:
        return "failed guardrail", [guardrail_reason]
    judged = dict((m, c) for m, c in (comparisons or {}).items() if METRICS.get(m, ("", "", ""))[2] != "diagnostic")
    worse = [describe(m, c) for m, c in judged.items() if c["verdict"] == "worse"]
    if worse:
        return "loses", worse
    if objective not in judged:
        return "too few samples", ["no figures of %s" % METRICS[objective][0]]
    if judged[objective]["verdict"] == "too few samples":
        return "too few samples", [describe(objective, judged[objective])]
    if not _meets(judged[objective], require):
        wanted = "better than" if require == "better" else "surely no worse than"
        return "no difference", ["not %s the control by the tolerance (%s): %s" % (
            wanted, _percent(judged[objective]["tolerance"]).lstrip("+"), describe(objective, judged[objective]))]
    pending = [describe(m, c) for m, c in judged.items() if c["verdict"] == "too few samples"]
    if pending:
        return "too few samples", pending
    return "wins", [describe(objective, judged[objective]) + " against the control, and no metric worse"]


def _pick(winners, between_arms, objective):
    """The winner among arms that all beat the control (in the operator's order) and the reasons: an arm that
    another is significantly better than on the objective is out; of the rest, the first listed."""
    def against(arm, other):
        return ((between_arms or {}).get(arm) or {}).get(other, {}).get(objective)

    beaten = dict((arm, [o for o in winners if o != arm and (against(o, arm) or {}).get("verdict") == "better"])
                  for arm in winners)
    standing = [arm for arm in winners if not beaten[arm]] or list(winners)
    winner = standing[0]
    if len(winners) == 1:
        return winner, ["arm %s is the only arm that beats the control" % winner]
    label = METRICS[objective][0]
    reasons = []
    for other in winners:
        if other == winner:
            continue
        found = against(winner, other)
        if found and found["verdict"] == "better":
            reasons.append("arm %s is better than arm %s: %s" % (winner, other, describe(objective, found)))
        elif found:
            reasons.append("arms %s and %s both beat the control and neither is better than the other on %s "
                           "(%s against %s: %s): %s is listed first" % (
                               winner, other, label, winner, other, describe(objective, found), winner))
        else:
            reasons.append("arms %s and %s both beat the control and were not compared with each other: %s is "
                           "listed first" % (winner, other, winner))
    return winner, reasons


def decide(against_control, between_arms, guardrail_result, arm_order, max_window_reached=False,
           objective="decode_per_request", require="better"):
    """The decision over the arms of an experiment (a canary is one arm).

    against_control: {arm: {metric: compare() of the arm against the control}}; between_arms: {arm: {other:
    {metric: compare() of arm against other}}} (only the objective decides); guardrail_result: guardrails()'s
    (or None); arm_order: the operator's order, the tie-break; max_window_reached: the window cannot grow.

    Outcome: "winner" (the winner beats the control on the objective, broke no guardrail, no metric worse;
    between two such arms the one significantly better on the objective, else the first listed); "keep control"
    (no arm wins: every arm goes back); "extend" (an arm has too few samples: observe longer); "hold" (still too
    few at the longest window: nothing is decided, never a pass). Returns {"outcome", "winner", "arms": {arm:
    {"status", "reasons"}}, "roll_back": [arms whose hosts go back to the control's setting now], "reasons",
    "message"}."""
    failed = (guardrail_result or {}).get("reasons") or {}
    arms = {}
    for arm in arm_order:
        status, reasons = arm_status((against_control or {}).get(arm), objective, require, failed.get(arm))
        arms[arm] = {"status": status, "reasons": reasons}
    out = [a for a in arm_order if arms[a]["status"] in ("failed guardrail", "loses")]
    pending = [a for a in arm_order if arms[a]["status"] == "too few samples"]
    winners = [a for a in arm_order if arms[a]["status"] == "wins"]
    result = {"outcome": None, "winner": None, "arms": arms, "roll_back": list(out), "reasons": []}
    if pending and not max_window_reached:
        result["outcome"] = "extend"
        result["reasons"].append("too few samples for arm %s: observe longer" % ", ".join(pending))
    elif winners:
        result["winner"], result["reasons"] = _pick(winners, between_arms, objective)
        result["outcome"] = "winner"
        result["roll_back"] = [a for a in arm_order if a != result["winner"]]
        if pending:
            result["reasons"].append("arm %s still had too few samples at the longest window" % ", ".join(pending))
    elif pending:
        result["outcome"] = "hold"
        result["reasons"].append("too few samples for arm %s at the longest window: held, nothing is decided"
                                 % ", ".join(pending))
    else:
        result["outcome"] = "keep control"
        result["roll_back"] = list(arm_order)
        result["reasons"].append("no arm beats the control: every arm goes back" if arm_order
                                 else "no arm to judge: the control stays")
    result["message"] = _decision_message(result, arm_order)
    return result


def _decision_message(result, arm_order):
    head = {"winner": "arm %s wins" % result["winner"], "keep control": "the control stays",
            "extend": "observe longer", "hold": "held"}[result["outcome"]]
    arms = "; ".join("%s: %s (%s)" % (a, result["arms"][a]["status"], "; ".join(result["arms"][a]["reasons"]))
                     for a in arm_order)
    return "%s: %s. %s" % (head, "; ".join(result["reasons"]), arms)


def interval_of(samples):
    """The interval of the samples in seconds: the median step between a host's consecutive samples (None)."""
    by_host = {}
    for sample in samples or []:
        if _clean([sample.get("at")]):
            by_host.setdefault(sample.get("host"), []).append(float(sample["at"]))
    steps = []
    for times in by_host.values():
        times.sort()
        steps.extend(b - a for a, b in zip(times, times[1:]) if b > a)
    return _round(statistics.median(steps)) if steps else None


def block_intervals(block_s, interval_s):
    """How many consecutive intervals make a block of at least block_s seconds (1 when either is unknown)."""
    if not block_s or not interval_s:
        return 1
    return max(1, int(math.ceil(block_s / float(interval_s) - 1e-9)))


def _within_load(blocks, centre, band):
    """The block values whose running requests lie within [centre / band, centre * band] (unknown load kept),
    and how many were left out."""
    if not band or not centre:
        return list(blocks["values"]), 0
    kept = [v for v, r in zip(blocks["values"], blocks["running"]) if r is None or centre / band <= r <= centre * band]
    return kept, len(blocks["values"]) - len(kept)


def _compare_blocks(metric, arm, reference, settings, spread):
    """compare() of two groups' blocks of one metric, with their median loads ("running_arm",
    "running_control") and the blocks left out for their load ("left_out_for_load")."""
    loads = _clean(reference["running"])
    centre = statistics.median(loads) if loads else None
    arm_values, arm_out = _within_load(arm, centre, settings["load_band"])
    reference_values, reference_out = _within_load(reference, centre, settings["load_band"])
    result = compare(arm_values, reference_values, METRICS[metric][1], settings["confidence"],
                     settings["tolerance"].get(metric, 0.0), settings["min_samples"],
                     hosts=(len(arm["by_host"]), len(reference["by_host"])), spread=spread)
    arm_loads = _clean(arm["running"])
    result.update(running_arm=_round(statistics.median(arm_loads)) if arm_loads else None,
                  running_control=_round(centre) if centre is not None else None,
                  left_out_for_load=arm_out + reference_out, hosts_arm=len(arm["by_host"]),
                  hosts_control=len(reference["by_host"]))
    return result


def evaluate(samples, arms, control_hosts, settings=None, interval_s=None, max_window_reached=False,
             control_speculates=False):
    """The whole judgement of an experiment over its window, from the interval samples.

    arms: [{"name", "hosts", "speculates": True}, ...] in the operator's order (a canary: one arm);
    control_hosts: the hosts serving as now; settings: overrides of DEFAULTS (configure; a wrong one raises
    ValueError); interval_s: the samples' interval (else taken from their times). Each compared metric of each
    arm against the control, the objective between arms, the acceptance length between arms that both
    speculate (and against the control only when it speculates too), the guardrails, then decide().

    Returns decide()'s dict plus "against_control", "between_arms" (compare() dicts with "running_arm",
    "running_control", "left_out_for_load", "hosts_arm", "hosts_control"), "guardrails" (guardrails()'s),
    "lines" (summary_line of each arm), "pair_lines" (each pair of arms in order, the first against the
    second, in words), "interval_s", "block_intervals", "host_spread" ({metric: the spread used}) and
    "settings". Raises ValueError on wrong settings, an arm name twice or a host in two groups."""
    config, problem = configure(settings)
    problem = problem or _groups_problem(arms, control_hosts)
    if problem:
        raise ValueError(problem)
    interval = interval_s or interval_of(samples)
    block = block_intervals(config["block_s"], interval)
    objective = config["objective"]
    compared = [objective] + [m for m in config["compared"] if m != objective]
    speculating = [a["name"] for a in arms if a.get("speculates", True)]
    metrics = compared + (["accept_length"] if "accept_length" not in compared and speculating else [])
    control_blocks, arm_blocks, spread = {}, {}, {}
    for metric in metrics:
        control_blocks[metric] = host_blocks(samples, metric, control_hosts, block)
        arm_blocks[metric] = dict((a["name"], host_blocks(samples, metric, a["hosts"], block)) for a in arms)
        sides = [control_blocks[metric]["by_host"]] + [b["by_host"] for b in arm_blocks[metric].values()]
        spread[metric] = (None if config["host_spread"] is None
                          else max(config["host_spread"], host_spread(sides) or 0.0))
    against, between = {}, {}
    for arm in arms:
        name = arm["name"]
        against[name] = {}
        for metric in metrics:
            if METRICS[metric][2] == "diagnostic" and not (control_speculates and name in speculating):
                continue  # the acceptance of a drafter against a control that does not speculate means nothing
            against[name][metric] = _compare_blocks(metric, arm_blocks[metric][name], control_blocks[metric],
                                                    config, spread[metric])
        between[name] = {}
        for other in arms:
            if other["name"] == name:
                continue
            pair = [objective] + (["accept_length"] if name in speculating and other["name"] in speculating
                                  and "accept_length" in metrics else [])
            between[name][other["name"]] = dict(
                (metric, _compare_blocks(metric, arm_blocks[metric][name], arm_blocks[metric][other["name"]],
                                         config, spread[metric])) for metric in pair)
    checked = guardrails(samples, arms, config["guardrails"])
    order = [a["name"] for a in arms]
    result = decide(against, between, checked, order, max_window_reached, objective, config["require"])
    result.update(against_control=against, between_arms=between, guardrails=checked,
                  lines=[summary_line(a, against[a], result["arms"][a]["status"]) for a in order],
                  pair_lines=["arm %s against arm %s: %s" % (a, b, "; ".join(
                      describe(m, c) for m, c in between[a][b].items())) for a, b in itertools.combinations(order, 2)],
                  interval_s=interval, block_intervals=block, host_spread=spread, settings=config)
    return result


def _groups_problem(arms, control_hosts):
    """Why the arms and the control cannot be judged ('' when they can): a name twice, a host in two groups."""
    names = [arm.get("name") for arm in arms]
    if len(set(names)) != len(names) or None in names:
        return "every arm needs a name of its own, not %r" % (names,)
    seen = dict((host, "the control") for host in control_hosts)
    for arm in arms:
        for host in arm.get("hosts") or []:
            if host in seen:
                return "host %s is in arm %s and in %s: a host serves one setting" % (host, arm["name"], seen[host])
            seen[host] = "arm %s" % arm["name"]
    return ""
