# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bottom of everything that talks to systemd: unit names as systemd spells them, systemctl runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.sglang.plugins.module_utils.process import run_argv


def unit_name(name):
    """The unit's name as systemd spells it: a bare name is a service."""
    name = str(name)
    return name if "." in name else name + ".service"


def run_systemctl(argv):
    """(rc, stdout, stderr) of a systemctl or journalctl command: C locale, no pager, no colours, 30 s."""
    run = run_argv(argv, timeout=30, env=dict(os.environ, LC_ALL="C", SYSTEMD_PAGER="", SYSTEMD_COLORS="0"))
    if run.error:
        return 127, "", run.error
    return run.rc, run.stdout, run.stderr
