# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A service's environment: what its unit's files give on the next start, and what the running process got.

The one reader of EnvironmentFile= in the collection. For a running service the ground truth is the
process's own environment (/proc/MAINPID/environ, readable as root): the files may have been edited since
it started. The files tell what a (re)start will give, and all there is for a service that does not run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NEWLINE = "\n\r"
_WHITESPACE = " \t\n\r"
# Characters a backslash escapes inside double quotes; before any other the backslash stays.
_DOUBLE_QUOTE_ESCAPES = '"\\`$'
# The variables that decide what the collection does with a service: its GPUs and its interpreter's paths
# (the port's variables are the ones its --port uses, added per unit).
PYTHON_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONSAFEPATH",
                    "VIRTUAL_ENV", "PATH")
DECIDING_VARIABLES = ("CUDA_VISIBLE_DEVICES",) + PYTHON_VARIABLES
RUNNING_STATES = ("active", "activating", "reloading", "deactivating")
DRIFT_NOTE = "edited since start, restart pending"


def parse_environment_file(text):
    """[(name, value)] of an EnvironmentFile's text, in order, with the rules of systemd 252 (Debian 12).

    As load_env_file() of systemd 252 (src/basic/env-file.c) then the validity check of the assignments:
    - a line whose first non-blank character is # or ; is a comment; a backslash in a comment hides the next
      character, a newline too, so the following line is comment as well (systemd 254 changed that);
    - a line without = is ignored; blanks around the name and before the value are dropped;
    - unquoted: a backslash keeps the next character and joins the next line, trailing blanks are dropped,
      # and quotes inside the value are plain characters;
    - at the value's start and right after a closing quote, '...' is literal (newlines included) and "..."
      takes backslash escapes of " \\ ` $ and a backslash-newline (before anything else the backslash stays);
      the pieces join: "x"'y'z is xyz; an unclosed quote runs to the end of the file;
    - no $VAR expansion; CR counts as a line end;
    - a name that is not [A-Za-z_][A-Za-z0-9_]* (`export NAME`, `1X`, `A-B`) or text that is not UTF-8
      drops that assignment (systemd logs a warning), the rest of the file still counts.
    Later assignments of a name override earlier ones when the pairs are put in a dict.
    """
    pairs = []
    key, value = [], None
    state = "pre_key"
    trailing = None  # where the unquoted value's trailing blanks start

    def push():
        name = "".join(key).rstrip(_WHITESPACE)
        text_value = "".join(value or [])
        if trailing is not None and state == "value":
            text_value = text_value[:trailing]
        pairs.append((name, text_value))

    for c in text:
        if state == "pre_key":
            if c in "#;":
                state = "comment"
            elif c not in _WHITESPACE:
                state, key = "key", [c]
        elif state == "key":
            if c in _NEWLINE:
                state = "pre_key"  # no = on the line
            elif c == "=":
                state, value, trailing = "pre_value", [], None
            else:
                key.append(c)
        elif state == "pre_value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
            elif c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "\\":
                state = "value_escape"
            elif c not in _WHITESPACE:
                state, trailing = "value", None
                value.append(c)
        elif state == "value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
            elif c == "\\":
                state, trailing = "value_escape", None
            else:
                if c not in _WHITESPACE:
                    trailing = None
                elif trailing is None:
                    trailing = len(value)
                value.append(c)
        elif state == "value_escape":
            state = "value"
            if c not in _NEWLINE:
                value.append(c)
        elif state == "single":
            if c == "'":
                state = "pre_value"
            else:
                value.append(c)
        elif state == "double":
            if c == '"':
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                value.append(c)
        elif state == "double_escape":
            state = "double"
            if c in _DOUBLE_QUOTE_ESCAPES:
                value.append(c)
            elif c != "\n":
                value.extend(("\\", c))
        elif state == "comment":
            if c == "\\":
                state = "comment_escape"
            elif c in _NEWLINE:
                state = "pre_key"
        else:  # comment_escape: the escaped character, a newline too, stays in the comment
            state = "comment"
    if state not in ("pre_key", "key", "comment", "comment_escape"):
        push()
    return [(name, val) for name, val in pairs if _NAME.match(name) and _is_text(name + val)]


def _is_text(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8, kept as surrogates when read
        return False
    return True


def read_environment_file(path):
    """parse_environment_file of a file; OSError when it cannot be read."""
    with open(path, "rb") as handle:
        return parse_environment_file(handle.read().decode("utf-8", "surrogateescape"))


def unit_file_environment(unit, names=None):
    """{name: value} a (re)start of the unit gives from Environment= and EnvironmentFile= (names: only these).

    As systemd applies them: Environment= first, then each file in order (a glob: its matches, sorted)
    overriding it; a file that cannot be read is left out, as systemd does for an optional one (a
    required one keeps the service from starting at all).
    """
    env = dict(unit.get("environment") or [])
    for entry in unit.get("environment_files") or []:
        paths = sorted(glob.glob(entry["path"])) if glob.has_magic(entry["path"]) else [entry["path"]]
        for path in paths:
            try:
                env.update(read_environment_file(path))
            except OSError:
                continue
    return _only(env, names)


def process_environment(pid, names=None):
    """{name: value} of a process's environment as it was started (/proc/PID/environ); None when unreadable."""
    try:
        with open("/proc/%d/environ" % int(pid), "rb") as handle:
            raw = handle.read()
    except (OSError, ValueError, TypeError):
        return None
    env = {}
    for item in raw.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq:
            env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return _only(env, names)


def manager_environment(run_systemctl):
    """{name: value} systemd gives every service before its own settings (`systemctl show-environment`)."""
    rc, out, _err = run_systemctl(["systemctl", "show-environment"])
    if rc != 0:
        return {}
    return dict(parse_environment_file(out))


def service_environment(unit, names, manager_env=None):
    """What the service has, what a restart gives it, and where the two differ.

    {values: the truth (the process's where it runs and can be read, else after_restart), source
    ("process PID" or "unit files"), after_restart: the unit's files over the manager's environment (what a
    start gives), drift: names whose value differs between the two (the files were edited since the start)}.
    """
    names = tuple(names)
    after_restart = _only(manager_env or {}, names)
    after_restart.update(unit_file_environment(unit, names))
    pid = unit.get("main_pid") or 0
    running = process_environment(pid, names) \
        if pid > 0 and unit.get("active_state") in RUNNING_STATES else None
    if running is None:
        return {"values": after_restart, "source": "unit files", "after_restart": after_restart, "drift": []}
    drift = sorted(n for n in set(after_restart) | set(running) if after_restart.get(n) != running.get(n))
    return {"values": running, "source": "process %d" % pid, "after_restart": after_restart, "drift": drift}


def _only(env, names):
    return dict(env) if names is None else dict((k, v) for k, v in env.items() if k in names)
