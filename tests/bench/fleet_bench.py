"""Benchmark playbooks/gather_facts.yml and a deploy with nothing to do on N SSH hosts against `ansible -m
ansible.builtin.setup`, and a rolling deploy.

    .venv/bin/python tests/bench/fleet_bench.py [--hosts 8 16 32] [--forks 16] [--method auto] [--no-noop]
                                                [--rolling 32] [--keep]

Lab nodes (tests/containers/build-node-image.sh) are started as podman containers, each with its SSH
port published on 127.0.0.1 only, and provisioned over SSH without starting their services (facts
need none). Memory and ports are checked first: when the nodes do not fit, the bench
says so and how many would. For each N, on the same N hosts, with the same forks, become, pipelining and
SSH options, in one run: the baseline `ansible -m setup`, then gather_facts.yml with the on-host caches
removed (cold), then again (warm). One line per N, the largest last:

    hosts=N setup=S cold=C warm=W cold/setup=R1 warm/setup=R2 cpu_cold/setup=R3 cpu_warm/setup=R4 ctl_cold/setup=R5
    ctl_warm/setup=R6

S, C, W: wall seconds; R3, R4: the CPU seconds each spent (the controller's processes and the nodes' containers,
from their cgroups) over setup's, which other jobs on a shared machine disturb far less than the wall time; R5, R6:
the controller's CPU alone (ansible, its forks, ssh) over setup's. Here every node shares this machine's cores, so
the nodes' CPU is wall time; on a fleet each host runs its module on its own CPU, and the controller's is what grows
with the host count.
Then, for each N (unless --no-noop), after every gather: the nodes' services started (the stand-in builds SGLang's
parser from the release's source there, about 40 MB a server, so that a hundred fit one machine), switched once by
playbooks/deploy_dflash.yml (serial 100%, no speed probe), and in each round `ansible -m setup` beside the same
deploy again, which has nothing to do (it must report changed=0, or the bench stops):

    noop hosts=N setup=S noop_deploy=D noop_deploy/setup=R cpu_noop_deploy/setup=R2

and the last line, the largest N's ratios side by side:

    fleet hosts=N warm/setup=X cold/setup=Y noop_deploy/setup=Z
With --rolling M: the services of the first M nodes are started, and playbooks/deploy_dflash.yml switches them in
batches of --serial (25%), the wall time and each batch's time printed:

    rolling hosts=M serial=25% batches=B wall_s=T per_batch_s=t1,t2,.. batch_median_s=tm

Not a test: nothing is asserted. The machine is shared and noisy: each figure is the median of --repeat runs.
"""

import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "bench"))

from lab_nodes import STANDIN_VARS, lab_environment, sh, start_nodes, write_inventory  # noqa: E402

FIRST_PORT = 22300
PREFIX = "gpufleet-bench-"
# Measured on the lab (cgroup memory of 32 idle nodes: 28 MiB each; a module run adds its Python and the
# service's interpreter probe on the forks' nodes; a started node runs the stand-in server and a training job).
IDLE_NODE_MIB, SERVING_NODE_MIB, FORK_MIB, CONTROLLER_MIB = 40, 400, 120, 1500
# A node serving the stand-in with the parser built from the source (gpufleet_lab_standin_parser: source).
LIGHT_SERVING_NODE_MIB = 110


def available_mib():
    with open("/proc/meminfo") as handle:
        return int(re.search(r"MemAvailable:\s+(\d+)", handle.read()).group(1)) // 1024


def room_for(count, serving, forks, existing, light=0):
    """(fits, message): whether `count` nodes (`serving` of them with their services started) fit this machine's
    memory and ports, with the largest count that would fit when they do not. What cannot be told beforehand (a
    kernel limit such as inotify instances on another machine) shows when the nodes start: main() names the nodes
    that did not come up."""
    new = max(0, count - existing)
    per_node = IDLE_NODE_MIB
    need = per_node * new + (SERVING_NODE_MIB - IDLE_NODE_MIB) * serving + FORK_MIB * forks + CONTROLLER_MIB \
        + (LIGHT_SERVING_NODE_MIB - IDLE_NODE_MIB) * light
    have = available_mib()
    problems = []
    if need > have:
        spare = have - FORK_MIB * forks - CONTROLLER_MIB - (SERVING_NODE_MIB - IDLE_NODE_MIB) * serving
        most = existing + max(0, spare // (per_node + (LIGHT_SERVING_NODE_MIB - IDLE_NODE_MIB) * bool(light)))
        problems.append("memory: %d nodes need about %d MiB (%d MiB per node, %d per started node, %d per fork, %d for "
                        "the controller) and %d MiB are available: at most about %d nodes fit"
                        % (count, need, per_node, SERVING_NODE_MIB, FORK_MIB, CONTROLLER_MIB, have, most))
    busy = []
    for i in range(existing, count):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", FIRST_PORT + i)) == 0:
                busy.append(FIRST_PORT + i)
    if busy:
        problems.append("ports: 127.0.0.1:%s already in use by something else (another bench or lab?); the nodes "
                        "use %d-%d" % (",".join(map(str, busy[:10])), FIRST_PORT, FIRST_PORT + count - 1))
    return not problems, "; ".join(problems)


def kernel_limits():
    """The kernel limits a node's systemd needs, as they are now, and the command that raises them."""
    values = []
    for name in ("fs.inotify.max_user_instances", "fs.inotify.max_user_watches"):
        with open("/proc/sys/" + name.replace(".", "/")) as handle:
            values.append("%s = %s" % (name, handle.read().strip()))
    return "%s; tests/containers/lab-sysctl.sh raises them" % ", ".join(values)


def inventory(path, names, keys, method, extra=None):
    hosts = dict((name, {"ansible_port": FIRST_PORT + i}) for i, name in enumerate(names))
    group_vars = dict(STANDIN_VARS, gpufleet_lab_start_services=False, sglang_dflash_flags_method=method)
    group_vars.update(extra or {})
    write_inventory(path, hosts, keys, group_vars)


class CpuMeter:
    """CPU seconds of this process's children (ansible, its forks, ssh) and of the nodes' containers (cgroup v1
    cpuacct or v2 cpu.stat); None for the nodes where neither can be read."""

    def __init__(self, names, env):
        ids = sh(["podman", "inspect", "-f", "{{.Id}}"] + names, env=env, check=False).stdout.split()
        self.files = []
        for cid in ids:
            for path in ("/sys/fs/cgroup/cpuacct/libpod_parent/libpod-%s/cpuacct.usage" % cid,
                         "/sys/fs/cgroup/cpuacct/machine.slice/libpod-%s.scope/cpuacct.usage" % cid,
                         "/sys/fs/cgroup/machine.slice/libpod-%s.scope/cpu.stat" % cid,
                         "/sys/fs/cgroup/libpod_parent/libpod-%s/cpu.stat" % cid):
                if os.path.exists(path):
                    self.files.append(path)
                    break
        self.complete = bool(ids) and len(self.files) == len(ids)

    def nodes(self):
        if not self.complete:
            return None
        total = 0.0
        for path in self.files:
            with open(path) as handle:
                text = handle.read()
            total += int(text) / 1e9 if path.endswith("usage") else int(
                re.search(r"usage_usec (\d+)", text).group(1)) / 1e6
        return total

    @staticmethod
    def controller():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime


def timed(argv, env, meter):
    """(wall seconds, CPU seconds of the controller and the nodes or None, the controller's CPU seconds)."""
    proc, measured = measured_run(argv, env, meter)
    if proc.returncode != 0:
        sys.exit("%s failed:\n%s\n%s" % (" ".join(map(str, argv[:6])), proc.stdout[-3000:], proc.stderr[-2000:]))
    return measured


def measured_run(argv, env, meter):
    """argv's process and (wall seconds, CPU seconds of the controller and the nodes or None, the controller's)."""
    nodes0, ctl0 = meter.nodes(), meter.controller()
    start = time.perf_counter()
    proc = sh(argv, env=env, check=False)
    elapsed = time.perf_counter() - start
    nodes1, controller = meter.nodes(), meter.controller() - ctl0
    return proc, (elapsed, controller + (nodes1 - nodes0) if nodes0 is not None else None, controller)


def rolling(inv, env, forks, serial):
    """Wall seconds of deploy_dflash.yml and of each batch: from one batch's play banner to the next one's (the
    last batch ends at the summary play's banner)."""
    argv = ["ansible-playbook", "-i", str(inv), "-f", str(forks), str(REPO / "playbooks" / "deploy_dflash.yml"),
            "-e", json.dumps({"sglang_dflash_serial": serial})]
    banners, tail = [], []
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    for line in proc.stdout:
        if line.startswith("PLAY ["):
            banners.append((time.perf_counter(), line))
        tail = (tail + [line])[-200:]
    proc.wait()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("the rolling deploy failed:\n%s" % "".join(tail)[-4000:])
    marks = [t for t, line in banners if line.startswith("PLAY [Roll out")]
    end = next((t for t, line in banners if line.startswith("PLAY [Summarise")), start + wall)
    return wall, [b - a for a, b in zip(marks, marks[1:] + [end])]


def unswitched_hosts(output, names):
    """The hosts whose recap shows no change: the switch before the no-op rounds must switch every new host."""
    changed = dict(re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", output, re.M))
    return [name for name in names if int(changed.get(name, 0)) == 0]


def noop_rounds(inv, env, forks, meter, repeat):
    """Each round `ansible -m setup` and deploy_dflash.yml with nothing to do (it must change nothing), side by side:
    [timed's (wall, CPU, controller's CPU) of setup], [the same of the deploy]."""
    setup = ["ansible", "-i", inv, "all", "-f", forks, "-m", "ansible.builtin.setup"]
    deploy = ["ansible-playbook", "-i", inv, "-f", forks, REPO / "playbooks" / "deploy_dflash.yml"]
    base, noop = [], []
    for _round in range(repeat):
        base.append(timed(setup, env, meter))
        proc, measured = measured_run(deploy, env, meter)
        changed = [int(n) for n in re.findall(r"^\S+\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.M)]
        if proc.returncode != 0 or not changed or any(changed):
            sys.exit("the deploy with nothing to do failed or changed something:\n%s" % proc.stdout[-4000:])
        noop.append(measured)
    return base, noop


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="*", default=[8, 16, 32])
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--method", default="auto", help="sglang_dflash_flags_method (auto, source, help, cross_check)")
    parser.add_argument("--rolling", type=int, default=0, metavar="M",
                        help="also switch the first M nodes with deploy_dflash.yml in batches of --serial")
    parser.add_argument("--serial", default="25%")
    parser.add_argument("--no-noop", dest="noop", action="store_false",
                        help="leave out the deploy with nothing to do")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args()
    count = max(args.hosts + [args.rolling])
    env = dict(os.environ, CONTAINERS_CONF=str(REPO / "tests" / "containers" / "containers.conf"))
    existing = len([n for n in sh(["podman", "ps", "--format", "{{.Names}}"], env=env, check=False).stdout.split()
                    if n.startswith(PREFIX) and n[len(PREFIX):].isdigit() and int(n[len(PREFIX):]) < count])
    light = max(args.hosts) if args.noop and args.hosts else 0
    fits, why = room_for(count, args.rolling, args.forks, existing, light)
    if not fits:
        sys.exit("%d lab nodes do not fit this machine: %s" % (count, why))
    env, keys = lab_environment()
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    names = start_nodes(PREFIX, count, FIRST_PORT, keys, env)
    try:
        inv = work / "all.json"
        inventory(inv, names, keys, args.method)
        reach = sh(["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.wait_for_connection",
                    "-a", "timeout=180"], env=env, check=False)
        if reach.returncode != 0:
            down = sorted(set(re.findall(r"^(%s\d+) \| (?:FAILED|UNREACHABLE)" % PREFIX, reach.stdout, re.M)))
            sys.exit("%d of %d lab nodes did not come up (%s): this machine runs at most about %d of them now (%s); "
                     "see `podman logs %s`" % (len(down), count, ", ".join(down[:10]), count - len(down),
                                               kernel_limits(), down[0] if down else names[-1]))
        if args.hosts:  # (the rolling deploy provisions its nodes with their services started)
            sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "tests" / "containers" / "provision.yml"],
               env=env)
        lines = []
        for hosts in sorted(args.hosts):
            inv = work / ("hosts-%d.json" % hosts)
            inventory(inv, names[:hosts], keys, args.method)
            meter = CpuMeter(names[:hosts], env)
            # The same forks, become, pipelining and SSH options (the inventory's) for the baseline and the facts.
            setup = ["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.setup"]
            clear = ["ansible", "-i", inv, "all", "-f", args.forks, "-m", "ansible.builtin.file",
                     "-a", "path=/var/cache/gpufleet-sglang state=absent"]
            facts = ["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "playbooks" / "gather_facts.yml",
                     "-e", "sglang_fleet_report_dir=%s" % (work / "report")]
            base, cold, warm = [], [], []
            for _round in range(args.repeat):
                base.append(timed(setup, env, meter))
                sh(clear, env=env)
                cold.append(timed(facts, env, meter))
                warm.append(timed(facts, env, meter))
            s, c, w = (statistics.median(x[0] for x in runs) for runs in (base, cold, warm))
            line = ("hosts=%d setup=%.1f cold=%.1f warm=%.1f cold/setup=%.2f warm/setup=%.2f"
                    % (hosts, s, c, w, c / s, w / s))
            if meter.complete:
                cs, cc, cw = (statistics.median(x[1] for x in runs) for runs in (base, cold, warm))
                line += " cpu_cold/setup=%.2f cpu_warm/setup=%.2f" % (cc / cs, cw / cs)
            ks, kc, kw = (statistics.median(x[2] for x in runs) for runs in (base, cold, warm))
            line += " ctl_cold/setup=%.2f ctl_warm/setup=%.2f" % (kc / ks, kw / ks)
            lines.append((hosts, c / s, w / s))
            print(line, flush=True)
        # After every gather (a switched service would add its probe request to the report): the same N hosts
        # serving and switched, smallest N first (the larger sets start only their new nodes' services).
        noop_ratio, switched = None, 0  # (the nodes before `switched` were switched for a smaller N)
        for hosts in sorted(args.hosts) if args.noop else []:
            inv = work / ("noop-%d.json" % hosts)
            inventory(inv, names[:hosts], keys, args.method, {
                "gpufleet_lab_start_services": True, "gpufleet_lab_start_installed_services": True,
                "gpufleet_lab_standin_parser": "source",
                "sglang_dflash_speed_probe": False})
            sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "tests" / "containers" / "provision.yml"],
               env=env)
            switch = sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "playbooks" / "deploy_dflash.yml",
                         "-e", json.dumps({"sglang_dflash_serial": "100%"})], env=env)
            (work.parent / ("fleet-bench-switch-%d.log" % hosts)).write_text(switch.stdout)
            unswitched = unswitched_hosts(switch.stdout, names[switched:hosts])
            switched = hosts
            if unswitched:
                sys.exit("the switch before the no-op rounds left %d of %d hosts unswitched (%s); its output: %s"
                         % (len(unswitched), hosts, ", ".join(unswitched[:8]),
                            work.parent / ("fleet-bench-switch-%d.log" % hosts)))
            meter = CpuMeter(names[:hosts], env)
            base, noop = noop_rounds(inv, env, args.forks, meter, args.repeat)
            s, d = statistics.median(x[0] for x in base), statistics.median(x[0] for x in noop)
            noop_ratio = d / s
            line = "noop hosts=%d setup=%.1f noop_deploy=%.1f noop_deploy/setup=%.2f" % (hosts, s, d, noop_ratio)
            if meter.complete:
                line += " cpu_noop_deploy/setup=%.2f" % (statistics.median(x[1] for x in noop)
                                                         / statistics.median(x[1] for x in base))
            print(line, flush=True)
        if args.hosts:
            hosts, cold_ratio, warm_ratio = lines[-1]
            print("fleet hosts=%d warm/setup=%.2f cold/setup=%.2f noop_deploy/setup=%s" % (
                hosts, warm_ratio, cold_ratio, "%.2f" % noop_ratio if noop_ratio is not None else "n/a"), flush=True)
        if args.rolling:
            inv = work / "rolling.json"
            inventory(inv, names[:args.rolling], keys, args.method,
                      {"gpufleet_lab_start_services": True, "sglang_dflash_speed_probe_max_new_tokens": 32})
            sh(["ansible-playbook", "-i", inv, "-f", args.forks, REPO / "tests" / "containers" / "provision.yml"],
               env=env)
            wall, batches = rolling(inv, env, args.forks, args.serial)
            print("rolling hosts=%d serial=%s batches=%d wall_s=%.1f per_batch_s=%s batch_median_s=%.1f"
                  % (args.rolling, args.serial, len(batches), wall, ",".join("%.1f" % b for b in batches),
                     statistics.median(batches) if batches else 0.0), flush=True)
    finally:
        if not args.keep:
            sh(["podman", "rm", "-f"] + names, env=env, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
