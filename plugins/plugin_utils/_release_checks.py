# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the installed release will refuse, or crash on, with the new command line on this host's GPUs.

The release's own checks come from its source (module_utils/release_limits.py, read on the host with the facts);
KNOWN_ISSUES is the one table of limits no release states (crashes upstream tracks), each row naming the upstream
issue or pull request, the releases it applies to and how to lift it. A row gives way to the source: it is not
used where the release's source states a limit with the same id. Controller-only and pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.gpu_arch import describe, sm_major
from ansible_collections.gpufleet.sglang.plugins.module_utils.release_limits import LIMIT_IDS
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._arguments import flag_index
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._services import gpus_text

_BACKEND_FLAGS = {"prefill_backend": ("--prefill-attention-backend", "--attention-backend"),
                  "decode_backend": ("--decode-attention-backend", "--attention-backend")}

# Limits that are in no release's source. releases: (first, last) release it applies to; None for last: every
# release since, until one ships the fix (then set last, or drop the row).
KNOWN_ISSUES = (
    {"id": "disaggregation", "algorithms": ("DFLASH",),
     "terms": [{"kind": "setting", "setting": "disaggregation_mode", "op": "==", "value": "decode"}],
     "problem": "DFLASH crashes on the decode side of prefill/decode disaggregation ('NoneType' object has no "
                "attribute 'prepare_for_decode')",
     "upstream": "sglang#36140, open; the fix is pull request #34285, not merged", "releases": ("0.5.11", None),
     "todo": "serve DFLASH on a server without --disaggregation-mode decode, or wait for a release with pull "
             "request #34285"},
    {"id": "attention_backend_arch", "algorithms": None,
     "terms": [{"kind": "setting", "setting": "prefill_backend", "op": "==", "value": "trtllm_mha"},
               {"kind": "arch", "majors": [12]}],
     "problem": "trtllm_mha runs FlashInfer's TllmGenFmhaRunner, which accepts SM100/SM103 only: on sm_12x it "
                "fails with 'Unsupported architecture' (the release's own check admits SM120)",
     "upstream": "sglang#40558, open; flashinfer#3263", "releases": ("0.5.11", None),
     "todo": "drop --attention-backend trtllm_mha or use --attention-backend flashinfer"},
    {"id": "page_size", "algorithms": ("DDTREE",),
     "terms": [{"kind": "setting", "setting": "page_size", "op": "!=", "value": 1, "unset": 1}],
     "problem": "DDTree needs --page-size 1 (it also turns overlap scheduling off and has no rejection sampling)",
     "upstream": "pull request #29907 (DDTree, in no release)", "releases": (None, None),
     "todo": "set --page-size 1 or remove --page-size"},
)
# What to do about a limit the release's source states, by id.
TODO = {
    "dp_attention": "remove --enable-dp-attention / --attn-dp-size from the command line, or meet the release's "
                    "condition",
    "pipeline_parallel": "serve with --pp-size 1",
    "disaggregation": "remove --disaggregation-mode",
    "page_size": "set --page-size 1",
    "attention_backend": "remove --attention-backend",
    "attention_backend_arch": "drop the attention backend flag or use flashinfer",
}


def version_tuple(text):
    """(0, 5, 23) of "0.5.23" / "0.5.23.post1"; None for what has no leading number."""
    match = re.match(r"\d+(?:\.\d+)*", str(text or ""))
    return tuple(int(n) for n in match.group(0).split(".")) if match else None


def _in_releases(version, releases):
    first, last = releases
    found = version_tuple(version)
    if found is None:
        return first is None and last is None
    return (first is None or found >= version_tuple(first)) and (last is None or found <= version_tuple(last))


class CommandLine(object):
    """The new command line (argv values) as a limit's terms read it: a setting's value, None when it is not given."""

    def __init__(self, args, flags):
        self.args = list(args or [])
        self.index = flag_index(flags or [])

    def option(self, option):
        """The last value of an option or any of its aliases (True for a switch), None when absent."""
        flag = self.index.get(option)
        if flag is None:
            return None
        names = set([flag["name"]] + list(flag.get("aliases") or []))
        found = None
        for i, arg in enumerate(self.args):
            name, eq, inline = arg.partition("=")
            if name in names:
                if not flag.get("takes_value"):
                    found = True
                else:
                    found = inline if eq else (self.args[i + 1] if i + 1 < len(self.args) else None)
        return found

    def backend_flag(self, setting):
        """The option that sets a phase's attention backend (the phase's own flag first), or None."""
        return next((o for o in _BACKEND_FLAGS[setting] if self.option(o) is not None), None)

    def setting(self, name):
        if name in _BACKEND_FLAGS:
            flag = self.backend_flag(name)
            return self.option(flag) if flag else None
        if name == "attn_dp":
            # Attention data parallelism: --enable-dp-attention, or (0.5.23) --attn-dp-size above 1.
            dp_size = self.option("--attn-dp-size")
            return bool(self.option("--enable-dp-attention")) or (str(dp_size).isdigit() and int(dp_size) > 1)
        return self.option("--" + name.replace("_", "-"))


def _term(term, command, defaults, majors):
    """True, False or None (cannot tell) for one term."""
    if term["kind"] == "arch":
        if not majors or None in majors:
            return None
        if term.get("negated"):
            return any(m not in term["majors"] for m in majors)
        return any(m in term["majors"] for m in majors)
    if term["kind"] != "setting":
        return None
    name = term["setting"]
    value = command.setting(name)
    if value is None:
        value = term.get("unset", defaults.get(name))
    if name == "device" and value is None:
        value = "cuda"  # unset, SGLang picks CUDA on a host with NVIDIA GPUs
    result = _compare(term["op"], value, term.get("value"), name in _BACKEND_FLAGS)
    return None if result is None else (not result if term.get("negated") else result)


def _compare(op, value, wanted, unset_is_auto):
    if op == "truthy":
        return None if value is None else value not in (False, "false", "False", "0", 0)
    if value is None:
        return False if unset_is_auto else None  # an unset backend is the release's automatic choice
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return None
    if op == "startswith":
        return str(value).startswith(str(wanted))
    if op in ("in", "not in"):
        return (value in (wanted or [])) == (op == "in")
    return {"==": value == wanted, "!=": value != wanted, ">": value > wanted, ">=": value >= wanted,
            "<": value < wanted, "<=": value <= wanted}[op]


def _all(terms, command, defaults, majors):
    results = [_term(t, command, defaults, majors) for t in terms]
    if False in results:
        return False
    return None if None in results else True


def gpus_described(gpus, indexes):
    """(the service's GPUs in words, their majors): "GPUs 0-7 (NVIDIA B200, Blackwell sm_100)"."""
    chosen = [g for g in gpus if indexes is None or g.get("index") in indexes]
    kinds = []
    for gpu in chosen:
        arch = describe(gpu.get("compute_capability"))
        kind = "%s, %s %s" % (gpu.get("name"), arch["architecture"], arch["sm"]) if arch["sm"] \
            else "%s, compute capability unknown" % gpu.get("name")
        if kind not in kinds:
            kinds.append(kind)
    which = gpus_text([g.get("index") for g in chosen])
    return ("%s (%s)" % (which, "; ".join(kinds)) if chosen else "no GPU seen",
            [sm_major(g.get("compute_capability")) for g in chosen])


def release_limit_findings(facts, algorithm, args, gpu_indexes):
    """Every limit of this release that the new command line hits on this host's GPUs:
    [{id, origin, problem, where, todo}], plus the limits it cannot tell ({..., unknown: True})."""
    limits = facts.get("limits") or {}
    version = (facts.get("package") or {}).get("version")
    gpus = (facts.get("gpus") or {}).get("gpus") or []
    _words, majors = gpus_described(gpus, gpu_indexes)
    command = CommandLine(args, (facts.get("flags") or {}).get("list"))
    defaults = limits.get("defaults") or {}
    findings, source_ids = [], set()
    for limit in limits.get("limits") or []:
        if limit["algorithm"] not in (None, algorithm):
            continue
        source_ids.add(limit["id"])
        hit = _all(limit["terms"], command, defaults, majors)
        if hit is not False:
            findings.append({"id": limit["id"], "origin": "source", "problem": limit["message"],
                             "where": limit["source"], "todo": TODO.get(limit["id"]), "unknown": hit is None})
    for row in KNOWN_ISSUES:
        if row["algorithms"] and algorithm not in row["algorithms"]:
            continue
        if not _in_releases(version, row["releases"]):
            continue
        if row["id"] in source_ids and row["id"] != "attention_backend_arch":
            continue  # the release's source states this limit: its own check decides
        if row["id"] == "attention_backend_arch" and any(f["id"] == row["id"] and not f["unknown"] for f in findings):
            continue  # the release refuses it already, in its own words
        hit = _all(row["terms"], command, defaults, majors)
        if hit:
            findings.append({"id": row["id"], "origin": "known issue", "problem": row["problem"],
                             "where": row["upstream"], "todo": row["todo"], "unknown": False})
    return findings, command


def release_limits_check(facts, settings, algorithm, args, gpu_indexes):
    """{errors, refused, accepted, unknown, read}: the refusals, each naming the release, the GPUs, the flag and
    what to do (refused: their limit ids); the limits the operator accepted (sglang_dflash_allow_release_limits);
    those that cannot be told (a condition of a shape not read, or a value not known)."""
    limits = facts.get("limits")
    result = {"errors": [], "refused": [], "accepted": [], "unknown": [], "read": bool(limits)}
    if not limits or args is None:
        return result
    findings, command = release_limit_findings(facts, algorithm, args, gpu_indexes)
    version = (facts.get("package") or {}).get("version")
    gpu_words, _majors = gpus_described((facts.get("gpus") or {}).get("gpus") or [], gpu_indexes)
    allowed = set(settings.get("allow_release_limits") or [])
    for found in findings:
        what = _what(found, command)
        text = "sglang %s on %s: %s: %s (%s %s)" % (
            version, gpu_words, what, found["problem"],
            "the release's check at" if found["origin"] == "source" else "upstream", found["where"])
        if found["unknown"]:
            result["unknown"].append(text)
        elif found["id"] in allowed:
            result["accepted"].append("%s [%s, accepted by sglang_dflash_allow_release_limits]" % (text, found["id"]))
        else:
            result["refused"].append(found["id"])
            result["errors"].append("%s; %s, or accept the risk with sglang_dflash_allow_release_limits: [%s]"
                                    % (text, found["todo"] or "change the command line", found["id"]))
    return result


def _what(found, command):
    """The flag behind a finding, as the new command line has it."""
    if found["id"] == "attention_backend_arch":
        flag = command.backend_flag("prefill_backend") or command.backend_flag("decode_backend")
        return "%s %s" % (flag, command.option(flag))
    if found["id"] == "dp_attention":
        return "attention data parallelism"
    setting = {"pipeline_parallel": "pp_size", "disaggregation": "disaggregation_mode", "page_size": "page_size",
               "attention_backend": "attention_backend"}.get(found["id"])
    value = command.setting(setting) if setting else None
    return "--%s %s" % (setting.replace("_", "-"), value) if value is not None else found["id"]


def why_not(plan):
    """What keeps a host from the deployment, for the fleet report's filter: "gpu" (an attention backend's GPU
    architecture), "release" (another limit of the release), "other" (any other reason), or None (ready)."""
    if not plan.get("errors"):
        return None
    refused = (plan.get("release_limits") or {}).get("refused") or []
    if "attention_backend_arch" in refused:
        return "gpu"
    return "release" if refused else "other"


__all__ = ["KNOWN_ISSUES", "LIMIT_IDS", "release_limits_check", "release_limit_findings", "gpus_described",
           "why_not"]
