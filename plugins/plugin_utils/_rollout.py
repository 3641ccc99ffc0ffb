# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling deployment's own decision: whether the next batch of hosts starts (playbooks/deploy_dflash.yml).

Controller-only and pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def rollout_stopped(hostvars, hosts, max_fail_percentage=0):
    """Why the rollout must not start another batch ('' to go on): an earlier batch in which more
    than max_fail_percentage of the hosts did not end with a result (failed, refused, unreachable)."""
    batches = []
    for host in hosts:
        batch = hostvars[host].get("sglang_dflash_batch")
        if batch and list(batch) not in batches:
            batches.append(list(batch))
    for number, batch in enumerate(batches, 1):
        failed = [h for h in batch if not hostvars[h].get("sglang_dflash_result")]
        if failed and len(failed) * 100.0 / len(batch) > float(max_fail_percentage or 0):
            return ("the rollout stopped after batch %d (%s): %d of %d host(s) failed (%s), more than "
                    "sglang_dflash_max_fail_percentage=%s%%"
                    % (number, ", ".join(batch), len(failed), len(batch), ", ".join(failed), max_fail_percentage))
    return ""
