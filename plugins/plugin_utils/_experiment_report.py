# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The experiment's report (experiment-report/): its JSON, and an HTML page that stands alone (no script, no font or
style from elsewhere): the verdict and why, per-interval series of each arm and the control as inline SVG plots, and
the table of shifts with their confidence intervals.

Controller-only and pure: the page is written from the experiment's state (_experiment.judge's).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _judge

PLOTTED = ("decode_per_request", "itl_p99", "accept_length", "running")
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
CONTROL_COLOUR = "#555555"


def series(samples, groups, metric):
    """{group: [(seconds from the start, the group's median of metric in that interval)]}: one point per interval."""
    start = min([s["at"] for s in samples if s.get("at") is not None] or [0])
    out = {}
    for name, hosts in groups:
        by_time = {}
        for sample in samples:
            if sample.get("host") in hosts and sample.get(metric) is not None and sample.get("at") is not None:
                by_time.setdefault(round(sample["at"] - start, 1), []).append(float(sample[metric]))
        out[name] = [(t, _median(v)) for t, v in sorted(by_time.items())]
    return out


def _median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0


def svg_plot(points_by_group, title, width=640, height=220):
    """A line plot of each group's points, inline SVG (no script), with its axes' ranges and a legend."""
    points = [p for pts in points_by_group.values() for p in pts]
    pad_l, pad_b, pad_t, pad_r = 56, 28, 24, 150
    if not points:
        return '<svg width="%d" height="40" role="img"><text x="4" y="24">%s: no samples</text></svg>' % (
            width, html.escape(title))
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) or 1.0
    y0, y1 = min([0.0] + ys), max(ys) * 1.05 or 1.0
    sx = (width - pad_l - pad_r) / ((x1 - x0) or 1.0)
    sy = (height - pad_t - pad_b) / ((y1 - y0) or 1.0)
    parts = ['<svg width="%d" height="%d" role="img" aria-label="%s">' % (width, height, html.escape(title)),
             '<text x="%d" y="16" class="t">%s</text>' % (pad_l, html.escape(title)),
             '<line x1="%d" y1="%d" x2="%d" y2="%d" class="ax"/>' % (pad_l, height - pad_b, width - pad_r,
                                                                     height - pad_b),
             '<line x1="%d" y1="%d" x2="%d" y2="%d" class="ax"/>' % (pad_l, pad_t, pad_l, height - pad_b),
             '<text x="4" y="%d" class="l">%.3g</text>' % (pad_t + 8, y1),
             '<text x="4" y="%d" class="l">%.3g</text>' % (height - pad_b, y0),
             '<text x="%d" y="%d" class="l">%.0f s</text>' % (width - pad_r - 30, height - 8, x1)]
    for number, (name, pts) in enumerate(points_by_group.items()):
        colour = CONTROL_COLOUR if name == "control" else COLOURS[number % len(COLOURS)]
        line = " ".join("%.1f,%.1f" % (pad_l + (x - x0) * sx, height - pad_b - (y - y0) * sy) for x, y in pts)
        parts.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>' % (line, colour))
        # The legend in the line's colour: a style attribute, as the class's fill would win over a fill attribute.
        parts.append('<text x="%d" y="%d" class="l" style="fill:%s;font-weight:600">%s</text>' % (
            width - pad_r + 8, pad_t + 14 + 16 * number, colour, html.escape(name)))
    parts.append("</svg>")
    return "".join(parts)


def _groups(assignment):
    return list((assignment.get("arms") or {}).items()) + \
        [("control", assignment.get("control") or [])]


def _shift_rows(decision):
    rows = []
    for arm, comparisons in ((decision or {}).get("against_control") or {}).items():
        for metric, c in comparisons.items():
            rows.append(("%s vs control" % arm, metric, c))
    for arm, others in ((decision or {}).get("between_arms") or {}).items():
        for other, comparisons in others.items():
            for metric, c in comparisons.items():
                rows.append(("%s vs %s" % (arm, other), metric, c))
    return rows


def _pct(value):
    return "" if value is None else "%+.1f %%" % (100 * value)


def report_json(state, assignment, config):
    return json.dumps({"outcome": state.get("outcome"), "winner": state.get("winner"),
                       "failed_arms": state.get("failed") or [], "seconds": state.get("seconds"),
                       "assignment": assignment, "settings": config, "decision": state.get("decision"),
                       "lines": state.get("lines") or [], "samples": state.get("samples") or []},
                      indent=2, sort_keys=True, default=str) + "\n"


def report_html(state, assignment, message):
    """The page: the verdict and why, the plots, the table of shifts with their intervals."""
    decision = state.get("decision") or {}
    groups = _groups(assignment)
    rows = []
    for who, metric, c in _shift_rows(decision):
        label = _judge.METRICS.get(metric, (metric,))[0]
        rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>[%s, %s]</td><td class=\"%s\">%s</td>"
                    "<td>%s / %s</td></tr>" % (
                        html.escape(who), html.escape(label), _fmt(c.get("median_arm")), _pct(c.get("shift_relative")),
                        _pct(c.get("low_relative")), _pct(c.get("high_relative")),
                        html.escape(str(c.get("verdict")).replace(" ", "-")), html.escape(str(c.get("verdict"))),
                        c.get("n_arm"), c.get("n_control")))
    plots = [svg_plot(series(state.get("samples") or [], groups, metric),
                      "%s, per interval (median of the group's hosts)" % _judge.METRICS.get(metric, (metric,))[0]
                      if metric != "running" else "running requests per host, per interval")
             for metric in PLOTTED]
    arms = "".join("<li><strong>%s</strong> (%s): %s</li>" % (
        html.escape(arm), html.escape(info.get("status") or ""), html.escape("; ".join(info.get("reasons") or [])))
        for arm, info in (decision.get("arms") or {}).items())
    return PAGE % {
        "outcome": html.escape(str(state.get("outcome"))), "winner": html.escape(str(state.get("winner") or "none")),
        "message": html.escape(message), "arms": arms,
        "groups": html.escape("; ".join("%s: %s" % (n, ", ".join(h) or "none") for n, h in groups)),
        "plots": "\n".join(plots), "rows": "\n".join(rows),
        "reasons": html.escape("; ".join(decision.get("reasons") or []))}


def _fmt(value):
    return "" if value is None else "%.4g" % value


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Experiment: %(outcome)s</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #1d2939; }
h1 { font-size: 1.4em; } .verdict { background: #f2f4f7; padding: .6em 1em; border-left: 4px solid #1570ef; }
table { border-collapse: collapse; margin-top: 1em; } td, th { border: 1px solid #d0d5dd; padding: .25em .5em; }
td.better { background: #d1fadf; } td.worse { background: #fee4e2; } td.too-few-samples { background: #fef0c7; }
svg { display: block; margin: .8em 0; } svg .ax { stroke: #98a2b3; } svg .l { font-size: 11px; fill: #475467; }
svg .t { font-size: 12px; font-weight: 600; }
</style></head><body>
<h1>Experiment: %(outcome)s, winner %(winner)s</h1>
<p class="verdict">%(message)s</p>
<p>Why: %(reasons)s</p>
<ul>%(arms)s</ul>
<p>Hosts: %(groups)s</p>
%(plots)s
<h2>Shifts against the control and between arms (Hodges-Lehmann, with the confidence interval)</h2>
<table><thead><tr><th>comparison</th><th>metric</th><th>median</th><th>shift</th><th>interval</th><th>verdict</th>
<th>samples</th></tr></thead><tbody>
%(rows)s
</tbody></table>
</body></html>
"""
