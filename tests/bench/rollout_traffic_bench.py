"""Roll the lab fleet out behind its SGLang gateway under load, and count the requests lost.

    .venv/bin/python tests/bench/rollout_traffic_bench.py [--hosts 8] [--serial 1 25%] [--clients 8] [--keep]

N lab nodes (tests/containers/build-node-image.sh) are started as podman containers, SSH and the server's
port published on 127.0.0.1 only, provisioned with SGLang 0.5.23 (the stand-in server, tests/standin) listening
for the gateway, and put behind the lab's SMG (tests/traffic/lab-gateway.sh). For each --serial, in one run:
the rollout with the gateway steps and the drain (the role's defaults behind a gateway), then the same rollout
and the same load with both switched off (the baseline: what a rollout did before). Each rollout changes every
host (the draft window alternates), so every host is restarted. tests/traffic/loadgen.py sends short and long,
streamed and plain /generate and /v1/chat/completions requests through the gateway the whole time.
One line per rollout, and per --serial the line

    hosts=N serial=S requests=R failed=F p50_s=.. p99_s=.. rollout_s=.. baseline_failed=B

F must be 0; B above 0 shows that the load generator sees losses. Not a test: nothing is asserted.
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

PREFIX = "gpufleet-traffic-bench-"
FIRST_SSH_PORT, FIRST_API_PORT, GATEWAY_PORT = 22400, 31400, 30280
KEY = "bench-gateway-admin-key"


def check_room(count):
    """Memory and ports first, with a clear message when they do not fit."""
    with open("/proc/meminfo") as handle:
        available_mib = int(re.search(r"MemAvailable:\s+(\d+)", handle.read()).group(1)) // 1024
    need_mib = 400 * count + 1000
    if available_mib < need_mib:
        sys.exit("%d nodes need about %d MiB of memory (400 each, 1000 for the gateway and the load); %d MiB are "
                 "available: use fewer --hosts" % (count, need_mib, available_mib))
    import socket

    busy = []
    for port in [GATEWAY_PORT, GATEWAY_PORT + 10] + [FIRST_SSH_PORT + i for i in range(count)] + \
            [FIRST_API_PORT + i for i in range(count)]:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                busy.append(port)
    if busy and not all(FIRST_SSH_PORT <= p < FIRST_SSH_PORT + count for p in busy):
        sys.exit("ports already in use on 127.0.0.1: %s (another bench or lab?)" % busy)


def inventory(path, names, keys):
    hosts = dict((name, {"ansible_port": FIRST_SSH_PORT + i,
                         "sglang_dflash_gateway_worker_url": "http://127.0.0.1:%d" % (FIRST_API_PORT + i)})
                 for i, name in enumerate(names))
    write_inventory(path, hosts, keys, dict(
        STANDIN_VARS, gpufleet_lab_old_host="0.0.0.0", sglang_dflash_speed_probe_max_new_tokens=32,
        sglang_dflash_gateway_urls=["http://127.0.0.1:%d" % GATEWAY_PORT],
        sglang_dflash_gateway_token=KEY, sglang_dflash_drain_timeout=120))


def rollout(inv, env, serial, window, baseline):
    extra = {"sglang_dflash_serial": serial, "sglang_dflash_draft_window_size": window}
    if baseline:
        extra.update(sglang_dflash_gateway_urls=[], sglang_dflash_stop_drain=False)
    proc = sh(["ansible-playbook", "-i", inv, "-f", "8", REPO / "playbooks" / "deploy_dflash.yml",
               "-e", json.dumps(extra)], env=env, check=False)
    if proc.returncode != 0:
        sys.exit("the rollout failed:\n%s" % proc.stdout[-4000:])
    return proc


def line(kind, hosts, serial, counts, seconds):
    return ("%s hosts=%d serial=%s requests=%d failed=%d streamed_failed=%d non_streamed_failed=%d p50_s=%s "
            "p99_s=%s rollout_s=%.1f lost_kinds=%s"
            % (kind, hosts, serial, counts["requests"], counts["failed"], counts["streamed"]["failed"],
               counts["non_streamed"]["failed"], counts["p50_s"], counts["p99_s"], seconds,
               ",".join(k for k, v in sorted(counts["by_kind"].items()) if v["failed"]) or "-"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--serial", nargs="+", default=["1", "25%"])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="leave the containers and the gateway running")
    args = parser.parse_args()
    check_room(args.hosts)
    env, keys = lab_environment()
    work = Path(tempfile.mkdtemp(prefix="traffic-bench-"))
    names = start_nodes(PREFIX, args.hosts, FIRST_SSH_PORT, keys, env, FIRST_API_PORT)
    gateway = [REPO / "tests" / "traffic" / "lab-gateway.sh"]
    try:
        inv = work / "hosts.json"
        inventory(inv, names, keys)
        sh(["ansible", "-i", inv, "all", "-f", "8", "-m", "ansible.builtin.wait_for_connection", "-a", "timeout=120"],
           env=env)
        sh(["ansible-playbook", "-i", inv, "-f", "8", REPO / "tests" / "containers" / "provision.yml"], env=env)
        sh(gateway + ["start", work / "gateway", GATEWAY_PORT, KEY]
           + ["http://127.0.0.1:%d" % (FIRST_API_PORT + i) for i in range(args.hosts)], env=env)
        url = "http://127.0.0.1:%d" % GATEWAY_PORT
        windows = iter([4096, 8192] * 10)
        finals = []
        for serial in args.serial:
            figures = {}
            for baseline in (False, True):
                window = next(windows)
                _run, counts, seconds = under_load(
                    url, lambda s=serial, w=window, b=baseline: rollout(inv, env, s, w, b), clients=args.clients)
                figures[baseline] = (counts, seconds)
                print(line("baseline" if baseline else "gateway+drain", args.hosts, serial, counts, seconds),
                      flush=True)
            counts, seconds = figures[False]
            finals.append("hosts=%d serial=%s requests=%d failed=%d p50_s=%s p99_s=%s rollout_s=%.1f baseline_failed=%d"
                          % (args.hosts, serial, counts["requests"], counts["failed"], counts["p50_s"],
                             counts["p99_s"], seconds, figures[True][0]["failed"]))
        for final in finals:
            print(final)
    finally:
        if not args.keep:
            sh(gateway + ["stop", work / "gateway"], env=env, check=False)
            sh(["podman", "rm", "-f"] + names, env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
