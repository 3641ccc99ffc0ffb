"""What a deploy with nothing to do costs on the README's lab host, beside Ansible's own floor there.

    .venv/bin/python tests/bench/noop_bench.py [--repeat 3] [--top 12]

First scripts/deploy.sh once, as the README runs it (it starts, provisions and switches the lab host gpufleet-local
when that is not done yet). Then, round by round, taking turns on the same host with the same ansible.cfg and
collection: `ansible -m ansible.builtin.setup` (the baseline: one module run), playbooks/deploy_dflash.yml alone, and
the whole scripts/deploy.sh. Each deploy must report changed=0 (else the bench stops: it would not be a no-op). Then
one more playbook run under ansible.posix.profile_tasks, whose slowest tasks are printed, and the last line:

    noop host=gpufleet-local setup=S deploy_playbook=P deploy_sh=W deploy_playbook/setup=R1 deploy_sh/setup=R2

(wall seconds, medians of --repeat rounds). Not a test: nothing is asserted.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INVENTORY = "inventories/local"
PLAYBOOK = "playbooks/deploy_dflash.yml"
RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
PROFILE_LINE = re.compile(r"^(.+?) -+ (\d+\.\d+)s$", re.M)


def environment():
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PATH="%s:%s" % (REPO / ".venv" / "bin", os.environ["PATH"]),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache" / "collections"))
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    return env


def timed(argv, env):
    start = time.monotonic()
    run = subprocess.run([str(a) for a in argv], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    return time.monotonic() - start, run


def nothing_changed(name, run):
    recap = RECAP.findall(run.stdout)
    if run.returncode != 0 or not recap or any(changed != "0" or unreachable != "0" or failed != "0"
                                               for _host, changed, unreachable, failed in recap):
        printed = run.stderr + run.stdout[-3000:]
        sys.exit("%s was not a run with nothing to do (rc=%d):\n%s" % (name, run.returncode, printed))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=12, help="the slowest tasks of the profiled run to print")
    args = parser.parse_args()
    env = environment()
    first, run = timed(["scripts/deploy.sh"], env)
    if run.returncode != 0:
        sys.exit("scripts/deploy.sh failed (rc=%d):\n%s%s" % (run.returncode, run.stderr, run.stdout[-3000:]))
    print("first scripts/deploy.sh: %.1f s (it sets up what is not in place yet)" % first, flush=True)
    times = {"setup": [], "deploy_playbook": [], "deploy_sh": []}
    for number in range(1, args.repeat + 1):
        took, run = timed(["ansible", "-i", INVENTORY, "all", "-m", "ansible.builtin.setup"], env)
        if run.returncode != 0:
            sys.exit("ansible -m setup failed:\n%s%s" % (run.stderr, run.stdout[-2000:]))
        times["setup"].append(took)
        took, run = timed(["ansible-playbook", "-i", INVENTORY, PLAYBOOK], env)
        nothing_changed(PLAYBOOK, run)
        times["deploy_playbook"].append(took)
        took, run = timed(["scripts/deploy.sh"], env)
        nothing_changed("scripts/deploy.sh", run)
        times["deploy_sh"].append(took)
        print("round %d: %s" % (number, " ".join("%s=%.2f" % (k, v[-1]) for k, v in times.items())), flush=True)
    profiled = dict(env, ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks", PROFILE_TASKS_TASK_OUTPUT_LIMIT="100")
    took, run = timed(["ansible-playbook", "-i", INVENTORY, PLAYBOOK], profiled)
    nothing_changed(PLAYBOOK, run)
    tasks = sorted(((float(s), name.strip()) for name, s in PROFILE_LINE.findall(run.stdout)), reverse=True)
    print("profiled %s: %.2f s, %d tasks timed, %.2f s in them; the slowest:" % (
        PLAYBOOK, took, len(tasks), sum(s for s, _n in tasks)))
    for seconds, name in tasks[:args.top]:
        print("  %6.2f s  %s" % (seconds, name))
    median = {k: statistics.median(v) for k, v in times.items()}
    print("noop host=gpufleet-local setup=%.2f deploy_playbook=%.2f deploy_sh=%.2f deploy_playbook/setup=%.2f "
          "deploy_sh/setup=%.2f" % (median["setup"], median["deploy_playbook"], median["deploy_sh"],
                                    median["deploy_playbook"] / median["setup"], median["deploy_sh"] / median["setup"]))


if __name__ == "__main__":
    main()
