"""The canary's window cut: the controller killed (SIGKILL to ansible-playbook's process group) while the canary host
is observed - found on the host (its intent says a canary window is under way) - then the same command again: the
canary is judged again on a window of its own, passes, and the rest rolls; no request lost, no intent left. Runs
after test_canary.py, whose fleet ends switched: the cut run switches the canary host to another draft window."""

import json
import os
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests", "traffic"))

import cut  # noqa: E402
import lab  # noqa: E402
from checks import PLAYBOOK, command_line, rollout  # noqa: E402
from test_canary import CANARY, GATEWAY, KEY, LOAD, NODES, WORKERS, gateway_workers, node  # noqa: E402

testinfra_hosts = ["podman://canary-1"]


def test_a_cut_canary_window_is_judged_again_by_the_rerun():
    # Another draft window on a fleet on DFLASH already: not what sglang_dflash_min_speedup (1.2x the server it
    # replaces, the lab's group_vars) guards; the speed is the same.
    window = ["-e", "sglang_dflash_draft_window_size=3072", "-e", '{"sglang_dflash_min_speedup": null}']
    host = cut.Host("canary-1", WORKERS[0])
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    argv = ["ansible-playbook", "-i", inventory, PLAYBOOK] + CANARY + window
    outputs = {}

    def both():
        outputs["cut"] = cut.run_cut(argv, dict(os.environ, ANSIBLE_NOCOLOR="1"),
                                     cut.steps(host, GATEWAY, KEY)["canary"])
        return rollout(*(CANARY + window))

    rerun, counts, _seconds = lab.under_load(GATEWAY, both, **LOAD)
    output, was_cut, seconds = outputs["cut"]
    sys.stderr.write("\ncanary cut after %.1fs; rerun rc=%s requests=%d failed=%d\n" % (
        seconds, rerun.returncode, counts["requests"], counts["failed"]))
    assert was_cut, output[-3000:]
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert "during the canary's window; the next run's canary judges it again" in rerun.output
    assert "the canary passed, canary canary-1" in rerun.output
    assert counts["failed"] == 0, counts["failures"]
    assert gateway_workers() == dict((w, "ready") for w in WORKERS)
    for name in NODES:
        assert "--speculative-draft-window-size 3072" in command_line(node(name)), name
        assert not node(name).file("/var/lib/gpufleet-sglang/sglang.service.intent.json").exists, name
    record = json.loads(node("canary-1").file("/var/lib/gpufleet-sglang/sglang.service.last-rollout.json")
                        .content_string)
    assert record["canary"]["verdict"] == "pass"
