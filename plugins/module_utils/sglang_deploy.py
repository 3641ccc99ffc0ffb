# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a deployment intent into the exact, validated command line a given SGLang release accepts.

Pure functions (no I/O): the role calls them through the collection's filters, and unit tests
call them with real releases' flags.
"""

from __future__ import absolute_import, division, print_function

import difflib
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import INTENT_FLAGS, capabilities

# The intents every deployment writes, and the speculative ones it writes when asked.
BASE_INTENTS = ("model_path", "host", "port", "tp_size")
SPECULATIVE_INTENTS = ("algorithm", "draft_model_path", "block_size", "draft_window_size")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SAFE_ARG = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


class UnsafeValue(ValueError):
    """A value that cannot be written into a unit file without changing its meaning."""


def option_index(flags):
    """(visible option strings, {hidden option string: replacement or None})."""
    visible = set()
    hidden = set()
    for flag in flags:
        names = [flag["name"]] + list(flag.get("aliases") or [])
        if flag.get("negated_by"):
            names.append(flag["negated_by"])
        (hidden if flag.get("hidden") else visible).update(names)
    return visible, hidden - visible


def _dest(option):
    return option.lstrip("-").replace("-", "_")


def check_extra_args(extra_args, visible, hidden, managed, deprecated):
    """Problems with operator-supplied extra arguments (unknown, deprecated, or managed flags)."""
    problems = []
    for token in extra_args:
        if not token.startswith("--"):
            continue
        option = token.split("=", 1)[0]
        if option in hidden:
            instead = deprecated.get(option)
            problems.append("%s is a hidden, deprecated alias in this release%s" % (
                option, "; use %s" % instead if instead else ""))
        elif option not in visible:
            close = difflib.get_close_matches(option.replace("_", "-"), sorted(visible), n=3, cutoff=0.75)
            problems.append("%s is not a flag of this release%s" % (
                option, " (did you mean %s?)" % " or ".join(close) if close else ""))
        elif option in managed:
            problems.append("%s is set by the role from its own variables; remove it from sglang_dflash_extra_args"
                            % option)
    return problems


def launch_plan(flags, settings, extra_algorithms=()):
    """Build the server argv for `settings` on the release whose flags are `flags`.

    settings: python, launcher_module, model_path, host, port, tp_size, algorithm, draft_model_path,
    block_size, draft_window_size, extra_args (list of argv tokens).
    Returns {argv, errors, expected_server_info, flag_names, capabilities}; argv is None when
    there are errors. Never writes a flag the release does not visibly accept.
    """
    caps = capabilities(flags, extra_algorithms)
    visible, hidden = option_index(flags)
    names = caps["flags"]
    errors = []
    algorithm = settings.get("algorithm")
    supported = caps["speculative_algorithms"] or []
    if not caps["speculative"]:
        errors.append("this release has no --speculative-algorithm flag")
    elif algorithm not in supported:
        errors.append("speculative algorithm %s is not supported by this release (it knows %s)"
                      % (algorithm, ", ".join(supported) or "none"))

    wanted = list(BASE_INTENTS) + ["algorithm", "draft_model_path"]
    if settings.get("block_size") is not None:
        wanted.append("block_size")
    if settings.get("draft_window_size") is not None:
        wanted.append("draft_window_size")
    if int(settings.get("tp_size") or 1) == 1:
        wanted.remove("tp_size")
    for intent in wanted:
        if not names.get(intent):
            errors.append("no flag for %s in this release" % intent.replace("_", " "))

    managed = set(option for intent in BASE_INTENTS + SPECULATIVE_INTENTS + ("num_draft_tokens",)
                  for option in INTENT_FLAGS[intent])
    errors.extend(check_extra_args(settings.get("extra_args") or [], visible, hidden, managed,
                                   caps["deprecated_aliases"]))

    result = {"capabilities": caps, "flag_names": dict((i, names.get(i)) for i in wanted), "errors": errors,
              "argv": None, "expected_server_info": {}}
    if errors:
        return result
    argv = [settings["python"], "-m", settings.get("launcher_module") or "sglang.launch_server"]
    values = {
        "model_path": settings["model_path"], "host": settings["host"], "port": settings["port"],
        "tp_size": settings.get("tp_size"), "algorithm": algorithm,
        "draft_model_path": settings["draft_model_path"], "block_size": settings.get("block_size"),
        "draft_window_size": settings.get("draft_window_size"),
    }
    for intent in wanted:
        argv += [names[intent], str(values[intent])]
    argv += [str(a) for a in settings.get("extra_args") or []]
    unsafe = []
    for arg in argv:
        try:
            systemd_quote(arg)
        except UnsafeValue as exc:
            unsafe.append(str(exc))
    if unsafe:
        errors.extend(unsafe)
        return result
    result["argv"] = argv
    expected = {}
    for intent in ("algorithm", "draft_model_path", "block_size", "draft_window_size"):
        if intent in wanted:
            expected[_dest(names[intent])] = values[intent]
    result["expected_server_info"] = expected
    return result


def confirm_server_info(info, expected):
    """Differences between what the running server reports and what was asked: [(key, want, got)]."""
    diffs = []
    for key, want in sorted(expected.items()):
        got = info.get(key)
        same = str(got) == str(want) if not isinstance(want, (int, float)) else _num(got) == want
        if not same:
            diffs.append([key, want, got])
    return diffs


def _num(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


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


def drafter_problems(config, requested_block_size):
    """Check a DFlash drafter's config.json the way SGLang's parse_dflash_draft_config reads it.

    Keys come from config["dflash_config"] first, then the top level (num_hidden_layers from
    text_config when present). Returns (problems, drafter_block_size).
    """
    if not isinstance(config, dict):
        return ["config.json is not a JSON object"], None
    section = config.get("dflash_config") if isinstance(config.get("dflash_config"), dict) else {}

    def get(key):
        if key in section:
            return section[key]
        if key == "num_hidden_layers" and isinstance(config.get("text_config"), dict):
            return config["text_config"].get(key, config.get(key))
        return config.get(key)

    problems = []
    block = get("block_size")
    if block is None:
        problems.append("config.json has no block_size (in dflash_config or at the top level)")
    elif not isinstance(block, int) or isinstance(block, bool) or block < 1:
        problems.append("block_size %r is not an integer >= 1" % (block,))
        block = None
    layers = get("num_hidden_layers")
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
        problems.append("num_hidden_layers %r is not an integer >= 1" % (layers,))
    ids = get("target_layer_ids")
    if ids is not None and (not isinstance(ids, list) or not ids or
                            not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)):
        problems.append("target_layer_ids %r is not a non-empty list of integers >= 0" % (ids,))
    mask_id = get("mask_token_id")
    if mask_id is not None and (not isinstance(mask_id, int) or isinstance(mask_id, bool) or mask_id < 0):
        problems.append("mask_token_id %r is not an integer >= 0" % (mask_id,))
    for first, second in (("conv_kernel_size", "conv_group_size"), ("selector_rank", "selector_top_k")):
        if (get(first) is None) != (get(second) is None):
            problems.append("%s and %s must be set together" % (first, second))
    if block is not None and requested_block_size is not None and int(requested_block_size) != block:
        problems.append("the drafter was trained with block_size %d but %s was requested"
                        % (block, requested_block_size))
    return problems, block


def parse_exec_start(line):
    """Split an ExecStart= value the way systemd does (enough for our own units and simple ones)."""
    out = []
    current = None
    quote = None
    i = 0
    line = line.strip()
    for prefix in ("-", "@", "+", "!!", "!", ":"):
        if line.startswith(prefix) and not line.startswith(prefix + " "):
            line = line[len(prefix):]
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and i + 1 < len(line):
                current += line[i + 1]
                i += 2
                continue
            if c == quote:
                quote = None
            else:
                current += c
        elif c in "\"'":
            quote = c
            current = current or ""
        elif c.isspace():
            if current is not None:
                out.append(current)
                current = None
        elif c == "\\" and i + 1 < len(line):
            current = (current or "") + line[i + 1]
            i += 2
            continue
        else:
            current = (current or "") + c
        i += 1
    if current is not None:
        out.append(current)
    return [a.replace("%%", "%").replace("$$", "$") for a in out]
