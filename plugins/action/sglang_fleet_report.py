# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_fleet_report (documented in plugins/modules/sglang_fleet_report.py): the fleet report on the
controller, in two uses by playbooks/gather_facts.yml: the gateways the hosts are behind, then the report itself (each
host's rows of this run or of the fact cache, placed in their gateways, written as JSON, Markdown and HTML by the
controller itself); and any files a playbook gives (experiment_dflash.yml's report).

The rows (about 30 KB a host) never go through a task's arguments or a registered result: at 32 hosts, passing them
between three tasks and templating them three times into the files cost 2.5 s of a 15 s fleet picture, and rendering
them here costs 0.1 s."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections.abc import Mapping

import jinja2
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _fleet_report, _records
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._report_files import ReportFilesError, write_report_files
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import this_run

RESULT = "sglang_dflash_result"
# What roles/sglang_dflash/tasks/report.yml registers: a host whose report task failed before any row, or could not be
# reached, has no sglang_dflash_result of this run, and this says why.
REPORT_TASK_RESULT = "sglang_dflash__report"
CACHED_ROWS = "sglang_fleet_cached_rows"
ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str"},
    "from_cache": {"type": "bool", "default": False},
    "gateway_read": {"type": "list", "elements": "dict", "default": []},
    "now": {"type": "str"},
    "dest": {"type": "path"},
    "html_template": {"type": "str"},
    "keep_rows": {"type": "bool", "default": False},
    "files": {"type": "dict"},
    "mode": {"type": "raw", "default": "0644"},
}


def _mode(value):
    """An octal mode given as a string (0644) or as a number YAML read in octal."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value), 8)
    except ValueError:
        raise AnsibleActionFail("mode must be an octal file mode such as '0644', not %r" % (value,)) from None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        task_vars = task_vars or {}
        result["changed"] = False
        if args["files"] is not None:
            files = args["files"]
        elif args["hosts"] is None:
            raise AnsibleActionFail("give hosts (the gateways they are behind, or with dest their report), or dest and "
                                    "files (write these files)")
        elif not args["dest"]:
            rows = self._collect(args["hosts"], args["from_cache"], task_vars)
            result["gateways"] = [] if args["from_cache"] else _records.gateways_to_read(rows)
            return result
        else:
            rows = _records.place_rows(self._collect(args["hosts"], args["from_cache"], task_vars),
                                       args["gateway_read"], args["now"])
            files = self._report_files(rows, args["html_template"])
            result["summary"] = _fleet_report.fleet_report_line(rows, _fleet_report.from_cache(rows), args["dest"])
            if args["keep_rows"]:
                result["rows_by_host"] = _rows_by_host(rows)
        result.update(self._write(args["dest"], files, args["mode"]))
        return result

    def _write(self, dest, files, mode):
        if not dest:
            raise AnsibleActionFail("files needs dest, the directory to write them in")
        for name, content in files.items():
            if not isinstance(content, str):
                raise AnsibleActionFail("files: the content of %s must be text, not %s"
                                        % (name, type(content).__name__))
        try:
            written = write_report_files(dest, dict(files), mode=_mode(mode), check_mode=bool(self._task.check_mode))
        except ReportFilesError as exc:
            raise AnsibleActionFail(str(exc)) from None
        diff = written.pop("diff")
        if self._task.diff:
            written["diff"] = diff
        return written

    def _report_files(self, rows, html_template):
        """fleet-report.json (as to_nice_json writes it), fleet-report.md and, with html_template (found as the template
        module finds its src), fleet-report.html."""
        files = {"fleet-report.json": json.dumps({"hosts": rows}, indent=4, sort_keys=True,
                                                 separators=(",", ": ")) + "\n",
                 "fleet-report.md": _fleet_report.markdown(rows)}
        if html_template:
            try:
                with open(self._find_needle("templates", html_template)) as handle:
                    files["fleet-report.html"] = _fleet_report.html_page(rows, handle.read())
            except (AnsibleError, OSError, jinja2.TemplateError) as exc:
                raise AnsibleActionFail("html_template %s cannot be rendered: %s" % (html_template, exc)) from None
        return files

    @staticmethod
    def _collect(hosts, from_cache, task_vars):
        """The rows of these hosts. Of each host only its sglang_dflash_result of this run is read (else what its report
        task registered), or, from the cache, the rows the last gather kept there."""
        hostvars = task_vars.get("hostvars") or {}
        # Not hostvars[host], which templates every value of the host's variables again (Ansible 2.19: 30 ms a host):
        # what is read here are results of modules and actions, which hold no template.
        raw = getattr(hostvars, "raw_get", hostvars.get)
        results, cached = {}, {}
        for host in hosts:
            own = raw(host)
            own = own if isinstance(own, Mapping) else {}
            if from_cache:
                cached[host] = (own.get("ansible_facts") or {}).get(CACHED_ROWS)
                continue
            results[host] = this_run(own.get(RESULT)) or _without_rows(own.get(REPORT_TASK_RESULT))
        return _records.collect_rows(results, hosts, cached, from_cache)


def _without_rows(registered):
    """What the report task of a host without rows says: unreachable, or the message it failed with ({}: not run)."""
    if not registered:
        return {}
    return {"unreachable": bool(registered.get("unreachable")), "msg": registered.get("msg") or ""}


def _rows_by_host(rows):
    """[{host, rows}] of the hosts this run reached, for Ansible's fact cache (the rows as the report has them)."""
    kept = {}
    for row in rows:
        if row.get("status") != "unreachable":
            kept.setdefault(row["host"], []).append(row)
    return [{"host": host, "rows": host_rows} for host, host_rows in kept.items()]
