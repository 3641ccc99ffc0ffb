"""A rolling rollout over sixteen SSH hosts in batches of four: batch 1 switched (each release with
its own flag names, the DDTree build with its budget, a release without DDTree on the opted-in DFLASH
fallback), batch 2 has a refused host and a rolled-back one, so batches 3 and 4 are never started;
the summary names every host's state and the speed before and after."""

import json
import os
import sys

import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

from checks import DROPIN, health_status, recap_changed, rollout, server_info, show, written_flags  # noqa: E402

# Ansible orders a group's hosts by name: batch 1 is 01-04, batch 2 05-08, and so on.
SWITCHED = ["fleet-01-0523", "fleet-02-0511", "fleet-03-ddtree", "fleet-04-0523", "fleet-07-0523", "fleet-08-0523"]
UNTOUCHED = ["fleet-%02d-0523" % i for i in range(9, 17)]
testinfra_hosts = ["podman://" + h for h in SWITCHED + ["fleet-05-056", "fleet-06-crash"] + UNTOUCHED]
OUR_DROPIN = "/etc/systemd/system/sglang.service.d/" + DROPIN


def name(host):
    return host.backend.get_hostname()


def rollout_output():
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "rollout-output.txt")) as handle:
        return handle.read()


def test_every_node_runs_what_its_batch_decided(host):
    node = name(host)
    assert host.service("sglang").is_running and health_status(host) == "200"
    assert not host.file("/var/lib/gpufleet-sglang/sglang.service").exists  # no previous-state copy left
    info = server_info(host)
    if node in SWITCHED:
        assert host.file(OUR_DROPIN).exists and not host.service("train-qwen").is_running
        assert info["speculative_algorithm"] == ("DDTREE" if node == "fleet-03-ddtree" else "DFLASH")
        record = json.loads(host.file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json").content_string)
        assert record["outcome"] == "switched" and record["algorithm"] == info["speculative_algorithm"]
        # The old servers ran without speculative decoding; the drafter's acceptance is SIMULATED (6.4).
        assert record["before"]["measured"] and record["before"]["accept_length"] is None
        assert record["after"]["accept_length"] == 6.4 and record["speedup"] > 0
        return
    # Refused (0.5.6), rolled back (crashing drafter) or never started: as before the rollout,
    # with the training job running.
    assert not host.file(OUR_DROPIN).exists
    assert not any(f.startswith("--speculative") for f in written_flags(host))
    assert info["speculative_algorithm"] is None
    assert host.service("train-qwen").is_running and host.service("train-qwen").is_enabled


def test_the_crashed_host_was_rolled_back_and_said_why():
    output = rollout_output()
    # The role's own failure message, whole (the summary line quotes only its first 400 characters).
    line = max((x for x in output.splitlines() if "host fleet-06-crash, unit sglang.service: the switch" in x), key=len)
    assert "crash loop" in line and "the previous service is back and healthy" in line, line[-6000:]
    assert "checksum mismatch in model.safetensors" in line and "Units started again: train-qwen.service" in line


def test_the_summary_names_every_hosts_state():
    output = rollout_output()
    for node in SWITCHED:
        assert "%s: sglang.service (switch) sglang" % node in output
    assert "fleet-05-056: FAILED: host fleet-05-056, unit sglang.service: cannot deploy DFLASH" in output
    assert "fleet-06-crash: FAILED: host fleet-06-crash, unit sglang.service: the switch to DFLASH failed" in output
    for node in UNTOUCHED:
        assert "%s: not started, left as it was: the rollout stopped after batch 2" % node in output
    assert "2 of 4 host(s) failed (fleet-05-056, fleet-06-crash)" in output
    # The batches as the rollout ran them.
    assert "batch 2 (fleet-05-056, fleet-06-crash, fleet-07-0523, fleet-08-0523)" in output


def test_the_ddtree_build_got_its_budget_flag(host):
    if name(host) != "fleet-03-ddtree":
        return
    flags = written_flags(host)
    assert "--speculative-ddtree-budget" in flags
    assert server_info(host)["speculative_ddtree_budget"] == 15


def test_a_release_without_ddtree_runs_the_opted_in_fallback(host):
    if name(host) != "fleet-04-0523":
        return
    assert "--speculative-ddtree-budget" not in written_flags(host)
    assert "# DFLASH instead of DDTREE: this build has no DDTREE" in host.file(OUR_DROPIN).content_string
    record = json.loads(host.file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json").content_string)
    assert (record["asked_algorithm"], record["algorithm"]) == ("DDTREE", "DFLASH")
    assert "fleet-04-0523: sglang.service (switch) sglang 0.5.23 DFLASH changed" in rollout_output()
    assert "  fallback: DFLASH instead of DDTREE, this build has no DDTREE" in rollout_output()


def test_every_switched_host_shows_its_speed_before_and_after():
    lines = rollout_output().splitlines()
    speed = [x for x in lines if "  speed: tokens/s" in x]
    assert len(speed) == len(SWITCHED), speed
    assert all("acceptance - -> 6.40" in x for x in speed), speed


def test_a_second_rollout_over_the_switched_hosts_changes_and_restarts_nothing():
    """Idempotence of the fleet, over SSH: the same rollout again, limited to the hosts it switched (the
    refused and rolled-back hosts would fail again by design)."""
    nodes = [testinfra.get_host("podman://" + node) for node in SWITCHED]
    pids = [show(node, "sglang.service", "MainPID")["MainPID"] for node in nodes]
    run = rollout("-e", "sglang_dflash_serial=50%", "--limit", ",".join(SWITCHED))
    assert run.returncode == 0, run.output[-3000:]
    assert [recap_changed(run.output, node) for node in SWITCHED] == [0] * len(SWITCHED)
    assert [show(node, "sglang.service", "MainPID")["MainPID"] for node in nodes] == pids
