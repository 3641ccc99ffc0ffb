"""Benchmark playbooks/gather_facts.yml on N SSH hosts against `ansible -m ansible.builtin.setup`.

    .venv/bin/python tests/bench/fleet_bench.py [--hosts 8 16 32] [--forks 16] [--method auto] [--keep]

Lab nodes (tests/containers/build-node-image.sh) are started as podman containers, each with its SSH
port published on 127.0.0.1 only, and provisioned over SSH without starting their services (facts
need none). For each N, on the same N hosts and in one run: the baseline `ansible -m setup`, then
gather_facts.yml with the on-host caches removed (cold), then again (warm). One line per N, the
largest last:  hosts=N setup=S cold=C warm=W cold/setup=R1 warm/setup=R2
Not a test: nothing is asserted. The machine is shared and noisy: each figure is the median of
--repeat runs.
"""

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))

from lab_nodes import lab_environment, sh, start_nodes  # noqa: E402

FIRST_PORT = 22300
PREFIX = "gpufleet-bench-"


def inventory(path, names, keys, method):
    hosts = dict((name, {"ansible_port": FIRST_PORT + i}) for i, name in enumerate(names))
    group_vars = {
        "ansible_host": "127.0.0.1", "ansible_user": "ops", "ansible_become": True,
        "ansible_ssh_private_key_file": "%s/id_ed25519" % keys, "ansible_pipelining": True,
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        "ansible_python_interpreter": "auto_silent",
        "gpufleet_lab_start_services": False, "gpufleet_lab_gpus": "h100x8.gpus.csv",
        "sglang_dflash_launcher_module": "gpufleet_standin", "sglang_dflash_flags_method": method,
        "sglang_dflash_model_path": "/models/Qwen3.6-27B",
        "sglang_dflash_draft_model_path": "/models/Qwen3.6-27B-DFlash",
        "sglang_dflash_stop_units": ["train-qwen.service"],
    }
    path.write_text(json.dumps({"all": {"children": {"gpu_inference": {"hosts": hosts, "vars": group_vars}}}}))


def timed(argv, env):
    start = time.perf_counter()
    proc = sh(argv, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("%s failed:\n%s\n%s" % (" ".join(map(str, argv[:6])), proc.stdout[-3000:], proc.stderr[-2000:]))
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--method", default="auto", help="sglang_dflash_flags_method (auto, source, help, cross_check)")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args()
    env, keys = lab_environment()
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    names = start_nodes(PREFIX, max(args.hosts), FIRST_PORT, keys, env)
    try:
        inv = work / "all.json"
        inventory(inv, names, keys, args.method)
        sh(["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.wait_for_connection",
            "-a", "timeout=120"], env=env)
        sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "tests" / "containers" / "provision.yml"], env=env)
        lines = []
        for count in sorted(args.hosts):
            inv = work / ("hosts-%d.json" % count)
            inventory(inv, names[:count], keys, args.method)
            setup = ["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.setup"]
            clear = ["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.file",
                     "-a", "path=/var/cache/gpufleet-sglang state=absent"]
            facts = ["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "playbooks" / "gather_facts.yml",
                     "-e", "sglang_fleet_report_dir=%s" % (work / "report")]
            base, cold, warm = [], [], []
            for _round in range(args.repeat):
                base.append(timed(setup, env))
                sh(clear, env=env)
                cold.append(timed(facts, env))
                warm.append(timed(facts, env))
            s, c, w = statistics.median(base), statistics.median(cold), statistics.median(warm)
            lines.append("hosts=%d setup=%.1f cold=%.1f warm=%.1f cold/setup=%.2f warm/setup=%.2f"
                         % (count, s, c, w, c / s, w / s))
            print(lines[-1], flush=True)
    finally:
        if not args.keep:
            sh(["podman", "rm", "-f"] + names, env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
