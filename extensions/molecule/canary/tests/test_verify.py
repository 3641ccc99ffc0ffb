"""Day two (playbooks/verify_dflash.yml) on the canary fleet, which test_canary_cut.py leaves switched on all four hosts
(draft window 3072): speculation that silently stops after the switch (the draft weights lost on a memory release and
resume, sglang#31674, SIMULATED by the stand-in) is found, reported in the fleet report, reverted or restarted on that
host only, under the lab's load behind the gateway; a host nothing can be read from is unknown and left alone. The
tests run in order, each on the fleet the one before left."""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests", "traffic"))

import lab  # noqa: E402
from checks import command_line, playbook, recap_changed  # noqa: E402
from test_canary import GATEWAY, LOAD, NODES, WORKERS, gateway_workers, node, pids  # noqa: E402

testinfra_hosts = ["podman://canary-1"]
# The settings the fleet was last switched with (test_canary_cut.py): a restart refuses a service whose files differ.
AS_SWITCHED = ["-e", "sglang_dflash_draft_window_size=3072"]
# A switch from one DFLASH setting to another is not what sglang_dflash_min_speedup (the lab's 1.2) guards.
NO_SPEEDUP_GATE = ["-e", '{"sglang_dflash_min_speedup": null}']
REVERT = ["-e", "sglang_dflash_verify_on_degraded=revert"]
REPORT_DIR = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/tmp"), "verify-fleet-report")
# A line of the playbook: "HOST: UNIT STATE (acceptance now X, at the switch Y; REASON) at TIME".
STATE = re.compile(r"(canary-\d): sglang\.service (engaged|degraded|off|unknown) \(acceptance now ([-\d.]+), at the "
                   r"switch ([-\d.]+); (.*?)\) at (\d{4}-\d\d-\d\dT[\d:]+Z)")


def lose_the_draft_weights(index):
    """What sglang#31674 does: a memory release then a resume; the server stays healthy and says DFLASH."""
    for path in ("/release_memory_occupation", "/resume_memory_occupation"):
        subprocess.run(["curl", "-sf", "-X", "POST", WORKERS[index] + path], check=True, capture_output=True)


def states(run):
    """{host: (state, acceptance now, at the switch, reason)} from the playbook's lines (the last line of a host)."""
    return dict((m.group(1), (m.group(2), m.group(3), m.group(4), m.group(5))) for m in STATE.finditer(run.output))


def speculating():
    return dict((name, "--speculative-algorithm DFLASH" in command_line(node(name))) for name in NODES)


def said(title, run, counts=None):
    sys.stderr.write("\n%s rc=%s%s\n%s\n" % (title, run.returncode, " requests=%d failed=%d" % (
        counts["requests"], counts["failed"]) if counts else "", "\n".join(
            "  %s: %s" % (host, value) for host, value in sorted(states(run).items()))))


def test_a_speculation_that_stopped_is_found_off_with_its_figures_and_the_healthy_hosts_engaged():
    # The fleet as test_canary_cut.py leaves it: every host on DFLASH (a deploy with nothing to do; it switches the
    # hosts that are not, when that test did not get so far).
    deployed = playbook("deploy_dflash.yml", "-e", "sglang_dflash_serial=4", *(AS_SWITCHED + NO_SPEEDUP_GATE))
    assert deployed.returncode == 0, deployed.output[-3000:]
    assert speculating() == dict((name, True) for name in NODES)
    lose_the_draft_weights(0)
    before = pids()
    run, counts, _seconds = lab.under_load(GATEWAY, lambda: playbook("verify_dflash.yml"), **LOAD)
    said("(a) report", run, counts)
    found = states(run)
    # canary-1 fails (off is in sglang_dflash_verify_fail_when), so a schedule reports it; the others pass.
    assert run.returncode == 2, run.output[-3000:]
    state, now, then, reason = found["canary-1"]
    assert state == "off" and float(now) <= 1.1 and float(then) > 3, found
    assert "each step accepts about one token" in reason and "request(s) in" in reason, reason
    for name in NODES[1:]:
        assert found[name][0] == "engaged" and float(found[name][1]) > 3, found
    assert re.search(r"fatal: \[canary-1\]: FAILED!.*canary-1: sglang\.service off", run.output)
    assert counts["failed"] == 0, counts["failures"]
    # Read-only: nothing changed, nothing restarted.
    for name in NODES:
        assert recap_changed(run.output, name) == 0, name
    assert pids() == before


def test_d_the_fleet_report_shows_speculation_now():
    run = playbook("gather_facts.yml", "-e", "sglang_fleet_report_dir=%s" % REPORT_DIR)
    # Judged on one probe request each (the default: no window), as verify_dflash.yml judges.
    assert run.returncode == 0, run.output[-3000:]
    with open(os.path.join(REPORT_DIR, "fleet-report.json")) as handle:
        rows = dict((row["host"], row) for row in json.load(handle)["hosts"])
    assert rows["canary-1"]["speculation"]["state"] == "off"
    assert rows["canary-1"]["speculation"]["accept_length"] <= 1.1
    assert [rows[name]["speculation"]["state"] for name in NODES[1:]] == ["engaged"] * 3
    with open(os.path.join(REPORT_DIR, "fleet-report.md")) as handle:
        markdown = handle.read()
    assert "| speculation now |" in markdown and "speculation now: 3 engaged, 1 off" in markdown
    assert re.search(r"\| \*\*off\*\*: acceptance 1\.\d\d now, \d\.\d\d at the switch", markdown)
    with open(os.path.join(REPORT_DIR, "fleet-report.html")) as handle:
        page = handle.read()
    assert '<th>speculation now</th>' in page and 'data-speculation="off"' in page
    assert '<span class="big" id="count-speculation-off">1</span>' in page
    assert '<button type="button" data-speculation="engaged">engaged</button>' in page


def test_b_revert_puts_that_host_only_back_under_load_with_no_failed_request():
    before = pids()
    run, counts, seconds = lab.under_load(GATEWAY, lambda: playbook("verify_dflash.yml", *REVERT), **LOAD)
    said("(b) revert", run, counts)
    assert run.returncode == 0, run.output[-4000:]
    assert re.search(r"canary-1: sglang\.service was off at \S+; reverted to its previous server by this run",
                     run.output)
    assert counts["failed"] == 0, counts["failures"]
    assert speculating() == {"canary-1": False, "canary-2": True, "canary-3": True, "canary-4": True}
    now = pids()
    assert now["canary-1"] != before["canary-1"]
    assert [now[name] for name in NODES[1:]] == [before[name] for name in NODES[1:]]
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
    for name in NODES[1:]:
        assert recap_changed(run.output, name) == 0, name


def test_e_the_same_command_again_changes_nothing():
    before = pids()
    run = playbook("verify_dflash.yml", *REVERT)
    said("(e) again", run)
    assert run.returncode == 0, run.output[-3000:]
    assert "canary-1: no switched service to verify" in run.output
    assert [states(run)[name][0] for name in NODES[1:]] == ["engaged"] * 3
    for name in NODES:
        assert recap_changed(run.output, name) == 0, name
    assert pids() == before


def test_c_no_traffic_and_a_refused_probe_is_unknown_and_nothing_is_done():
    host = node("canary-2")
    host.run_test("mkdir -p /run/gpufleet-standin && echo 'CUDA error: an illegal memory access' "
                  "> /run/gpufleet-standin/GENERATE_FAIL")
    before = pids()
    try:
        run = playbook("verify_dflash.yml", "--limit", "canary-2", *REVERT)
    finally:
        host.run_test("rm -f /run/gpufleet-standin/GENERATE_FAIL")
    said("(c) no evidence", run)
    state, now, _then, reason = states(run)["canary-2"]
    assert state == "unknown" and now == "-", reason
    assert "no request ended" not in reason and "0 request(s) ended in the" in reason
    assert "the probe request failed: POST /generate answered 500" in reason
    # unknown is not in sglang_dflash_verify_fail_when, and no action touches it.
    assert run.returncode == 0, run.output[-3000:]
    assert recap_changed(run.output, "canary-2") == 0
    assert pids() == before and speculating()["canary-2"]


def test_f_restart_restarts_that_host_once_and_verifies_it_again():
    lose_the_draft_weights(2)
    before = pids()
    run, counts, _seconds = lab.under_load(
        GATEWAY, lambda: playbook("verify_dflash.yml", "-e", "sglang_dflash_verify_on_degraded=restart",
                                  *AS_SWITCHED), **LOAD)
    said("(f) restart", run, counts)
    assert run.returncode == 0, run.output[-4000:]
    assert re.search(r"canary-3: sglang\.service was off at \S+; restarted once by this run, verified again above",
                     run.output), run.output[-4000:]
    assert states(run)["canary-3"][0] == "engaged"
    assert counts["failed"] == 0, counts["failures"]
    now = pids()
    assert now["canary-3"] != before["canary-3"]
    untouched = ("canary-1", "canary-2", "canary-4")
    assert [now[n] for n in untouched] == [before[n] for n in untouched]
    assert speculating() == {"canary-1": False, "canary-2": True, "canary-3": True, "canary-4": True}
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
