# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Search source trees for terms, with ripgrep when the host has it and pure Python otherwise.

The parts: ``match`` (the line matcher both backends share), ``walk`` (which files, and the
counters), ``python_backend``, ``ripgrep_backend``, ``definitions`` (``ast``), ``search`` (one
search, shaped), ``cache`` (fingerprint and key of a cached result) and ``run`` (the module's
logic: options, backend, cache). The module and host_facts use the two names below.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.match import SearchError
from ansible_collections.gpufleet.sglang.plugins.module_utils.source_search.run import run_search

__all__ = ["SearchError", "run_search"]
