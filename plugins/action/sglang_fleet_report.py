# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_fleet_report (documented in plugins/modules/sglang_fleet_report.py): the fleet report on the
controller, in three uses by playbooks/gather_facts.yml: the rows of the hosts (each host's sglang_dflash_result of
this run, or the fact cache's rows), their place in the gateways, then the report's files, written by the controller
itself. Three module runs on localhost (a directory, a copy, a template loop) cost about 2.5 s of a 16 s fleet picture
at 32 hosts; writing them here costs milliseconds."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _fleet_report, _records
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._report_files import ReportFilesError, write_report_files
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._run import this_run

RESULT = "sglang_dflash_result"
CACHED_ROWS = "sglang_fleet_cached_rows"
ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str"},
    "from_cache": {"type": "bool", "default": False},
    "rows": {"type": "list", "elements": "dict"},
    "gateway_read": {"type": "list", "elements": "dict", "default": []},
    "now": {"type": "str"},
    "dest": {"type": "path"},
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
        result["changed"] = False
        if args["hosts"] is not None:
            result.update(self._collect(args["hosts"], args["from_cache"], task_vars or {}))
            return result
        if args["rows"] is not None:
            rows = _records.place_rows(args["rows"], args["gateway_read"], args["now"])
            result.update(rows=rows, summary=_fleet_report.fleet_report_line(
                rows, _fleet_report.from_cache(rows), args["dest"] or ""))
            return result
        if args["files"] is None or not args["dest"]:
            raise AnsibleActionFail("give hosts (collect the rows), rows (place them in the gateways), or dest and "
                                    "files (write the report)")
        for name, content in args["files"].items():
            if not isinstance(content, str):
                raise AnsibleActionFail("files: the content of %s must be text, not %s"
                                        % (name, type(content).__name__))
        try:
            written = write_report_files(args["dest"], dict(args["files"]), mode=_mode(args["mode"]),
                                         check_mode=bool(self._task.check_mode))
        except ReportFilesError as exc:
            raise AnsibleActionFail(str(exc)) from None
        diff = written.pop("diff")
        if self._task.diff:
            result["diff"] = diff
        result.update(written)
        return result

    @staticmethod
    def _collect(hosts, from_cache, task_vars):
        """The rows of these hosts, and the gateways they are behind. Of each host only its sglang_dflash_result of
        this run is read (or, from the cache, the rows the last gather kept there)."""
        hostvars = task_vars.get("hostvars") or {}
        results = dict((h, this_run((hostvars.get(h) or {}).get(RESULT))) for h in hosts)
        cached = dict((h, ((hostvars.get(h) or {}).get("ansible_facts") or {}).get(CACHED_ROWS)) for h in hosts) \
            if from_cache else {}
        rows = _records.collect_rows(results, hosts, cached, from_cache)
        return {"rows": rows, "gateways": [] if from_cache else _records.gateways_to_read(rows)}
