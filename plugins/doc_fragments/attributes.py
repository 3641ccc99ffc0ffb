# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attributes every module of gpufleet.sglang documents, written once.

extends_documentation_fragment:
  - gpufleet.sglang.attributes               # what each attribute means, and the platform
  - gpufleet.sglang.attributes.info_module   # for modules that change nothing on the host

A module's own attributes entries (for example check_mode details) are merged over these, key by key.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode (C(--check)) and say what would change without changing the host.
  diff_mode:
    description: Shows what changes as a diff in diff mode (C(--diff)).
  platform:
    description: Target platforms the module runs on.
    support: full
    platforms: linux
    details:
      - Linux hosts with Python 3.8 or newer; the modules need its standard library only.
"""

    # Modules that only read the host. Writing an on-host cache (the cache option of some of them)
    # is not a change of the host's state; they say in their own check_mode details that check mode
    # writes no cache.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - The module only reads the host, so it runs the same way in check mode.
  diff_mode:
    support: N/A
    details:
      - The module changes nothing on the host, so there is nothing to diff.
"""
