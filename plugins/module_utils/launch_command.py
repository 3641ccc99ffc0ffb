# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SGLang command behind a unit's ExecStart: its words, its wrappers, its interpreter and launcher.

An ExecStart= value is split into words the way systemd does, and every word keeps its raw text, so
that what the operator wrote (``${VAR}``, ``%i``, quotes) is written back unchanged. The command is
resolved through the wrappers people use: ``/usr/bin/env``, ``bash -c '... && exec python -m
sglang.launch_server ...'``, the ``sglang`` console script (``sglang serve``, whose interpreter its
``#!`` line names) and ``python -m MODULE``. Reading the unit's files is systemd_unit's part.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

# systemd's search path for a bare ExecStart command name and the default PATH of services.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?$")


class UnitError(Exception):
    """The unit or its command cannot be read or resolved; the message says what to set."""


class Word(object):
    """One word of a command line: its value (quotes removed) and its raw text as written."""

    __slots__ = ("value", "raw")

    def __init__(self, value, raw):
        self.value = value
        self.raw = raw

    def __repr__(self):
        return "Word(%r)" % self.value


# ---- words ---------------------------------------------------------------------------------

_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", " ": " ", "a": "\a",
              "b": "\b", "f": "\f", "v": "\v", "s": " ", "$": "$"}


def split_words(line):
    """Split a systemd command line into Words, the way systemd's extract_first_word does.

    Quotes and C escapes are removed from values; '%' specifiers and '$' variables are left as
    written (systemd resolves those itself), so quote_word(word.value) gives back an equivalent word.
    """
    words = []
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i].isspace():
            i += 1
        if i >= n:
            break
        start = i
        value = []
        quote = None
        while i < n:
            c = line[i]
            if quote:
                if c == "\\" and i + 1 < n:
                    value.append(_C_ESCAPES.get(line[i + 1], "\\" + line[i + 1]))
                    i += 2
                    continue
                if c == quote:
                    quote = None
                else:
                    value.append(c)
            elif c in "\"'":
                quote = c
            elif c.isspace():
                break
            elif c == "\\" and i + 1 < n:
                value.append(_C_ESCAPES.get(line[i + 1], line[i + 1]))
                i += 2
                continue
            else:
                value.append(c)
            i += 1
        if quote:
            raise UnitError("unbalanced %s quote in %r" % (quote, line[:200]))
        words.append(Word("".join(value), line[start:i]))
    return words


def quote_word(value):
    """A value as one systemd word, '%' and '$' left for systemd (inverse of split_words)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UnitError("value %r contains a control character" % value)
    if value and not re.search(r"[\s\"'\\;]", value):
        return value
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')


def split_exec_start(value):
    """(prefix characters such as '-' or '+', [Word]) of one ExecStart= value."""
    value = value.strip()
    prefix = ""
    while value[:1] in ("-", "@", "+", "!", ":") and value[:1]:
        prefix += value[0]
        value = value[1:]
    words = split_words(value)
    if any(w.raw == ";" for w in words):
        raise UnitError("ExecStart holds several commands separated by ';'")
    return prefix, words


# ---- shell scripts (bash -c '...') -----------------------------------------------------------

_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "\n", "(", ")")


def shell_tokens(script):
    """POSIX-shell-ish tokens of a script: dicts with kind (word/op), value, start, end.

    Enough to find the server command in a wrapper script and to keep every other byte as written.
    """
    tokens = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t":
            i += 1
            continue
        if c == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        op = next((o for o in _OPERATORS if script.startswith(o, i)), None)
        if op:
            tokens.append({"kind": "op", "value": op, "start": i, "end": i + len(op)})
            i += len(op)
            continue
        start = i
        value = []
        while i < n:
            c = script[i]
            if c in " \t\n;&|()":
                break
            if c == "'":
                end = script.find("'", i + 1)
                if end == -1:
                    raise UnitError("unbalanced ' quote in the shell script %r" % script[:200])
                value.append(script[i + 1:end])
                i = end + 1
            elif c == '"':
                i += 1
                while i < n and script[i] != '"':
                    if script[i] == "\\" and i + 1 < n and script[i + 1] in '"\\$`\n':
                        value.append(script[i + 1])
                        i += 2
                        continue
                    value.append(script[i])
                    i += 1
                if i >= n:
                    raise UnitError('unbalanced " quote in the shell script %r' % script[:200])
                i += 1
            elif c == "\\" and i + 1 < n:
                value.append(script[i + 1])
                i += 2
            elif c == "$" and script.startswith("$(", i):
                depth = 0
                while i < n:
                    if script[i] == "(":
                        depth += 1
                    elif script[i] == ")":
                        depth -= 1
                        if depth == 0:
                            i += 1
                            break
                    value.append(script[i])
                    i += 1
                value.append(")")
            else:
                value.append(c)
                i += 1
        tokens.append({"kind": "word", "value": "".join(value), "start": start, "end": i})
    return tokens


def shell_segments(tokens):
    """Simple commands of a token list: lists of word tokens between operators."""
    segments, current = [], []
    for token in tokens:
        if token["kind"] == "op":
            if current:
                segments.append(current)
            current = []
        else:
            current.append(token)
    if current:
        segments.append(current)
    return segments


def _is_redirection(value):
    return bool(re.match(r"^\d*[<>]", value))


# ---- the command behind ExecStart --------------------------------------------------------------

def which(name, path_value):
    """Absolute path of a command name on a PATH value, or None."""
    if os.sep in name:
        return name
    for directory in (path_value or DEFAULT_PATH).split(":"):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def shebang_python(path):
    """The interpreter named by a script's '#!' line (through /usr/bin/env too), or None."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    parts = first[2:].decode("utf-8", "replace").split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env" and len(parts) > 1:
        return which(parts[-1], None)
    return parts[0]


def _skip_env(values, start, path_value):
    """Index of the command after `env [options] [NAME=VALUE ...]`, and the PATH it sets."""
    i = start + 1
    while i < len(values):
        v = values[i]
        if v in ("-i", "--ignore-environment", "-", "-0", "--null", "-v", "--debug"):
            i += 1
        elif v in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif v.startswith(("--unset=", "--chdir=")) or (v[:2] in ("-u", "-C") and len(v) > 2):
            i += 1
        elif v in ("-S", "--split-string") or v.startswith(("-S", "--split-string=")):
            raise UnitError("ExecStart uses 'env -S' (a split string); set sglang_dflash_python to the interpreter")
        elif v == "--":
            i += 1
            break
        elif _ENV_ASSIGNMENT.match(v):
            if v.startswith("PATH="):
                path_value = v[len("PATH="):]
            i += 1
        else:
            break
    return i, path_value


def _python_options_end(values, start):
    """Index of '-m' after a python interpreter's own options (-u, -X opt, -W opt, -O, ...), or None."""
    i = start + 1
    while i < len(values):
        v = values[i]
        if v == "-m":
            return i
        if v in ("-X", "-W"):
            i += 2
        elif v.startswith("-") and not v.startswith("--") and v != "-c":
            i += 1
        else:
            return None
    return None


def resolve_launch(values, launchers, path_value=None, console_scripts=("sglang",)):
    """Find the server command in a word list.

    values: the words' values; launchers: module names started as `python -m MODULE`.
    Returns {index_python, index_args, python, launcher, form, path_value} where words[index_args:]
    are the server's own arguments, or None when no known launcher is in the list.
    """
    i = 0
    while i < len(values):
        v = values[i]
        base = os.path.basename(v)
        if v == "exec" or _ENV_ASSIGNMENT.match(v):
            if v.startswith("PATH="):
                path_value = v[len("PATH="):]
            i += 1
            continue
        if base == "env":
            i, path_value = _skip_env(values, i, path_value)
            continue
        if _PYTHON_NAME.match(base):
            dash_m = _python_options_end(values, i)
            if dash_m is not None and dash_m + 1 < len(values) and values[dash_m + 1] in launchers:
                return {"index_python": i, "index_args": dash_m + 2, "python": which(v, path_value) or v,
                        "launcher": values[dash_m + 1], "form": "python -m", "path_value": path_value}
            return None
        if base in console_scripts and i + 1 < len(values) and values[i + 1] == "serve":
            script = which(v, path_value)
            python = shebang_python(script) if script else None
            return {"index_python": i, "index_args": i + 2, "python": python, "launcher": base + " serve",
                    "form": "console script", "script": script, "path_value": path_value}
        return None
    return None


def resolve_command(words, launchers, environment_path=None):
    """The SGLang command behind an ExecStart's words, through env and shell wrappers.

    Returns a dict: form, wrapper (None, 'env', 'shell'), python, launcher, args (server argument
    Words), and what render_exec_start needs to write the command back with new arguments.
    Raises UnitError with what to set when the command cannot be resolved.
    """
    values = [w.value for w in words]
    if not values:
        raise UnitError("ExecStart is empty")
    first = os.path.basename(values[0])
    if first in SHELLS and len(values) > 2 and re.match(r"^-[a-z]*c$", values[1]):
        c_index = next(i for i, v in enumerate(values) if i > 0 and re.match(r"^-[a-z]*c$", v))
        if c_index + 1 >= len(values):
            raise UnitError("ExecStart runs %s -c without a script" % values[0])
        script = values[c_index + 1]
        tokens = shell_tokens(script)
        for segment in shell_segments(tokens):
            found = resolve_launch([t["value"] for t in segment], launchers, environment_path)
            if not found:
                continue
            args = segment[found["index_args"]:]
            while args and _is_redirection(args[-1]["value"]):
                args = args[:-1]
            if any(_is_redirection(t["value"]) for t in args):
                raise UnitError("the server command in the shell script of ExecStart has redirections between its "
                                "arguments; set sglang_dflash_python and simplify the unit")
            arg_words = [Word(t["value"], script[t["start"]:t["end"]]) for t in args]
            head_end = segment[found["index_args"] - 1]["end"]
            tail_start = args[-1]["end"] if args else head_end
            return dict(found, wrapper="shell", args=arg_words, shell={
                "script_index": c_index + 1, "script": script, "head_end": head_end, "tail_start": tail_start})
        raise UnitError("found no SGLang server command (python -m %s, or sglang serve) in the shell script of "
                        "ExecStart; set sglang_dflash_python to the interpreter that runs SGLang"
                        % " / ".join(launchers))
    found = resolve_launch(values, launchers, environment_path)
    if not found:
        raise UnitError("ExecStart (%s ...) is not 'python -m %s', the sglang console script ('sglang serve'), "
                        "or one of those behind /usr/bin/env or 'bash -c'; set sglang_dflash_python to the "
                        "interpreter that runs SGLang" % (" ".join(values[:3]), " / ".join(launchers)))
    wrapper = "env" if any(os.path.basename(v) == "env" for v in values[:found["index_python"]]) else None
    return dict(found, wrapper=wrapper, args=list(words[found["index_args"]:]))
