"""A rollout survives the controller dying: the run is killed (SIGKILL to ansible-playbook's whole process group) at
each step of a switch that leaves the host or a gateway in a state a later run must know about - found by watching
the gateway and the host - and the same command run again finishes the job. Behind SMG (and HAProxy), under load with
long streams. After the rerun: every worker in rotation, the host on the setting asked (and proven) or, where the cut
was a rollback, back on its previous one; no intent left; its record saying what it runs; no request lost over the
kill and the rerun; a second rerun changes nothing. Runs after test_traffic.py (its fleet ends switched)."""

import json
import os
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests", "traffic"))

import cut  # noqa: E402
from checks import PLAYBOOK, command_line, recap_changed, rollout, server_info  # noqa: E402
from lab import under_load  # noqa: E402
from test_traffic import (  # noqa: E402
    BEHIND_HAPROXY,
    DRAIN_LOAD,
    GATEWAY,
    HAPROXY,
    KEY,
    LOAD,
    WORKERS,
    gateway_workers,
    haproxy_servers,
)

testinfra_hosts = ["podman://traffic-1"]
NODES = ["traffic-1", "traffic-2", "traffic-3", "traffic-4"]
# Each cut switches traffic-1 to another draft window (a real change: out of rotation, drain, restart, proof).
WINDOWS = iter(range(2112, 4096, 64))
# Streams of 6000 tokens (13 s with DFlash): a drain long enough for a cut to land in it.
CUT_LOAD = dict(DRAIN_LOAD, drain_tokens=6000)
CUT_HAPROXY_LOAD = dict(LOAD, drain_clients=4, drain_tokens=6000)


def node(name):
    import testinfra

    return testinfra.get_host("podman://" + name)


def command(window, *extra):
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    return ["ansible-playbook", "-i", inventory, PLAYBOOK, "--limit", "traffic-1",
            "-e", "sglang_dflash_draft_window_size=%d" % window] + list(extra)


def cut_and_rerun(step, *extra, load=None, load_url=GATEWAY, dropin=True):
    """The rollout of traffic-1 cut at `step`, then the same command again, under the lab's load (CUT_LOAD unless
    `load` says otherwise): (the cut's output, the rerun, the load's counts, the window asked)."""
    load = CUT_LOAD if load is None else load
    window = next(WINDOWS)
    host = cut.Host("traffic-1", WORKERS[0])
    conditions = cut.steps(host, GATEWAY, KEY, "--speculative-draft-window-size %d" % window if dropin else None)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    outputs = {}

    def both():
        outputs["cut"] = cut.run_cut(command(window, *extra), env, conditions[step])
        return rollout("--limit", "traffic-1", "-e", "sglang_dflash_draft_window_size=%d" % window, *extra)

    rerun, counts, _seconds = under_load(load_url, both, **load)
    output, was_cut, seconds = outputs["cut"]
    sys.stderr.write("\ncut at %s after %.1fs (cut=%s): intent then %s; rerun rc=%s; requests=%d failed=%d\n%s\n" % (
        step, seconds, was_cut, host.phase(), rerun.returncode, counts["requests"], counts["failed"],
        "\n".join(line for line in rerun.output.splitlines() if "resumed:" in line or "interrupted:" in line)))
    assert was_cut, "the run ended before %s:\n%s" % (step, output[-3000:])
    return output, rerun, counts, window


def settled(window, intended=True):
    """Every worker in rotation; traffic-1 on the window asked (or not), healthy; no intent left; its record says
    what it runs; a second rerun changes nothing."""
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
    host = node("traffic-1")
    on_it = ("--speculative-draft-window-size %d" % window) in command_line(host)
    assert on_it == intended, command_line(host)
    assert server_info(host)["speculative_algorithm"] == "DFLASH"
    assert not host.file("/var/lib/gpufleet-sglang/sglang.service.intent.json").exists
    assert not host.file("/var/lib/gpufleet-sglang/sglang.service").exists  # no previous-state copy left
    record = json.loads(host.file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json").content_string)
    assert record["outcome"] == ("switched" if intended else "rolled back"), record["outcome"]
    again = rollout("--limit", "traffic-1", "-e", "sglang_dflash_draft_window_size=%d" % window)
    if intended:
        assert again.returncode == 0 and recap_changed(again.output, "traffic-1") == 0, again.output[-3000:]


def test_cut_while_the_host_leaves_rotation_the_rerun_finishes_the_switch():
    """The issue's case: cut while traffic-1 is being taken out of the gateway. The gateway may no longer list it;
    the rerun must not refuse ("does not list worker"): it knows its own run took it out, and goes on."""
    _output, rerun, counts, window = cut_and_rerun("leaving_rotation")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert "does not list worker" not in rerun.output
    assert "interrupted: " in rerun.output and "by an unfinished run" in rerun.output
    assert counts["failed"] == 0, counts["failures"]
    settled(window)


def test_cut_during_the_drain_the_rerun_drains_and_switches():
    _output, rerun, counts, window = cut_and_rerun("drain")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert counts["failed"] == 0, counts["failures"]
    settled(window)


def test_cut_after_our_files_were_written_before_the_restart_the_rerun_restarts_and_proves():
    _output, rerun, counts, window = cut_and_rerun("files_written")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert "resumed: interrupted: out of rotation since" in rerun.output
    assert counts["failed"] == 0, counts["failures"]
    settled(window)


def test_cut_after_the_restart_before_the_proof_the_rerun_proves_it():
    _output, rerun, counts, window = cut_and_rerun("restarted")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert "the next run restarts the server, proves it and puts the host back" in rerun.output
    assert counts["failed"] == 0, counts["failures"]
    settled(window)


def test_cut_during_a_rollback_the_rerun_finishes_it():
    """A drafter that crashes the server: the switch rolls back, and the run is cut in the rollback. The rerun
    finishes it (the previous files and server, back in rotation) and fails the host with the reason."""
    _output, rerun, counts, window = cut_and_rerun(
        "rollback", "-e", "sglang_dflash_draft_model_path=/models/Qwen3.6-27B-DFlash-broken", dropin=False)
    assert rerun.returncode != 0
    assert "this run finishes it" in rerun.output, rerun.output[-6000:]
    assert "the previous service is back and healthy" in rerun.output, rerun.output[-6000:]
    assert counts["failed"] == 0, counts["failures"]
    settled(window, intended=False)


def test_cut_behind_haproxy_the_rerun_puts_the_server_back_ready():
    """Cut while traffic-1 leaves HAProxy's rotation (DRAIN, then MAINT): the rerun switches it and sets it READY."""
    _output, rerun, counts, window = cut_and_rerun("leaving_rotation", *BEHIND_HAPROXY, load=CUT_HAPROXY_LOAD,
                                                   load_url=HAPROXY)
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert counts["failed"] == 0, counts["failures"]
    assert haproxy_servers() == dict((name, "UP") for name in NODES)
