# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command as an argv list with a hard timeout and an optional cap on its output.

AnsibleModule.run_command has no timeout, and a hung interpreter (an import
that blocks on a GPU driver, a stuck NFS mount) must not hang the play, so
the child gets its own process group and the whole group is killed on expiry.
Likewise a command that prints without end must not exhaust the target's memory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import select
import selectors
import signal
import subprocess
import time


class CommandResult(object):
    """What one command did: exit code, output, whether it timed out or printed too much."""

    def __init__(self, argv, rc, stdout_bytes, stderr_bytes, timed_out, elapsed_s, error=None, output_cut=False):
        self.argv = argv
        self.rc = rc
        # The output as printed; .stdout and .stderr are its text (undecodable bytes replaced).
        self.stdout_bytes = stdout_bytes
        self.stderr_bytes = stderr_bytes
        self.timed_out = timed_out
        self.elapsed_s = elapsed_s
        # OSError text when the command could not be started at all.
        self.error = error
        # Reading stopped at max_output_bytes and the command was killed.
        self.output_cut = output_cut

    @property
    def stdout(self):
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self):
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self):
        return self.error is None and not self.timed_out and not self.output_cut and self.rc == 0

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


def run_argv(argv, timeout, env=None, stdin_text=None, cwd=None, max_output_bytes=0, on_stdout_line=None):
    """Run argv without a shell; kill its process group after timeout seconds.

    With max_output_bytes (stdout and stderr together; 0 means no limit), reading stops and the
    group is killed once the command printed more: a runaway program cannot fill the memory.
    With on_stdout_line, each line of stdout (bytes, without its newline) is handed to it as the
    command prints it, and stdout is not kept: the caller works while the command runs. Should the
    callback raise, the group is killed and the exception goes on to the caller.
    """
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
        return CommandResult(argv, None, b"", b"", False, time.monotonic() - start, error=str(exc))
    stdin_bytes = stdin_text.encode("utf-8") if stdin_text is not None else None
    try:
        out, err, stopped = _read_all(proc, stdin_bytes, start + timeout, max_output_bytes, on_stdout_line)
        if stopped is None:
            try:
                proc.wait(timeout=max(start + timeout - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                stopped = "timeout"
        if stopped:
            _kill_group(proc)
            proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return CommandResult(
        argv,
        proc.returncode,
        out,
        err,
        stopped == "timeout",
        time.monotonic() - start,
        output_cut=stopped == "output",
    )


def _read_all(proc, stdin_bytes, deadline, max_output_bytes, on_stdout_line=None):
    """(stdout, stderr, why reading stopped early: None, "timeout" or "output").

    With on_stdout_line, stdout goes to it line by line and b"" is returned for it.
    """
    chunks = {proc.stdout: [], proc.stderr: []}
    stdout_lines = _LineSplitter(on_stdout_line) if on_stdout_line else None
    selector = selectors.DefaultSelector()
    for pipe in chunks:
        selector.register(pipe, selectors.EVENT_READ)
    if stdin_bytes:
        selector.register(proc.stdin, selectors.EVENT_WRITE)
    elif proc.stdin is not None:
        proc.stdin.close()
    written = total = 0
    stopped = None
    with selector:
        while selector.get_map() and stopped is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stopped = "timeout"
                break
            for key, _events in selector.select(remaining):
                if key.fileobj is proc.stdin:
                    try:
                        # select() promised room for PIPE_BUF bytes: this write does not block.
                        written += os.write(key.fd, stdin_bytes[written:written + select.PIPE_BUF])
                    except BrokenPipeError:
                        written = len(stdin_bytes)
                    if written >= len(stdin_bytes):
                        selector.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fileobj)
                    if key.fileobj is proc.stdout and stdout_lines:
                        stdout_lines.close()
                    continue
                if key.fileobj is proc.stdout and stdout_lines:
                    stdout_lines.feed(data)
                else:
                    chunks[key.fileobj].append(data)
                total += len(data)
                if max_output_bytes and total > max_output_bytes:
                    stopped = "output"
                    break
    return b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr]), stopped


class _LineSplitter(object):
    """Hands the complete lines of a byte stream to on_line; the unterminated last one at close()."""

    def __init__(self, on_line):
        self.on_line = on_line
        self.pending = []  # the start of a line that has not ended yet

    def feed(self, data):
        end = data.rfind(b"\n")
        if end == -1:
            self.pending.append(data)
            return
        self.pending.append(data[:end])
        lines = b"".join(self.pending).split(b"\n")
        self.pending = [data[end + 1:]]
        for line in lines:
            self.on_line(line)

    def close(self):
        rest = b"".join(self.pending)
        self.pending = []
        if rest:
            self.on_line(rest)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        # The group is already gone; kill the direct child in case it left it.
        try:
            proc.kill()
        except OSError:
            pass
