"""The fleet behind its SGLang gateway (SMG), and behind HAProxy, is switched under load and loses no request, the
drain waiting for streams still in flight; a crashing drafter is rolled back and its host is back in the gateway;
gateway problems of either kind are refused before any change; without the gateway steps and the drain (what
happened before), the same load loses requests."""

import json
import os
import re
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests", "traffic"))

from checks import exec_start, playbook, recap_changed, rollout, server_info, show  # noqa: E402
from lab import under_load  # noqa: E402

# The tests drive the whole fleet; `host` is traffic-1, the others are reached with node().
testinfra_hosts = ["podman://traffic-1"]
GATEWAY = "http://127.0.0.1:30180"
KEY = "lab-gateway-admin-key-1f2e3d"
NODES = ["traffic-1", "traffic-2", "traffic-3", "traffic-4"]
WORKERS = ["http://127.0.0.1:3112%d" % n for n in (1, 2, 3, 4)]
# 8 clients; long streams of 400 tokens (4 s before the switch, about 1 s with DFlash) are in flight whenever a
# server stops.
LOAD = {"clients": 8, "long_tokens": 400}
# And 8 more that send only long streams of 3000 tokens (about 30 s before the switch, 6.5 s with DFlash), so a
# host that leaves rotation still has streams in flight, and its drain must wait for them.
DRAIN_LOAD = dict(LOAD, drain_clients=8, drain_tokens=3000)
# Through HAProxy (leastconn) too: with 4 drain clients, one stream a server, both hosts of the batch found none in
# flight when their drain began in one suite run (2026-12-07: the stream on each had ended in the second between
# DRAIN and the drain's first read), and the test below had nothing to show.
HAPROXY_LOAD = DRAIN_LOAD
# The lab's HAProxy (tests/traffic/lab-haproxy.sh): the same four servers, through its Runtime API.
HAPROXY = "http://127.0.0.1:30280"
HAPROXY_SOCKET = "unix://%s/haproxy/admin.sock" % os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
BEHIND_HAPROXY = ["-e", '{"sglang_dflash_gateways": "{{ gpufleet_lab_haproxy }}", "sglang_dflash_gateway_urls": []}']


def gateway_workers():
    out = subprocess.run(["curl", "-sf", "-H", "Authorization: Bearer %s" % KEY, GATEWAY + "/workers"],
                         capture_output=True, text=True, check=True).stdout
    return dict((w["url"], w["status"]) for w in json.loads(out)["workers"])


def haproxy_servers():
    """{server name: HAProxy's state word} of the lab backend, read from its stats socket (show stat)."""
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(HAPROXY_SOCKET[len("unix://"):])
    conn.sendall(b"show stat -1 4 -1\n")
    data = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    conn.close()
    rows = [line.split(",") for line in data.decode().splitlines()[1:] if line]
    return dict((row[1], row[17]) for row in rows if row[0] == "sglang")


def drained(names):
    """{host: (requests drained, drain seconds)} from each host's record of its last rollout."""
    out = {}
    for name in names:
        traffic = json.loads(node(name).file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json")
                             .content_string)["traffic"]
        out[name] = (traffic["drained_requests"], traffic["drain_s"])
    sys.stderr.write("drained (requests, seconds): %s\n" % out)
    return out


def node(name):
    import testinfra

    return testinfra.get_host("podman://" + name)


def report(title, counts, seconds):
    sys.stderr.write("\n%s: requests=%d failed=%d streamed=%s non_streamed=%s p50_s=%s p99_s=%s rollout_s=%.1f\n"
                     % (title, counts["requests"], counts["failed"], counts["streamed"], counts["non_streamed"],
                        counts["p50_s"], counts["p99_s"], seconds))


def test_the_rollout_under_load_loses_no_request():
    """Two hosts at a time (two of the four out of rotation at most); traffic-4 also runs the example hooks for
    another balancer (playbooks/examples/*_flag.yml: a maintenance flag its health check reads)."""
    run, counts, seconds = under_load(GATEWAY, lambda: rollout("-e", "sglang_dflash_serial=2"), **DRAIN_LOAD)
    report("rollout serial=2 under load", counts, seconds)
    assert run.returncode == 0, run.output[-4000:]
    assert counts["failed"] == 0, counts["failures"]
    assert counts["requests"] > 100 and counts["streamed"]["ok"] > 20
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
    for name in NODES:
        assert recap_changed(run.output, name) > 0
        assert "rotation: out of http://127.0.0.1:30180 for" in run.output
        info = server_info(node(name))
        assert info["speculative_algorithm"] == "DFLASH" and info["host"] == "0.0.0.0"
        # The stop settings that let SGLang drain, in our drop-in.
        assert show(node(name), "sglang.service", "KillMode")["KillMode"] == "mixed"
    traffic4 = node("traffic-4")
    log = traffic4.file("/var/lib/gpufleet-sglang/rotation-hooks.log").content_string.split()
    assert log[0::3] == ["out", "back"] and log[1::3] == ["sglang.service", "sglang.service"]
    assert not traffic4.file("/run/gpufleet-sglang/sglang.service.out-of-rotation").exists
    record = json.loads(node("traffic-2").file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json")
                        .content_string)
    assert record["traffic"]["gateways"] == [GATEWAY] and record["traffic"]["out_of_rotation_s"] > 0
    assert record["traffic"]["drain_s"] is not None
    # The drain waited for the long streams still in flight when each host left rotation; none was cut (above).
    figures = drained(NODES)
    assert sum(n for n, _s in figures.values()) > 0, figures
    assert all(s > 0 for n, s in figures.values() if n), figures


def test_a_crashing_drafter_is_rolled_back_and_the_previous_server_is_back_in_the_gateway():
    host = node("traffic-3")
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    run, counts, seconds = under_load(GATEWAY, lambda: rollout(
        "--limit", "traffic-3", "-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-broken"), **LOAD)
    report("crashing drafter on traffic-3 under load", counts, seconds)
    assert run.returncode != 0
    assert "host traffic-3, unit sglang.service: the switch to DFLASH failed" in run.output
    assert "the previous service is back and healthy" in run.output and "This host is back in rotation." in run.output
    assert counts["failed"] == 0, counts["failures"]
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
    assert server_info(host)["speculative_draft_model_path"] == "/models/Qwen3.6-27B-DFlash"
    assert show(host, "sglang.service", "MainPID")["MainPID"] != pid


def test_gateway_problems_are_refused_before_any_change_and_nothing_is_left_out_of_rotation(host):
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    argv_before = exec_start(host)
    change = ["--limit", "traffic-1", "-e", "sglang_dflash_draft_window_size=4096"]
    # Where the host is in the traffic is said only as a gateway that answered said it: never "in rotation" of a
    # gateway that refused the token or could not be reached.
    for extra, message, said in (
        (["-e", "sglang_dflash_gateway_token=not-the-key"],
         "gateway http://127.0.0.1:30180 refused the token (401", "Nothing was changed on this host."),
        (["-e", '{"sglang_dflash_gateway_urls": ["http://127.0.0.1:30199"]}'],
         "gateway http://127.0.0.1:30199 cannot be reached", "Nothing was changed on this host."),
        (["-e", "sglang_dflash_gateway_worker_url=http://127.0.0.1:39999"],
         "gateway http://127.0.0.1:30180 does not list worker http://127.0.0.1:39999",
         "Nothing was changed on this host; the gateways that answered have worker http://127.0.0.1:39999 as: "
         "http://127.0.0.1:30180 not registered."),
    ):
        run = rollout(*(change + extra))
        assert run.returncode != 0
        assert "host traffic-1, unit sglang.service: cannot deploy DFLASH: " + message in run.output, \
            run.output[-3000:]
        assert said in run.output and "in rotation at" not in run.output and "still in rotation" not in run.output
        assert show(host, "sglang.service", "MainPID")["MainPID"] == pid and exec_start(host) == argv_before
        assert gateway_workers() == dict((w, "ready") for w in WORKERS)


def test_a_run_with_nothing_to_change_leaves_the_gateway_alone():
    run = rollout("--limit", "traffic-1")
    assert run.returncode == 0 and recap_changed(run.output, "traffic-1") == 0
    assert "Stop every gateway routing new requests" not in run.output
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)


def test_the_revert_under_load_loses_no_request():
    """The way back is rolled out as the switch is: out of the gateway, drained, the operator's command restarted
    and proven, back in. (Before the baseline below, which then switches traffic-3 and 4 again.)"""
    run, counts, seconds = under_load(GATEWAY, lambda: playbook(
        "revert_dflash.yml", "--limit", "traffic-3,traffic-4", "-e", "sglang_dflash_serial=2"), **LOAD)
    report("revert of traffic-3,4 under load", counts, seconds)
    assert run.returncode == 0, run.output[-4000:]
    assert counts["failed"] == 0, counts["failures"]
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
    for name in ("traffic-3", "traffic-4"):
        assert "%s: sglang.service (revert) sglang 0.5.23: back to the operator's command" % name in run.output
        assert server_info(node(name))["speculative_algorithm"] is None
    assert run.output.count("rotation: out of http://127.0.0.1:30180 for") == 2


def test_behind_haproxy_the_rollout_under_load_loses_no_request():
    """The second gateway kind: traffic-1 and 2 leave HAProxy's rotation (DRAIN), drain, go to MAINT, are switched
    and proven, and come back (READY), while the load goes through HAProxy."""
    run, counts, seconds = under_load(HAPROXY, lambda: rollout(
        "--limit", "traffic-1,traffic-2", "-e", "sglang_dflash_serial=2", "-e", "sglang_dflash_draft_window_size=4096",
        *BEHIND_HAPROXY), **HAPROXY_LOAD)
    report("rollout of traffic-1,2 behind HAProxy under load", counts, seconds)
    assert run.returncode == 0, run.output[-4000:]
    assert counts["failed"] == 0, counts["failures"]
    assert counts["requests"] > 50 and counts["streamed"]["ok"] > 10
    assert haproxy_servers() == dict((name, "UP") for name in NODES)
    assert run.output.count("rotation: out of %s for" % HAPROXY_SOCKET) == 2
    for name in ("traffic-1", "traffic-2"):
        assert "4096" in exec_start(node(name))
    figures = drained(["traffic-1", "traffic-2"])
    assert sum(n for n, _s in figures.values()) > 0, figures
    assert all(s > 0 for n, s in figures.values() if n), figures


def test_haproxy_problems_are_refused_before_any_change_naming_each_gateway(host):
    """A stats socket that is not there, and a server the backend does not have: both named in one refusal."""
    pid = show(host, "sglang.service", "MainPID")["MainPID"]
    argv_before = exec_start(host)
    missing = {"kind": "haproxy", "url": "unix:///run/gpufleet-lab-none/admin.sock", "backend": "sglang"}
    run = rollout("--limit", "traffic-1", "-e", "sglang_dflash_draft_window_size=3072",
                  "-e", "sglang_dflash_gateway_worker_url=http://127.0.0.1:39999",
                  "-e", json.dumps({"sglang_dflash_gateway_urls": [],
                                    "sglang_dflash_gateways": [missing, "{{ gpufleet_lab_haproxy[0] }}"]}))
    assert run.returncode != 0
    prefix = "host traffic-1, unit sglang.service: cannot deploy DFLASH: "
    assert prefix + "haproxy gateway unix:///run/gpufleet-lab-none/admin.sock (backend sglang) cannot be reached on " \
        in run.output, run.output[-3000:]
    assert "set the url of its sglang_dflash_gateways entry to HAProxy's stats socket" in run.output
    assert ("haproxy gateway %s (backend sglang) has no server at 127.0.0.1:39999 (it has: traffic-1 "
            "http://127.0.0.1:31121" % HAPROXY_SOCKET) in run.output
    assert "set sglang_dflash_gateway_worker_url to the address and port of this host's `server` line" in run.output
    # The socket that is not there said nothing; the one that answered does not have the worker.
    assert ("Nothing was changed on this host; the gateways that answered have worker http://127.0.0.1:39999 as: "
            "%s not registered." % HAPROXY_SOCKET) in run.output
    assert show(host, "sglang.service", "MainPID")["MainPID"] == pid and exec_start(host) == argv_before
    assert haproxy_servers() == dict((name, "UP") for name in NODES)


def in_flight_at_sigterm(name, since):
    """What the stand-in logged when SIGTERM came (after `since`): the requests it still had in flight."""
    log = node(name).check_output("journalctl -u sglang.service -o cat --since @%d" % int(since))
    return [int(n) for n in re.findall(r"Remaining number of requests (\d+)", log)][:1]


def test_without_the_gateway_steps_and_the_drain_the_same_load_loses_requests():
    """The baseline: what a rollout did before (restart while the gateway still routes to the host, systemd's
    default KillMode cutting SGLang's scheduler): the load generator must see it. It switches traffic-3 and 4,
    reverted above to the operator's command without a drafter: their 2000-token streams take about 20 s, so
    most of the 16 clients' streams are in flight there (on the DFlash hosts they take about 4 s, and CI once
    saw a restart of traffic-1 and 2 with none in flight). traffic-4's balancer hooks are off too (with them the
    role would wait for a drain that the gateway, still routing, never lets happen). The stand-in's own log says
    how many it had."""
    since = time.time()
    run, counts, seconds = under_load(GATEWAY, lambda: rollout(
        "--limit", "traffic-3,traffic-4", "-e", "sglang_dflash_draft_window_size=8192",
        "-e", '{"sglang_dflash_gateway_urls": [], "sglang_dflash_stop_drain": false, '
              '"sglang_dflash_out_of_rotation_tasks": null, "sglang_dflash_back_in_rotation_tasks": null}'),
        clients=16, long_tokens=2000)
    report("baseline (no gateway steps, no drain) on traffic-3,4 under load", counts, seconds)
    assert run.returncode == 0, run.output[-3000:]
    in_flight = dict((name, in_flight_at_sigterm(name, since)) for name in ("traffic-3", "traffic-4"))
    sys.stderr.write("baseline: requests in flight when SIGTERM came: %s\n" % in_flight)
    assert all(in_flight.values()) and sum(n for v in in_flight.values() for n in v) > 0, in_flight
    assert counts["failed"] > 0, in_flight
    assert counts["streamed"]["failed"] > 0, in_flight


def test_the_fleet_report_shows_each_host_in_its_gateway(tmp_path):
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    playbook = os.path.join(HERE, "..", "..", "..", "..", "playbooks", "gather_facts.yml")
    run = subprocess.run(["ansible-playbook", "-i", inventory, playbook, "-e", "sglang_fleet_report_dir=%s" % tmp_path,
                          "-e", '{"sglang_dflash_gateways": "{{ gpufleet_lab_haproxy }}"}'],
                         capture_output=True, text=True, check=False, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    rows = dict((r["host"], r) for r in json.loads((tmp_path / "fleet-report.json").read_text())["hosts"])
    for number, name in enumerate(NODES, 1):
        gateway = rows[name]["gateway"]
        assert gateway["worker_url"] == "http://127.0.0.1:3112%d" % number
        # Each kind read through the seam: SMG (sglang_dflash_gateway_urls), then HAProxy (sglang_dflash_gateways).
        assert gateway["states"] == [{"gateway": GATEWAY, "state": "in rotation"},
                                     {"gateway": HAPROXY_SOCKET, "state": "in rotation"}]
    # traffic-2's last rollout went through HAProxy (the baseline's, on 3 and 4, through no gateway).
    traffic = rows["traffic-2"]["facts"]["rollout_record"]["traffic"]
    assert traffic["gateways"] == [HAPROXY_SOCKET] and traffic["out_of_rotation_s"] > 0
    html = (tmp_path / "fleet-report.html").read_text()
    assert "in rotation" in html and "out of rotation" in html  # the state, and the last rollout's figures
    assert KEY not in html and KEY not in run.stdout
