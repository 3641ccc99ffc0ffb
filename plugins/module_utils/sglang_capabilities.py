# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a given SGLang release supports for speculative decoding, from its real flags.

One place for the knowledge of SGLang's flag names across releases: the role and
the facts playbook both use ``capabilities`` (via the cli_flags_info module's result).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Intent -> option strings that have meant it, newest name first. The first one the release
# accepts *visibly* is the one to write; hidden ones are deprecated aliases, never written.
INTENT_FLAGS = {
    "model_path": ("--model-path", "--model"),
    "host": ("--host",),
    "port": ("--port",),
    "tp_size": ("--tp-size", "--tensor-parallel-size"),
    "algorithm": ("--speculative-algorithm",),
    "draft_model_path": ("--speculative-draft-model-path", "--speculative-draft-model"),
    "block_size": ("--speculative-dflash-block-size",),
    "draft_window_size": ("--speculative-draft-window-size", "--speculative-dflash-draft-window-size"),
    "num_draft_tokens": ("--speculative-num-draft-tokens",),
    # DDTree's verify budget (tree nodes beyond the root), from sgl-project/sglang PR #29907.
    "ddtree_budget": ("--speculative-ddtree-budget",),
}

# Tree-verify flags of other open pull requests (#31069, #36196): reported by the facts so an operator
# sees a build that has them; the role writes none of them (they are not DDTree's budget).
OTHER_TREE_FLAGS = ("--speculative-dflash-tree-verify", "--speculative-dflash-tree-width")

_BUILTINS = re.compile(r"Builtins?:\s*(?P<names>[A-Z0-9_]+(?:\s*,\s*[A-Z0-9_]+)*)")


def _index(flags):
    """option string -> (flag, hidden)."""
    index = {}
    for flag in flags:
        hidden = bool(flag.get("hidden"))
        for name in [flag["name"]] + list(flag.get("aliases") or []):
            # A visible definition beats a hidden one for the same string.
            if name not in index or index[name][1]:
                index[name] = (flag, hidden)
    return index


def speculative_algorithms(flags):
    """The algorithm names the release lists, from choices or from the 'Builtins:' help text."""
    flag = _index(flags).get("--speculative-algorithm", (None, None))[0]
    if flag is None:
        return None, None
    if flag.get("choices"):
        return sorted(set(flag["choices"])), "choices"
    match = _BUILTINS.search(flag.get("help") or "")
    if match:
        return sorted(set(n.strip() for n in match.group("names").split(","))), "help text"
    return None, None


def capabilities(flags, extra_algorithms=()):
    """Capability map of a release from its flags (visible, plus hidden ones marked hidden).

    extra_algorithms: names found by other means (e.g. a source search finding a DDTREE worker
    in a patched checkout whose algorithm list is computed at run time).
    """
    index = _index(flags)
    algorithms, algorithms_from = speculative_algorithms(flags)
    known = set(algorithms or []) | set(extra_algorithms or [])
    flag_names = {}
    deprecated = {}
    for intent, candidates in INTENT_FLAGS.items():
        current = next((c for c in candidates if c in index and not index[c][1]), None)
        flag_names[intent] = current
        for candidate in candidates:
            if candidate in index and index[candidate][1]:
                deprecated[candidate] = current
    has_speculative = flag_names["algorithm"] is not None
    return {
        "speculative": has_speculative,
        "speculative_algorithms": sorted(known) if (algorithms is not None or extra_algorithms) else None,
        "algorithms_from": algorithms_from,
        "supports_dflash": has_speculative and "DFLASH" in known and flag_names["draft_model_path"] is not None,
        "supports_ddtree": has_speculative and "DDTREE" in known and flag_names["draft_model_path"] is not None,
        "flags": flag_names,
        "deprecated_aliases": deprecated,
        "other_tree_flags": [f for f in OTHER_TREE_FLAGS if f in index],
    }


def supported_algorithms(caps, definitions, candidates=("DFLASH", "DDTREE")):
    """Algorithms this install can run: the release's own list, plus candidates whose implementation
    (a class or function named after them, e.g. DDTreeWorker) is in the code that runs, where the
    release takes any registered algorithm name ("Builtins: ..." help text, not a fixed choices list).
    That is how a patched checkout with DDTree shows up.
    """
    listed = set((caps or {}).get("speculative_algorithms") or [])
    open_registry = (caps or {}).get("algorithms_from") == "help text"
    names = [d.get("name", "").lower() for d in definitions or []]
    found = set(c for c in candidates if any(c.lower() in n for n in names))
    return sorted(listed | (found if open_registry else set()))
