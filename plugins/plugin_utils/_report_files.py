# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's files, written on the controller (plugins/action/sglang_fleet_report.py).

Controller-only. Each file is replaced in one step (a temporary file beside it, then a rename), so a reader
never sees half a report, and only when its content or mode differs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import tempfile


class ReportFilesError(Exception):
    """A file of the report cannot be written; the message names the path and what to set."""


def _current(path):
    """(content, mode) of the file at path, (None, None) when there is none."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFilesError("cannot read %s (%s): set sglang_fleet_report_dir to a directory of report files"
                               % (path, exc)) from None


def _replace(path, content, mode):
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_report_files(dest, files, mode=0o644, dir_mode=0o755, check_mode=False):
    """Write {file name: content} into the directory dest (made when missing).

    Returns {"changed", "dest", "written": [paths changed], "diff": [{before, after, before_header, after_header}]};
    in check mode nothing is written and the same answer says what would be.
    """
    if not dest:
        raise ReportFilesError("no report directory: set sglang_fleet_report_dir")
    for name in files:
        if not name or os.path.basename(name) != name or name in (".", ".."):
            raise ReportFilesError("%r is not a file name inside %s" % (name, dest))
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise ReportFilesError("%s is not a directory: set sglang_fleet_report_dir to a directory" % dest)
    made_dir = not os.path.isdir(dest)
    if made_dir and not check_mode:
        try:
            os.makedirs(dest, dir_mode)
        except OSError as exc:
            raise ReportFilesError("cannot make the report directory %s (%s): set sglang_fleet_report_dir to a "
                                   "directory this user can write" % (dest, exc)) from None
    written, diff = [], []
    for name in sorted(files):
        path = os.path.join(dest, name)
        content = files[name]
        before, before_mode = (None, None) if made_dir else _current(path)
        if before == content and before_mode == mode:
            continue
        written.append(path)
        diff.append({"before": before or "", "after": content, "before_header": path, "after_header": path})
        if not check_mode:
            try:
                _replace(path, content, mode)
            except OSError as exc:
                raise ReportFilesError("cannot write %s (%s): set sglang_fleet_report_dir to a directory this user "
                                       "can write" % (path, exc)) from None
    return {"changed": made_dir or bool(written), "dest": dest, "written": written, "diff": diff}
