"""A rolling switch cut at each step by the controller dying, then the same command again, on the lab fleet behind its
gateway and under load.

    .venv/bin/python tests/bench/interrupt_bench.py [--hosts 4] [--clients 8] [--keep]

H lab nodes (podman containers of the node image, SSH and the server's port on 127.0.0.1 only) run SGLang 0.5.23's
stand-in behind the lab's SMG (tests/traffic/lab-gateway.sh), with tests/traffic/loadgen.py sending streamed and plain
requests (and long streams that keep a drain busy) through the gateway the whole time. For each step a run can be cut
at (tests/traffic/cut.py: leaving rotation, the drain, our files written, restarted and not proven, the rollback of a
crashing drafter), the rollout of the whole fleet with serial 1 (each step a new draft window, so every host switches)
is killed - SIGKILL to ansible-playbook's process group - the moment the first host shows that step, then run again.
A step counts as resumed when the rerun ends with every host on the setting asked (or, for the rollback, the first
host back on its previous one and the others untouched), no intent left on any host, and every worker in rotation.
The last line is

    interrupt steps=N hosts=H resumed=N/N workers_ready_after=H/H failed_requests=0

(workers_ready_after: after the last rerun). Not a test: nothing is asserted.
"""

import argparse
import json
import os
import sys
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "traffic"))
sys.path.insert(0, str(REPO / "tests" / "bench"))

import cut  # noqa: E402
from lab import under_load  # noqa: E402
from lab_nodes import GatewayLab, sh  # noqa: E402

PREFIX = "gpufleet-interrupt-bench-"
PORTS = (22600, 31600, 30480, None)  # SSH, the servers, the gateway, no Prometheus
FIRST_API_PORT = PORTS[1]
KEY = "bench-gateway-admin-key"
STEPS = ("leaving_rotation", "drain", "files_written", "restarted", "rollback")
BROKEN = "/models/Qwen3.6-27B-DFlash-broken"
GROUP_VARS = {"sglang_dflash_speed_probe_max_new_tokens": 32, "sglang_dflash_block_size": 16}


def workers_ready(url):
    request = urllib.request.Request(url + "/workers", headers={"Authorization": "Bearer %s" % KEY})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return sum(1 for w in json.loads(answer.read())["workers"] if w["status"] == "ready")


def host_window(name, env):
    """The draft window in the host's drop-in, and whether an intent is left on it."""
    dropin = sh(["podman", "exec", name, "cat", "/etc/systemd/system/sglang.service.d/90-gpufleet-sglang.conf"],
                env=env, check=False).stdout
    words = dropin.split()
    window = words[words.index("--speculative-draft-window-size") + 1] if "--speculative-draft-window-size" in words \
        else None
    intent = sh(["podman", "exec", name, "test", "-e", "/var/lib/gpufleet-sglang/sglang.service.intent.json"],
                env=env, check=False).returncode == 0
    return window, intent


def one_step(step, window, names, inv, env, url, clients):
    """Cut the rollout at step on the first host, run it again; (resumed, failed requests, the cut's seconds)."""
    extra = {"sglang_dflash_draft_window_size": window, "sglang_dflash_serial": 1}
    if step == "rollback":
        extra["sglang_dflash_draft_model_path"] = BROKEN
    argv = ["ansible-playbook", "-i", str(inv), str(REPO / "playbooks" / "deploy_dflash.yml"), "-e", json.dumps(extra)]
    host = cut.Host(names[0], "http://127.0.0.1:%d" % FIRST_API_PORT)
    condition = cut.steps(host, url, KEY, "--speculative-draft-window-size %d" % window)[step]
    before = dict((name, host_window(name, env)[0]) for name in names)
    outputs = {}

    def both():
        outputs["cut"] = cut.run_cut(argv, env, condition)
        return sh(argv, env=env, check=False)

    rerun, counts, _seconds = under_load(url, both, clients=clients, long_tokens=400, drain_clients=4,
                                         drain_tokens=6000)
    _output, was_cut, seconds = outputs["cut"]
    after = dict((name, host_window(name, env)) for name in names)
    if step == "rollback":
        settled = after[names[0]][0] == before[names[0]] and all(after[n][0] == before[n] for n in names[1:])
    else:
        settled = all(w == str(window) for w, _intent in after.values()) and rerun.returncode == 0
    resumed = was_cut and settled and not any(i for _w, i in after.values()) and workers_ready(url) == len(names)
    print("%s: cut=%s after %.1fs, rerun rc=%d, resumed=%s, requests=%d failed=%d" % (
        step, was_cut, seconds, rerun.returncode, resumed, counts["requests"], counts["failed"]), flush=True)
    return resumed, counts["failed"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="leave the containers and the gateway")
    args = parser.parse_args()
    with GatewayLab(PREFIX, args.hosts, PORTS, KEY, GROUP_VARS, args.keep) as lab:
        resumed, failed = 0, 0
        for number, step in enumerate(STEPS):
            ok, lost = one_step(step, 2048 + 64 * number, lab.names, lab.inventory, lab.env, lab.url, args.clients)
            resumed, failed = resumed + ok, failed + lost
        print("interrupt steps=%d hosts=%d resumed=%d/%d workers_ready_after=%d/%d failed_requests=%d"
              % (len(STEPS), args.hosts, resumed, len(STEPS), workers_ready(lab.url), args.hosts, failed))


if __name__ == "__main__":
    os.environ.setdefault("ANSIBLE_NOCOLOR", "1")
    main()
