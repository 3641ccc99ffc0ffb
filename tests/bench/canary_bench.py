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
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "traffic"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from lab import under_load  # noqa: E402
from lab_nodes import STANDIN_VARS, lab_environment, sh, start_nodes, write_inventory  # noqa: E402

PREFIX = "gpufleet-canary-bench-"
FIRST_SSH_PORT, FIRST_API_PORT, GATEWAY_PORT, PROMETHEUS_PORT = 22500, 31500, 30380, 30385
KEY = "bench-gateway-admin-key"


def inventory(path, names, keys, window):
    hosts = dict((name, {"ansible_port": FIRST_SSH_PORT + i,
                         "sglang_dflash_gateway_worker_url": "http://127.0.0.1:%d" % (FIRST_API_PORT + i)})
                 for i, name in enumerate(names))
    write_inventory(path, hosts, keys, dict(
        STANDIN_VARS, gpufleet_lab_old_host="0.0.0.0", gpufleet_lab_enable_metrics=True,
        sglang_dflash_speed_probe_max_new_tokens=32,
        sglang_dflash_gateway_urls=["http://127.0.0.1:%d" % GATEWAY_PORT],
        sglang_dflash_gateway_token=KEY, sglang_dflash_drain_timeout=120,
        sglang_dflash_canary_window=window, sglang_dflash_canary_interval=5,
        sglang_dflash_prometheus_url="http://127.0.0.1:%d" % PROMETHEUS_PORT,
        sglang_dflash_canary_gateway_metrics_url="http://127.0.0.1:%d/metrics" % (GATEWAY_PORT + 10)))


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
    env, keys = lab_environment()
    work = Path(tempfile.mkdtemp(prefix="canary-bench-"))
    names = start_nodes(PREFIX, args.hosts, FIRST_SSH_PORT, keys, env, FIRST_API_PORT)
    gateway = [REPO / "tests" / "traffic" / "lab-gateway.sh"]
    prometheus = [REPO / "tests" / "traffic" / "lab-prometheus.sh"]
    workers = ["127.0.0.1:%d" % (FIRST_API_PORT + i) for i in range(args.hosts)]
    try:
        inv = work / "hosts.json"
        inventory(inv, names, keys, args.window)
        sh(["ansible", "-i", inv, "all", "-f", "8", "-m", "ansible.builtin.wait_for_connection", "-a", "timeout=120"],
           env=env)
        sh(["ansible-playbook", "-i", inv, "-f", "8", REPO / "tests" / "containers" / "provision.yml"], env=env)
        sh(gateway + ["start", work / "gateway", GATEWAY_PORT, KEY] + ["http://" + w for w in workers], env=env)
        sh(prometheus + ["start", work / "prometheus", PROMETHEUS_PORT, "127.0.0.1:%d" % (GATEWAY_PORT + 10)]
           + workers, env=env)
        url = "http://127.0.0.1:%d" % GATEWAY_PORT
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
    finally:
        if not args.keep:
            sh(gateway + ["stop", work / "gateway"], env=env, check=False)
            sh(prometheus + ["stop", work / "prometheus"], env=env, check=False)
            sh(["podman", "rm", "-f"] + names, env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
