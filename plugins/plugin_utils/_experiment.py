# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An experiment on the fleet's own traffic (playbooks/experiment_dflash.yml): two or more arms, each a complete
speculative-decoding setting on a few hosts, against the control (the hosts serving as now), judged with a measure
of noise (_judge.py), and the winner kept.

- settings(): sglang_dflash_experiment checked, with its defaults, or the problem naming what to set;
- assign(): the hosts of each arm and of the control, like compared with like (the same GPU model, SGLang release
  and tensor parallelism), or why that cannot be done, before any change;
- arm_settings(): what an arm sets over the role's settings on its hosts;
- judge(): the window's samples so far judged; a broken guardrail sends its arm back at once, too few samples
  extend the window up to its longest, then hold.

Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _judge

# What an arm may set over the role's settings: the speculative setting itself, nothing of the host's.
ARM_SETTINGS = ("draft_model_path", "drafter", "algorithm", "block_size", "draft_window_size", "ddtree_budget")
DEFAULTS = {"window": 600, "max_window": 1800, "interval": 15, "chunk": 60, "judge": {}, "rollout": True}
KIND_FIELDS = ("gpu", "release", "tp")


def settings(raw):
    """(settings, problem): sglang_dflash_experiment with its defaults, or the first thing wrong in it, named."""
    raw = raw if isinstance(raw, dict) else None
    if not raw or not isinstance(raw.get("arms"), list) or not raw["arms"]:
        return None, "sglang_dflash_experiment must be a mapping with arms: a list of {name, hosts, settings}"
    unknown = sorted(set(raw) - set(DEFAULTS) - {"arms"})
    if unknown:
        return None, "sglang_dflash_experiment: unknown key(s) %s (arms, %s)" % (
            ", ".join(unknown), ", ".join(sorted(DEFAULTS)))
    config = dict(DEFAULTS, **dict((k, v) for k, v in raw.items() if k != "arms"))
    names = []
    for number, arm in enumerate(raw["arms"], 1):
        problem = _arm_problem(number, arm, names)
        if problem:
            return None, problem
        names.append(arm["name"])
    for key in ("window", "max_window", "interval", "chunk"):
        if not isinstance(config[key], int) or isinstance(config[key], bool) or config[key] < 1:
            return None, "sglang_dflash_experiment.%s must be a number of seconds, not %r" % (key, config[key])
    if config["max_window"] < config["window"] or config["chunk"] < 2 * config["interval"]:
        return None, ("sglang_dflash_experiment: max_window (%s) must be at least window (%s), and chunk (%s) at "
                      "least two intervals (%s)" % (config["max_window"], config["window"], config["chunk"],
                                                    config["interval"]))
    _config, problem = _judge.configure(config["judge"] if isinstance(config["judge"], dict) else None)
    if problem or not isinstance(config["judge"], dict):
        return None, "sglang_dflash_experiment.judge: %s" % (problem or "must be a mapping")
    config["arms"] = [dict(arm, settings=dict(arm.get("settings") or {})) for arm in raw["arms"]]
    return config, None


def _arm_problem(number, arm, names):
    where = "sglang_dflash_experiment arm %d" % number
    if not isinstance(arm, dict) or not arm.get("name"):
        return "%s must be a mapping with a name, hosts (a count or a percentage) and settings" % where
    if arm["name"] in names:
        return "%s: the name %s is used twice" % (where, arm["name"])
    if host_count(arm.get("hosts", 1), 100) is None:
        return "%s (%s): hosts must be a count (1) or a percentage of the fleet (\"10%%\"), not %r" % (
            where, arm["name"], arm.get("hosts"))
    extra = sorted(set(arm.get("settings") or {}) - set(ARM_SETTINGS))
    if extra or not isinstance(arm.get("settings") or {}, dict):
        return "%s (%s): settings may set %s, not %s" % (
            where, arm["name"], ", ".join(ARM_SETTINGS), ", ".join(extra) or repr(arm.get("settings")))
    unknown = sorted(set(arm) - {"name", "hosts", "settings"})
    if unknown:
        return "%s (%s): unknown key(s) %s (name, hosts, settings)" % (where, arm["name"], ", ".join(unknown))
    return None


def host_count(spec, fleet):
    """An arm's size: a count, or a percentage of the fleet (at least 1); None when it is neither."""
    text = str(spec).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            return max(1, int(fleet * percent / 100.0)) if 0 < percent <= 100 else None
        count = int(text)
        return count if count >= 1 else None
    except ValueError:
        return None


def kind_of(result):
    """(GPU model, SGLang release, tensor parallelism) of a host, from its survey."""
    kind = (result or {}).get("kind") or {}
    return tuple(kind.get(field) for field in KIND_FIELDS)


def kind_words(kind):
    return "%s, sglang %s, tensor parallelism %s" % (kind[0] or "no GPU seen", kind[1] or "?", kind[2])


def assign(results, hosts, config):
    """{arms: {name: [hosts]}, control: [hosts], others: [hosts], kind, problem}: like compared with like.

    The arms and the control come from one kind of host (GPU model, release, tensor parallelism): the kind with the
    most hosts that can take the deployment, in the play's order; each arm takes its hosts in turn and at least one
    is left for the control. The hosts of other kinds serve on, not compared (others). When that kind has too few,
    problem names the arm that lacks hosts, of which kind, and how many there are."""
    eligible = [h for h in hosts
                if (results.get(h) or {}).get("surveyed") and not (results.get(h) or {}).get("refused")]
    by_kind = {}
    for host in eligible:
        by_kind.setdefault(kind_of(results.get(host)), []).append(host)
    out = {"arms": dict((a["name"], []) for a in config["arms"]), "control": [], "others": [], "kind": None,
           "problem": None}
    if not by_kind:
        out["problem"] = "no host can take the deployment (the survey refused every one), so no arm can be made"
        return out
    kind = max(by_kind, key=lambda k: (len(by_kind[k]), -hosts.index(by_kind[k][0])))
    pool = list(by_kind[kind])
    out["kind"] = dict(zip(KIND_FIELDS, kind))
    for arm in config["arms"]:
        wanted = host_count(arm.get("hosts", 1), len(hosts))
        if len(pool) - wanted < 1:
            out["problem"] = ("arm %s lacks hosts of one kind with the control: it needs %d host(s) of %s, and %d "
                              "are left after the arms before it, one of which the control needs (other kinds: %s)"
                              % (arm["name"], wanted, kind_words(kind), len(pool),
                                 "; ".join("%d of %s" % (len(v), kind_words(k)) for k, v in by_kind.items()
                                           if k != kind) or "none"))
            return out
        out["arms"][arm["name"]], pool = pool[:wanted], pool[wanted:]
    out["control"] = pool
    out["others"] = [h for h in hosts if h not in pool and not any(h in v for v in out["arms"].values())]
    return out


def arm_of(assignment, host):
    return next((name for name, members in (assignment.get("arms") or {}).items() if host in members), None)


def arm_settings(config, name):
    """What the arm sets over the role's settings on its hosts ({} for no arm)."""
    return dict(next((a["settings"] for a in config["arms"] if a["name"] == name), {}))


def samples_of(observed):
    """The interval samples of one observation (sglang_live_metrics' result), as one list."""
    return [s for samples in ((observed or {}).get("samples") or {}).values() for s in samples]


def judge(state, observed, assignment, config, control_speculates=False):
    """The experiment after one more chunk of its window: the samples so far judged (_judge.evaluate) over the arms
    still in it. state: the previous chunk's (None at the start). Returns the new state: {samples, seconds,
    failed (arms sent back for a broken guardrail), roll_back_now (their hosts, to go back now), decision, done,
    outcome, winner, lines}."""
    state = dict(state or {"samples": [], "seconds": 0, "failed": [], "done": False})
    if state.get("done"):
        return dict(state, roll_back_now=[])
    if observed and not observed.get("skipped"):
        state["samples"] = list(state["samples"]) + samples_of(observed)
        state["seconds"] = state["seconds"] + int(observed.get("window_s") or 0)
    live = [a for a in config["arms"] if a["name"] not in state["failed"]]
    arms = [{"name": a["name"], "hosts": assignment["arms"][a["name"]]} for a in live]
    longest = state["seconds"] >= config["max_window"]
    judge_settings, _problem = _judge.configure(config["judge"])
    groups = [a["hosts"] for a in arms] + [assignment["control"]]
    judge_settings["compared"] = _judge.reported(state["samples"], judge_settings["compared"], groups,
                                                 judge_settings["objective"])
    decision = _judge.evaluate(state["samples"], arms, assignment["control"], judge_settings, config["interval"],
                               max_window_reached=longest, control_speculates=control_speculates)
    newly = [a for a in decision["guardrails"]["failed"] if a not in state["failed"]]
    state["failed"] = list(state["failed"]) + newly
    state["roll_back_now"] = [h for a in newly for h in assignment["arms"][a]]
    within = state["seconds"] < config["window"]
    outcome = decision["outcome"]
    # The window runs its length (a decision in its first chunks would be on too little); past it, a decision ends
    # it, and too few samples extend it up to the longest window.
    state["done"] = (not within and outcome != "extend") or not live or (longest and outcome == "extend")
    state.update(decision=_kept(decision), outcome=outcome if state["done"] else "observing",
                 winner=decision.get("winner") if state["done"] else None,
                 lines=decision["lines"] + decision["pair_lines"])
    if not live:
        state.update(outcome="keep control", winner=None)
    return state


def _kept(decision):
    """What the record, the report and the message keep of the judge's decision (the samples are kept apart)."""
    return dict((k, decision.get(k)) for k in (
        "outcome", "winner", "arms", "roll_back", "reasons", "message", "against_control", "between_arms",
        "guardrails", "interval_s", "block_intervals", "host_spread"))


def final_roll_back(state, assignment):
    """The hosts that go back once the experiment is decided: every arm's but the winner's (all of them when the control
    stays); a hold sends none back, so a person can look at the arms as they ran."""
    if state.get("outcome") == "hold":
        return []
    keep = state.get("winner")
    return [h for arm, members in assignment["arms"].items() if arm != keep and arm not in state.get("failed", [])
            for h in members]


def message(state, assignment):
    """One line for the run: the experiment's outcome and why, each arm's standing."""
    decision = state.get("decision") or {}
    arms = ", ".join("%s on %s" % (a, ",".join(h)) for a, h in assignment["arms"].items())
    head = "the experiment (%s; control %s) over %s s: " % (arms, ",".join(assignment["control"]) or "none",
                                                            state.get("seconds"))
    failed = "; arm(s) %s went back at once for a broken guardrail" % ", ".join(state["failed"]) \
        if state.get("failed") else ""
    return head + (decision.get("message") or state.get("outcome") or "") + failed
