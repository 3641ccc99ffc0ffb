# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA GPU architectures by compute capability: the one table the facts, the plan and the report use."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# (major, minor) -> (architecture, which cards). A minor not listed takes its major's first row's name.
ARCHITECTURES = {
    (7, 0): ("Volta", "V100"),
    (7, 5): ("Turing", "T4, RTX 20"),
    (8, 0): ("Ampere", "A100, A30"),
    (8, 6): ("Ampere", "A10, A40, RTX 30"),
    (8, 7): ("Ampere", "Jetson Orin"),
    (8, 9): ("Ada Lovelace", "L4, L40S, RTX 40"),
    (9, 0): ("Hopper", "H100, H200, GH200"),
    (10, 0): ("Blackwell", "datacenter: B200, GB200"),
    (10, 3): ("Blackwell", "datacenter: B300, GB300"),
    (11, 0): ("Blackwell", "Thor"),
    (12, 0): ("Blackwell", "workstation and consumer: RTX PRO 6000, RTX 50"),
    (12, 1): ("Blackwell", "DGX Spark (GB10)"),
}


def parse_capability(text):
    """(major, minor) of nvidia-smi's compute_cap text ("9.0", "12.0"); None for what is not one ("[N/A]")."""
    major, dot, minor = str(text or "").strip().partition(".")
    if not (major.isdigit() and dot and minor.isdigit()):
        return None
    return int(major), int(minor)


def describe(compute_capability):
    """{architecture, sm, family} of a compute capability text; each None where it is not one.

    sm is the compiler's name (sm_90, sm_100, sm_120); family the architecture and which cards
    share it, as a person names them ("Blackwell, workstation and consumer: RTX PRO 6000, RTX 50").
    """
    capability = parse_capability(compute_capability)
    if capability is None:
        return {"architecture": None, "sm": None, "family": None}
    major, minor = capability
    name, cards = ARCHITECTURES.get(capability) or next(
        (row for (mj, _mn), row in sorted(ARCHITECTURES.items()) if mj == major), ("unknown architecture", None))
    return {"architecture": name, "sm": "sm_%d%d" % (major, minor),
            "family": "%s, %s" % (name, cards) if cards else name}


def sm_major(compute_capability):
    """The major of a compute capability text (12 for "12.0"), or None."""
    capability = parse_capability(compute_capability)
    return capability[0] if capability else None
