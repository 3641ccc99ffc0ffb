# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the help text argparse prints into structured flags.

Run the program with LC_ALL=C and a wide COLUMNS so that invocations are not
wrapped and group titles are the English ones ("options:" since Python 3.10,
"optional arguments:" before).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# "  -x, --long VALUE, --alias VALUE   help" -> invocation and help are split by 2+ spaces.
_OPTION_LINE = re.compile(r"^  (?P<inv>-\S.*?)(?:\s{2,}(?P<help>\S.*))?$")
# Split "--a A, --b {x,y}" at the commas that start a new option string.
_SPLIT_INVOCATION = re.compile(r",\s+(?=-)")
_GROUP_TITLE = re.compile(r"^(?P<title>\S.*):\s*$")
_DEFAULT = re.compile(r"\(default:\s*(?P<value>.*?)\)\s*$")


class HelpParseError(Exception):
    """The text is not argparse help."""


def _split_option(part):
    """'--long {a,b}' -> ('--long', '{a,b}'); '-h' -> ('-h', '')."""
    bits = part.strip().split(None, 1)
    return bits[0], (bits[1] if len(bits) > 1 else "")


def _choices(metavar):
    m = re.match(r"^\{(.*)\}", metavar)
    if not m:
        return None
    return [c for c in m.group(1).split(",") if c != ""]


def _join_help(lines):
    text = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if not text:
            text = line
        elif text.endswith("-") and not text.endswith(" -") and not text.endswith("--"):
            # argparse's textwrap breaks long words after a hyphen ("auto-" / "infer").
            text += line
        else:
            text += " " + line
    return text


def _finish(flag, help_lines):
    text = _join_help(help_lines)
    flag["help"] = text
    m = _DEFAULT.search(text)
    flag["default"] = m.group("value") if m else None


def parse_help(text):
    """Return (flags, info) from argparse help text.

    flags: list of dicts with name, aliases, takes_value, metavar, choices, default, help, group,
    negated_by (the --no- twin of a BooleanOptionalAction).
    info: prog (from the usage line) and groups in order.
    Raises HelpParseError when the text has no usage line or no option at all.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    usage = next((line for line in lines if line.lower().startswith("usage:")), None)
    if usage is None:
        raise HelpParseError("no 'usage:' line: this is not argparse help")
    prog = usage.split(None, 2)[1] if len(usage.split()) > 1 else None

    flags = []
    groups = []
    group = None
    current = None
    help_lines = []
    in_usage = False
    for line in lines:
        if line.lower().startswith("usage:"):
            in_usage = True
            continue
        if in_usage:
            # Usage continuation lines are indented; a blank line ends it.
            if line.strip() == "":
                in_usage = False
            continue
        title = _GROUP_TITLE.match(line)
        if title:
            if current:
                _finish(current, help_lines)
                current = None
            group = title.group("title")
            groups.append(group)
            continue
        option = _OPTION_LINE.match(line) if group is not None else None
        if option:
            if current:
                _finish(current, help_lines)
            parts = _SPLIT_INVOCATION.split(option.group("inv").strip())
            names = []
            metavar = ""
            for part in parts:
                name, value = _split_option(part)
                names.append(name)
                metavar = metavar or value
            longs = [n for n in names if n.startswith("--")]
            primary = longs[0] if longs else names[0]
            negated = [n for n in names if n.startswith("--no-") and n != primary]
            current = {
                "name": primary,
                "aliases": [n for n in names if n != primary and n not in negated],
                "takes_value": bool(metavar),
                "metavar": metavar or None,
                "choices": _choices(metavar),
                "group": group,
                "negated_by": negated[0] if negated else None,
            }
            flags.append(current)
            help_lines = [option.group("help") or ""]
            continue
        if current is not None and line.startswith("   "):
            help_lines.append(line)
        elif current is not None and line.strip() == "":
            help_lines.append("")
        elif current is not None:
            # A group description or other prose: the previous flag's help is done.
            _finish(current, help_lines)
            current = None
            help_lines = []
    if current:
        _finish(current, help_lines)
    if not flags:
        raise HelpParseError("no option lines found after the usage line")
    return flags, {"prog": prog, "groups": groups}


def option_strings(flags):
    """Every option string the flags accept (names, aliases, --no- twins)."""
    out = set()
    for flag in flags:
        out.add(flag["name"])
        out.update(flag.get("aliases") or [])
        if flag.get("negated_by"):
            out.add(flag["negated_by"])
    return out


def filter_flags(flags, prefix=None, regex=None):
    """Keep flags any of whose option strings starts with prefix / matches regex."""
    pattern = re.compile(regex) if regex else None
    kept = []
    for flag in flags:
        names = [flag["name"]] + list(flag.get("aliases") or [])
        if prefix and not any(n.startswith(prefix) for n in names):
            continue
        if pattern and not any(pattern.search(n) for n in names):
            continue
        kept.append(flag)
    return kept
