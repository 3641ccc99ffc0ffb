"""Benchmark the drafter's delivery (playbooks/fetch_drafter.yml) to N lab hosts from the lab's mirror.

    .venv/bin/python tests/bench/drafter_bench.py [--hosts 32] [--forks 32] [--mb 4] [--repeat 3] [--keep]

Lab nodes (tests/containers/build-node-image.sh) are started as podman containers, each with its SSH port published
on 127.0.0.1 only. The lab's Hugging Face mirror (tests/containers/lab-olah.sh: olah, offline, on 127.0.0.1) serves
a drafter repo made here (config.json + --mb MiB of safetensors); each node reaches it through its SSH
connection's remote forward. fetch_drafter.yml runs twice over SSH as ops with become: the first run fetches
and verifies the drafter on every host, the second must transfer nothing. The last line:

    drafter hosts=N bytes_from_mirror=B per_host_s=S rerun_changed=C

B: the bytes the hosts took from the mirror (the sum of each host's bytes_transferred); S: the first run's wall
seconds divided by N (hosts fetch sglang_dflash_drafter_fetch_hosts at a time); C: changed tasks of the rerun,
all hosts together (0 when no host transferred or changed anything). Not a test: nothing is asserted.

The baseline: the same files fetched by the same ansible (forks, SSH options, become, pipelining) with curl on each
host into a scratch directory: no manifest, no verification, no lock, no rename, no disk check. With --repeat R, each
round removes the store (and the scratch directory) on every host first, then runs the baseline, the first fetch and
the rerun; the line before the last gives the medians and the ratios to the baseline's median:

    drafter medians hosts=N rounds=R baseline_s=... first_s=... rerun_s=... first/baseline=... rerun/baseline=...
"""

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))

from lab_nodes import lab_environment, sh, start_nodes, write_inventory  # noqa: E402

PREFIX = "gpufleet-drafterbench-"
FIRST_PORT = 23400
MIRROR_PORT = 18150
DRAFTER = "lab/bench-dflash"


def inventory(path, names, keys, fetch_hosts):
    hosts = dict((name, {"ansible_port": FIRST_PORT + i}) for i, name in enumerate(names))
    # The nodes reach the controller's mirror through the SSH connection (-R).
    write_inventory(path, hosts, keys, {
        "sglang_dflash_drafter_endpoint": "http://127.0.0.1:%d" % MIRROR_PORT,
        "sglang_dflash_drafter_fetch_hosts": fetch_hosts,
    }, ssh_args="-R 127.0.0.1:%d:127.0.0.1:%d" % (MIRROR_PORT, MIRROR_PORT))


def fetch(inv, env, forks, commit):
    argv = ["ansible-playbook", "-i", str(inv), "-f", str(forks), str(REPO / "playbooks" / "fetch_drafter.yml"),
            "-e", json.dumps({"sglang_dflash_drafter": {"repo": DRAFTER, "revision": commit}})]
    start = time.perf_counter()
    proc = sh(argv, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("fetch_drafter.yml failed:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-2000:]))
    fetched = sum(int(b) for b in re.findall(r"verified, fetched (\d+) bytes", proc.stdout))
    changed = sum(int(c) for c in re.findall(r"^\S+\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.M))
    return wall, fetched, changed


def baseline(inv, env, forks, commit, files):
    """The same bytes with curl on each host (no verification, nothing atomic): the wall seconds."""
    base = "http://127.0.0.1:%d/%s/resolve/%s/" % (MIRROR_PORT, DRAFTER, commit)
    fetches = " ".join("-o %s %s%s" % (name, base, name) for name in files)
    argv = ["ansible", "-i", str(inv), "all", "-f", str(forks), "-b", "-m", "ansible.builtin.shell", "-a",
            "rm -rf /tmp/drafter-plain && mkdir -p /tmp/drafter-plain && cd /tmp/drafter-plain && "
            "curl -fsSL --create-dirs %s" % fetches]
    start = time.perf_counter()
    proc = sh(argv, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("the baseline failed:\n%s" % proc.stdout[-3000:])
    return wall


def clean(inv, env, forks):
    sh(["ansible", "-i", str(inv), "all", "-f", str(forks), "-b", "-m", "ansible.builtin.shell", "-a",
        "rm -rf /var/lib/gpufleet-sglang/drafters /tmp/drafter-plain"], env=env)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--forks", type=int, default=32)
    parser.add_argument("--fetch-hosts", type=int, default=8, help="sglang_dflash_drafter_fetch_hosts")
    parser.add_argument("--mb", type=int, default=4, help="MiB of safetensors in the drafter repo")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (store removed first); medians printed")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args()
    env, keys = lab_environment()
    work = Path(tempfile.mkdtemp(prefix="drafter-bench-"))
    lab = str(REPO / "tests" / "containers" / "lab-olah.sh")
    names = start_nodes(PREFIX, args.hosts, FIRST_PORT, keys, env)
    try:
        commit = sh([lab, "repo", work / "olah", DRAFTER, "16", args.mb, "2"], env=env).stdout.strip()
        sh([lab, "start", work / "olah", MIRROR_PORT], env=env)
        inv = work / "hosts.json"
        inventory(inv, names, keys, args.fetch_hosts)
        reach = sh(["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.wait_for_connection",
                    "-a", "timeout=180"], env=env, check=False)
        if reach.returncode != 0:
            sys.exit("lab nodes did not come up:\n%s" % reach.stdout[-3000:])
        files = sh(["git", "-C", work / "olah" / "mirrors" / "models" / DRAFTER, "ls-files"],
                   env=env).stdout.split()
        rounds = []
        for _round in range(args.repeat):
            clean(inv, env, args.forks)
            plain = baseline(inv, env, args.forks, commit, files)
            wall, fetched, _changed = fetch(inv, env, args.forks, commit)
            wall2, fetched2, changed2 = fetch(inv, env, args.forks, commit)
            rounds.append((plain, wall, wall2))
            print("round %d: baseline %.1f s, first run %.1f s (%d bytes), rerun %.1f s (%d bytes fetched, "
                  "changed=%d), %d hosts" % (len(rounds), plain, wall, fetched, wall2, fetched2, changed2, args.hosts))
        plain, first, rerun = (statistics.median(r[i] for r in rounds) for i in range(3))
        print("drafter medians hosts=%d rounds=%d baseline_s=%.1f first_s=%.1f rerun_s=%.1f first/baseline=%.2f "
              "rerun/baseline=%.2f" % (args.hosts, len(rounds), plain, first, rerun, first / plain, rerun / plain))
        print("drafter hosts=%d bytes_from_mirror=%d per_host_s=%.2f rerun_changed=%d"
              % (args.hosts, fetched, first / args.hosts, changed2))
    finally:
        subprocess.run([lab, "stop", str(work / "olah")], check=False)
        if not args.keep:
            sh(["podman", "rm", "-f"] + names, env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
