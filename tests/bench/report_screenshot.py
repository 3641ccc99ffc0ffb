"""A screenshot of the HTML fleet report of a real gather of lab nodes, for the docs (docs/fleet-report.png).

    .venv/bin/python tests/bench/report_screenshot.py [--hosts 100] [--out docs/fleet-report.png] [--keep]

Starts --hosts lab nodes (podman containers of tests/containers/build-node-image.sh, SSH on 127.0.0.1, as the
fleet bench does), provisions them as operators' boxes of a mixed fleet - most on SGLang 0.5.23, some on 0.5.16,
0.5.11 and 0.5.6 (no DFLASH), with the recorded GPU inventories of H100, A100, L40S/4090 and H200 boxes, a few
with a drafter missing or a block size the drafter was not trained with - plus two inventory hosts no node
answers. Then playbooks/gather_facts.yml gathers them as a user runs it, and headless Chromium takes the top of
the fleet-report.html it wrote. Every row is what the collection reported; nothing is made up. --json PATH keeps
the report's fleet-report.json too.
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))
sys.path.insert(0, str(REPO / "tests" / "integration"))

from lab_nodes import STANDIN_VARS, lab_environment, sh, start_nodes, write_inventory  # noqa: E402
from test_fleet_report_html import chromium  # noqa: E402

FIRST_PORT = 22500
PREFIX = "gpufleet-shot-"
# Each node's variables by its index modulo 8, so that a small lab has the whole mix: three plain 0.5.23 boxes with
# H100s, then 0.5.6 (no DFLASH) on A100s, 0.5.11 on L40S/4090s, 0.5.16 on an H200, a drafter never copied to the
# host, a block size the drafter was not trained with.
MIX = ({}, {}, {},
       {"gpufleet_lab_release": "0.5.6", "gpufleet_lab_gpus": "a100x4.gpus.csv"},
       {"gpufleet_lab_release": "0.5.11", "gpufleet_lab_gpus": "l40s-4090.gpus.csv"},
       {"gpufleet_lab_release": "0.5.16", "gpufleet_lab_gpus": "h200x1.gpus.csv"},
       {"sglang_dflash_draft_model_path": "/models/Qwen3.6-27B-DFlash-not-copied"},
       {"sglang_dflash_block_size": 8})


def host_vars(i):
    return dict(MIX[i % len(MIX)])


def inventory(path, names, keys, unreachable):
    hosts = dict((name, dict(host_vars(i), ansible_port=FIRST_PORT + i)) for i, name in enumerate(names))
    for j in range(unreachable):  # inventory hosts no node answers (a port nothing listens on)
        hosts["%s%02d" % (PREFIX, len(names) + j)] = {"ansible_port": FIRST_PORT + len(names) + j}
    write_inventory(path, hosts, keys, dict(STANDIN_VARS, gpufleet_lab_start_services=False),
                    ssh_args="-o ConnectTimeout=5")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100, help="lab nodes to start")
    parser.add_argument("--unreachable", type=int, default=2, help="inventory hosts no node answers")
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--out", default=str(REPO / "docs" / "fleet-report.png"))
    parser.add_argument("--size", default="1600,1400", help="the browser window, WIDTH,HEIGHT")
    parser.add_argument("--json", help="also keep the report's fleet-report.json there")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args()
    env, keys = lab_environment()
    work = Path(tempfile.mkdtemp(prefix="report-shot-"))
    start = time.monotonic()
    names = start_nodes(PREFIX, args.hosts, FIRST_PORT, keys, env)
    try:
        inv = work / "fleet.json"
        inventory(inv, names, keys, 0)
        sh(["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.wait_for_connection",
            "-a", "timeout=300"], env=env)
        sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "tests" / "containers" / "provision.yml"], env=env)
        started = time.monotonic()
        inventory(inv, names, keys, args.unreachable)
        report = work / "report"
        sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "playbooks" / "gather_facts.yml",
            "-e", "sglang_fleet_report_dir=%s" % report], env=env)
        gathered = time.monotonic()
        raw = work / "raw.png"
        chromium("--screenshot=%s" % raw, "--window-size=%s" % args.size, (report / "fleet-report.html").as_uri())
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(raw, out)
        if args.json:
            shutil.copy(report / "fleet-report.json", args.json)
        rows = json.loads((report / "fleet-report.json").read_text())["hosts"]
        counts = {}
        for row in rows:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        print("%s: %d rows (%s) from %d lab nodes and %d unreachable hosts; nodes up and provisioned in %.0f s, "
              "gathered in %.0f s" % (out, len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                                      args.hosts, args.unreachable, started - start, gathered - started))
    except KeyboardInterrupt:
        sys.exit("interrupted")
    finally:
        if not args.keep:
            sh(["podman", "rm", "-f"] + names, env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
