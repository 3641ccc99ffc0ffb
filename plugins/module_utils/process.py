# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command as an argv list with a hard timeout.

AnsibleModule.run_command has no timeout, and a hung interpreter (an import
that blocks on a GPU driver, a stuck NFS mount) must not hang the play, so
the child gets its own process group and the whole group is killed on expiry.
"""

from __future__ import absolute_import, division, print_function

import os
import signal
import subprocess
import time


class CommandResult(object):
    """What one command did: exit code, output, whether it timed out."""

    def __init__(self, argv, rc, stdout, stderr, timed_out, elapsed_s, error=None):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.elapsed_s = elapsed_s
        # OSError text when the command could not be started at all.
        self.error = error

    @property
    def ok(self):
        return self.error is None and not self.timed_out and self.rc == 0

    def stderr_tail(self, lines=15):
        return "\n".join(self.stderr.strip().splitlines()[-lines:])


def c_locale_env(extra=None, columns=None):
    """Environment for parsing a tool's output: C locale, optional wide COLUMNS."""
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    if columns:
        env["COLUMNS"] = str(columns)
    for key, value in (extra or {}).items():
        env[str(key)] = str(value)
    return env


def run_argv(argv, timeout, env=None, stdin_text=None, cwd=None):
    """Run argv without a shell; kill its process group after timeout seconds."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [str(a) for a in argv],
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(argv, None, "", "", False, time.monotonic() - start, error=str(exc))
    timed_out = False
    try:
        out, err = proc.communicate(input=stdin_text.encode("utf-8") if stdin_text is not None else None,
                                    timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = proc.communicate()
    return CommandResult(
        argv,
        proc.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        timed_out,
        time.monotonic() - start,
    )


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        # The group is already gone; kill the direct child in case it left it.
        try:
            proc.kill()
        except OSError:
            pass
