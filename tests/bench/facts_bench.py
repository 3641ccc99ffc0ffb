"""Benchmark playbooks/gather_facts.yml cold (empty cli_flags caches) against warm, in one run.

    .venv/bin/python tests/bench/facts_bench.py [--hosts 8] [--forks 8]

N inventory hosts on the local connection, each an SGLang host of its own (the runnable 0.5.23 test
venv, its own cli_flags cache directory, the fake nvidia-smi on PATH). Prints wall seconds and
seconds per host for both runs, then the ratio as the last line. Not a test: nothing is asserted.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from helpers import collections_root, help_venv  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--forks", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="facts-bench-"))
    python = str(help_venv("0.5.23") / "bin" / "python")
    bindir = work / "bin"
    bindir.mkdir()
    os.symlink(REPO / "tests" / "containers" / "fake-nvidia-smi", bindir / "nvidia-smi")
    hosts = {}
    for i in range(args.hosts):
        name = "bench-%02d" % i
        hosts[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "ansible_become": False,
            "sglang_dflash_python": python,
            "sglang_dflash_unit_dir": str(work / "units" / name),
            "sglang_dflash_flags_cache": str(work / "cache" / name),
            "sglang_dflash_model_path": "/models/Qwen3.6-27B",
            "sglang_dflash_draft_model_path": "/models/Qwen3.6-27B-DFlash",
        }
    inventory = work / "hosts.json"
    inventory.write_text(json.dumps({"all": {"children": {"gpu_inference": {"hosts": hosts}}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root()),
               PATH="%s:%s" % (bindir, os.environ["PATH"]),
               GPUFLEET_FAKE_GPUS=str(REPO / "tests" / "fixtures" / "nvidia-smi" / "h100x8.gpus.csv"),
               ANSIBLE_NOCOLOR="1")
    argv = ["ansible-playbook", "-i", str(inventory), "--forks", str(args.forks),
            str(REPO / "playbooks" / "gather_facts.yml"), "-e", "sglang_fleet_report_dir=%s" % (work / "report")]

    def run():
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit("gather_facts failed:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-2000:]))
        rows = json.loads((work / "report" / "fleet-report.json").read_text())["hosts"]
        # Seconds spent inside the facts modules (what the cache can change), summed per host.
        inside = [float(r["facts"]["package"]["elapsed_s"]) + float(r["facts"]["implementation"]["elapsed_s"])
                  + float(r["facts"]["flags"]["elapsed_s"]) for r in rows]
        return elapsed, sum(inside) / len(inside)

    (cold, cold_inside), (warm, warm_inside) = run(), run()
    if os.environ.get("FACTS_BENCH_PROFILE"):
        env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
        env["PROFILE_TASKS_TASK_OUTPUT_LIMIT"] = "30"
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        print(proc.stdout[-3500:])
    report = json.loads((work / "report" / "fleet-report.json").read_text())
    cached = sum(1 for row in report["hosts"] if row["facts"]["flags"]["cached"])
    print("hosts: %d, forks: %d, python: %s" % (args.hosts, args.forks, python))
    print("cold: %.2f s wall, %.2f s per host" % (cold, cold / args.hosts))
    print("warm: %.2f s wall, %.2f s per host (%d/%d cache hits)" % (warm, warm / args.hosts, cached, args.hosts))
    print("inside the facts modules, per host: cold %.2f s, warm %.2f s" % (cold_inside, warm_inside))
    print("cold/warm=%.1f modules-cold/warm=%.1f" % (cold / warm, cold_inside / warm_inside))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
