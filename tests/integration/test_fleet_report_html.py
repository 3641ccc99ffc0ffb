"""The HTML fleet report at fleet size, as a person sees it: rendered from the playbook's own template for 40
hosts as the report's action renders it (Jinja alone), which is byte for byte what Ansible's template module
renders, opened in headless Chromium (Debian's package), with a screenshot kept in tests/output/fleet-report-40.png."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "playbooks" / "templates" / "fleet-report.html.j2"
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs it)")


SWITCH_STATES = ["not switched", "current", "drifted", "broken by a package change"]


def row(i):
    if i == 39:
        # Reached, but its interpreter is gone: no package, no flags.
        return {"host": "gpu-39", "status": "blocked", "reasons": ["interpreter /nonexistent/python3 does not exist"],
                "facts": {"python": "/nonexistent/python3", "package": None, "flags": None, "algorithms": [],
                          "gpus": {"nvidia_smi": "missing", "gpus": [], "processes": []}},
                "flag_names": {}, "changes": None, "algorithm": "DFLASH", "why_not": "other"}
    status = ["ready", "ready", "blocked", "ready", "unreachable"][i % 5]
    if status == "unreachable":
        return {"host": "gpu-%02d" % i, "status": status, "reasons": ["no facts: the host was unreachable"],
                "facts": None, "flag_names": {}, "changes": None, "algorithm": "DFLASH", "why_not": "other"}
    version = "0.5.6" if status == "blocked" else ("0.5.11" if i % 3 == 0 else "0.5.23")
    state = SWITCH_STATES[i % 4]
    gpu = "NVIDIA H200" if i % 2 else "NVIDIA L40S"
    arch = ("Hopper", "sm_90") if i % 2 else ("Ada Lovelace", "sm_89")
    # Blocked by its GPU's architecture (an attention backend the release ties to another), or by another reason.
    why_not = ("gpu" if i % 10 == 2 else "other") if status == "blocked" else None
    return {
        "host": "gpu-%02d" % i, "status": status, "algorithm": "DFLASH", "mode": "switch", "why_not": why_not,
        "reasons": ["speculative algorithm DFLASH is not supported by this release"] if status == "blocked" else [],
        "flag_names": {"algorithm": "--speculative-algorithm"},
        # The day-two check on the hosts switched (current, drifted): off on every third of them.
        "speculation": {"state": "off" if i % 3 == 0 else "engaged", "accept_length": 1.0 if i % 3 == 0 else 6.1,
                        "accept_length_at_switch": 6.4, "reason": "r", "time": "2026-12-06T12:00:00Z"}
        if state in ("current", "drifted") else None,
        "switch": {"state": state, "reason": "the reason for %s" % state, "notes": [],
                   "todo": "nothing" if state == "current" else "re-run playbooks/deploy_dflash.yml"},
        "changes": {"kept": ["--model-path /models/Qwen3.6-27B"], "removed": ["--speculative-algorithm NEXTN"],
                    "added": ["--speculative-algorithm DFLASH"], "overridden": []},
        "facts": {"python": "/opt/ml-env/bin/python3", "algorithms": ["DFLASH", "NEXTN"],
                  "package": {"version": version, "install": "regular", "location": "/opt/ml-env/sglang"},
                  "gpus": {"nvidia_smi": "present", "gpus": [{"index": 0, "name": gpu, "memory_used_mib": 1,
                                                              "memory_total_mib": 143771, "architecture": arch[0],
                                                              "sm": arch[1]}], "processes": []}},
    }


@pytest.fixture(scope="module")
def report(ansible_env, installed_collection, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    rows = [row(i) for i in range(40)]
    sys.path.insert(0, str(installed_collection))
    from ansible_collections.gpufleet.sglang.plugins.plugin_utils._fleet_report import html_page
    page = tmp / "fleet-report.html"
    page.write_text(html_page(rows, TEMPLATE.read_text()))
    (tmp / "rows.json").write_text(json.dumps({"sglang_fleet_rows": rows}))
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "name": "Render the report", "ansible.builtin.template": {
            "src": str(TEMPLATE), "dest": str(tmp / "by-ansible.html"), "mode": "0644"}}]}]
    (tmp / "play.yml").write_text(json.dumps(play))
    run = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "@%s" % (tmp / "rows.json"),
                          "-e", "ansible_python_interpreter=%s" % sys.executable, str(tmp / "play.yml")],
                         env=ansible_env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert (tmp / "by-ansible.html").read_text() == page.read_text()
    return page


def chromium(*args):
    profile = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout.strip())
    try:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--user-data-dir=%s" % profile] + list(args),
            capture_output=True, text=True, timeout=120, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def visible_rows(dom):
    body = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<tr class="(\w+)" data-status="\w+" data-switch="\w+" data-speculation="\w+"(?! hidden)>\s*'
                      r'<td><strong>([\w-]+)', body)


def test_self_contained_summary_on_top(report):
    html = report.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing loaded from the network
    dom = chromium("--dump-dom", report.as_uri()).stdout
    assert "24 of 40 hosts can take the deployment." in dom
    assert re.search(r'id="count-ready">24<.*id="count-blocked">9<.*id="count-unreachable">7<', dom, re.S)
    assert "0.5.23: 15" in dom and "0.5.11: 9" in dom and "0.5.6: 8" in dom and "not installed: 1" in dom
    assert "NVIDIA H200: 16" in dom and "NVIDIA L40S: 16" in dom and "no GPU seen: 1" in dom
    assert len(visible_rows(dom)) == 40


def test_status_filter_and_sort_run_in_the_browser(report):
    dom = chromium("--dump-dom", report.as_uri() + "#status=blocked&sort=0").stdout
    shown = visible_rows(dom)
    assert {status for status, _host in shown} == {"blocked"} and len(shown) == 9
    assert "9 shown" in dom
    hosts = [host for _s, host in re.findall(r'<tr class="(\w+)" data-status="\w+"[^>]*>\s*<td><strong>([\w-]+)', dom)]
    assert hosts == sorted(hosts) and len(hosts) == 40  # sorted by host, hidden rows included


def test_rows_are_grouped_by_status_what_needs_a_person_first(report):
    # One compact line per host, grouped: blocked, then unreachable, then ready (no failed host here), each group
    # headed with its count and sorted by host; filtered, only the headings of groups with rows shown stay.
    dom = chromium("--dump-dom", report.as_uri()).stdout
    body = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    statuses = [status for status, _host in visible_rows(dom)]
    assert statuses == ["blocked"] * 9 + ["unreachable"] * 7 + ["ready"] * 24
    groups = re.findall(r'<tr data-group="(\w+)" class="group"( hidden="")?><th colspan="\d+">(\w+) \((\d+)\)', body)
    assert [(g, hidden, int(n)) for g, hidden, _s, n in groups] == [
        ("blocked", "", 9), ("unreachable", "", 7), ("ready", "", 24)]
    ready = [host for status, host in visible_rows(dom) if status == "ready"]
    assert ready == sorted(ready)
    dom = chromium("--dump-dom", report.as_uri() + "#status=blocked").stdout
    body = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    shown = re.findall(r'<tr data-group="(\w+)" class="group">', body)
    assert shown == ["blocked"]
    # The details (the switch's arguments, flag names) are in the row, behind a toggle.
    assert re.search(r'<details><summary title="the switch: arguments removed, added, overridden, kept">switch '
                     r'(&minus;|\u2212)1 \+1 (&rarr;|\u2192)0 =1</summary>', dom)
    assert "\u2212 <code>--speculative-algorithm NEXTN</code>" in dom or "&minus; <code>--speculative" in dom


def test_switch_state_filter_runs_in_the_browser(report):
    # Hosts with facts (not unreachable, not gpu-39) whose index % 4 == 2: the drifted ones.
    drifted = sorted("gpu-%02d" % i for i in range(39) if i % 5 != 4 and i % 4 == 2)
    dom = chromium("--dump-dom", report.as_uri() + "#switch=drifted").stdout
    assert sorted(host for _status, host in visible_rows(dom)) == drifted
    assert "%d shown" % len(drifted) in dom
    assert re.search(r'id="count-switch-drifted">%d<' % len(drifted), dom)
    assert "re-run playbooks/deploy_dflash.yml" in dom


def test_speculation_filter_runs_in_the_browser(report):
    rows = json.loads(report.with_name("rows.json").read_text())["sglang_fleet_rows"]
    off = sorted(r["host"] for r in rows if (r.get("speculation") or {}).get("state") == "off")
    engaged = [r for r in rows if (r.get("speculation") or {}).get("state") == "engaged"]
    assert off and engaged
    dom = chromium("--dump-dom", report.as_uri() + "#speculation=off").stdout
    assert sorted(host for _status, host in visible_rows(dom)) == off
    assert "%d shown" % len(off) in dom
    assert re.search(r'id="count-speculation-off">%d<' % len(off), dom)
    assert re.search(r'id="count-speculation-engaged">%d<' % len(engaged), dom)
    assert "acceptance 1.00 now, 6.40 at the switch" in dom


def test_why_not_filter_and_gpu_architectures_run_in_the_browser(report):
    dom = chromium("--dump-dom", report.as_uri() + "#why=gpu").stdout
    assert sorted(host for _status, host in visible_rows(dom)) == ["gpu-02", "gpu-12", "gpu-22", "gpu-32"]
    assert "4 shown" in dom
    dom = chromium("--dump-dom", report.as_uri() + "#why=other").stdout
    assert len(visible_rows(dom)) == 9 - 4 + 7  # the other blocked hosts (gpu-39 too) and the unreachable ones
    assert "1&times; NVIDIA H200 (Hopper sm_90)" in dom or "1\u00d7 NVIDIA H200 (Hopper sm_90)" in dom


def test_screenshot_a_person_can_read(report):
    out = REPO / "tests" / "output"
    out.mkdir(parents=True, exist_ok=True)
    png = out / "fleet-report-40.png"
    run = chromium("--screenshot=%s" % png, "--window-size=1600,2400", report.as_uri())
    assert png.exists() and png.stat().st_size > 20000, run.stderr[-2000:]
