"""The experiment's error rates on the lab fleet, behind its gateway and its Prometheus, under load: how often the judge
calls identical settings different (A/A), how often it sees an arm 10 % slower (A/B), and the seed's case.

    .venv/bin/python tests/bench/experiment_bench.py [--hosts 4] [--aa 20] [--ab 10] [--window 30] [--keep]
        [--seed-report DIR] [--screenshot PNG]

H lab nodes (podman containers of the node image, SSH and the server's port on 127.0.0.1 only) run SGLang 0.5.23's
stand-in with --enable-metrics and its SIMULATED seeded noise (tests/standin/gpufleet_standin.py: per-request
acceptance, step-time jitter; a different seed per host), behind the lab's SMG and scraped every second by the lab's
Prometheus; tests/traffic/loadgen.py sends streamed and plain requests through the gateway the whole time (16
clients: about 4 running requests a server, as the canary scenario). playbooks/experiment_dflash.yml runs with the
lab's window (--window s at 2-s intervals, judged every 10 s, the judge's lab settings of the canary scenario:
block_s 2, host_spread 0.005), arms of one host each, the other hosts the control:
1. the seed's case on the fleet as provisioned (no speculative decoding): the operator's own checkpoint
   (Qwen3.6-27B-DFlash-step4000, about 0.65 of z-lab's acceptance) against z-lab's drafter, listed in that order;
   the winner rolls out, so the fleet then runs z-lab everywhere;
2. --aa A/A experiments: two arms both z-lab against the z-lab control (the arms' hosts have nothing to switch). A
   false difference is an experiment in which any arm is judged better or worse than the control or than the other
   arm on any metric, or a winner is named;
3. --ab A/B experiments: an arm z-lab-slow10 (every step 10 % slower at every load: its speed exactly 0.909x, its
   acceptance the same) and an arm z-lab against the z-lab control. Detected: the slow arm judged worse than the
   control on the objective (decode tokens/s per running request). Every arm goes back after (none wins).
The last line is

    experiment hosts=H arms=A window_s=W seed_case=ARM aa_false_difference=K/N ab_detected=K/N failed_requests=F

(failed_requests: through the gateway over every experiment). Not a test: nothing is asserted. --seed-report keeps
the seed case's experiment-report/ (its JSON and page); --screenshot takes its page in headless Chromium
(docs/experiment-report.png).
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "traffic"))
sys.path.insert(0, str(REPO / "tests" / "bench"))
sys.path.insert(0, str(REPO / "tests" / "integration"))

from lab import under_load  # noqa: E402
from lab_nodes import GatewayLab, sh  # noqa: E402
from test_fleet_report_html import chromium  # noqa: E402

PREFIX = "gpufleet-experiment-bench-"
PORTS = (22700, 31700, 30580, 30585)  # SSH, the servers, the gateway, Prometheus
KEY = "bench-gateway-admin-key"
ZLAB, STEP4000, SLOW10 = ("/models/Qwen3.6-27B-DFlash", "/models/Qwen3.6-27B-DFlash-step4000",
                          "/models/Qwen3.6-27B-DFlash-slow10")
OBJECTIVE = "decode_per_request"
GROUP_VARS = {
    # The SIMULATED noise on: the judge faces it (the lab's other group_vars switch it off for exact figures).
    "gpufleet_lab_standin_noise": True,
    "sglang_dflash_speed_probe_max_new_tokens": 32, "sglang_dflash_speed_probe_concurrency": [1],
    "sglang_dflash_judge": {"block_s": 2, "host_spread": 0.005},
}


def experiment(inv, env, work, arms, window, rollout, keep_report=None):
    config = {"arms": arms, "window": window, "max_window": window, "interval": 2, "chunk": 10, "rollout": rollout}
    extra = {"sglang_dflash_experiment": config, "sglang_dflash_serial": 2,
             "sglang_dflash_experiment_report_dir": str(work / "report")}
    run = sh(["ansible-playbook", "-i", inv, "-f", "8", REPO / "playbooks" / "experiment_dflash.yml", "-e",
              json.dumps(extra)], env=env, check=False)
    report = work / "report" / "experiment-report.json"
    found = json.loads(report.read_text()) if report.exists() else {}
    if keep_report and report.exists():
        shutil.copytree(report.parent, keep_report, dirs_exist_ok=True)
    if report.exists():
        report.unlink()
    return run, found


def verdicts(decision):
    """Every (who, metric, verdict) the judge gave: each arm against the control, each pair of arms."""
    out = []
    for arm, metrics in (decision.get("against_control") or {}).items():
        out += [("%s/control" % arm, m, c.get("verdict")) for m, c in metrics.items() if isinstance(c, dict)]
    for arm, others in (decision.get("between_arms") or {}).items():
        for other, metrics in others.items():
            out += [("%s/%s" % (arm, other), m, c.get("verdict")) for m, c in metrics.items() if isinstance(c, dict)]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--aa", type=int, default=20)
    parser.add_argument("--ab", type=int, default=10)
    parser.add_argument("--window", type=int, default=30)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--keep", action="store_true", help="leave the containers, the gateway and Prometheus")
    parser.add_argument("--seed-report", help="keep the seed case's experiment-report/ there")
    parser.add_argument("--screenshot", help="the seed case's page in headless Chromium, as PNG there")
    parser.add_argument("--size", default="1400,1800", help="the screenshot's browser window, WIDTH,HEIGHT")
    args = parser.parse_args()
    with GatewayLab(PREFIX, args.hosts, PORTS, KEY, GROUP_VARS, args.keep) as lab:
        run_all(lab, args)


def run_all(lab, args):
    inv, env, work, url = lab.inventory, lab.env, lab.work, lab.url
    failed = 0
    seed_report = Path(args.seed_report) if args.seed_report else (work / "seed-report" if args.screenshot else None)

    def loaded(arms, rollout=False, keep_report=None):
        run, counts, _s = under_load(url, lambda: experiment(inv, env, work, arms, args.window, rollout, keep_report),
                                     clients=args.clients, long_tokens=400)
        return run[0], run[1], counts

    (run, found, counts) = loaded([{"name": "checkpoint", "hosts": 1, "settings": {"draft_model_path": STEP4000}},
                                   {"name": "zlab", "hosts": 1, "settings": {"draft_model_path": ZLAB}}],
                                  rollout=True, keep_report=seed_report)
    failed += counts["failed"]
    if args.screenshot and (seed_report / "experiment-report.html").exists():
        shot = chromium("--screenshot=%s" % Path(args.screenshot).resolve(), "--window-size=%s" % args.size,
                        (seed_report / "experiment-report.html").resolve().as_uri())
        print("screenshot: %s (rc=%d)" % (args.screenshot, shot.returncode), flush=True)
    seed = found.get("winner") or (found.get("outcome") or "none").replace(" ", "-")
    print("seed case: rc=%d outcome=%s winner=%s requests=%d failed=%d" % (
        run.returncode, found.get("outcome"), found.get("winner"), counts["requests"], counts["failed"]), flush=True)
    if run.returncode != 0 or found.get("winner") != "zlab":
        # The A/A and A/B experiments need the whole fleet on z-lab: put it there.
        deploy = sh(["ansible-playbook", "-i", inv, "-f", "8", REPO / "playbooks" / "deploy_dflash.yml", "-e",
                     json.dumps({"sglang_dflash_serial": args.hosts})], env=env, check=False)
        if deploy.returncode != 0:
            sys.exit("the fleet could not be put on z-lab:\n%s" % deploy.stdout[-4000:])
    false_difference = 0
    for number in range(1, args.aa + 1):
        run, found, counts = loaded([{"name": "a1", "hosts": 1, "settings": {"draft_model_path": ZLAB}},
                                     {"name": "a2", "hosts": 1, "settings": {"draft_model_path": ZLAB}}])
        failed += counts["failed"]
        different = [v for v in verdicts(found.get("decision") or {}) if v[2] in ("better", "worse")]
        false = bool(different) or bool(found.get("winner")) or not found
        false_difference += false
        print("A/A %d: rc=%d outcome=%s winner=%s differences=%s requests=%d failed=%d" % (
            number, run.returncode, found.get("outcome"), found.get("winner"), different or "-",
            counts["requests"], counts["failed"]), flush=True)
    detected = 0
    for number in range(1, args.ab + 1):
        run, found, counts = loaded([{"name": "slow10", "hosts": 1, "settings": {"draft_model_path": SLOW10}},
                                     {"name": "zlab", "hosts": 1, "settings": {"draft_model_path": ZLAB}}])
        failed += counts["failed"]
        objective = (((found.get("decision") or {}).get("against_control") or {}).get("slow10") or {}).get(
            OBJECTIVE) or {}
        seen = objective.get("verdict") == "worse"
        detected += seen
        print("A/B %d: rc=%d outcome=%s slow10 %s (shift %s, interval [%s, %s]) requests=%d failed=%d" % (
            number, run.returncode, found.get("outcome"), objective.get("verdict"),
            objective.get("shift_relative"), objective.get("low_relative"), objective.get("high_relative"),
            counts["requests"], counts["failed"]), flush=True)
    print("experiment hosts=%d arms=2 window_s=%d seed_case=%s aa_false_difference=%d/%d ab_detected=%d/%d "
          "failed_requests=%d" % (args.hosts, args.window, seed, false_difference, args.aa, detected, args.ab,
                                  failed))


if __name__ == "__main__":
    main()
