"""The canary stage on the lab fleet behind its gateway and its Prometheus, under load: a good drafter passes,
a drafter that is fast alone and slow under load fails and its canary hosts go back.

    .venv/bin/python tests/bench/canary_bench.py [--hosts 4] [--canary 1] [--window 30] [--clients 16] [--keep]

H lab nodes (podman containers of the node image, SSH and the server's port on 127.0.0.1 only) run SGLang 0.5.23's
stand-in with --enable-metrics (SIMULATED speed: tests/standin/gpufleet_standin.py), behind the lab's SMG
(tests/traffic/lab-gateway.sh) and scraped by the lab's Prometheus (tests/traffic/lab-prometheus.sh).
tests/traffic/loadgen.py sends streamed and plain requests through the gateway the whole time. Then:
1. the good drafter with the canary (sglang_dflash_canary=--canary): it must pass and the fleet roll;
2. the fleet reverted (playbooks/revert_dflash.yml);
3. the load-bound drafter (4x alone, slower from 4 requests on), the probe at concurrency 1 and at 8 with no
   speed gate (today's probe would keep it): the canary must fail and its hosts go back.
The last line is

    canary hosts=H window_s=W good=pass bad=fail failed_requests=0 probe_c1=X.XXx probe_at_load=Y.YYx

with the verdicts, the requests lost through the gateway over both rollouts, and the load-bound drafter's
speed-up as the probe measured it alone and at load. Not a test: nothing is asserted.
"""

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "traffic"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from lab import under_load  # noqa: E402
from lab_nodes import GatewayLab, sh  # noqa: E402

PREFIX = "gpufleet-canary-bench-"
PORTS = (22500, 31500, 30380, 30385)  # SSH, the servers, the gateway, Prometheus
KEY = "bench-gateway-admin-key"


def playbook(inv, env, name, extra):
    return sh(["ansible-playbook", "-i", inv, "-f", "8", REPO / "playbooks" / name, "-e", json.dumps(extra)],
              env=env, check=False)


def verdict(output):
    found = re.search(r"the canary (passed|failed|is inconclusive)", output)
    return {"passed": "pass", "failed": "fail", "is inconclusive": "inconclusive"}[found.group(1)] if found else "none"


def probe_speedups(output):
    """The one-client speed-up and the one at the highest level of the switch's speed summary ('(4.12x)', 'at
    concurrency 8: 0.37x'): the first summary of the run (a rollback's revert measures the way back after it)."""
    summary = re.search(r"tokens/s [0-9.]+ -> [0-9.]+ \(([0-9.]+)x\)[^\n\"]*", output)
    if not summary:
        return None, None
    loaded = re.findall(r"at concurrency (\d+): ([0-9.]+)x", summary.group(0))
    return float(summary.group(1)), (float(loaded[-1][1]) if loaded else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--canary", default="1")
    parser.add_argument("--window", type=int, default=30)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--keep", action="store_true", help="leave the containers, the gateway and Prometheus")
    args = parser.parse_args()
    group_vars = {"sglang_dflash_speed_probe_max_new_tokens": 32, "sglang_dflash_canary_window": args.window,
                  "sglang_dflash_canary_interval": 5}
    with GatewayLab(PREFIX, args.hosts, PORTS, KEY, group_vars, args.keep) as lab:
        inv, env, url = lab.inventory, lab.env, lab.url
        canary = {"sglang_dflash_canary": args.canary, "sglang_dflash_serial": args.hosts}
        good_run, good_counts, good_s = under_load(url, lambda: playbook(inv, env, "deploy_dflash.yml", canary),
                                                   clients=args.clients, long_tokens=400)
        good = verdict(good_run.stdout)
        print("good drafter: verdict=%s rc=%d requests=%d failed=%d rollout_s=%.1f"
              % (good, good_run.returncode, good_counts["requests"], good_counts["failed"], good_s), flush=True)
        revert = playbook(inv, env, "revert_dflash.yml", {"sglang_dflash_serial": args.hosts,
                                                          "sglang_dflash_restart_stopped_units": True})
        if revert.returncode != 0:
            sys.exit("the revert failed:\n%s" % revert.stdout[-4000:])
        bad_extra = dict(canary, sglang_dflash_draft_model_path="/models/Qwen3.6-27B-DFlash-loadbound",
                         sglang_dflash_speed_probe_concurrency=[1, 8])
        bad_run, bad_counts, bad_s = under_load(url, lambda: playbook(inv, env, "deploy_dflash.yml", bad_extra),
                                                clients=args.clients, long_tokens=400)
        bad = verdict(bad_run.stdout)
        alone, loaded = probe_speedups(bad_run.stdout)
        print("load-bound drafter: verdict=%s rc=%d requests=%d failed=%d rollout_s=%.1f probe_c1=%s probe_c8=%s"
              % (bad, bad_run.returncode, bad_counts["requests"], bad_counts["failed"], bad_s, alone, loaded),
              flush=True)
        print("canary hosts=%d window_s=%d good=%s bad=%s failed_requests=%d probe_c1=%s probe_at_load=%s"
              % (args.hosts, args.window, good, bad, good_counts["failed"] + bad_counts["failed"],
                 "%.2fx" % alone if alone is not None else "n/a", "%.2fx" % loaded if loaded is not None else "n/a"))


if __name__ == "__main__":
    main()
