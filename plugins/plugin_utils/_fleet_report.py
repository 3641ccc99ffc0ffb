# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet report says: the Markdown report whole, and what the HTML page shows (its template,
playbooks/templates/fleet-report.html.j2, only lays it out and escapes it; html_page renders it).

Controller-only and pure. The rows are sglang_fleet_rows' (_records.fleet_rows): one per service, with the
host's facts, its plan's judgement and its place in its gateways.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import jinja2

# A person's order: what needs one first.
STATUSES = ("blocked", "failed", "unreachable", "unknown", "ready")
STATUS_MARKS = {"ready": "✅ ready", "blocked": "⛔ blocked", "failed": "❌ failed", "unreachable": "❌ unreachable",
                "unknown": "❔ unknown"}
SWITCH_STATES = ("not switched", "current", "drifted", "broken by a package change")
CHANGE_MARKS = (("removed", "−"), ("added", "+"), ("overridden", "→"))
MARKDOWN_COLUMNS = ("host", "service", "status", "python", "sglang", "install", "imported from", "DFLASH", "DDTREE",
                    "block size flag", "draft window flag", "GPUs", "GPU processes (unit)", "the switch",
                    "switch state", "speculation now", "last switch", "gateway", "drafter", "why not")
# The day-two states of a switched service (plugin_utils/_speculation.py), and a row without one.
SPECULATION_STATES = ("engaged", "degraded", "off", "unknown", "not verified")


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _or(value, fallback):
    """value, or fallback when it is empty (None, '', 0, [])."""
    return value if value else fallback


def _text(value):
    """As Ansible's templating writes a value: None is empty."""
    return "" if value is None else str(value)


def _cell(value):
    """A Markdown table cell: a | inside would end it."""
    return _text(value).replace("|", "\\|")


def count_phrase(rows):
    """'3 of 4 hosts', or with several services on a host '3 of 5 services on 4 hosts': those that can take the
    deployment."""
    hosts = len(set(row.get("host") for row in rows))
    ready = len([row for row in rows if row.get("status") == "ready"])
    counted = "hosts" if hosts == len(rows) else "services on %d hosts" % hosts
    return "%d of %d %s" % (ready, len(rows), counted)


def fleet_report_line(rows, from_cache, report_dir):
    """What the fleet picture says at its end: how many can take the deployment, and where the report is."""
    return "%s can take the deployment%s; report in %s" % (
        count_phrase(rows), " (from the fact cache)" if from_cache else "", report_dir)


def gathered_range(rows):
    """(first, last) of the rows' gather times, or None when no row says when it was gathered."""
    times = sorted(row["gathered_at"] for row in rows if row.get("gathered_at"))
    return (times[0], times[-1]) if times else None


def from_cache(rows):
    return any(row.get("from_cache") for row in rows)


def by_status(rows):
    """[(status, its rows by host)] in STATUSES' order, empty groups included."""
    return [(status, sorted((r for r in rows if r.get("status") == status), key=lambda r: r.get("host") or ""))
            for status in STATUSES]


def service_line(row):
    """The service of a row: its unit, port, GPUs and where its environment comes from ('' for a host-only row)."""
    line = str(row.get("unit") or "")
    if row.get("port"):
        line += " :%s" % row["port"]
    if row.get("gpus") is not None:
        line += " GPUs " + ",".join(str(gpu) for gpu in row["gpus"]) if row["gpus"] else " no GPU"
    if row.get("environment_note"):
        line += " (%s)" % row["environment_note"]
    return line


def imported_from(package):
    """Where the interpreter imports sglang from: the editable checkout, else the installed package."""
    package = _dict(package)
    return (package.get("editable_source") or package.get("location") or "") if package else ""


def gpu_label(gpu):
    """'NVIDIA H200 (Hopper sm_90)'; the name alone when the architecture is unknown."""
    return "%s (%s %s)" % (gpu.get("name"), gpu.get("architecture"), gpu["sm"]) if gpu.get("sm") else str(
        gpu.get("name"))


def last_switch_line(record):
    """The last switch of a service, from its record on the host: outcome, algorithm, time, speed, canary, drain.
    None without a record."""
    if not record:
        return None
    if "error" in record:
        return "unreadable: %s" % record["error"]
    target = record.get("algorithm") if record.get("outcome") != "reverted" else "the operator's command"
    line = "%s to %s" % (_text(record.get("outcome")), _text(target))
    if record.get("fallback"):
        line += " instead of %s" % _text(record.get("asked_algorithm"))
    line += " %s" % str(record.get("time") or "")[:16]
    if record.get("speed_summary"):
        line += ": %s" % record["speed_summary"]
    canary = record.get("canary")
    if canary:
        failed = _list(canary.get("failed"))
        line += "; canary %s%s" % (canary.get("verdict"), " (%s)" % ", ".join(failed) if failed else "")
    traffic = _dict(record.get("traffic"))
    if traffic.get("out_of_rotation_s") is not None:
        line += "; out of rotation %ss, drained %s request(s) in %ss" % (
            traffic["out_of_rotation_s"], _or(traffic.get("drained_requests"), "-"), _or(traffic.get("drain_s"), "-"))
    return line


def gpu_map_line(row):
    """'0 svc-a (held by train.service); 1 -': the services given each GPU of the host, and what holds it."""
    parts = []
    for entry in _list(row.get("gpu_map")):
        parts.append("%s %s%s" % (entry.get("index"), "+".join(entry.get("services") or []) or "-",
                                  " (held by %s)" % ", ".join(entry["holders"]) if entry.get("holders") else ""))
    return "; ".join(parts)


def hosts_with_a_gpu_map(rows):
    """One row per host whose GPUs are given to SGLang services (its gpu_map); [] when no host has one."""
    seen, hosts = set(), []
    for row in rows:
        if row.get("gpu_map") and row.get("host") not in seen:
            seen.add(row.get("host"))
            hosts.append(row)
    if not any(entry.get("services") for row in hosts for entry in row["gpu_map"]):
        return []
    return hosts


def speculation_cell(row):
    """The "speculation now" cell: the state, the acceptance now and at the switch, and the time; "-" for a service
    that was not verified (never switched, or the report read no traffic)."""
    verdict = _dict(row.get("speculation"))
    if not verdict:
        return "-"
    now = verdict.get("accept_length")
    then = verdict.get("accept_length_at_switch")
    return "**%s**: acceptance %s now, %s at the switch (%s, %s)" % (
        verdict.get("state"), "%.2f" % now if now is not None else "-", "%.2f" % then if then else "-",
        verdict.get("reason"), verdict.get("time"))


def speculation_token(row):
    """The row's day-two state for the page's filter and colour ("not" when it was not verified)."""
    return _dict(row.get("speculation")).get("state") or "not"


def speculation_counts(rows):
    """[(state, token, how many)] of the rows: each day-two state, then the rows not verified."""
    tokens = [speculation_token(row) for row in rows]
    return [(state, state.split(" ", 1)[0], tokens.count(state.split(" ", 1)[0])) for state in SPECULATION_STATES]


def _markdown_row(row):
    facts = _dict(row.get("facts"))
    package = facts.get("package")
    flags = _dict(_dict(facts.get("capabilities")).get("flags"))
    gpus = _dict(facts.get("gpus"))
    algorithms = facts.get("algorithms") or []
    gpu_cells = ["%s: %s %s/%s MiB" % (g.get("index"), gpu_label(g), g.get("memory_used_mib"),
                                       g.get("memory_total_mib")) for g in _list(gpus.get("gpus"))]
    processes = ["%s on GPU %s (%s)" % (p.get("pid"), p.get("gpu_index"), p.get("unit") or "no unit")
                 for p in _list(gpus.get("processes"))]
    changes = ""
    if row.get("changes"):
        changes = "%s: " % row.get("mode") + "".join(
            "%s `%s`<br>" % (mark, change) for kind, mark in CHANGE_MARKS for change in row["changes"].get(kind) or [])
    switch = _dict(row.get("switch"))
    state = "-"
    if switch:
        state = _cell("**%s**: %s%s" % (switch.get("state"), switch.get("reason"),
                                        "; %s" % switch.get("todo") if switch.get("todo") != "nothing" else ""))
    if row.get("interrupted"):
        # A run that was cut on it (out of rotation since, a drop-in not running): what needs a person first.
        state = _cell("**%s**" % row["interrupted"]) + ("<br>" + state if switch else "")
    gateway = _dict(row.get("gateway"))
    drafter = _dict(row.get("drafter"))
    cells = [
        row.get("host"), service_line(row), STATUS_MARKS[row["status"]], facts.get("python", ""),
        _dict(package).get("version", ""), _dict(package).get("install", ""), imported_from(package),
        "yes" if "DFLASH" in algorithms else "no", "yes" if "DDTREE" in algorithms else "no",
        _or(flags.get("block_size"), "—"), _or(flags.get("draft_window_size"), "—"),
        "<br>".join(gpu_cells) or gpus.get("nvidia_smi", ""), "<br>".join(processes), changes, state,
        _cell(speculation_cell(row)), last_switch_line(facts.get("rollout_record")) or "",
        "%s (%s)" % (gateway.get("summary"), gateway.get("worker_url")) if gateway else "-",
        _cell(drafter.get("summary")) if drafter else "-", _cell("; ".join(row.get("reasons") or [])),
    ]
    return "| %s |" % " | ".join(_text(cell) for cell in cells)


def markdown(rows):
    """The fleet report in Markdown: the verdict, the counts, one table row per service (what needs a person first),
    and the GPU maps of hosts that share their GPUs between services."""
    algorithm = rows[0].get("algorithm") if rows and "algorithm" in rows[0] else "DFLASH"
    lines = ["# SGLang fleet report", "", "%s can take the %s deployment." % (count_phrase(rows), algorithm)]
    if from_cache(rows):
        span = gathered_range(rows)
        lines += ["", "**From Ansible's fact cache**: no host was contacted; each row is its host's last gather%s."
                  % (" (%s to %s)" % span if span else "")]
    counts = [(status, len(group)) for status, group in by_status(rows)]
    cut = len([row for row in rows if row.get("interrupted")])
    verified = ", ".join("%d %s" % (n, state) for state, _token, n in speculation_counts(rows)
                         if n and state != "not verified")
    lines += ["", ", ".join("%d %s" % (n, status) for status, n in counts if n or status in ("ready", "blocked"))
              + (", %d interrupted by a run that was cut" % cut if cut else "")
              + ("; speculation now: %s" % verified if verified else ""),
              "", "| %s |" % " | ".join(MARKDOWN_COLUMNS), "|%s" % ("---|" * len(MARKDOWN_COLUMNS))]
    lines += [_markdown_row(row) for _status, group in by_status(rows) for row in group]
    maps = hosts_with_a_gpu_map(rows)
    if maps:
        lines += ["", "## GPU maps (the SGLang services given each GPU, and the units whose processes hold it)", ""]
        for row in maps:
            lines.append("- %s: %s" % (row.get("host"), gpu_map_line(row)))
    return "\n".join(lines) + "\n"


def _tally(values):
    """[(value, how many)] sorted by value, case aside."""
    unique = sorted(set(values), key=values.index)
    return [(value, values.count(value)) for value in sorted(unique, key=lambda v: str(v).lower())]


def switch_token(row):
    """The first word of the row's switch state (not, current, drifted, broken; none without one): the page's
    filter and colour."""
    return str(_dict(row.get("switch")).get("state") or "none").split(" ", 1)[0]


def _html_last_switch(record):
    """The pieces of the last switch the page shows (it escapes and lays them out); None without a record."""
    if not record:
        return None
    if "error" in record:
        return {"error": _text(record["error"])}
    target = record.get("algorithm") if record.get("outcome") != "reverted" else "the operator's command"
    canary = _dict(record.get("canary"))
    traffic = _dict(record.get("traffic"))
    fallback = " instead of %s" % _text(record.get("asked_algorithm")) if record.get("fallback") else ""
    return {
        "head": "%s to %s%s" % (_text(record.get("outcome")), _text(target), fallback),
        "time": _text(record.get("time"))[:16],
        "speed": _text(record.get("speed_summary")),
        "canary": "canary %s: %s" % (_text(canary.get("verdict")), (canary.get("message") or "")[:300])
        if canary else None,
        "traffic": "out of rotation %s s, drained %s request(s) in %s s" % (
            traffic["out_of_rotation_s"], _or(traffic.get("drained_requests"), "-"), _or(traffic.get("drain_s"), "-"))
        if traffic.get("out_of_rotation_s") is not None else None,
        # Why it was rolled back (shown, empty or not, for a rollback only).
        "reason": (record.get("reason") or "")[:300] if record.get("outcome") == "rolled back" else None,
    }


def _html_row(row):
    facts = _dict(row.get("facts"))
    gpus = _list(_dict(facts.get("gpus")).get("gpus"))
    labels = [gpu_label(gpu) for gpu in gpus]
    return {
        "row": row,
        "service": service_line(dict(row, environment_note=None)) if row.get("unit") else "",
        "source": imported_from(facts.get("package")),
        "gpu_models": [(labels.count(label), label) for label in sorted(set(labels), key=labels.index)],
        "gpu_lines": ["%s: %s (%s/%s MiB)" % (g.get("index"), g.get("name"), g.get("memory_used_mib"),
                                              g.get("memory_total_mib")) for g in gpus],
        "switch_token": switch_token(row),
        "speculation_token": speculation_token(row),
        "speculation": speculation_cell(row).replace("**", ""),
        "gpu_map": gpu_map_line(row) if any(e.get("services") for e in _list(row.get("gpu_map"))) else "",
        "processes": ", ".join("pid %s GPU %s: %s" % (p.get("pid"), p.get("gpu_index"), p.get("unit") or "no unit")
                               for p in _list(_dict(facts.get("gpus")).get("processes"))),
        "last_switch": _html_last_switch(facts.get("rollout_record")),
    }


def html_view(rows):
    """What the HTML page shows, computed: the verdict, the summary cards' counts, and each group of rows (in
    STATUSES' order, by host) with what each row's cells need beyond the row itself."""
    cached = from_cache(rows)
    reached = [row for row in rows if row.get("facts")]
    models = []
    for row in reached:
        seen = [gpu.get("name") for gpu in _list(_dict(row["facts"].get("gpus")).get("gpus"))]
        models += sorted(set(seen), key=seen.index) or ["no GPU seen"]
    card_statuses = ["ready", "blocked", "failed", "unreachable"] + (["unknown"] if cached else [])
    switch_states = [_dict(row.get("switch")).get("state", "none") for row in rows]
    return {
        "verdict": "%s can take the deployment." % count_phrase(rows),
        "from_cache": cached,
        "gathered": gathered_range(rows),
        "statuses": card_statuses,
        "status_counts": [(status, len([r for r in rows if r.get("status") == status])) for status in card_statuses],
        "switch_states": [(state, state.split(" ", 1)[0], switch_states.count(state)) for state in SWITCH_STATES],
        "speculation_states": speculation_counts(rows),
        "releases": _tally([_dict(row["facts"].get("package")).get("version") or "not installed" for row in reached]),
        "gpu_models": _tally(models),
        "groups": [(status, [_html_row(row) for row in group]) for status, group in by_status(rows) if group],
    }


class _Undefined(jinja2.ChainableUndefined):
    """As in Ansible's templates: `a.b.c | default(x)` for a missing `a.b`, but an undefined value written out fails."""
    __str__ = jinja2.Undefined._fail_with_undefined_error
    __iter__ = jinja2.Undefined._fail_with_undefined_error


def html_page(rows, template):
    """fleet-report.html: the template's text rendered with the rows as sglang_fleet_rows, as Ansible's template lookup
    renders it (blocks trimmed, None written as nothing) but by Jinja alone: Ansible's templating walks every value
    of the rows (about 30 KB a host), 0.7 s at 32 hosts against 0.07 s."""
    environment = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=_Undefined,
                                     finalize=lambda value: "" if value is None else value)
    environment.filters["gpufleet.sglang.sglang_fleet_view"] = html_view
    return environment.from_string(template).render(sglang_fleet_rows=rows)
