# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text this collection writes on a host: the operator's ExecStart with new server arguments, ExecStart words,
EnvironmentFile lines, our drop-in and our unit.

Controller-only and pure: values that cannot be written without changing their meaning are refused
(UnsafeValue), never written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.launch_command import quote_word
from ansible_collections.gpufleet.sglang.plugins.module_utils.systemd_unit import MANAGED_MARKER

_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SAFE_ARG = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def text_sha256(text):
    """SHA-256 of a text as it is written to a file (UTF-8); None for no text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


class UnsafeValue(ValueError):
    """A value that cannot be written into a unit file without changing its meaning."""


def systemd_quote(arg):
    """Quote one ExecStart argument so systemd passes it through byte for byte.

    systemd splits on whitespace, honours quotes and backslashes, expands %-specifiers and
    $VARIABLES; control characters (a newline would start a new unit directive) are refused.
    """
    arg = str(arg)
    if any(ord(c) < 32 or ord(c) == 127 for c in arg):
        raise UnsafeValue("value %r contains a control character (newline, tab, ...)" % arg)
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if _SAFE_ARG.match(arg):
        return escaped
    return '"%s"' % escaped.replace("\\", "\\\\").replace('"', '\\"')


def render_exec_start(prefix, words, command, new_args_raw):
    """The ExecStart value with the server's arguments replaced by new_args_raw (raw words).

    Everything before the arguments (wrappers, interpreter, launcher) keeps its raw text. In a
    shell wrapper the arguments are replaced inside the script and the script is quoted again.
    """
    if command["wrapper"] != "shell":
        head = [w.raw for w in words[:command["index_args"]]]
        return prefix + " ".join(head + list(new_args_raw))
    shell = command["shell"]
    script = shell["script"]
    middle = " " + " ".join(new_args_raw) if new_args_raw else ""
    new_script = script[:shell["head_end"]] + middle + script[shell["tail_start"]:]
    raws = [w.raw for w in words]
    raws[shell["script_index"]] = quote_word(new_script)
    return prefix + " ".join(raws)


def exec_start(argv):
    return " ".join(systemd_quote(a) for a in argv)


def environment_line(key, value):
    """One KEY="VALUE" line of an EnvironmentFile."""
    key = str(key)
    value = str(value)
    if not _ENV_KEY.match(key):
        raise UnsafeValue("environment variable name %r is not a valid name" % key)
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UnsafeValue("environment variable %s contains a control character" % key)
    return '%s="%s"' % (key, value.replace("\\", "\\\\").replace('"', '\\"'))


def environment_file_content(variables):
    """(content, problems): KEY="VALUE" lines; a bad name or value is named, never its value shown."""
    lines, problems = [], []
    for key in sorted(variables or {}):
        try:
            lines.append(environment_line(key, variables[key]))
        except UnsafeValue as exc:
            problems.append("sglang_dflash_environment: %s" % _env_problem(key, exc))
    if not lines:
        return None, problems
    header = "# %s (role sglang_dflash). Mode 0600: it holds secrets.\n" % MANAGED_MARKER
    return header + "".join(line + "\n" for line in lines), problems


def _env_problem(key, exc):
    if "name" in str(exc):
        return "%r is not a valid variable name (letters, digits and _, not starting with a digit)" % str(key)
    return "the value of %s contains a control character (newline, tab, ...)" % key


def render_dropin(plan, algorithm, env_path):
    changes = plan["changes"]
    lines = [
        "# %s (role sglang_dflash): %s speculative decoding for %s." % (MANAGED_MARKER, algorithm, plan["unit"]),
        "# The operator's unit and drop-ins are unchanged. To undo by hand: remove this file, then",
        "#   systemctl daemon-reload && systemctl restart %s" % plan["unit"],
    ]
    if plan.get("fallback"):
        lines.append("# %s instead of %s: %s (sglang_dflash_fallback_algorithm)" % (
            plan["fallback"]["to"], plan["fallback"]["from"], plan["fallback"]["reason"]))
    for kind in ("removed", "added", "overridden"):
        if changes[kind]:
            lines.append("# %s: %s" % (kind, "; ".join(changes[kind])))
    lines += ["[Service]", "ExecStart=", "ExecStart=" + plan["exec_start"]]
    if env_path:
        lines.append("EnvironmentFile=" + env_path)
    lines += plan["stop"]["lines"]
    return "\n".join(lines) + "\n"


def render_unit(plan, settings, env_path):
    lines = [
        "# %s (role sglang_dflash): SGLang with %s speculative decoding." % (MANAGED_MARKER, plan["algorithm"]),
        "[Unit]",
        "Description=SGLang server (%s speculative decoding)" % plan["algorithm"],
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        "User=%s" % settings.get("user", "root"),
    ]
    if env_path:
        lines.append("EnvironmentFile=" + env_path)
    lines += ["ExecStart=" + plan["exec_start"], "Restart=on-failure", "RestartSec=5"] + plan["stop"]["lines"]
    if settings.get("limit_nofile"):
        lines.append("LimitNOFILE=%d" % settings["limit_nofile"])
    lines += ["", "[Install]", "WantedBy=multi-user.target"]
    return "\n".join(lines) + "\n"
