"""What the role says (plugin_utils/_messages.py): the change before it is made, the rollback, the rollout's
summary. The refusals are tested with the plan (test_plan.py)."""

from ansible_collections.gpufleet.sglang.plugins.plugin_utils._messages import (
    drafter_lines,
    gateway_refusal_message,
    gpus_busy_message,
    plan_lines,
    rollback_message,
    rollout_summary,
    speed_gates_message,
)
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._plan import deployment_plan
from plan_facts import NEXTN, SETTINGS, facts_for

PLAN = {"mode": "switch", "unit": "sglang-qwen.service", "needs_change": True,
        "changes": {"kept": ["--tp 2", "--mem-fraction-static 0.8"], "removed": ["--speculative-algorithm NEXTN"],
                    "added": [], "overridden": []},
        "stop": {"summary": "SIGTERM to the main process only", "notes": ["a note"]},
        "gateway": {"urls": ["http://gw:30180"], "worker_url": "http://10.0.0.5:30000"}}


def test_plan_lines():
    assert plan_lines(PLAN) == [
        "switch sglang-qwen.service: changes", "kept: --tp 2  --mem-fraction-static 0.8",
        "removed: --speculative-algorithm NEXTN", "added: ", "overridden: ",
        "stop: SIGTERM to the main process only; a note",
        "gateway: out of http://gw:30180 as http://10.0.0.5:30000 while it is switched, then back"]
    quiet = plan_lines(dict(PLAN, needs_change=False, gateway=None, stop={"summary": "as the unit says"}))
    assert quiet[0] == "switch sglang-qwen.service: already as asked"
    assert quiet[-2:] == ["stop: as the unit says", "gateway: none (sglang_dflash_gateway_urls)"]


def test_rollout_summary_lines():
    result = {"unit": "sglang-qwen.service", "mode": "switch", "release": "0.5.23", "algorithm": "DFLASH",
              "changed": True, "healthy": True, "time_to_healthy_s": 40.0, "changes": PLAN["changes"],
              "traffic": {"out_of_rotation_s": 55.0, "gateways": ["http://gw:30180"], "drained_requests": 2,
                          "drain_s": 5.0}, "speed": {"summary": "tokens/s 200.0 -> 480.0 (2.40x)", "notes": []}}
    results = {"a": {"state": "done", "services": [result]},
               "b": {"state": "failed", "reason": "drafter crashed"},
               "c": {"state": "not started", "reason": "batch 1 failed"}, "d": {}}
    lines = rollout_summary(results, ["a", "b", "c", "d"])
    assert lines[0] == ("a: sglang-qwen.service (switch) sglang 0.5.23 DFLASH changed, healthy=True, "
                        "healthy 40.0s after the server started")
    assert "  kept: 2 argument(s)" in lines
    assert "  rotation: out of http://gw:30180 for 55.0s; drained 2 request(s) in 5.0s" in lines
    assert "  speed: tokens/s 200.0 -> 480.0 (2.40x)" in lines
    assert lines[-3:] == ["b: FAILED: drafter crashed", "c: not started, left as it was: batch 1 failed",
                          "d: not reached (unreachable, or the play ended before it)"]
    # A canary that passed says so under its host; a failed or held one is the host's FAILED line.
    results["a"]["canary"] = {"action": "continue", "message": "the canary passed, x"}
    results["b"]["canary"] = {"action": "rollback", "message": "the canary failed, y"}
    lines = rollout_summary(results, ["a", "b"])
    assert "  the canary passed, x" in lines and not any("the canary failed" in line for line in lines)
    # A restart (sglang_dflash_state=restarted, verify_dflash.yml's restart) says so, with its health.
    restarted = dict(result, mode="restart", time_to_healthy_s=6.5)
    assert rollout_summary({"a": {"state": "done", "services": [restarted]}}, ["a"])[0] == (
        "a: sglang-qwen.service (restart) sglang 0.5.23 DFLASH: restarted as it is, healthy=True, healthy 6.5s after "
        "the server started")


DRAFTER = {"services": ["*", "sglang@*"], "source": "hub", "repo": "lab/qwen-dflash", "revision": "a" * 40,
           "commit": "a" * 40, "path": "/var/lib/gpufleet-sglang/drafters/lab--qwen-dflash/" + "a" * 40,
           "verified": True, "size": 4194550, "files": 4, "bytes_transferred": 4194550, "changed": True}


def test_the_drafter_lines_say_the_services_the_copy_and_what_this_run_transferred():
    assert drafter_lines("gpu-07", [DRAFTER]) == [
        "gpu-07: drafter for every other service, sglang@*: hub lab/qwen-dflash@%s, 4194550 bytes, verified, "
        "fetched 4194550 bytes" % ("a" * 40)]
    pushed = dict(DRAFTER, services=["sglang-b"], source="controller", repo="qwen", commit="local-0123456789abcdef",
                  changed=False, bytes_transferred=0)
    assert drafter_lines("gpu-07", [pushed]) == [
        "gpu-07: drafter for sglang-b: controller qwen (local-0123456789abcdef), 4194550 bytes, verified, "
        "already there"]
    # After the rollout, each host's drafters follow its services' lines.
    lines = rollout_summary({"gpu-07": {"drafters": [DRAFTER], "state": "failed", "reason": "x"}}, ["gpu-07"])
    assert lines == drafter_lines("gpu-07", [DRAFTER]) + ["gpu-07: FAILED: x"]


def test_the_rollback_message_says_where_the_host_is_in_rotation():
    plan = deployment_plan(facts_for(NEXTN), SETTINGS)
    outcome = {"failure": {"msg": "boom"}, "restarted": True, "old_ready": {"ready": True}, "rollback_s": 3,
               "journal": [], "rotation": "back in rotation"}
    assert "This host is back in rotation." in rollback_message(plan, facts_for(NEXTN), "h1", "DFLASH", outcome)
    outcome["rotation"] = None
    assert "rotation" not in rollback_message(plan, facts_for(NEXTN), "h1", "DFLASH", outcome)


# The texts the role's tasks wrote in Jinja before, byte for byte (the Molecule scenarios read them).
def test_the_gpus_busy_message_names_the_wait_the_stopped_units_and_every_holder():
    assert gpus_busy_message(["GPU 1 pid 11 (python, no unit, 5 MiB)", "GPU 2 pid 12 (x, a.service, 4 MiB)"], 60,
                             ["train.service", "eval.service"]) == (
        "GPUs still in use 60s after stopping train.service, eval.service: GPU 1 pid 11 (python, no unit, 5 MiB); "
        "GPU 2 pid 12 (x, a.service, 4 MiB)")
    assert gpus_busy_message(["GPU 0 pid 1 (p, no unit, 1 MiB)"], 5.0, []) == (
        "GPUs still in use 5.0s after stopping : GPU 0 pid 1 (p, no unit, 1 MiB)")


def test_the_speed_gates_message_gives_every_problem_and_the_figures():
    verdict = {"passed": False, "problems": ["speedup 1.02x is below sglang_dflash_min_speedup=1.2", "b"],
               "summary": "tokens/s 200.0 -> 204.0 (1.02x)"}
    assert speed_gates_message(verdict) == (
        "the new server is healthy but does not pass the speed gates: speedup 1.02x is below "
        "sglang_dflash_min_speedup=1.2; b (tokens/s 200.0 -> 204.0 (1.02x))")


def test_a_gateway_refusal_says_where_the_host_is_only_as_the_gateways_that_answered_said_it():
    check = {"unit": "sglang-qwen.service", "algorithm": "DFLASH", "mode": "switch",
             "worker_url": "http://10.0.0.5:30000"}
    # No gateway answered (a socket that is not there): nothing is said of the rotation.
    assert gateway_refusal_message(check, "gpu-01", "HAProxy socket /run/haproxy.sock does not exist") == (
        "host gpu-01, unit sglang-qwen.service: cannot deploy DFLASH: HAProxy socket /run/haproxy.sock does not "
        "exist. Nothing was changed on this host.")
    # The gateway answered and does not list the worker.
    states = [{"gateway": "http://gw:30180", "state": "not registered"}]
    assert gateway_refusal_message(check, "gpu-01", "gateway http://gw:30180 does not list worker w", states) == (
        "host gpu-01, unit sglang-qwen.service: cannot deploy DFLASH: gateway http://gw:30180 does not list worker w. "
        "Nothing was changed on this host; the gateways that answered have worker http://10.0.0.5:30000 as: "
        "http://gw:30180 not registered.")
    # One gateway refused the token, the other answered and routes to the host.
    states = [{"gateway": "http://gw-2:30180", "state": "in rotation"}]
    assert gateway_refusal_message(dict(check, mode="revert"), "gpu-01", "gateway http://gw-1 refused the token",
                                   states).endswith(
        "cannot revert the switch: gateway http://gw-1 refused the token. Nothing was changed on this host; the "
        "gateways that answered have worker http://10.0.0.5:30000 as: http://gw-2:30180 in rotation.")
