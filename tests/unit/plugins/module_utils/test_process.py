"""process.run_argv: output, the timeout that kills the whole group, the output cap, env, streamed stdout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import time

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.process import c_locale_env, run_argv

PY = sys.executable


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_output_exit_code_and_stdin():
    run = run_argv([PY, "-c", "import sys; print(sys.stdin.read().upper()); sys.stderr.write('warn'); sys.exit(3)"],
                   timeout=30, stdin_text="hello")
    assert (run.rc, run.stdout, run.stderr, run.ok) == (3, "HELLO\n", "warn", False)
    assert not run.timed_out and not run.output_cut and run.error is None


def test_undecodable_bytes_are_replaced_in_text_and_kept_raw():
    run = run_argv([PY, "-c", "import os; os.write(2, b'caf\\xe9')"], timeout=30)
    assert run.ok and run.stderr == "caf\ufffd" and run.stderr_bytes == b"caf\xe9"


def test_timeout_kills_the_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    # The child starts a grandchild in its own group, then both hang: the whole group must go.
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "open(%r, 'w').write(str(p.pid))\n"
            "time.sleep(60)\n") % str(pid_file)
    started = time.monotonic()
    run = run_argv([PY, "-c", code], timeout=2)
    assert run.timed_out and not run.ok and time.monotonic() - started < 10
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_max_output_bytes_stops_a_runaway_command():
    run = run_argv([PY, "-c", "while True: print('x' * 1000)"], timeout=30, max_output_bytes=100000)
    assert run.output_cut and not run.timed_out and not run.ok
    assert 100000 < len(run.stdout) < 100000 + (1 << 17)


def test_env_and_c_locale():
    run = run_argv([PY, "-c", "import os; print(os.environ['LC_ALL'], os.environ['COLUMNS'], os.environ['X'])"],
                   timeout=30, env=c_locale_env({"X": 1}, columns=300))
    assert run.stdout.split() == ["C", "300", "1"]


def test_a_command_that_cannot_start():
    run = run_argv(["/nonexistent/tool"], timeout=30)
    assert run.rc is None and "No such file" in run.error and not run.ok


def test_stdout_lines_are_handed_over_as_printed():
    lines = []
    # The last line has no newline; a line longer than one read (64 KiB) arrives whole.
    code = "import sys; sys.stdout.write('a\\n\\nb' + 'c' * 200000 + '\\nlast')"
    run = run_argv([PY, "-c", code], timeout=30, on_stdout_line=lines.append)
    assert run.ok and run.stdout == "" and run.stdout_bytes == b""
    assert lines == [b"a", b"", b"b" + b"c" * 200000, b"last"]


def test_stdout_lines_arrive_while_the_command_runs():
    seen = []

    def on_line(line):
        seen.append((line, time.monotonic()))

    code = "import sys, time; print('first', flush=True); time.sleep(1.5); print('second')"
    started = time.monotonic()
    run = run_argv([PY, "-c", code], timeout=30, on_stdout_line=on_line)
    assert run.ok and [line for line, _t in seen] == [b"first", b"second"]
    assert seen[0][1] - started < seen[1][1] - started - 1


def test_a_failing_line_callback_kills_the_command():
    def on_line(line):
        raise ValueError("bad line %r" % line)

    started = time.monotonic()
    with pytest.raises(ValueError, match="bad line b'first'"):
        run_argv([PY, "-c", "import time; print('first', flush=True); time.sleep(60)"], timeout=30,
                 on_stdout_line=on_line)
    assert time.monotonic() - started < 10


def test_stdout_lines_in_blocks_are_the_same_lines():
    blocks = []
    code = "import sys; sys.stdout.write('a\\n\\nb' + 'c' * 200000 + '\\n' + 'x\\n' * 5000 + 'last')"
    run = run_argv([PY, "-c", code], timeout=30, on_stdout_lines=blocks.append)
    assert run.ok and run.stdout_bytes == b""
    assert all(block.endswith(b"\n") for block in blocks)
    assert b"".join(blocks).split(b"\n")[:-1] == [b"a", b"", b"b" + b"c" * 200000] + [b"x"] * 5000 + [b"last"]


def test_meanwhile_steps_run_while_the_command_runs():
    """Steps between reads of the output: the lines still arrive as printed, the steps run in between."""
    events = []

    def steps():
        for n in range(2000):  # until the second line came, at most 10 s
            if ("line", b"second") in events:
                return
            events.append(("step", n))
            time.sleep(0.005)
            yield

    code = "import time; print('first', flush=True); time.sleep(0.3); print('second', flush=True)"
    run = run_argv([PY, "-c", code], timeout=30, on_stdout_line=lambda line: events.append(("line", line)),
                   meanwhile=steps())
    assert run.ok and [e for e in events if e[0] == "line"] == [("line", b"first"), ("line", b"second")]
    between = events[events.index(("line", b"first")):events.index(("line", b"second"))]
    assert len(between) > 10  # steps of 5 ms ran while the command slept for 300 ms


def test_a_failing_step_kills_the_command():
    def steps():
        yield
        raise ValueError("bad step")

    started = time.monotonic()
    with pytest.raises(ValueError, match="bad step"):
        run_argv([PY, "-c", "import time; time.sleep(60)"], timeout=30, meanwhile=steps())
    assert time.monotonic() - started < 10
