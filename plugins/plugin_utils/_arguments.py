# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The server's new arguments: from the running command line (switch) or from nothing (install).

Controller-only and pure, unit-tested with real releases' flags. Switch mode keeps every argument of
the running command that is not a speculative setting, removes every speculative setting whatever the
old algorithm was, adds the DFlash/DDTree ones, and lets role variables override kept values. Kept
words keep their raw text (``${VAR}``, ``%i``, the operator's quoting). Flags that carry secrets
never appear in the command as written: their value moves to the environment file and the command
refers to it (systemd or the wrapper shell expands it when the service starts).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re
import shlex

from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_capabilities import INTENT_FLAGS, capabilities
from ansible_collections.gpufleet.sglang.plugins.module_utils.sglang_services import SGLANG_DEFAULT_PORT
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._unit_text import UnsafeValue, systemd_quote

BASE_INTENTS = ("model_path", "host", "port", "tp_size")
SPECULATIVE_INTENTS = ("algorithm", "draft_model_path", "block_size", "draft_window_size", "ddtree_budget")
INTEGER_INTENTS = ("block_size", "draft_window_size", "ddtree_budget")
INSTALL_DEFAULTS = {"host": "0.0.0.0", "port": SGLANG_DEFAULT_PORT, "tp_size": 1}
_SECRET_FLAG = re.compile(r"(api-key|password|secret|hf-token|access-token)$")
_NUMBER = re.compile(r"^-\d")
MASK = "********"


def is_secret_flag(option):
    return bool(_SECRET_FLAG.search(option))


def secret_variable(flag_name):
    """Environment variable that carries a secret flag's value, e.g. GPUFLEET_SGLANG_API_KEY."""
    return "GPUFLEET_SGLANG_" + flag_name.lstrip("-").replace("-", "_").upper()


def flag_index(flags):
    """option string -> flag dict; a visible definition wins over a hidden one."""
    index = {}
    for flag in flags:
        names = [flag["name"]] + list(flag.get("aliases") or [])
        if flag.get("negated_by"):
            names.append(flag["negated_by"])
        for name in names:
            if name not in index or (index[name].get("hidden") and not flag.get("hidden")):
                index[name] = flag
    return index


def is_speculative(flag):
    return any(n.startswith("--speculative-") for n in [flag["name"]] + list(flag.get("aliases") or []))


def parse_arguments(words, index):
    """Group argument Words into options: (options, errors).

    An option is {option, flag, values, words}; a flag that takes a value takes every following
    word up to the next option (argparse's nargs='+' lists), '--flag=value' is one word.
    """
    options, errors = [], []
    i = 0
    while i < len(words):
        word = words[i]
        text = word.value
        if not text.startswith("-") or _NUMBER.match(text):
            errors.append("argument %r is not preceded by a flag that takes a value" % text)
            i += 1
            continue
        option, eq, inline = text.partition("=")
        flag = index.get(option)
        if flag is None:
            close = difflib.get_close_matches(option, sorted(index), n=2, cutoff=0.8)
            errors.append("%s is not accepted by this release%s" % (
                option, " (did you mean %s?)" % " or ".join(close) if close else ""))
            i += 1
            while i < len(words) and not (words[i].value.startswith("--")):
                i += 1
            continue
        group = [word]
        values = [inline] if eq else []
        i += 1
        if flag.get("takes_value") and not eq:
            while i < len(words) and (not words[i].value.startswith("-") or _NUMBER.match(words[i].value)):
                group.append(words[i])
                values.append(words[i].value)
                i += 1
        options.append({"option": option, "flag": flag, "values": values, "words": group})
    return options, errors


def _quote_new(value, context):
    """A value this role adds, as a raw word for the context (systemd word or shell word in a script)."""
    value = str(value)
    if context == "shell":
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise UnsafeValue("value %r contains a control character (newline, tab, ...)" % value)
        return shlex.quote(value).replace("%", "%%").replace("$", "$$")
    return systemd_quote(value)


def _secret_reference(variable, context):
    # systemd expands ${VAR} to exactly one word; in a shell script the shell expands "$VAR"
    # ($$ keeps systemd from expanding it first).
    return '"$$%s"' % variable if context == "shell" else "${%s}" % variable


def _display(option, values, secret):
    return " ".join([option] + ([MASK] if secret and values else list(values)))


def check_extra_args(extra_args, index, managed, deprecated):
    """Problems with sglang_dflash_extra_args: unknown flags, deprecated aliases, flags the role sets."""
    problems = []
    visible = set(name for name, flag in index.items() if not flag.get("hidden"))
    for token in extra_args:
        if not token.startswith("--"):
            continue
        option = token.split("=", 1)[0]
        flag = index.get(option)
        if flag is None:
            close = difflib.get_close_matches(option.replace("_", "-"), sorted(visible), n=3, cutoff=0.75)
            problems.append("%s is not a flag of this release%s" % (
                option, " (did you mean %s?)" % " or ".join(close) if close else ""))
        elif flag.get("hidden"):
            instead = deprecated.get(option)
            problems.append("%s is a hidden, deprecated alias in this release%s" % (
                option, "; use %s" % instead if instead else ""))
        elif option in managed or is_speculative(flag):
            problems.append("%s is set by the role from its own variables; remove it from sglang_dflash_extra_args"
                            % option)
    return problems


def plan_arguments(flags, settings, current=None, extra_algorithms=()):
    """New server arguments for this release.

    settings: model_path, host, port, tp_size (None: keep / install default), algorithm,
      draft_model_path, block_size, draft_window_size, extra_args (argv tokens); expanded_port: the port the
      running command's --port expands to, when it names a variable or a specifier.
    current: None (install) or {"args": [Word], "context": "systemd" | "shell"} (switch).
    Returns {mode, errors, args, args_raw, changes, secret_env, expected_server_info, flag_names,
    capabilities, port}. args_raw is None when there are errors.
    """
    caps = capabilities(flags, extra_algorithms)
    index = flag_index(flags)
    names = caps["flags"]
    mode = "switch" if current is not None else "install"
    values = dict((k, settings.get(k)) for k in BASE_INTENTS + SPECULATIVE_INTENTS)
    algorithm, fallback, errors = _choose_algorithm(caps, settings, values)
    wanted, intent_errors = _wanted_intents(values, mode, algorithm, caps)
    errors.extend(intent_errors)
    extra_args = [str(a) for a in settings.get("extra_args") or []]
    errors.extend(check_extra_args(extra_args, index, _managed_options(), caps["deprecated_aliases"]))
    current_options, extra_options, parse_errors = _parse_current_and_extra(current, extra_args, index, errors)
    errors.extend(parse_errors)

    result = {"mode": mode, "capabilities": caps, "flag_names": dict((i, names.get(i)) for i in wanted),
              "algorithm": algorithm, "fallback": fallback, "errors": errors, "args": None, "args_raw": None,
              "secret_env": {},
              "changes": {"kept": [], "removed": [], "added": [], "overridden": []},
              "expected_server_info": {}, "port": None}
    if errors:
        return result
    try:
        composed = _compose(current_options, _role_settings_by_flag(wanted, values, names, index, extra_options),
                            index, (current or {}).get("context", "systemd"))
    except UnsafeValue as exc:
        errors.append(str(exc))
        return result
    result["changes"] = composed["changes"]
    port = _last_value(composed["args"], index, names.get("port") or "--port")
    if port is not None and not port.isdigit() and settings.get("expanded_port"):
        # The operator's own --port ${PORT} (or %i), kept: where systemd expands it (the facts read the unit's
        # environment the same way).
        port = str(settings["expanded_port"])
    if port is not None and not port.isdigit():
        errors.append("cannot tell the server's port from --port %s (expanded when the service starts); "
                      "set sglang_dflash_port" % port)
        return result
    result.update(composed, expected_server_info=_expected_server_info(values, wanted, names),
                  port=int(port) if port else SGLANG_DEFAULT_PORT,
                  health_host=_health_host(_last_value(composed["args"], index, names.get("host") or "--host")))
    return result


def _choose_algorithm(caps, settings, values):
    """(algorithm, fallback, errors): the asked algorithm, or the fallback the operator opted into."""
    errors = []
    algorithm = settings.get("algorithm")
    supported = caps["speculative_algorithms"] or []
    fallback = None
    if not caps["speculative"]:
        errors.append("this release has no --speculative-algorithm flag")
    elif algorithm not in supported:
        wanted_fallback = settings.get("fallback_algorithm")
        if wanted_fallback and wanted_fallback != algorithm and wanted_fallback in supported:
            # The operator opted in: this host runs the fallback, and says so.
            fallback = {"from": algorithm, "to": wanted_fallback,
                        "reason": "this build has no %s (it knows %s)" % (algorithm, ", ".join(supported))}
            algorithm = values["algorithm"] = wanted_fallback
            values["ddtree_budget"] = None
        else:
            errors.append("speculative algorithm %s is not supported by this release (it knows %s)%s"
                          % (algorithm, ", ".join(supported) or "none",
                             "; sglang_dflash_fallback_algorithm=DFLASH would run DFLASH on such hosts"
                             if algorithm == "DDTREE" and "DFLASH" in supported and not wanted_fallback else ""))
    if values["ddtree_budget"] is not None and algorithm != "DDTREE":
        errors.append("sglang_dflash_ddtree_budget applies to the DDTREE algorithm only (asked: %s)" % algorithm)
    return algorithm, fallback, errors


def _wanted_intents(values, mode, algorithm, caps):
    """(intents the role sets, errors): install defaults filled in, each intent's flag in this release."""
    errors = []
    if mode == "install":
        for key, default in INSTALL_DEFAULTS.items():
            if values[key] is None:
                values[key] = default
        if not values["model_path"]:
            errors.append("sglang_dflash_model_path is required to install a new service")
    if values["tp_size"] is not None and int(values["tp_size"]) == 1 and mode == "install":
        values["tp_size"] = None
    wanted = [i for i in BASE_INTENTS + SPECULATIVE_INTENTS if values[i] not in (None, "")]
    for intent in wanted:
        if intent == "ddtree_budget" and algorithm not in (caps["speculative_algorithms"] or []):
            continue  # the unsupported algorithm is the reason already
        if not caps["flags"].get(intent):
            errors.append("no flag for %s in this release" % intent.replace("_", " "))
    return wanted, errors


def _managed_options():
    """Every option string of the settings the role owns, in any release."""
    return set(option for intent in BASE_INTENTS + SPECULATIVE_INTENTS + ("num_draft_tokens",)
               for option in INTENT_FLAGS[intent])


def _parse_current_and_extra(current, extra_args, index, errors_so_far):
    """(options of the running command, options of extra_args, errors); extra_args only when all is well."""
    errors, current_options, extra_options = [], [], []
    if current is not None:
        current_options, current_errors = parse_arguments(current["args"], index)
        errors.extend("the running command line passes %s; remove it from the unit first" % e
                      if "is not accepted" in e else "the running command line: " + e for e in current_errors)
    if not errors_so_far and not errors:
        extra_options, extra_errors = parse_arguments([PlainWord(t) for t in extra_args], index)
        errors.extend("sglang_dflash_extra_args: " + e for e in extra_errors)
    return current_options, extra_options, errors


def _role_settings_by_flag(wanted, values, names, index, extra_options):
    """What the role sets, by the canonical name of the release's flag: {name: (option, values)}."""
    setting_by_flag = {}
    for intent in wanted:
        setting_by_flag[index[names[intent]]["name"]] = (names[intent], [str(values[intent])])
    for opt in extra_options:
        setting_by_flag[opt["flag"]["name"]] = (opt["option"], opt["values"])
    return setting_by_flag


def _compose(current_options, setting_by_flag, index, context):
    """The new command's arguments: {args, args_raw, changes, secret_env}. Raises UnsafeValue."""
    changes = {"kept": [], "removed": [], "added": [], "overridden": []}
    secret_env = {}
    out_values, out_raw = [], []

    def emit(option, vals, raw_words):
        out_values.append(option)
        out_values.extend(vals)
        out_raw.extend(raw_words)

    def new_words(option, flag, vals):
        if is_secret_flag(option) and vals and not all("$" in v for v in vals):
            variable = secret_variable(flag["name"])
            secret_env[variable] = " ".join(vals)
            return [option, _secret_reference(variable, context)]
        return [option] + [_quote_new(v, context) for v in vals]

    for opt in current_options:
        flag = opt["flag"]
        secret = is_secret_flag(opt["option"])
        shown = _display(opt["option"], opt["values"], secret)
        if is_speculative(flag):
            changes["removed"].append(shown)
            continue
        if flag["name"] in setting_by_flag:
            option, vals = setting_by_flag.pop(flag["name"])
            if vals == opt["values"] and option == opt["option"] and not secret:
                changes["kept"].append(shown)
                emit(option, vals, [w.raw for w in opt["words"]])
            else:
                changes["overridden"].append("%s -> %s" % (shown, _display(option, vals, secret)))
                emit(option, vals, new_words(option, flag, vals))
            continue
        if secret and not all("$" in v for v in opt["values"]):
            # A secret the operator wrote in the unit: it moves to our environment file.
            changes["kept"].append(shown)
            emit(opt["option"], opt["values"], new_words(opt["option"], flag, opt["values"]))
            continue
        changes["kept"].append(shown)
        emit(opt["option"], opt["values"], [w.raw for w in opt["words"]])
    for option, vals in setting_by_flag.values():
        changes["added"].append(_display(option, vals, is_secret_flag(option)))
        emit(option, vals, new_words(option, index[option], vals))
    return {"args": out_values, "args_raw": out_raw, "changes": changes, "secret_env": secret_env}


def _expected_server_info(values, wanted, names):
    """What /server_info must report for the speculative settings the role sets."""
    expected = {}
    for intent in SPECULATIVE_INTENTS:
        if intent in wanted:
            value = values[intent]
            expected[names[intent].lstrip("-").replace("-", "_")] = (
                int(value) if intent in INTEGER_INTENTS else value)
    return expected


class PlainWord(object):
    """A token as a Word-like value (extra_args, or words read back from a command we wrote)."""

    __slots__ = ("value", "raw")

    def __init__(self, value):
        self.value = value
        self.raw = value


def _last_value(args, index, option):
    flag = index.get(option)
    if flag is None:
        return None
    names = set([flag["name"]] + list(flag.get("aliases") or []))
    found = None
    for i, arg in enumerate(args):
        name, eq, inline = arg.partition("=")
        if name in names:
            found = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
    return found


def listen_address(flags, words):
    """(port, host to reach it at) of a command's argument Words; port None when not a number."""
    index = flag_index(flags)
    names = capabilities(flags)["flags"]
    values = [w.value for w in words]
    port = _last_value(values, index, names.get("port") or "--port")
    port = SGLANG_DEFAULT_PORT if port is None else (int(port) if port.isdigit() else None)
    return port, _health_host(_last_value(values, index, names.get("host") or "--host"))


def _health_host(host):
    """Where the role reaches the server on the host itself."""
    if not host or host in ("0.0.0.0", "::", "[::]"):
        return "127.0.0.1"
    return host
