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

import fcntl
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


def run_argv(argv, timeout, env=None, stdin_text=None, cwd=None, max_output_bytes=0, on_stdout_line=None,
             meanwhile=None, on_stdout_lines=None):
    """Run argv without a shell; kill its process group after timeout seconds.

    With max_output_bytes (stdout and stderr together; 0 means no limit), reading stops and the
    group is killed once the command printed more: a runaway program cannot fill the memory.
    With on_stdout_line, each line of stdout (bytes, without its newline) is handed to it as the
    command prints it, and stdout is not kept: the caller works while the command runs. Should the
    callback raise, the group is killed and the exception goes on to the caller. on_stdout_lines
    takes the same lines in blocks (bytes of whole lines, each ending in a newline): one call per
    read instead of one per line, for a caller that parses many lines.
    With meanwhile (an iterator), its steps run in this thread while the command runs, between reads
    of its output, so the output never waits long; whatever is left of it runs once the command's
    output has ended. Its exceptions, too, kill the group and go on to the caller.
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
        splitter = _LineSplitter(on_stdout_line, on_stdout_lines) if on_stdout_line or on_stdout_lines else None
        out, err, stopped = _read_all(proc, stdin_bytes, start + timeout, max_output_bytes, splitter, meanwhile)
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


def _read_all(proc, stdin_bytes, deadline, max_output_bytes, stdout_lines=None, meanwhile=None):
    """(stdout, stderr, why reading stopped early: None, "timeout" or "output").

    With stdout_lines (a _LineSplitter), stdout goes to it and b"" is returned for it. With meanwhile,
    its steps run for up to STEP_SLICE_S at a time whenever no output is waiting.
    """
    steps = iter(meanwhile) if meanwhile is not None else None
    pipes = _Pipes(proc, stdin_bytes, stdout_lines)
    stopped = None
    with pipes.selector:
        while pipes.selector.get_map() and stopped is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stopped = "timeout"
                break
            ready = pipes.selector.select(0 if steps is not None else remaining)
            if not ready and steps is not None:
                steps = _run_steps(steps, STEP_SLICE_S)
                continue
            read = pipes.serve(ready)
            if max_output_bytes and pipes.total > max_output_bytes:
                stopped = "output"
            elif pipes.stdout_lines and steps is None and 0 < read < STREAM_BATCH_BYTES:
                # A streaming reader woken for each write of a chatty command costs more than the
                # lines: let a few writes gather (the pipe holds far more than this pause brings).
                time.sleep(STREAM_BATCH_S)
    if steps is not None and stopped is None:
        for _step in steps:
            pass
    return b"".join(pipes.chunks[proc.stdout]), b"".join(pipes.chunks[proc.stderr]), stopped


# How long the meanwhile steps may keep the output waiting between two reads.
STEP_SLICE_S = 0.002
# Streamed stdout: a read of less than this many bytes waits STREAM_BATCH_S before the next one.
STREAM_BATCH_BYTES = 1 << 15
STREAM_BATCH_S = 0.002
# A streamed stdout pipe is made this large where the system lets it (F_SETPIPE_SZ, Linux), so that
# the pauses above do not stop a command that prints fast; else it keeps its 64 KiB.
STREAM_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Python < 3.10 lacks the name


def _run_steps(steps, seconds):
    """Run steps for about `seconds`; the iterator, or None once it is exhausted."""
    until = time.monotonic() + seconds
    for _step in steps:
        if time.monotonic() >= until:
            return steps
    return None


class _Pipes(object):
    """The child's pipes under one selector: stdin written, stdout and stderr read (or streamed)."""

    def __init__(self, proc, stdin_bytes, stdout_lines):
        self.proc = proc
        self.stdin_bytes = stdin_bytes
        self.chunks = {proc.stdout: [], proc.stderr: []}
        self.stdout_lines = stdout_lines
        if self.stdout_lines:
            try:
                fcntl.fcntl(proc.stdout.fileno(), _F_SETPIPE_SZ, STREAM_PIPE_BYTES)
            except OSError:
                pass
        self.selector = selectors.DefaultSelector()
        for pipe in self.chunks:
            self.selector.register(pipe, selectors.EVENT_READ)
        if stdin_bytes:
            self.selector.register(proc.stdin, selectors.EVENT_WRITE)
        elif proc.stdin is not None:
            proc.stdin.close()
        self.written = self.total = 0

    def serve(self, ready):
        """Write or read once on each ready pipe; the number of stdout bytes read."""
        proc, read = self.proc, 0
        for key, _events in ready:
            if key.fileobj is proc.stdin:
                try:
                    # select() promised room for PIPE_BUF bytes: this write does not block.
                    self.written += os.write(key.fd, self.stdin_bytes[self.written:self.written + select.PIPE_BUF])
                except BrokenPipeError:
                    self.written = len(self.stdin_bytes)
                if self.written >= len(self.stdin_bytes):
                    self.selector.unregister(proc.stdin)
                    proc.stdin.close()
                continue
            data = os.read(key.fd, 1 << 16)
            if not data:
                self.selector.unregister(key.fileobj)
                if key.fileobj is proc.stdout and self.stdout_lines:
                    self.stdout_lines.close()
                continue
            if key.fileobj is proc.stdout:
                read = len(data)
            if key.fileobj is proc.stdout and self.stdout_lines:
                self.stdout_lines.feed(data)
            else:
                self.chunks[key.fileobj].append(data)
            self.total += len(data)
        return read


class _LineSplitter(object):
    """Hands the complete lines of a byte stream on, the unterminated last one at close(): one at a
    time to on_line, or in blocks of whole lines, each ending in a newline, to on_lines."""

    def __init__(self, on_line=None, on_lines=None):
        self.on_line = on_line
        self.on_lines = on_lines
        self.pending = []  # the start of a line that has not ended yet

    def feed(self, data):
        end = data.rfind(b"\n")
        if end == -1:
            self.pending.append(data)
            return
        self.pending.append(data[:end + 1])
        block = b"".join(self.pending)
        self.pending = [data[end + 1:]]
        self._hand_over(block)

    def close(self):
        rest = b"".join(self.pending)
        self.pending = []
        if rest:
            self._hand_over(rest + b"\n")

    def _hand_over(self, block):
        if self.on_lines:
            self.on_lines(block)
            return
        for line in block[:-1].split(b"\n"):
            self.on_line(line)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        # The group is already gone; kill the direct child in case it left it.
        try:
            proc.kill()
        except OSError:
            pass
