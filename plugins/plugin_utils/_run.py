# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""This ansible-playbook run, as the collection names it: in the intents written on hosts ("run R took it out of
rotation") and in every host's result fact, sglang_dflash_result.

Ansible keeps an action's returned facts in its fact cache (fact_caching, AWX's fact storage), so a result read back
may be a former run's: every result carries the run that wrote it, and a reader takes only this run's. The name is the
controller and the process whose workers run the tasks (every action of a run shares it), with that process's start
time, since process ids are reused. Controller-only; it reads /proc on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket


def run_name():
    ppid = os.getppid()
    try:
        with open("/proc/%d/stat" % ppid) as handle:
            started = handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        started = "?"
    return "%s pid %d (%s)" % (socket.gethostname(), ppid, started)


def this_run(result, run=None):
    """The result when this run wrote it (or a task of this run set it, this_run: true), else {}."""
    result = dict(result or {})
    if result.get("this_run") or result.get("run") == (run or run_name()):
        return result
    return {}


def stamped(result, run=None):
    return dict(result or {}, run=run or run_name())
