# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the drafter's delivery (roles/sglang_dflash/tasks/drafter.yml); logic in
plugins/plugin_utils/_drafter_delivery.py. Each filter is documented in plugins/filter/<name>.yml."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _drafter_delivery


def sglang_drafter_sources(role_drafter, services):
    """The unique drafter sources of a host, each with the services that use it."""
    try:
        return _drafter_delivery.drafter_sources(role_drafter, list(services or []))
    except _drafter_delivery.DrafterSourceError as exc:
        raise AnsibleFilterError(str(exc)) from None


def sglang_drafter_report(results):
    """One record per source: services, source, repo, revision, commit, path, verified, size."""
    try:
        return _drafter_delivery.drafter_report([dict(r) for r in results or []])
    except _drafter_delivery.DrafterSourceError as exc:
        raise AnsibleFilterError(str(exc)) from None


def sglang_drafter_services(services, drafters):
    """sglang_dflash_services with each entry's drafter replaced by its verified copy's path."""
    return _drafter_delivery.apply_to_services(list(services or []), list(drafters or []))


def sglang_drafter_lines(drafters, host):
    """The deploy summary's lines of a host's drafters."""
    return _drafter_delivery.summary_lines(host, list(drafters or []))


class FilterModule(object):
    def filters(self):
        return {
            "sglang_drafter_sources": sglang_drafter_sources,
            "sglang_drafter_report": sglang_drafter_report,
            "sglang_drafter_services": sglang_drafter_services,
            "sglang_drafter_lines": sglang_drafter_lines,
        }
