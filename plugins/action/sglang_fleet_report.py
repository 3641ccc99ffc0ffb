# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.sglang.sglang_fleet_report (documented in plugins/modules/sglang_fleet_report.py): the report's files,
written by the controller itself. Three module runs on localhost (a directory, a copy, a template loop) cost
about 2.5 s of a 16 s fleet picture at 32 hosts; writing them here costs milliseconds."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._report_files import ReportFilesError, write_report_files

ARGUMENT_SPEC = {
    "dest": {"type": "path", "required": True},
    "files": {"type": "dict", "required": True},
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
