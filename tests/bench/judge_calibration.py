"""Calibration of the experiment judge (plugins/plugin_utils/_judge.py) on simulated fleets: how often it calls
a difference between identical settings (A/A), and how often it sees an arm 10 % slower (A/B).

    .venv/bin/python tests/bench/judge_calibration.py [--experiments 200] [--seed 1] [--quick]

Each experiment draws one interval sample per host and per interval, as the metrics seam gives them, and runs
the judge's evaluate() on them with its defaults: one arm (an experiment of one arm is a canary; each arm of
a larger experiment is judged against the control the same way) on a few hosts, the control on others.
The noise (NOISE, per interval of a host):
- decode tokens/s per running request: a coefficient of variation of 10 % (5 % and 15 % in the sensitivity
  rows), correlated between consecutive intervals of one host (AR(1), 0.3 from one 5-second interval to the
  next, 0.5 in a sensitivity row);
- each host its own offset (2 % standard deviation; 3 % in a sensitivity row), for the whole window;
- the load (running requests) swinging +-25 % over 20 minutes with 10 % of noise per interval, a request
  decoding slower the more requests run (elasticity 0.3);
- ITL p50 follows the decode speed, ITL p99 and TTFT p99 are noisier (log-normal, 25 % and 40 %), the
  acceptance length 8 %; no aborts, no errors.
A/A: the arm is the control's setting. A/B: the arm decodes 10 % slower (its ITLs 11 % longer).

The table gives, per fleet (hosts in the arm + in the control, interval, window), the rate of A/A experiments
where the objective was called better or worse ("A/A obj") and where the arm won or lost ("A/A arm": a false
difference), the rate of A/B experiments where the objective was called worse ("A/B obj": the regression seen)
and the arm lost ("A/B arm"), where the slower arm won all the same ("A/B won": rolled out), where a side had
too few samples, and the median width of the objective's interval (A/A, relative to the control). Then the
sensitivity of a few cells to the noise and to the judge's mitigations, two identical winning arms, and the
shortest window where a fleet sees the regression 8 times in 10. Not a test: nothing is asserted
(tests/unit/plugins/plugin_utils/test_judge.py asserts the goals on the same simulator).
"""

import argparse
import importlib.util
import math
import random
import statistics
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The judge is pure and imports nothing of the collection: load it from the tree, as it is.
_spec = importlib.util.spec_from_file_location("gpufleet_judge", REPO / "plugins" / "plugin_utils" / "_judge.py")
_judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_judge)

NOISE = {"cv": 0.10, "rho_5s": 0.3, "host_sd": 0.02, "load_swing": 0.25, "load_period_s": 1200.0,
         "load_noise": 0.10, "elasticity": 0.3, "speed": 40.0, "running": 16.0,
         "itl_p99_sd": 0.25, "ttft_p99_sd": 0.40, "accept_sd": 0.08}


def _host(rng, name, effect, times, load, noise, speculates):
    """The interval samples of one host: its offset for the window, AR(1) noise on the decode speed."""
    rho = noise["rho_5s"] ** ((times[1] - times[0]) / 5.0) if len(times) > 1 else 0.0
    offset = rng.gauss(0, noise["host_sd"])
    error = rng.gauss(0, noise["cv"])
    samples = []
    for index, at in enumerate(times):
        if index:
            error = rho * error + math.sqrt(1 - rho * rho) * rng.gauss(0, noise["cv"])
        running = max(1, int(round(load[index] * (1 + rng.gauss(0, noise["load_noise"])))))
        crowding = (running / noise["running"]) ** -noise["elasticity"]
        speed = noise["speed"] * (1 + effect) * (1 + offset) * crowding * max(0.05, 1 + error)
        itl_p50 = 1.0 / speed * (1 + rng.gauss(0, 0.03))
        samples.append({
            "host": name, "at": at, "running": running, "decode_per_request": speed, "itl_p50": itl_p50,
            "itl_p99": 2.5 * itl_p50 * math.exp(rng.gauss(0, noise["itl_p99_sd"])),
            "ttft_p99": 0.4 * (1 + offset) * math.sqrt(running / noise["running"])
            * math.exp(rng.gauss(0, noise["ttft_p99_sd"])),
            "accept_length": 5.0 * (1 + rng.gauss(0, noise["accept_sd"])) if speculates else None,
            "abort_ratio": 0.0, "gateway_error_ratio": 0.0})
    return samples


def simulate(rng, arm_hosts, control_hosts, window_s, interval_s, effects=(0.0,), noise=None):
    """One experiment's samples: len(effects) arms of arm_hosts hosts each (arm i decodes effects[i] faster:
    -0.1 is 10 % slower), control_hosts hosts in the control. Returns (samples, arms, control host names)."""
    noise = dict(NOISE, **(noise or {}))
    times = [1000.0 + interval_s * (i + 1) for i in range(int(window_s // interval_s))]
    phase = rng.uniform(0, 2 * math.pi)
    load = [noise["running"] * (1 + noise["load_swing"] * math.sin(2 * math.pi * t / noise["load_period_s"] + phase))
            for t in times]
    samples, arms = [], []
    for number, effect in enumerate(effects):
        name = "arm%d" % (number + 1)
        hosts = ["%s-h%d" % (name, i + 1) for i in range(arm_hosts)]
        arms.append({"name": name, "hosts": hosts})
        for host in hosts:
            samples.extend(_host(rng, host, effect, times, load, noise, True))
    controls = ["control-h%d" % (i + 1) for i in range(control_hosts)]
    for host in controls:
        samples.extend(_host(rng, host, 0.0, times, load, noise, False))
    return samples, arms, controls


def rates(arm_hosts, control_hosts, window_s, interval_s, experiments=200, seed=1, noise=None, settings=None,
          effect=-0.10, kinds=("aa", "ab")):
    """A/A and A/B rates of one fleet over seeded experiments (one arm against the control; kinds: both, or
    one): {"aa_objective", "aa_status", "ab_objective", "ab_status", "ab_won", "too_few", "width"}."""
    counts = dict.fromkeys(("aa_objective", "aa_status", "ab_objective", "ab_status", "ab_won", "too_few"), 0)
    widths = []
    for kind, arm_effect in (("aa", 0.0), ("ab", effect)):
        if kind not in kinds:
            continue
        rng = random.Random("%s-%s" % (seed, kind))
        for _experiment in range(experiments):
            samples, arms, controls = simulate(rng, arm_hosts, control_hosts, window_s, interval_s, (arm_effect,),
                                               noise)
            result = _judge.evaluate(samples, arms, controls, settings, interval_s=interval_s)
            objective = result["against_control"]["arm1"]["decode_per_request"]
            status = result["arms"]["arm1"]["status"]
            if kind == "aa":
                counts["aa_objective"] += objective["verdict"] in ("better", "worse")
                counts["aa_status"] += status in ("wins", "loses")
                if objective["low_relative"] is not None:
                    widths.append(objective["high_relative"] - objective["low_relative"])
            else:
                counts["ab_objective"] += objective["verdict"] == "worse"
                counts["ab_status"] += status == "loses"
                counts["ab_won"] += status == "wins"
            counts["too_few"] += objective["verdict"] == "too few samples"
    found = dict((key, value / float(experiments)) for key, value in counts.items())
    found["too_few"] = counts["too_few"] / float(len(kinds) * experiments)
    found["width"] = statistics.median(widths) if widths else None
    return found


def between_rate(arm_hosts, control_hosts, window_s, interval_s, experiments=200, seed=1, gain=0.2):
    """Two identical arms, both faster than the control by gain: how often the winner is the operator's first
    arm, and how often one arm was called better than the other (a false difference between arms)."""
    rng = random.Random("%s-between" % seed)
    first = called = 0
    for _experiment in range(experiments):
        samples, arms, controls = simulate(rng, arm_hosts, control_hosts, window_s, interval_s, (gain, gain))
        result = _judge.evaluate(samples, arms, controls, interval_s=interval_s)
        first += result["winner"] == "arm1"
        called += result["between_arms"]["arm1"]["arm2"]["decode_per_request"]["verdict"] in ("better", "worse")
    return {"first_listed": first / float(experiments), "between_called": called / float(experiments)}


def power_window(arm_hosts, control_hosts, interval_s, experiments, seed, goal=0.8, longest=1800):
    """The shortest window (a multiple of the interval) where the A/B detection rate reaches goal, by a
    doubling then a bisection on the number of intervals; (window_s, its rates) or (None, None)."""
    low, high, found = 1, 2, {}
    while True:
        found[high] = rates(arm_hosts, control_hosts, high * interval_s, interval_s, experiments, seed)
        if found[high]["ab_objective"] >= goal or high * interval_s >= longest:
            break
        low, high = high, high * 2
    if found[high]["ab_objective"] < goal:
        return None, None
    while high - low > 1:
        middle = (low + high) // 2
        found[middle] = rates(arm_hosts, control_hosts, middle * interval_s, interval_s, experiments, seed)
        low, high = (low, middle) if found[middle]["ab_objective"] >= goal else (middle, high)
    return high * interval_s, found[high]


def _row(label, found):
    width = "%.1f %%" % (100 * found["width"]) if found["width"] is not None else "-"
    print("%-46s %8.3f %8.3f %8.3f %8.3f %7.3f %7.2f %9s" % (
        label, found["aa_objective"], found["aa_status"], found["ab_objective"], found["ab_status"],
        found["ab_won"], found["too_few"], width))


FLEETS = [  # (label, arm hosts, control hosts, interval_s, window_s)
    ("lab 1+1 hosts, 5 s, 60 s", 1, 1, 5, 60),
    ("lab 1+1 hosts, 5 s, 120 s", 1, 1, 5, 120),
    ("lab 1+1 hosts, 5 s, 150 s", 1, 1, 5, 150),
    ("lab 1+2 hosts, 5 s, 150 s", 1, 2, 5, 150),
    ("lab 1+1 hosts, 5 s, 600 s", 1, 1, 5, 600),
    ("lab 2+2 hosts, 5 s, 60 s", 2, 2, 5, 60),
    ("lab 2+2 hosts, 5 s, 120 s", 2, 2, 5, 120),
    ("lab 2+2 hosts, 5 s, 300 s", 2, 2, 5, 300),
    ("lab 2+2 hosts, 5 s, 600 s", 2, 2, 5, 600),
    ("fleet 8+8 hosts, 15 s, 60 s", 8, 8, 15, 60),
    ("fleet 8+8 hosts, 15 s, 120 s", 8, 8, 15, 120),
    ("fleet 8+8 hosts, 15 s, 300 s", 8, 8, 15, 300),
    ("fleet 8+32 hosts, 15 s, 120 s", 8, 32, 15, 120),
]
NO_TOLERANCE = {"tolerance": {"decode_per_request": 0.0}}
SENSITIVITY = [  # (label, noise, settings) on lab 2+2 at 300 s and fleet 8+8 at 120 s
    ("pooled intervals, no host margin, no tolerance", None, dict(NO_TOLERANCE, block_s=0, host_spread=None)),
    ("blocks of 15 s, no host margin, no tolerance", None, dict(NO_TOLERANCE, host_spread=None)),
    ("blocks and host margin, no tolerance", None, NO_TOLERANCE),
    ("the defaults (blocks, host margin, tolerance)", None, None),
    ("hosts 3 % apart (host_spread says 2 %)", {"host_sd": 0.03}, None),
    ("  ... and no tolerance", {"host_sd": 0.03}, NO_TOLERANCE),
    ("hosts 4 % apart (host_spread says 2 %)", {"host_sd": 0.04}, None),
    ("autocorrelation 0.5 at 5 s", {"rho_5s": 0.5}, None),
    ("decode CV 5 %", {"cv": 0.05}, None),
    ("decode CV 15 %", {"cv": 0.15}, None),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="the fleets only, no sensitivity or power search")
    args = parser.parse_args()
    n, seed = args.experiments, args.seed
    print("%d experiments per cell; goals: A/A <= 0.050, A/B >= 0.800" % n)
    print("%-46s %8s %8s %8s %8s %7s %7s %9s" % ("fleet (arm+control hosts, interval, window)", "A/A obj",
                                                 "A/A arm", "A/B obj", "A/B arm", "A/B won", "too few", "CI width"))
    for label, arm_hosts, control_hosts, interval_s, window_s in FLEETS:
        _row(label, rates(arm_hosts, control_hosts, window_s, interval_s, n, seed))
    if args.quick:
        return
    print()
    for label, noise, settings in SENSITIVITY:
        print(label)
        _row("  lab 2+2 hosts, 5 s, 300 s", rates(2, 2, 300, 5, n, seed, noise, settings))
        _row("  lab 1+1 hosts, 5 s, 600 s", rates(1, 1, 600, 5, n, seed, noise, settings))
        _row("  fleet 8+8 hosts, 15 s, 120 s", rates(8, 8, 120, 15, n, seed, noise, settings))
    print()
    twins = between_rate(2, 2, 120, 5, n, seed)
    print("two identical arms +20 %% (lab 2+2+2, 120 s): the first listed wins %.3f, one called better than the "
          "other %.3f" % (twins["first_listed"], twins["between_called"]))
    for arm_hosts, interval_s in ((8, 15), (4, 15), (2, 5)):
        window, found = power_window(arm_hosts, arm_hosts, interval_s, n, seed)
        if window is None:
            print("%d+%d hosts at %d s: no window up to 30 min sees a 10 %% regression 8 times in 10"
                  % (arm_hosts, arm_hosts, interval_s))
        else:
            print("%d+%d hosts at %d s: a 10 %% regression is seen 8 times in 10 from a %d s window (A/A %.3f, A/B "
                  "%.3f)" % (arm_hosts, arm_hosts, interval_s, window, found["aa_objective"], found["ab_objective"]))


if __name__ == "__main__":
    main()
