# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The limits an installed SGLang release states in its own source, read with ``ast`` (nothing imported).

Two shapes are read, in ``srt/server_args.py`` and ``srt/arg_groups/*.py``:
- a speculative algorithm's checks: the body of ``if <x>.speculative_algorithm == "DFLASH":`` (0.5.11) or of
  ``def _handle_dflash(...)`` (0.5.16+), with every ``raise``/``assert`` in it whose conditions name a setting of
  LIMIT_SETTINGS (dp attention, pipeline parallelism, disaggregation, page size, attention backend);
- attention backends tied to GPU architectures: an ``if`` whose test compares a prefill/decode backend with a
  name and tests the GPU (``is_sm100_supported()``, ``get_platform().is_sm120``), with a ``raise`` in its body.
Each limit is {id, kind, algorithm, terms, message, source}: ``terms`` are the conditions, all of which make the
release refuse to start. A condition of another shape is kept as an ``unknown`` term (never guessed), so the
controller can say it cannot tell. Python 3.8+ standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import hashlib
import os
import re

from ansible_collections.gpufleet.sglang.plugins.module_utils.ast_statements import statements
from ansible_collections.gpufleet.sglang.plugins.module_utils.result_cache import (
    CACHE_FORMAT,
    cache_keep,
    cache_read,
    entry_key,
    fingerprint_files,
    matches_shape,
)

# Where the release states these limits, relative to the package directory (files, or folders read one level).
LIMIT_SOURCES = ("srt/server_args.py", "srt/arg_groups")
# Where the settings' defaults are declared (0.5.20+ moved the fields into arg_groups/fields/).
DEFAULT_SOURCES = ("srt/server_args.py", "srt/arg_groups/fields")
ALGORITHMS = ("DFLASH", "DDTREE")
# setting (ServerArgs field) -> the limit's id; a raise that names none of these is no limit of ours.
LIMIT_SETTINGS = {
    "attn_dp": "dp_attention", "enable_dp_attention": "dp_attention", "enable_dp_lm_head": "dp_attention",
    "pp_size": "pipeline_parallel", "disaggregation_mode": "disaggregation", "page_size": "page_size",
    "attention_backend": "attention_backend", "prefill_attention_backend": "attention_backend",
    "decode_attention_backend": "attention_backend", "prefill_backend": "attention_backend",
    "decode_backend": "attention_backend",
}
# Every limit id, here and in the controller's table (sglang_dflash_allow_release_limits takes these).
LIMIT_IDS = tuple(sorted(set(LIMIT_SETTINGS.values()) | set(["attention_backend_arch"])))
# The objects SGLang reads settings from: self (ServerArgs), server_args, cfg/view (resolved views).
_ARGS_OBJECTS = ("self", "server_args", "cfg", "view", "args")
# Locals that hold the backend each phase resolves to (--prefill/--decode-attention-backend, else --attention-backend).
_BACKEND_LOCALS = ("prefill_backend", "decode_backend")
_SM_CALL = re.compile(r"^is_sm(\d+)_supported$")
_SM_ATTR = re.compile(r"^is_sm(\d+)$")
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=",
            ast.In: "in", ast.NotIn: "not in"}


def _setting(node):
    """The ServerArgs setting an expression reads, or None: x.name on an args object or a view of one,
    attn_dp_enabled_of(x), or a backend local."""
    if isinstance(node, ast.Attribute):
        base = node.value
        if (isinstance(base, ast.Name) and base.id in _ARGS_OBJECTS) or isinstance(base, ast.Call):
            return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "attn_dp_enabled_of":
        return "attn_dp"
    if isinstance(node, ast.Name) and node.id in _BACKEND_LOCALS:
        return node.id
    return None


def _sm_major(node):
    """The major compute capability an architecture test names (is_sm100_supported() / x.is_sm120), or None.
    SGLang's tests compare torch.cuda.get_device_capability()[0] (0.5.23 utils/common.py: is_sm100_supported is
    device_capability_majors=[10], is_sm90_supported [9], is_sm120_supported [12]; get_platform().is_sm100 maps
    to it); their CUDA-version half is the torch build's, which no GPU host runs below. Other names
    (is_sm100_or_sm110, is_blackwell) are not read: they become unknown terms."""
    name = None
    if isinstance(node, ast.Call) and not node.args:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        match = _SM_CALL.match(name or "")
    elif isinstance(node, ast.Attribute):
        match = _SM_ATTR.match(node.attr)
    else:
        match = None
    return int(match.group(1)) // 10 if match else None


def _constant(node):
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in node.elts):
        return True, [e.value for e in node.elts]
    return False, None


class _Source(object):
    """A file's text split once: ast.get_source_segment splits it again at every call."""

    def __init__(self, text):
        self.lines = text.splitlines(True)

    def segment(self, node):
        end = getattr(node, "end_lineno", None)
        if end is None:
            return ast.dump(node)
        first, last = node.lineno - 1, end - 1
        if first == last:
            return self.lines[first][node.col_offset:node.end_col_offset]
        return "".join([self.lines[first][node.col_offset:]] + self.lines[first + 1:last]
                       + [self.lines[last][:node.end_col_offset]])


def _text(node, source):
    return " ".join(source.segment(node).split())[:200]


def terms_of(node, source, negated=False):
    """The conditions of an if-test or assert as a list of terms, all of which hold (an `and`)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and not negated:
        return [t for value in node.values for t in terms_of(value, source)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return terms_of(node.operand, source, not negated)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        majors = [_sm_major(v) for v in node.values]
        if all(m is not None for m in majors):
            return [{"kind": "arch", "majors": sorted(set(majors)), "negated": negated}]
        return [{"kind": "unknown", "text": _text(node, source), "negated": negated}]
    major = _sm_major(node)
    if major is not None:
        return [{"kind": "arch", "majors": [major], "negated": negated}]
    setting = _setting(node)
    if setting is not None:
        return [{"kind": "setting", "setting": setting, "op": "truthy", "negated": negated}]
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right, op = node.left, node.comparators[0], _COMPARE.get(type(node.ops[0]))
        is_const, value = _constant(right)
        if op and is_const and _setting(left) is not None:
            return [{"kind": "setting", "setting": _setting(left), "op": op, "value": value, "negated": negated}]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith" \
            and len(node.args) == 1 and _setting(node.func.value) is not None:
        is_const, value = _constant(node.args[0])
        if is_const:
            return [{"kind": "setting", "setting": _setting(node.func.value), "op": "startswith", "value": value,
                     "negated": negated}]
    return [{"kind": "unknown", "text": _text(node, source), "negated": negated}]


def _message(node, source):
    """The text of a raise's exception or an assert's message (f-string parts as written)."""
    if node is None:
        return ""
    if isinstance(node, ast.Call) and node.args:
        return _message(node.args[0], source)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{%s}" % _text(v.value, source)
                       for v in node.values)
    if isinstance(node, ast.BinOp):
        return _message(node.left, source) + _message(node.right, source)
    return _text(node, source)


def _algorithm_of_test(test):
    """"DFLASH" for `<x>.speculative_algorithm == "DFLASH"` (or a local of that name), else None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left = test.left
        name = left.attr if isinstance(left, ast.Attribute) else left.id if isinstance(left, ast.Name) else None
        is_const, value = _constant(test.comparators[0])
        if name == "speculative_algorithm" and is_const and value in ALGORITHMS:
            return value
    return None


def _raises(statements, conditions, source, out=None):
    """[(conditions, message, line)] of each raise/assert in statements, with the if-conditions that lead to it."""
    out = [] if out is None else out
    for stmt in statements:
        if isinstance(stmt, ast.Raise):
            out.append((conditions, _message(stmt.exc, source), stmt.lineno))
        elif isinstance(stmt, ast.Assert):
            out.append((conditions + terms_of(stmt.test, source, negated=True), _message(stmt.msg, source),
                        stmt.lineno))
        elif isinstance(stmt, ast.If):
            _raises(stmt.body, conditions + terms_of(stmt.test, source), source, out)
            if stmt.orelse:
                # Only a plain condition can be negated as a whole; an `and` in an else becomes unknown.
                test_terms = terms_of(stmt.test, source)
                negated = [dict(test_terms[0], negated=not test_terms[0]["negated"])] if len(test_terms) == 1 \
                    else [{"kind": "unknown", "text": "not (%s)" % _text(stmt.test, source), "negated": False}]
                _raises(stmt.orelse, conditions + negated, source, out)
        elif isinstance(stmt, (ast.With, ast.For, ast.While, ast.Try)):
            # A raise inside a loop, a with or a try depends on what runs there: never read as certain.
            inner = list(stmt.body) + [s for h in getattr(stmt, "handlers", []) for s in h.body]
            _raises(inner, conditions + [{"kind": "unknown", "text": type(stmt).__name__.lower(), "negated": False}],
                    source, out)
    return out


def _limit_id(terms):
    for term in terms:
        if term["kind"] == "setting" and term["setting"] in LIMIT_SETTINGS:
            return LIMIT_SETTINGS[term["setting"]]
    return None


def limits_from_source(source, origin):
    """The limits one source file states: [{id, kind, algorithm, terms, message, source}]."""
    tree = ast.parse(source)
    source = _Source(source)
    found = []

    def add(kind, algorithm, terms, message, line):
        limit_id = "attention_backend_arch" if kind == "architecture" else _limit_id(terms)
        if limit_id:
            found.append({"id": limit_id, "kind": kind, "algorithm": algorithm, "terms": terms,
                          "message": " ".join(message.split()), "source": "%s:%d" % (origin, line)})

    for node in statements(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_handle_") \
                and node.name[len("_handle_"):].upper() in ALGORITHMS:
            for conditions, message, line in _raises(node.body, [], source):
                add("algorithm", node.name[len("_handle_"):].upper(), conditions, message, line)
        elif isinstance(node, ast.If) and _algorithm_of_test(node.test):
            for conditions, message, line in _raises(node.body, [], source):
                add("algorithm", _algorithm_of_test(node.test), conditions, message, line)
        elif isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            terms = terms_of(node.test, source)
            backend = [t for t in terms if t["kind"] == "setting" and t["op"] == "==" and not t["negated"]
                       and LIMIT_SETTINGS.get(t["setting"]) == "attention_backend"]
            if backend and any(t["kind"] == "arch" for t in terms):
                raise_node = next(s for s in node.body if isinstance(s, ast.Raise))
                add("architecture", None, terms, _message(raise_node.exc, source), raise_node.lineno)
    return found


def defaults_from_source(source, names):
    """{setting: default} of the named settings declared with a literal default (`name: T = value`)."""
    defaults = {}
    for node in statements(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in names \
                and isinstance(node.value, ast.Constant):
            defaults.setdefault(node.target.id, node.value.value)
    return defaults


def _python_files(package_dir, relative):
    files = []
    for rel in relative:
        path = os.path.join(package_dir, rel)
        if os.path.isdir(path):
            files.extend(os.path.join(path, name) for name in sorted(os.listdir(path)) if name.endswith(".py"))
        elif os.path.isfile(path):
            files.append(path)
    return files


def limits_from_package(package_dir):
    """{limits, defaults, files, problems} of an installed sglang package directory.

    problems: files that could not be read or parsed (the limits of the others are still returned); no file
    at all is a problem too, so a release whose layout moved is said to be unread, never limit-free."""
    limits, problems, texts = [], [], []
    files = _python_files(package_dir, LIMIT_SOURCES)
    for path in files:
        origin = os.path.relpath(path, os.path.dirname(package_dir.rstrip(os.sep)))
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8")
            limits.extend(limits_from_source(text, origin))
            texts.append(text)
        except (OSError, SyntaxError, ValueError) as exc:
            problems.append("cannot read %s: %s" % (path, exc))
    if not files:
        problems.append("no source of the release's limits under %s (%s)" % (package_dir, ", ".join(LIMIT_SOURCES)))
    names = set(t["setting"] for limit in limits for t in limit["terms"] if t["kind"] == "setting")
    defaults = {}
    for path in _python_files(package_dir, DEFAULT_SOURCES):
        try:
            with open(path, "rb") as handle:
                found = defaults_from_source(handle.read().decode("utf-8"), names)
        except (OSError, SyntaxError, ValueError):
            continue  # a default not read is an unknown term later, never a guess
        for name, value in found.items():
            defaults.setdefault(name, value)
    return {"limits": limits, "defaults": defaults, "files": len(files), "problems": problems}


# What a cached entry must hold to be served: a result read without a problem (only those are kept).
_CACHED_FIELDS = {"limits": list, "defaults": dict, "files": int, "problems": list}


def _valid_cached_limits(entry):
    return matches_shape(entry, _CACHED_FIELDS) and not entry["problems"]


def _reader_source():
    """This module's own source: a cached result is served only to the reader that wrote it (its shapes change)."""
    try:
        return __loader__.get_source(__name__)  # a file or AnsiballZ's zip alike
    except Exception:  # pylint: disable=broad-except
        return None


def cached_limits_from_package(package_dir, cache_dir, check_mode=False):
    """limits_from_package, kept in cache_dir (the flags' on-host cache) under the fingerprints (path, mtime, size)
    of every file and folder it reads, so that a warm run reads no source: parsing them is most of a warm
    sglang_info run. Without cache_dir, or in check mode (nothing written), the source is read as before."""
    reader = _reader_source() if cache_dir else None
    if not reader:
        return limits_from_package(package_dir)
    folders = [os.path.join(package_dir, rel) for rel in LIMIT_SOURCES + DEFAULT_SOURCES]
    files = _python_files(package_dir, LIMIT_SOURCES) + _python_files(package_dir, DEFAULT_SOURCES)
    key = entry_key({"format": CACHE_FORMAT, "kind": "release_limits", "package_dir": package_dir,
                     "reader": hashlib.sha256(reader.encode("utf-8")).hexdigest(),
                     "files": fingerprint_files(folders + files)})
    hit, _path = cache_read(cache_dir, key, _valid_cached_limits)
    if hit:
        return hit
    found = limits_from_package(package_dir)
    if not check_mode and not found["problems"]:
        cache_keep(cache_dir, key, found)
    return found
