# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a module reaches the SGLang server from the host itself, written once.

The matching argument spec is SERVER_ENDPOINT_ARGS in module_utils/server_probe.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  host:
    description: Address the server is reached at from the host itself.
    type: str
    default: 127.0.0.1
  port:
    description: Port of the server.
    type: int
    default: 30000
"""
